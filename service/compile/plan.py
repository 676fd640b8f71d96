"""The compile plan: where the compile directory and the cache are, the layout checked before
any of it becomes a path, the compile directory's files, each unit's key and PCH, and the
edges a build runs for its merged units (compiled whole, or their edited parts spliced).

A unit's key hashes its source, the generated headers it includes, the toolchain and its
PCH's key (which hashes the PCH's text, the prelude, the toolchain and the installed headers'
fingerprint): an object stored under a key is served only to the same compile.

A merged unit compiles many formula units at one compile floor (a cold build). Once its
object is stored, an edit compiles only the edited parts and splices them over it: a
relocatable link of the parts' objects with the stored one, in which their strong formulas
replace its weak ones (`plan_merged`). Linking obj/*.o gives the same program either way.
What each merged unit's stored object holds is its baseline, a record in
<cache>/objects/merged/ (`write_baselines` after each run).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

import xxhash

from gradshard.cache.objects.object_cache import (PCH_MISSING, RECORD_BYTES, DamagedEntry, forget,
                                                  forget_pch, is_key, load, pch_lock, pch_problem,
                                                  remove_pch_leftovers, stored, stored_object)
from gradshard.cache.store.database import StoreDamaged, safe_relative_path
from gradshard.cache.store.directory import BASELINES, OBJECTS, PCHS
from gradshard.cache.store.regular_files import read_regular
from gradshard.pipeline.layout.compile_layout import (PCH_KINDS, PRELUDE_PATH, CompileLayout,
                                                      CompileUnit, estimated_seconds)
from gradshard.pipeline.problems import InternalError
from gradshard.service.compile.toolchain import Toolchain
from gradshard.service.files.outputs import (KnownHashes, OutputSync, UnsafeOutputName,
                                             cache_damage, stat_signature, sync_outputs,
                                             write_atomic, write_changed)

if TYPE_CHECKING:
    from gradshard.cache.store.database import Store

__all__ = ["CompileDirSync", "CompilePlan", "PreparedUnit", "baseline_path", "check_layout",
           "check_pchs", "plan_merged", "prepare_units", "read_bounded", "sync_compile_dir",
           "write_baselines"]

FILE_LIST = ".gradshard-files.json"  # what the last sync wrote, so stale files are removed
UNIT_NAME = re.compile(r"[A-Za-z0-9_-]+")  # Functions_formulas_00-11, python_functions_2


@dataclass(frozen=True)
class CompilePlan:
    """Where things go: the compile directory, the cache's PCH and object stores."""

    directory: Path
    cache: Path
    toolchain: Toolchain
    jobs: int
    # what this build found damaged in the cache and made again, for the build's report
    warnings: list[str] = field(default_factory=list, compare=False)
    # the session's stored objects found matching their sums, by the stat signatures of
    # their two files then (sound_object)
    sound_objects: dict[str, tuple] = field(default_factory=dict, compare=False)

    @property
    def objects(self) -> Path:
        return self.cache / OBJECTS


# ---------------------------------------------------------------------------------------------
# The layout, as read from the cache: the graph run's layout is a cache record, and the cache
# is input (CI restores it), so the layout must name units, PCH kinds, sources, headers and
# parts a layout can have before any of it becomes a path.


def check_layout(layout: CompileLayout, out_files: dict[str, str], store: Store | None) -> None:
    """A layout read from the cache is input: a unit's name becomes a file name in obj/, its
    PCH kind one in CACHE/pch/, its sources, headers and parts are looked up. A layout naming
    anything a layout cannot (`../x`, `/abs/x`, a file it does not hold) is damaged or
    crafted: the cache database is set aside (as for --out's names: build.cache_damage)
    before any of it is acted on. Its file names are checked where they are written
    (sync_outputs)."""
    problem = layout_problem(layout, out_files)
    if problem is not None:
        raise layout_damage(problem, store)


def layout_damage(problem: str, store: Store | None) -> Exception:
    """Without a cache the layout is the pipeline's own, so a bad one is a bug."""
    if store is None:
        return InternalError(f"the compile layout {problem}")
    return StoreDamaged(f"holds a compile layout that {problem}", store.path)


def layout_problem(layout: CompileLayout, out_files: dict[str, str]) -> str | None:
    """What the layout names that no layout can, or None."""
    if not all(isinstance(name, str) and is_key(digest) for name, digest in layout.files):
        return "lists files that are not names with their hashes"
    files = dict(layout.files)
    for unit in layout.units:
        problem = unit_problem(unit, files, out_files, frozenset())
        if problem is not None:
            return problem
    unit_names = frozenset(u.name for u in layout.units)
    for unit in layout.merged:
        problem = unit_problem(unit, files, out_files, unit_names)
        if problem is not None:
            return problem
    return shared_problem(layout, files)


def unit_problem(unit: CompileUnit, files: dict[str, str], out_files: dict[str, str],
                 parts: frozenset[str]) -> str | None:
    """What is wrong with one unit; `parts`: the names its parts may have (units only)."""
    if not (isinstance(unit.name, str) and UNIT_NAME.fullmatch(unit.name)):
        return f"names a unit {unit.name!r}, which is not a unit name"
    if unit.pch not in PCH_KINDS:
        return (f"gives {unit.name} the precompiled header {unit.pch!r}, which is none of "
                f"{', '.join(PCH_KINDS)}")
    if not source_held(unit, files, out_files):
        return f"gives {unit.name} the source {unit.source!r}, which it does not hold"
    header = next((h for h in unit.headers if not (isinstance(h, str) and h in files)), None)
    if header is not None:
        return f"gives {unit.name} the header {header!r}, which it does not hold"
    part = next((p for p in unit.parts if not (isinstance(p, str) and p in parts)), None)
    if part is not None:
        return f"gives {unit.name} the part {part!r}, which is none of its units"
    if not record_types_hold(unit):
        return f"describes {unit.name} with values of the wrong kinds"
    return None


def source_held(unit: CompileUnit, files: dict[str, str], out_files: dict[str, str]) -> bool:
    """A source in the compile directory is one of the layout's files; one compiled from
    --out (as it is) is one of the build's files there, as a path inside --out."""
    if unit.from_out is True:
        return safe_relative_path(unit.source) is not None and is_key(out_files.get(unit.source))
    return unit.from_out is False and isinstance(unit.source, str) and unit.source in files


def record_types_hold(unit: CompileUnit) -> bool:
    """What compile errors are placed by (a node per first line) and compiles are ordered by
    (size) is of the kinds they are used as."""
    return (all(isinstance(n, str) for n in unit.nodes)
            and all(type(line) is int for line in unit.node_lines)
            and len(unit.node_lines) <= len(unit.nodes) and type(unit.size) is int)


def shared_problem(layout: CompileLayout, files: dict[str, str]) -> str | None:
    """Names given twice (one object file for two units), and the files every PCH key
    hashes."""
    names = Counter(u.name for u in (*layout.units, *layout.merged))
    twice = next((name for name, count in names.items() if count > 1), None)
    if twice is not None:
        return f"names the unit {twice} twice"
    needed = [PRELUDE_PATH, *(f"pch/{u.pch}.h" for u in (*layout.units, *layout.merged))]
    missing = next((path for path in needed if path not in files), None)
    if missing is not None:
        return f"does not hold {missing}, which its units need"
    return None


# ---------------------------------------------------------------------------------------------
# The compile directory's files


def sync_compile_dir(plan: CompilePlan, layout: CompileLayout, store: Store | None,
                     known: KnownHashes | None = None) -> CompileDirSync:
    """The first step of making the compile directory hold the layout's files: the files
    that differ (the caller loads their texts and hands them to `write`). The layout's names
    come from the cache: sync_outputs checks each before making its directory or writing
    it."""
    files = dict(layout.files)
    try:
        sync = sync_outputs(plan.directory, files, known)
    except UnsafeOutputName as unsafe:
        raise cache_damage(unsafe, store) from None
    return CompileDirSync(plan, sync)


@dataclass(frozen=True)
class CompileDirSync:
    """The compile directory's files that differ from the layout's (`stale`), to write."""

    plan: CompilePlan
    sync: OutputSync

    @property
    def stale(self) -> list[str]:
        return self.sync.stale

    def write(self, texts: dict[str, str]) -> int:
        """Write the stale files (`texts`: theirs), remove what the last sync wrote that
        the layout no longer has, and list the files; returns how many were written."""
        listing = self.plan.directory / FILE_LIST
        previous = read_file_list(listing, self.plan.warnings)
        report = self.sync.write(texts, previous)
        write_changed(listing, json.dumps(sorted(self.sync.files)).encode())
        return len(report.written)


def read_file_list(listing: Path, warnings: list[str]) -> list[str]:
    """The names the last sync wrote (none before the first). A list that is not a JSON list
    of names (damaged, or no file: a FIFO) is named in a warning and what is not a name in it
    ignored: files it no longer names may be left behind, never others removed."""
    try:
        loaded = json.loads(read_regular(listing, RECORD_BYTES))
    except FileNotFoundError:
        return []
    except (OSError, ValueError):
        loaded = None
    names = [n for n in loaded if isinstance(n, str)] if isinstance(loaded, list) else []
    if not isinstance(loaded, list) or len(names) != len(loaded):
        warnings.append(f"the compile directory's file list {listing} is damaged: what is not "
                        "a file name in it was ignored (files of an earlier build may be left)")
    return names


# ---------------------------------------------------------------------------------------------
# Each unit's key and PCH


def pch_key(plan: CompilePlan, layout: CompileLayout, fingerprint: str, kind: str) -> str:
    """A precompiled header depends on its text, the prelude it includes, the toolchain and
    the installed headers."""
    files = dict(layout.files)
    return xxhash.xxh3_128_hexdigest("\0".join((
        plan.toolchain.identity(), *plan.toolchain.pch_flags(), fingerprint,
        files[f"pch/{kind}.h"], files[PRELUDE_PATH])).encode())


def unit_key(plan: CompilePlan, files: dict[str, str], unit: CompileUnit, source_hash: str,
             pch: str) -> str:
    return xxhash.xxh3_128_hexdigest("\0".join((
        plan.toolchain.identity(), pch, unit.source, source_hash,
        *(f"{h}={files[h]}" for h in unit.headers))).encode())


@dataclass(frozen=True)
class PreparedUnit:
    """One edge of build.ninja: a compile, or a splice of part objects over a stored one."""

    unit: CompileUnit
    source: str  # path as the compiler sees it (relative to the compile directory, or absolute)
    output: str
    key: str
    pch: str  # absolute path of the PCH's header
    parts: tuple[str, ...] = ()  # a splice: the part objects, linked over `base`
    base: str = ""  # a splice: the merged unit's stored object

    @property
    def is_splice(self) -> bool:
        return bool(self.base)


def prepare_units(plan: CompilePlan, layout: CompileLayout, out_files: dict[str, str],
                  out_dir: Path, fingerprint: str
                  ) -> tuple[list[PreparedUnit], list[PreparedUnit], dict[str, Path]]:
    """The units and the merged units with their keys, and each kind's PCH header, for the
    installed headers of this fingerprint."""
    kinds = sorted({u.pch for u in (*layout.units, *layout.merged)})
    pch_headers = {kind: cached_pch_header(plan, kind, pch_key(plan, layout, fingerprint, kind))
                   for kind in kinds}
    files = dict(layout.files)
    units = [prepare_unit(plan, files, u, out_files, out_dir, pch_headers) for u in layout.units]
    merged = [prepare_unit(plan, files, u, out_files, out_dir, pch_headers)
              for u in layout.merged]
    return units, merged, pch_headers


def cached_pch_header(plan: CompilePlan, kind: str, key: str) -> Path:
    """The PCH's header in the cache, as its key says it is (the key hashes its text): a
    header that differs is written again, and a PCH built from it is not used."""
    header = plan.cache / PCHS / key / f"{kind}.h"
    text = (plan.directory / "pch" / f"{kind}.h").read_bytes()
    if read_bounded(header, len(text)) != text:
        if header.exists():
            plan.warnings.append(f"{header} differs from the text its key names (damaged): "
                                 "written again, and its precompiled header rebuilt")
            forget_pch(Path(f"{header}.gch"))
        header.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(header, text)
    return header


def check_pchs(plan: CompilePlan, pch_headers: dict[str, Path],
               sound: dict[str, tuple[int, ...]]) -> None:
    """Once per build, before ninja: a PCH that does not match the sum recorded when it was
    built (a restored cache, a disk error) is removed, so its edge builds it again; the
    temporaries of killed PCH builds are removed. Under the PCH's lock: a build building it
    holds the lock, so its temporary is never taken for a leftover. `sound` is the session's
    memory of the PCHs it found matching (by their stat signature, which holds the change
    time no write can leave as it was): a daemon's builds do not hash ~1.4 GB again each."""
    for header in pch_headers.values():
        gch = Path(f"{header}.gch")
        with pch_lock(gch):
            leftovers = remove_pch_leftovers(gch)
            check_pch(plan, gch, sound)
        if leftovers:
            plan.warnings.append(f"removed {len(leftovers)} temporary file(s) a killed "
                                 f"build of {gch} left")


def check_pch(plan: CompilePlan, gch: Path, sound: dict[str, tuple[int, ...]]) -> None:
    """One PCH, under its lock: hashed against its sum unless the session found it sound at
    the stat signature it has now; removed when it does not match (missing is no damage:
    its edge builds it)."""
    signature = stat_signature(gch)
    if signature is not None and sound.get(str(gch)) == signature:
        return
    sound.pop(str(gch), None)
    problem = pch_problem(gch)
    if problem is None and signature is not None:
        sound[str(gch)] = signature
    elif problem != PCH_MISSING:
        forget_pch(gch)
        plan.warnings.append(f"the precompiled header {gch} {problem}: removed, and rebuilt")


def prepare_unit(plan: CompilePlan, files: dict[str, str], unit: CompileUnit,
                 out_files: dict[str, str], out_dir: Path,
                 pch_headers: dict[str, Path]) -> PreparedUnit:
    if unit.from_out:
        source, source_hash = str((out_dir / unit.source).resolve()), out_files[unit.source]
    else:
        source, source_hash = unit.source, files[unit.source]
    key = unit_key(plan, files, unit, source_hash, pch_headers[unit.pch].parent.name)
    return PreparedUnit(unit, source, f"obj/{unit.name}.o", key, str(pch_headers[unit.pch]))


def read_bounded(path: Path, limit: int) -> bytes | None:
    """The file's bytes; None when it is missing, unreadable, no regular file or larger
    than `limit` (what reads it then takes it for damaged or absent)."""
    try:
        return read_regular(path, limit)
    except OSError:
        return None


# ---------------------------------------------------------------------------------------------
# Merged units: compiled whole when nothing of them is stored, else spliced


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

