"""Compiling the generated C++: the compile directory, its build.ninja, and the run.

    <compile dir>/
      include/torch/csrc/autograd/generated/   Functions.h (prelude), python_functions.h, …
      include/gradshard/nodes/<Node>.h         one node's struct
      src/Functions_formulas_NN.cpp, src/Functions_N.cpp, src/python_functions_K.cpp,
      src/Functions_formulas_NN-MM.cpp         merged formula units (they include NN…MM)
      src/python_bindings_K.cpp (+ src/bindings/: copies of the binding files it includes)
      obj/<unit>.o                             the objects to link (.log: compiler messages)
      obj/parts/<unit>.o                       edited parts of a merged unit, spliced into it
      build.ninja, compile_commands.json
    <cache>/pch/<key>/{autograd,python}.h(.gch)   precompiled headers, per header set (.gch.sum:
                                                   its size and xxh3-128; .gch.lock: its builder's)
    <cache>/objects/                               objects by content key (.sum: their xxh3-128)
    <cache>/objects/merged/<identity>.json         what each merged unit's last compile held
    <cache>/headers.json                           the header fingerprint, by stat signature

Every compile goes through cache/objects/object_cache.py, so a unit whose key (its text, its
generated headers, the toolchain, the header fingerprint) is stored compiles nothing.
ninja runs with -k 0: one failing unit does not stop the others. With a store, each of these
cache entries is a row of it (cache/objects/entries.py, through `EntryLedger`): the entries a
build uses are taken before ninja runs and recorded (size, content hash, last use, toolchain
and header set) after, so `stats` counts them and `gc --max-size` bounds them with the rest.

The cache directory is input (CI restores it): the compile layout read from it must name
units, PCH kinds, sources, headers and parts a layout can have (`check_layout`), every key
read from it is checked to be a key (hex, so no path can hide in it), every file read from it
is read as a regular file of bounded size (cache/store/regular_files.py: a FIFO or /dev/zero
there is damage, never waited on), every stored object, depfile, splice and PCH is checked
against the sum stored with it before use, and a damaged one is removed with a warning and
made again. No command is run through a shell of our own; ninja's commands are quoted word
by word (shlex) and for ninja.

A merged unit compiles many formula units at one compile floor (a cold build). Once its
object is stored, an edit compiles only the edited parts and splices them over it: a
relocatable link of the parts' objects with the stored one, in which their strong formulas
replace its weak ones (`plan_merged`). Linking obj/*.o gives the same program either way.
"""

from __future__ import annotations

import fnmatch
from collections import Counter
import json
import os
import re
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Callable

import xxhash

from gradshard.cache.objects import entries as compile_entries
from gradshard.cache.store.directory import (BASELINES, HEADER_MEMO, OBJECTS, PCHS, object_entry,
                                             pch_entry)
from gradshard.cache.objects.entries import EntryUse
from gradshard.cache.objects.object_cache import (PCH_MISSING, RECORD_BYTES, DamagedEntry, forget,
                                                  forget_pch, is_key, load, pch_lock, pch_problem,
                                                  remove_pch_leftovers, stored, stored_object)
from gradshard.cache.engine.core import Engine
from gradshard.cache.graph.group_records import BuildIndex
from gradshard.cache.store.regular_files import read_regular
from gradshard.cache.store.database import StoreDamaged, safe_relative_path
from gradshard.pipeline.layout.compile_layout import (PCH_KINDS, PRELUDE_PATH, CompileLayout,
                                                      CompileUnit, ShardSettings,
                                                      estimated_seconds)
from gradshard.pipeline.render.variable_type_files import RenderedKernel
from gradshard.pipeline.problems import InternalError, SpecFile
from gradshard.cache.errors import CompileError, EnvironmentFailure, UsageError

from gradshard.service.outcome import BuildRequest
from gradshard.service.compile.report import (CompileReport, PchFailure, environment_failure,
                                              pch_failure_diagnostic, union,
                                              unit_failure_diagnostic)
from gradshard.service.compile.diagnostics import diagnose
from gradshard.service.files.outputs import (KnownHashes, UnsafeOutputName, cache_damage,
                                             stat_signature, sync_outputs, write_atomic,
                                             write_changed)
from gradshard.service.compile.toolchain import (Toolchain, find_toolchain, header_fingerprint,
                                                 launcher_environment, ninja_binary)
from gradshard.service.files.placement import generated_dir

if TYPE_CHECKING:
    from gradshard.cache.store.database import Store
    from gradshard.service.graph_run import GraphResult
    from gradshard.service.open_cache import OpenCache
    from gradshard.service.files.spec_location import SpecLocation

FILE_LIST = ".gradshard-files.json"  # what the last sync wrote, so stale files are removed


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


def sync_compile_dir(plan: CompilePlan, layout: CompileLayout,
                     load: Callable[[list[str]], dict[str, str]], store: Store | None,
                     known: KnownHashes | None = None) -> int:
    """Make the compile directory hold the layout's files; returns how many were written.
    The layout's names come from the cache: sync_outputs checks each before making its
    directory or writing it."""
    files = dict(layout.files)
    listing = plan.directory / FILE_LIST
    previous = read_file_list(listing, plan.warnings)
    try:
        report = sync_outputs(plan.directory, files, load, previous, known)
    except UnsafeOutputName as unsafe:
        raise cache_damage(unsafe, store) from None
    write_changed(listing, json.dumps(sorted(files)).encode())
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
    if _read(header, len(text)) != text:
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
            signature = stat_signature(gch)
            if signature is None or sound.get(str(gch)) != signature:
                sound.pop(str(gch), None)
                problem = pch_problem(gch)
                if problem is None and signature is not None:
                    sound[str(gch)] = signature
                elif problem != PCH_MISSING:
                    forget_pch(gch)
                    plan.warnings.append(f"the precompiled header {gch} {problem}: removed, "
                                         "and rebuilt")
        if leftovers:
            plan.warnings.append(f"removed {len(leftovers)} temporary file(s) a killed "
                                 f"build of {gch} left")


def prepare_unit(plan: CompilePlan, files: dict[str, str], unit: CompileUnit,
                 out_files: dict[str, str], out_dir: Path,
                 pch_headers: dict[str, Path]) -> PreparedUnit:
    if unit.from_out:
        source, source_hash = str((out_dir / unit.source).resolve()), out_files[unit.source]
    else:
        source, source_hash = unit.source, files[unit.source]
    key = unit_key(plan, files, unit, source_hash, pch_headers[unit.pch].parent.name)
    return PreparedUnit(unit, source, f"obj/{unit.name}.o", key, str(pch_headers[unit.pch]))


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
        parts = [by_name[name] for name in whole.unit.parts]
        baseline = read_baseline(baseline_path(plan, layout, whole.unit, whole.pch),
                                 plan.objects, plan.warnings, plan.sound_objects)
        changed = [p for p in parts if baseline and baseline.parts.get(p.unit.name) != p.key]
        cheaper = sum(estimated_seconds(p.unit) for p in changed) < estimated_seconds(whole.unit)
        # a node that left would keep its weak formula here, beside its new unit's
        kept = baseline is not None and baseline.nodes <= {n for p in parts for n in p.unit.nodes}
        if not (kept and changed and cheaper):
            edges.append(whole)
            continue
        moved = [replace(p, output=f"obj/parts/{p.unit.name}.o") for p in changed]
        edges += [*moved, splice_edge(whole, baseline, moved, plan.objects)]
    return edges


def splice_edge(whole: PreparedUnit, baseline: MergedBaseline, parts: list[PreparedUnit],
                objects: Path) -> PreparedUnit:
    key = xxhash.xxh3_128_hexdigest("\0".join(
        ("splice", baseline.object_key, *sorted(p.key for p in parts))).encode())
    return replace(whole, key=key, parts=tuple(p.output for p in parts),
                   base=str(stored_object(objects, baseline.object_key)))


def splice_command(cxx: str, output: str, parts: tuple[str, ...], base: str) -> list[str]:
    """A relocatable link, parts first: their strong formulas override the base's weak ones,
    and of two copies of an inline function (a COMDAT group) the linker keeps the first. One
    object comes out, so an archive of the objects links the edited formulas too."""
    return [cxx, "-r", "-nostdlib", "-o", output, *parts, base]


def compile_command(plan: CompilePlan, source: str, output: str, pch: str | None) -> list[str]:
    tool = plan.toolchain
    forced = ["-include", pch, "-Winvalid-pch", *tool.pch_use_flags()] if pch else []
    return [*tool.launcher, tool.cxx, *tool.flags, *forced, *tool.include_flags(),
            "-MD", "-MF", f"{output}.d", "-c", source, "-o", output]


def pch_command(plan: CompilePlan, header: Path) -> list[str]:
    """Through object_cache, which builds it beside, renames it into place (another build
    may be reading the PCH) and records its sum; no shell: the cache path is any text."""
    tool = plan.toolchain
    compile = [tool.cxx, *tool.flags, *tool.pch_flags(), *tool.include_flags(), "-x",
               "c++-header", str(header)]
    return [sys.executable, "-m", "gradshard.cache.objects.object_cache", "--pch",
            f"{header}.gch", pch_report(header), "--", *compile]


def pch_report(header: Path) -> str:
    """Where the PCH's build says how it went (`.log`, `.how`): this compile directory's."""
    return f"pch/{header.name}.gch"


def _ninja_quote(text: str) -> str:
    return _ninja_text(text).replace("$", "$$").replace(" ", "$ ").replace(":", "$:")


def _ninja_value(words: list[str]) -> str:
    """A command for ninja, which runs it with /bin/sh -c: each word quoted for the shell
    (shlex), then `$` doubled for ninja."""
    return _shell([_ninja_text(w) for w in words]).replace("$", "$$")


def _ninja_text(text: str) -> str:
    """ninja has no way to write a line break in a path or command."""
    if "\n" in text or "\r" in text:
        raise UsageError(f"a path holds a line break, which build.ninja cannot hold: {text!r}",
                         "rename the directory (--out, --cache, --compile-dir)")
    return text


def _shell(words: list[str]) -> str:
    return " ".join(shlex.quote(w) for w in words)


def longest_first(units: list[PreparedUnit],
                  pch_headers: dict[str, Path]) -> tuple[list[PreparedUnit], list[str]]:
    """The units, and the PCH kinds, in the order ninja should start them: among ready edges
    of equal depth ninja starts the first written, and starting the longest compiles first
    keeps the last ones short, so no core idles at the end of a cold build."""
    ordered = sorted(units, key=lambda p: estimated_seconds(p.unit), reverse=True)
    waiting = {kind: 0.0 for kind in pch_headers}
    for p in units:
        waiting[p.unit.pch] += estimated_seconds(p.unit)
    return ordered, sorted(waiting, key=lambda kind: waiting[kind], reverse=True)


def write_build_files(plan: CompilePlan, units: list[PreparedUnit],
                      pch_headers: dict[str, Path]) -> None:
    """build.ninja: one edge per PCH, per compile and per splice."""
    units, kinds = longest_first(units, pch_headers)
    wrapper = [sys.executable, "-m", "gradshard.cache.objects.object_cache", str(plan.objects)]
    lines = ["# @generated by gradshard: the compile of the generated C++", "",
             "ninja_required_version = 1.10", "",
             "rule cxx", "  command = $command", "  depfile = $out.d", "  deps = gcc",
             "  description = CXX $out", "",
             "rule pch", "  command = $command", "  description = PCH $out",
             "  restat = 1", "",
             "rule splice", "  command = $command", "  description = SPLICE $out", ""]
    for kind in kinds:
        gch = f"{pch_headers[kind]}.gch"
        # a PCH lives in the shared cache, keyed by content: built once, then reused (each
        # build checks it first: check_pchs)
        command = pch_command(plan, pch_headers[kind]) if not Path(gch).is_file() else ["true"]
        lines += [f"build {_ninja_quote(gch)}: pch {_ninja_quote(str(pch_headers[kind]))}",
                  f"  command = {_ninja_value(command)}", ""]
    for p in units:
        if p.is_splice:
            command = splice_command(plan.toolchain.cxx, p.output, p.parts, p.base)
            edge = f"splice {' '.join(map(_ninja_quote, p.parts))}"
        else:
            command = compile_command(plan, p.source, p.output, p.pch)
            edge = f"cxx {_ninja_quote(p.source)} | {_ninja_quote(p.pch + '.gch')}"
        lines += [f"build {_ninja_quote(p.output)}: {edge}",
                  f"  command = {_ninja_value([*wrapper, p.key, p.output, '--', *command])}",
                  ""]
    (plan.directory / "obj" / "parts").mkdir(parents=True, exist_ok=True)
    write_atomic(plan.directory / "build.ninja", "\n".join(lines).encode())


def write_compile_commands(plan: CompilePlan, units: list[PreparedUnit]) -> None:
    """How each source compiles, whether or not this build compiles it (a merged unit's
    parts are compiled on their own only once edited): what clangd needs to open any file."""
    directory = str(plan.directory.resolve())
    entries = [json.dumps({"directory": directory, "file": p.source,
                           "arguments": compile_command(plan, p.source, p.output, p.pch),
                           "output": p.output}) for p in units]
    # one entry a line: the C encoder (indent= takes the pure-Python one, 2x slower); the
    # file is left alone when it holds this already (a daemon's edits rarely change it)
    write_changed(plan.directory / "compile_commands.json",
                  ("[\n" + ",\n".join(entries) + "\n]\n").encode())


@dataclass(frozen=True)
class StaleObjects:
    """Which objects a build removes when no edge of it writes them: parts in obj/parts/
    always, and in obj/ the objects of merged units' parts always (a part compiled alone by
    an earlier layout would link a formula twice) and, when `linked` (a build of every
    unit), any object of an earlier layout (a build of selected units keeps the others')."""

    linked: bool
    parts: frozenset[str]  # every merged unit's parts, selected or not


def remove_stale_objects(plan: CompilePlan, units: list[PreparedUnit],
                         stale: StaleObjects) -> None:
    wanted = {p.output for p in units}
    for path in (plan.directory / "obj").glob("*.o"):
        if (stale.linked or path.stem in stale.parts) and f"obj/{path.name}" not in wanted:
            remove_object(path)
    for path in (plan.directory / "obj" / "parts").glob("*.o"):
        if f"obj/parts/{path.name}" not in wanted:
            remove_object(path)


def remove_object(path: Path) -> None:
    for suffix in ("", ".d", ".log", ".how"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)


def run_ninja(plan: CompilePlan, units: list[PreparedUnit], pch_headers: dict[str, Path],
              progress) -> CompileReport:
    """Run ninja over every unit; which ran, which came from the cache, which failed and,
    when the compiler's messages cannot say, why."""
    started = time.perf_counter()
    forget_outcomes(plan, units, pch_headers)
    before = {p.unit.name: _mtime(plan.directory / p.output) for p in units}
    command = [ninja_binary(), "-C", str(plan.directory), "-k", "0", "-j", str(plan.jobs)]
    env = dict(launcher_environment(plan.toolchain.launcher, dict(os.environ)),
               NINJA_STATUS="[%f/%t] ")
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True, env=env)
    captured = []
    assert process.stdout is not None
    for line in process.stdout:
        captured.append(line)
        progress(line)
    process.wait()
    report = CompileReport(units=len(units), seconds=time.perf_counter() - started,
                           pch_failures=pch_failures(plan, pch_headers))
    for p in units:
        record_unit(plan, p, before[p.unit.name], report)
    if process.returncode != 0 and not report.failed and not report.pch_failures:
        raise UsageError("ninja failed: " + "".join(captured[-20:]).strip(),
                         f"see {plan.directory / 'build.ninja'}")
    return report


def forget_outcomes(plan: CompilePlan, units: list[PreparedUnit],
                    pch_headers: dict[str, Path]) -> None:
    """What an earlier run said of the edges this run may run (ninja reruns every edge
    whose output is missing), so what is read after it is this run's."""
    for p in units:
        output = plan.directory / p.output
        Path(f"{output}.how").unlink(missing_ok=True)
        if not output.is_file():
            Path(f"{output}.log").unlink(missing_ok=True)
    for header in pch_headers.values():
        for suffix in (".how", ".log"):
            (plan.directory / f"{pch_report(header)}{suffix}").unlink(missing_ok=True)


def record_unit(plan: CompilePlan, p: PreparedUnit, before: int | None,
                report: CompileReport) -> None:
    output = plan.directory / p.output
    if p.is_splice and not all((plan.directory / part).is_file() for part in p.parts):
        remove_object(output)  # the last build's object, without the edit: not an output
        report.blocked.append(p.unit.name)
    log = Path(f"{output}.log")
    if log.is_file():
        report.logs[p.unit.name] = log.read_text(errors="replace")
    outcome = read_outcome(Path(f"{output}.how"))
    report.warnings.extend(w for w in outcome.get("warnings", ()) if isinstance(w, str))
    if isinstance(outcome.get("failure"), dict):
        report.failures[p.unit.name] = outcome["failure"]
    if not output.is_file():
        report.failed.append(p.unit.name)
    elif _mtime(output) != before:
        ran = report.spliced if p.is_splice else report.compiled
        (report.cached if outcome.get("how") == "cached" else ran).append(p.unit.name)


def read_outcome(path: Path) -> dict:
    """object_cache's record of an edge (how, warnings, failure); {} when it did not run."""
    try:
        outcome = json.loads(_read(path, RECORD_BYTES) or b"null")
    except ValueError:
        return {}
    return outcome if isinstance(outcome, dict) else {}


def pch_failures(plan: CompilePlan, pch_headers: dict[str, Path]) -> list[PchFailure]:
    """The PCHs this run failed to build (their units did not run)."""
    failed = []
    for kind, header in sorted(pch_headers.items()):
        report = plan.directory / pch_report(header)
        outcome = read_outcome(Path(f"{report}.how"))
        if Path(f"{header}.gch").is_file() and outcome.get("how") != "failed":
            continue
        failure = outcome.get("failure")
        log = _read(Path(f"{report}.log"), LOG_BYTES) or b""
        failed.append(PchFailure(kind, str(header), failure if isinstance(failure, dict) else None,
                                 log.decode(errors="replace")))
    return failed


def _mtime(path: Path) -> int | None:
    try:
        return path.stat().st_mtime_ns
    except OSError:
        return None


LOG_BYTES = 64 << 20  # of a PCH build's messages: more is no message


def _read(path: Path, limit: int) -> bytes | None:
    """The file's bytes; None when it is missing, unreadable, no regular file or larger
    than `limit` (what reads it then takes it for damaged or absent)."""
    try:
        return read_regular(path, limit)
    except OSError:
        return None


# ---------------------------------------------------------------------------------------------
# The compile layout, as read from the cache


UNIT_NAME = re.compile(r"[A-Za-z0-9_-]+")  # Functions_formulas_00-11, python_functions_2


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
# The compile cache's entries, recorded in the store (cache/objects/entries.py)


@dataclass(frozen=True)
class EntryLedger:
    """Where a build with a store records the entries it uses: which, before ninja runs (gc
    then leaves them), and their files, after. The wrappers under ninja never open SQLite."""

    store: Store
    build: int
    plan: CompilePlan
    fingerprint: str

    @classmethod
    def of(cls, store: Store | None, build: int, plan: CompilePlan,
           fingerprint: str) -> EntryLedger | None:
        if store is None:
            return None
        compile_entries.ensure_tables(store)
        return cls(store, build, plan, fingerprint)

    def hold(self, layout: CompileLayout, edges: list[PreparedUnit],
             merged: list[PreparedUnit], pch_headers: dict[str, Path]) -> None:
        compile_entries.hold(self.store, self.build, str(self.plan.directory.resolve()),
                             self.uses(layout, edges, merged, pch_headers, None))

    def record(self, layout: CompileLayout, edges: list[PreparedUnit],
               merged: list[PreparedUnit], pch_headers: dict[str, Path],
               report: CompileReport) -> None:
        compile_entries.record(self.store, self.build, self.plan.cache,
                               self.uses(layout, edges, merged, pch_headers, report))

    def uses(self, layout: CompileLayout, edges: list[PreparedUnit], merged: list[PreparedUnit],
             pch_headers: dict[str, Path], report: CompileReport | None) -> list[EntryUse]:
        """Every entry the edges read or write: the PCHs, each edge's object (a splice's
        too, and the stored object it splices over), the merged units' baselines, the memo;
        with the run's report, which of them it served and which it made."""
        toolchain = xxhash.xxh3_128_hexdigest(self.plan.toolchain.identity().encode())
        depends = {"toolchain": toolchain, "headers": self.fingerprint}
        uses = [EntryUse("header_memo", HEADER_MEMO, "")]
        for header in pch_headers.values():
            served = None if report is None else self.pch_served(header)
            uses.append(EntryUse("pch", pch_entry(header.parent.name), header.parent.name,
                                 served=served, **depends))
        for p in edges:
            served = None if report is None else _served(p.unit.name, report)
            uses.append(EntryUse("splice" if p.is_splice else "object", object_entry(p.key),
                                 p.key, served=served, **depends))
            if p.is_splice:
                base = Path(p.base).stem
                uses.append(EntryUse("object", object_entry(base), base, **depends))
        for whole in merged:
            path = baseline_path(self.plan, layout, whole.unit, whole.pch)
            uses.append(EntryUse("baseline", f"{BASELINES}/{path.name}", path.stem, **depends))
        return uses

    def pch_served(self, header: Path) -> bool:
        """A PCH was served unless this run built it (no record: its edge found it)."""
        return read_outcome(self.plan.directory / f"{pch_report(header)}.how").get(
            "how") != "compiled"


def _served(name: str, report: CompileReport) -> bool | None:
    """True: the object cache served the edge; False: it ran; None: ninja found it done."""
    if name in report.cached:
        return True
    return False if name in report.compiled or name in report.spliced else None


# ---------------------------------------------------------------------------------------------
# The compile step of `gradshard build`


@dataclass(frozen=True)
class CompileOptions:
    directory: Path | None = None  # default: <out>/compile
    cxx: str | None = None
    flags: tuple[str, ...] = ()
    includes: tuple[str, ...] = ()
    launcher: str | None = None
    jobs: int = 0  # 0: the machine's cores
    shards: ShardSettings = ShardSettings()
    units: tuple[str, ...] = ()  # shell patterns of the units to compile (default: all)


def selected(layout: CompileLayout, patterns: tuple[str, ...]) -> CompileLayout:
    """The units whose names match; a formula unit that is part of a merged unit is built
    through it (compiled whole or spliced), so it selects its merged unit and the merged
    unit's other parts, and obj/ never holds a part's object beside its merged unit's."""
    if not patterns:
        return layout
    merged = tuple(m for m in layout.merged
                   if any(_matches(name, patterns) for name in (m.name, *m.parts)))
    names = {name for m in merged for name in m.parts}
    units = tuple(u for u in layout.units if u.name in names or _matches(u.name, patterns))
    if not units:
        raise UsageError(f"no compile unit matches {', '.join(patterns)}",
                         "unit names look like Functions_formulas_07, Functions_03, "
                         "VariableType_mm, python_functions_2, python_bindings_0, "
                         "python_variable_methods "
                         "(OUT/compile/compile_commands.json lists them)")
    return CompileLayout(layout.files, units, merged)


def _matches(name: str, patterns: tuple[str, ...]) -> bool:
    return any(fnmatch.fnmatchcase(name, p) for p in patterns)


def compile_edges(plan: CompilePlan, layout: CompileLayout, units: list[PreparedUnit],
                  merged: list[PreparedUnit], pch_headers: dict[str, Path], stale: StaleObjects,
                  progress: Callable[[str], None], ledger: EntryLedger | None = None
                  ) -> tuple[list[PreparedUnit], CompileReport]:
    """Plan, write build.ninja, run ninja, record the merged units' baselines (and, with a
    store, the cache entries the edges use: taken before ninja, recorded after). A splice
    that fails (a damaged stored object, a linker that cannot link relocatably) forgets its
    baseline and its merged unit compiles whole at once, so the failure never repeats."""
    by_name = {p.unit.name: p for p in units}
    report = CompileReport()
    for _ in range(2):
        edges = plan_merged(plan, layout, units, merged)
        if ledger is not None:
            ledger.hold(layout, edges, merged, pch_headers)
        remove_stale_objects(plan, edges, stale)
        write_build_files(plan, edges, pch_headers)
        ran = run_ninja(plan, edges, pch_headers, progress)
        report = report.then(ran)
        write_baselines(plan, layout, edges, by_name)
        if ledger is not None:
            ledger.record(layout, edges, merged, pch_headers, ran)
        broken = [e for e in edges if e.is_splice and e.unit.name in report.failed
                  and e.unit.name not in report.blocked]
        if not broken:
            break
        for edge in broken:
            baseline_path(plan, layout, edge.unit, edge.pch).unlink(missing_ok=True)
    return edges, report


def compile_generated(request: BuildRequest, build_id: int, run: GraphResult,
                      session: OpenCache, options: CompileOptions,
                      progress: Callable[[str], None]) -> CompileReport:
    """Compile what the build generated, from the layout of its graph run `run` (over the
    inputs it read: an edit saved meanwhile waits for the next build); raises CompileError
    (after compiling every unit it can) when generated code does not compile,
    EnvironmentFailure when the machine failed (a full disk). Damaged cache entries it made
    again are the session's warnings (the build's)."""
    try:
        return _compile_generated(request, build_id, run, session, options, progress)
    except OSError as error:
        failure = EnvironmentFailure.from_os_error(error)
        if failure is None:
            raise
        raise failure from None


def _compile_generated(request: BuildRequest, build_id: int, graph: GraphResult,
                       session: OpenCache, options: CompileOptions,
                       progress: Callable[[str], None]) -> CompileReport:
    location, out = request.location, request.out
    toolchain = find_toolchain(location, options.cxx, options.flags, options.includes,
                               options.launcher)
    store = session.open()
    whole = graph.layout(options.shards)  # on the build's own run: the graph ran once
    check_layout(whole, graph.files, store)
    directory = options.directory or out / "compile"
    cache = Path(session.directory or directory / "cache").resolve()  # ninja runs in directory
    plan = CompilePlan(directory, cache, toolchain, options.jobs or os.cpu_count() or 1,
                       sound_objects=session.sound_objects)
    files = dict(whole.files)
    written = sync_compile_dir(plan, whole,
                               lambda names: graph.texts({n: files[n] for n in names}), store,
                               session.known_hashes)
    layout = selected(whole, options.units)
    fingerprint = header_fingerprint(plan.toolchain, plan.cache / HEADER_MEMO, plan.warnings)
    units, merged, pch_headers = prepare_units(plan, layout, graph.files,
                                               generated_dir(out, request.placement.tree),
                                               fingerprint)
    check_pchs(plan, pch_headers, session.sound_pchs)
    write_compile_commands(plan, [*units, *merged])
    stale = StaleObjects(linked=not options.units,
                         parts=frozenset(n for m in whole.merged for n in m.parts))
    ledger = EntryLedger.of(store, build_id, plan, fingerprint)
    edges, report = compile_edges(plan, layout, units, merged, pch_headers, stale, progress,
                                  ledger)
    report.written = written
    report.warnings = union(plan.warnings, report.warnings)
    session.warnings.extend(report.warnings)
    if report.failed or report.pch_failures:
        raise compile_failure(report, [p.unit for p in edges], whole.units,
                              FailureSource.of(directory, graph, location))
    return report


@dataclass(frozen=True)
class FailureSource:
    """Where compiler errors are placed: the compile directory, the derivatives.yaml the
    build read (text and path) and each node's entry."""

    directory: Path
    derivatives: str
    node_entries: dict[str, str]
    path: str

    @classmethod
    def of(cls, directory: Path, graph: GraphResult, location: SpecLocation) -> FailureSource:
        index = graph.index
        names = dict(zip((n for n, _ in index.nodes), index.node_keys))
        names.update(kernel_entries(graph.engine, index))
        # the derivatives.yaml text as the build read it, not as it is now
        return cls(directory, graph.decoded.texts.derivatives, names,
                   str(location.path_of(SpecFile.DERIVATIVES)))


def kernel_entries(engine: Engine, index: BuildIndex) -> dict[str, str]:
    """Each autograd kernel (by wrapper name) and the derivatives entry its formulas come
    from (read only when a compile failed)."""
    kernels = engine.records([engine.ref(code, RenderedKernel) for _, code in index.kernels])
    return {k.wrapper: k.entry for k in kernels if k.entry}


def compile_failure(report: CompileReport, edges: list[CompileUnit],
                    all_units: tuple[CompileUnit, ...], source: FailureSource
                    ) -> EnvironmentFailure | CompileError:
    """The error of a failed compile: the machine's (a full disk: exit 2), else every
    compiler error at its source, and for what failed without one, why (a PCH that failed to
    build, a killed compiler, a compiler that printed nothing placeable)."""
    environment = environment_failure(report)
    if environment is not None:
        return environment
    diagnostics = [pch_failure_diagnostic(f) for f in report.pch_failures]
    causes = list(diagnostics)
    for unit in (u for u in edges if u.name in report.failed):
        found = diagnose([unit], all_units, report.logs, source.directory, source.derivatives,
                         source.node_entries)
        cause = [] if found else [unit_failure_diagnostic(unit, report)]
        diagnostics += found + cause
        causes += cause
    raw = "".join([*(f.log for f in report.pch_failures),
                   *(report.logs.get(name, "") for name in report.failed),
                   *(f"gradshard: {d.generated}: {d.message}\n" for d in causes)])
    return CompileError(diagnostics, report.failed, raw, source.path)
