"""Compiling the generated C++: the compile directory, its build.ninja, and the run.

    <compile dir>/
      include/torch/csrc/autograd/generated/   Functions.h (prelude), python_functions.h, …
      include/gradshard/nodes/<Node>.h         one node's struct
      src/Functions_formulas_NN.cpp, src/Functions_N.cpp, src/python_functions_K.cpp,
      src/python_bindings_K.cpp (+ src/bindings/: copies of the binding files it includes)
      obj/<unit>.o                             objects (and .log: the compiler's messages)
      build.ninja, compile_commands.json
    <cache>/pch/<key>/{autograd,python}.h(.gch)   precompiled headers, per header set
    <cache>/objects/                               objects by content key

Every compile goes through service/object_cache.py, so a unit whose key (its text, its
generated headers, the toolchain, the header fingerprint) is stored compiles nothing.
ninja runs with -k 0: one failing unit does not stop the others.
"""

from __future__ import annotations

import fnmatch
import json
import os
import shlex
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import xxhash

from gradshard.pipeline.compile_layout import (PRELUDE_PATH, CompileLayout, CompileUnit,
                                               ShardSettings, estimated_seconds)
from gradshard.pipeline.errors import CompileError, SpecFile, UsageError

from .build import BuildOutcome
from .diagnostics import diagnose
from .outputs import sync_outputs, write_atomic
from .toolchain import Toolchain, find_toolchain, header_fingerprint, launcher_environment

FILE_LIST = ".gradshard-files.json"  # what the last sync wrote, so stale files are removed


@dataclass
class CompileReport:
    units: int = 0
    compiled: list[str] = field(default_factory=list)  # units whose compiler ran
    cached: list[str] = field(default_factory=list)  # units served from the object cache
    failed: list[str] = field(default_factory=list)
    written: int = 0  # compile-directory files rewritten
    seconds: float = 0.0
    logs: dict[str, str] = field(default_factory=dict)  # unit → compiler output


@dataclass(frozen=True)
class CompilePlan:
    """Where things go: the compile directory, the cache's PCH and object stores."""

    directory: Path
    cache: Path
    toolchain: Toolchain
    jobs: int

    @property
    def objects(self) -> Path:
        return self.cache / "objects"


def sync_compile_dir(plan: CompilePlan, layout: CompileLayout,
                     load: Callable[[list[str]], dict[str, str]]) -> int:
    """Make the compile directory hold the layout's files; returns how many were written."""
    files = dict(layout.files)
    for parent in {(plan.directory / p).parent for p in files}:
        parent.mkdir(parents=True, exist_ok=True)
    listing = plan.directory / FILE_LIST
    try:
        previous = json.loads(listing.read_text())
    except (OSError, ValueError):
        previous = []
    report = sync_outputs(plan.directory, files, load, previous)
    write_atomic(listing, json.dumps(sorted(files)).encode())
    return len(report.written)


def pch_key(plan: CompilePlan, layout: CompileLayout, fingerprint: str, kind: str) -> str:
    """A precompiled header depends on its text, the prelude it includes, the toolchain and
    the installed headers."""
    files = dict(layout.files)
    return xxhash.xxh3_128_hexdigest("\0".join((
        plan.toolchain.identity(), fingerprint, files[f"pch/{kind}.h"],
        files[PRELUDE_PATH])).encode())


def unit_key(plan: CompilePlan, layout: CompileLayout, unit: CompileUnit, source_hash: str,
             pch: str) -> str:
    files = dict(layout.files)
    return xxhash.xxh3_128_hexdigest("\0".join((
        plan.toolchain.identity(), pch, unit.source, source_hash,
        *(f"{h}={files[h]}" for h in unit.headers))).encode())


@dataclass(frozen=True)
class PreparedUnit:
    unit: CompileUnit
    source: str  # path as the compiler sees it (relative to the compile directory, or absolute)
    output: str
    key: str
    pch: str  # absolute path of the PCH's header


def prepare_units(plan: CompilePlan, layout: CompileLayout, out_files: dict[str, str],
                  out_dir: Path) -> tuple[list[PreparedUnit], dict[str, Path]]:
    fingerprint = header_fingerprint(plan.toolchain, plan.cache / "headers.json")
    files = dict(layout.files)
    pch_headers = {}
    for kind in sorted({u.pch for u in layout.units}):
        directory = plan.cache / "pch" / pch_key(plan, layout, fingerprint, kind)
        directory.mkdir(parents=True, exist_ok=True)
        header = directory / f"{kind}.h"
        if not header.is_file():
            write_atomic(header, (plan.directory / "pch" / f"{kind}.h").read_bytes())
        pch_headers[kind] = header
    prepared = []
    for unit in layout.units:
        if unit.from_out:
            source, source_hash = str((out_dir / unit.source).resolve()), out_files[unit.source]
        else:
            source, source_hash = unit.source, files[unit.source]
        key = unit_key(plan, layout, unit, source_hash, pch_headers[unit.pch].parent.name)
        prepared.append(PreparedUnit(unit, source, f"obj/{unit.name}.o", key,
                                     str(pch_headers[unit.pch])))
    return prepared, pch_headers


def compile_command(plan: CompilePlan, source: str, output: str, pch: str | None) -> list[str]:
    tool = plan.toolchain
    forced = ["-include", pch, "-Winvalid-pch"] if pch else []
    return [*tool.launcher, tool.cxx, *tool.flags, *forced, *tool.include_flags(),
            "-MD", "-MF", f"{output}.d", "-c", source, "-o", output]


def pch_command(plan: CompilePlan, header: Path) -> list[str]:
    """Written beside and renamed into place: another build may be reading the PCH."""
    tool = plan.toolchain
    compile = [tool.cxx, *tool.flags, *tool.include_flags(), "-x", "c++-header", str(header)]
    gch = f"{header}.gch"
    return ["sh", "-c", f'{_shell(compile)} -o "{gch}.tmp$$" && mv -f "{gch}.tmp$$" "{gch}"']


def _ninja_quote(text: str) -> str:
    return text.replace("$", "$$").replace(" ", "$ ").replace(":", "$:")


def _ninja_value(words: list[str]) -> str:
    return _shell(words).replace("$", "$$")


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
    """build.ninja (one edge per unit and per PCH) and compile_commands.json."""
    units, kinds = longest_first(units, pch_headers)
    wrapper = [sys.executable, "-m", "gradshard.service.object_cache", str(plan.objects)]
    lines = ["# @generated by gradshard: the compile of the generated C++", "",
             "ninja_required_version = 1.10", "",
             "rule cxx", "  command = $command", "  depfile = $out.d", "  deps = gcc",
             "  description = CXX $out", "",
             "rule pch", "  command = $command", "  description = PCH $out",
             "  restat = 1", ""]
    for kind in kinds:
        gch = f"{pch_headers[kind]}.gch"
        # a PCH lives in the shared cache, keyed by content: built once, then reused
        command = pch_command(plan, pch_headers[kind]) if not Path(gch).is_file() else ["true"]
        lines += [f"build {_ninja_quote(gch)}: pch {_ninja_quote(str(pch_headers[kind]))}",
                  f"  command = {_ninja_value(command)}", ""]
    entries = []
    for p in units:
        command = compile_command(plan, p.source, p.output, p.pch)
        wrapped = [*wrapper, p.key, p.output, "--", *command]
        lines += [f"build {_ninja_quote(p.output)}: cxx {_ninja_quote(p.source)} | "
                  f"{_ninja_quote(p.pch + '.gch')}",
                  f"  command = {_ninja_value(wrapped)}", ""]
        entries.append({"directory": str(plan.directory.resolve()), "file": p.source,
                        "arguments": command, "output": p.output})
    (plan.directory / "obj").mkdir(exist_ok=True)
    write_atomic(plan.directory / "build.ninja", "\n".join(lines).encode())
    write_atomic(plan.directory / "compile_commands.json",
                 (json.dumps(entries, indent=2) + "\n").encode())


def ninja_binary() -> str:
    try:
        import ninja  # the PyPI package ships the binary

        candidate = Path(ninja.BIN_DIR) / "ninja"
        if candidate.is_file():
            return str(candidate)
    except ImportError:
        pass
    found = shutil.which("ninja")
    if found is None:
        raise UsageError("ninja is not installed", "pip install ninja")
    return found


def run_ninja(plan: CompilePlan, units: list[PreparedUnit], progress) -> CompileReport:
    """Run ninja over every unit; which ran, which came from the cache, which failed."""
    started = time.perf_counter()
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
    report = CompileReport(units=len(units), seconds=time.perf_counter() - started)
    for p in units:
        output = plan.directory / p.output
        log = Path(f"{output}.log")
        if log.is_file():
            report.logs[p.unit.name] = log.read_text(errors="replace")
        if not output.is_file():
            report.failed.append(p.unit.name)
        elif _mtime(output) != before[p.unit.name]:
            how = _read(Path(f"{output}.how"))
            (report.cached if how == "cached" else report.compiled).append(p.unit.name)
    if process.returncode != 0 and not report.failed:
        raise UsageError("ninja failed: " + "".join(captured[-20:]).strip(),
                         f"see {plan.directory / 'build.ninja'}")
    return report


def _mtime(path: Path) -> int | None:
    try:
        return path.stat().st_mtime_ns
    except OSError:
        return None


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


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
    if not patterns:
        return layout
    units = tuple(u for u in layout.units if any(fnmatch.fnmatchcase(u.name, p) for p in patterns))
    if not units:
        raise UsageError(f"no compile unit matches {', '.join(patterns)}",
                         "unit names look like Functions_formulas_07, Functions_3, "
                         "python_functions_2, python_bindings_0, python_variable_methods "
                         "(OUT/compile/compile_commands.json lists them)")
    return CompileLayout(layout.files, units)


def compile_generated(built: BuildOutcome, session, options: CompileOptions,
                      progress: Callable[[str], None]) -> CompileReport:
    """Compile what the build generated, from the inputs it read (an edit saved meanwhile
    waits for the next build); raises CompileError (after compiling every unit it can) when
    generated code does not compile."""
    from .incremental import Generation, compile_layout

    location, out = built.location, built.out
    toolchain = find_toolchain(location, options.cxx, options.flags, options.includes,
                               options.launcher)
    store = session.open()
    generation = Generation.prepare(built.inputs)
    result = compile_layout(generation, store, built.build_id, options.shards)
    directory = options.directory or out / "compile"
    cache = session.directory or directory / "cache"
    plan = CompilePlan(directory, cache, toolchain, options.jobs or os.cpu_count() or 1)
    files = dict(result.layout.files)
    written = sync_compile_dir(plan, result.layout,
                               lambda names: result.load({n: files[n] for n in names}))
    units, pch_headers = prepare_units(plan, selected(result.layout, options.units),
                                       result.out_files, out)
    write_build_files(plan, units, pch_headers)
    report = run_ninja(plan, units, progress)
    report.written = written
    if report.failed:
        failed = [p.unit for p in units if p.unit.name in report.failed]
        names = dict(zip((n for n, _ in result.index.nodes), result.index.node_keys))
        path = location.path_of(SpecFile.DERIVATIVES)
        derivatives = generation.texts.derivatives  # as the build read it, not as it is now
        raise CompileError(diagnose(failed, report.logs, directory, derivatives, names),
                           report.failed,
                           "".join(report.logs.get(name, "") for name in report.failed),
                           str(path))
    return report
