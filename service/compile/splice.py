"""Merged units: compiled whole when nothing of them is stored, else spliced.

A merged unit compiles many formula units at one compile floor (a cold build). Once its
object is stored, an edit compiles only the edited parts and splices them over it: a
relocatable link of the parts' objects with the stored one, in which their strong formulas
replace its weak ones (`plan_merged`). Linking obj/*.o gives the same program either way.
What each merged unit's stored object holds is its baseline, a record in
<cache>/objects/merged/ (`write_baselines` after each run).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path

import xxhash

from gradshard.cache.objects.object_cache import (RECORD_BYTES, DamagedEntry, forget, is_key, load,
                                                  stored, stored_object)
from gradshard.cache.store.directory import BASELINES
from gradshard.cache.store.regular_files import read_regular
from gradshard.pipeline.layout.compile_layout import CompileLayout, CompileUnit, estimated_seconds
from gradshard.service.compile.plan import CompilePlan, PreparedUnit
from gradshard.service.files.outputs import stat_signature, write_atomic

__all__ = ["baseline_path", "plan_merged", "splice_command", "write_baselines"]

@dataclass(frozen=True)
class MergedBaseline:
    """What a merged unit's stored object holds: its key, the keys of its parts as compiled
    into it, and the nodes whose formulas it defines."""

    object_key: str
    parts: dict[str, str]
    nodes: frozenset[str]


def baseline_path(plan: CompilePlan, layout: CompileLayout, unit: CompileUnit,
                  pch: str) -> Path:
    """One record per merged unit as the toolchain, headers and merged text make it; a
    rename or re-split of its parts is another merged unit."""
    identity = xxhash.xxh3_128_hexdigest("\0".join((
        plan.toolchain.identity(), Path(pch).parent.name, unit.source,
        dict(layout.files)[unit.source])).encode())
    return plan.cache / BASELINES / f"{identity}.json"


def read_baseline(path: Path, objects: Path, warnings: list[str],
                  sound: dict[str, tuple]) -> MergedBaseline | None:
    """The record, if it is whole and its object is stored and matches its sum. A record
    that is not (a restored cache is input: its keys name files) is removed, with a
    warning: the merged unit compiles whole."""
    try:
        baseline = parse_baseline(json.loads(read_regular(path, RECORD_BYTES)))
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        baseline = None
    if baseline is None:
        warnings.append(f"the merged unit record {path} is damaged: removed")
        path.unlink(missing_ok=True)
        return None
    try:
        return baseline if sound_object(objects, baseline.object_key, sound) else None
    except DamagedEntry as damage:
        warnings.append(f"the stored object {damage}: removed, and its merged unit compiled "
                        "whole")
        forget(objects, baseline.object_key)
        return None


def sound_object(objects: Path, key: str, sound: dict[str, tuple]) -> bool:
    """Whether the stored object is there and matches its sums (object_cache.load, which
    raises DamagedEntry when it does not). A session checks an object once while its two
    files keep their stat signatures (no write leaves the change time as it was), so a
    daemon's builds do not read and hash the ~60 MB of merged objects the splices start
    from, each time."""
    entry = stored(objects, key)
    signature = (stat_signature(entry.with_suffix(".sum")),
                 stat_signature(entry.with_suffix(".o")))
    if None not in signature and sound.get(key) == signature:
        return True
    sound.pop(key, None)
    if load(objects, key) is None:
        return False
    if None not in signature:
        sound[key] = signature
    return True


def parse_baseline(record: object) -> MergedBaseline | None:
    """A baseline from its JSON, or None unless every key is a key and every name a name."""
    if not isinstance(record, dict):
        return None
    key, parts, nodes = record.get("object"), record.get("parts"), record.get("nodes")
    if not (is_key(key) and isinstance(parts, dict) and isinstance(nodes, list)):
        return None
    if not (all(isinstance(n, str) and is_key(k) for n, k in parts.items())
            and all(isinstance(n, str) for n in nodes)):
        return None
    return MergedBaseline(key, parts, frozenset(nodes))


def write_baselines(plan: CompilePlan, layout: CompileLayout, units: list[PreparedUnit],
                    prepared_by_name: dict[str, PreparedUnit]) -> None:
    """After a run: record what each merged unit compiled (or served) whole holds."""
    for p in units:
        if p.unit.parts and not p.is_splice and (plan.directory / p.output).is_file():
            parts = [prepared_by_name[n] for n in p.unit.parts]
            record = {"object": p.key, "parts": {q.unit.name: q.key for q in parts},
                      "nodes": sorted(n for q in parts for n in q.unit.nodes)}
            path = baseline_path(plan, layout, p.unit, p.pch)
            path.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(path, json.dumps(record, sort_keys=True).encode())


def plan_merged(plan: CompilePlan, layout: CompileLayout, prepared: list[PreparedUnit],
                merged: list[PreparedUnit]) -> list[PreparedUnit]:
    """The edges to run: every unit that is no merged unit's part, and per merged unit
    either itself (no usable baseline; no part changed, so its stored object serves; or its
    changed parts would take longer to compile than it) or its changed parts and a splice of
    them over its baseline object."""
    by_name = {p.unit.name: p for p in prepared}
    in_merged = {name for m in merged for name in m.unit.parts}
    edges = [p for p in prepared if p.unit.name not in in_merged]
    for whole in merged:
        edges += merged_edges(plan, layout, whole, [by_name[name] for name in whole.unit.parts])
    return edges


def merged_edges(plan: CompilePlan, layout: CompileLayout, whole: PreparedUnit,
                 parts: list[PreparedUnit]) -> list[PreparedUnit]:
    """One merged unit's edges: itself, or its changed parts and a splice over its baseline."""
    baseline = read_baseline(baseline_path(plan, layout, whole.unit, whole.pch),
                             plan.objects, plan.warnings, plan.sound_objects)
    changed = [p for p in parts if baseline and baseline.parts.get(p.unit.name) != p.key]
    cheaper = sum(estimated_seconds(p.unit) for p in changed) < estimated_seconds(whole.unit)
    # a node that left would keep its weak formula here, beside its new unit's
    kept = baseline is not None and baseline.nodes <= {n for p in parts for n in p.unit.nodes}
    if not (kept and changed and cheaper):
        return [whole]
    moved = [replace(p, output=f"obj/parts/{p.unit.name}.o") for p in changed]
    return [*moved, splice_edge(whole, baseline, moved, plan.objects)]


def splice_edge(whole: PreparedUnit, baseline: MergedBaseline, parts: list[PreparedUnit],
                objects: Path) -> PreparedUnit:
    """The splice's key names what it links: the stored object and the parts' keys."""
    key = xxhash.xxh3_128_hexdigest("\0".join(
        ("splice", baseline.object_key, *sorted(p.key for p in parts))).encode())
    return replace(whole, key=key, parts=tuple(p.output for p in parts),
                   base=str(stored_object(objects, baseline.object_key)))


def splice_command(cxx: str, output: str, parts: tuple[str, ...], base: str) -> list[str]:
    """A relocatable link, parts first: their strong formulas override the base's weak ones,
    and of two copies of an inline function (a COMDAT group) the linker keeps the first. One
    object comes out, so an archive of the objects links the edited formulas too."""
    return [cxx, "-r", "-nostdlib", "-o", output, *parts, base]
