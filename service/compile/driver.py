"""The compile step of `gradshard build`: the generated C++ compiled in a compile directory,
through ninja, from the layout of the build's own graph run.

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

A compile (`compile_generated`) checks the layout, makes the compile directory hold its
files, gives each unit its key and PCH and plans each merged unit, compiled whole or its
edited parts spliced (plan.py); it writes build.ninja, runs ninja and, with a store, records
the cache entries it used (ninja.py). Every compile goes through
cache/objects/object_cache.py, so a unit whose key (its text, its generated headers, the
toolchain, the header fingerprint) is stored compiles nothing.

Where --out holds the real generator's files (a spec whose generator gradshard does not
reproduce, and whose files differ), their families compile as they are from --out instead of
gradshard's units for them (pipeline/layout/as_is.py: the layout, and the rules for headers);
the generated headers copied from --out are read from there, checked against the hashes the
build wrote, and are part of the precompiled headers' keys.

The cache directory is input (CI restores it): the compile layout read from it must name
units, PCH kinds, sources, headers and parts a layout can have (`check_layout`), every key
read from it is checked to be a key (hex, so no path can hide in it), every file read from it
is read as a regular file of bounded size (cache/store/regular_files.py: a FIFO or /dev/zero
there is damage, never waited on), every stored object, depfile, splice and PCH is checked
against the sum stored with it before use, and a damaged one is removed with a warning and
made again. No command is run through a shell of our own; ninja's commands are quoted word
by word (shlex) and for ninja, and build.ninja's paths for ninja (service/ninja_manifest.py,
which `try`'s build file shares).
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Mapping, Protocol

import xxhash

from gradshard.cache.engine.fork import processors
from gradshard.cache.errors import CompileError, EnvironmentFailure, UsageError
from gradshard.cache.store.database import blob_hash
from gradshard.cache.store.directory import HEADER_MEMO
from gradshard.cache.store.regular_files import read_regular
from gradshard.pipeline.layout.as_is import AsIsLayout, as_is_layout
from gradshard.pipeline.layout.compile_layout import CompileLayout, CompileUnit, ShardSettings
from gradshard.pipeline.problems import SpecFile
from gradshard.service.compile.diagnostics import diagnose
from gradshard.service.compile.ninja import (EntryLedger, StaleObjects, remove_stale_objects,
                                             run_ninja, write_build_files,
                                             write_compile_commands)
from gradshard.service.compile.plan import (CompilePlan, PreparedUnit, baseline_path,
                                            check_layout, check_pchs, plan_merged, prepare_units,
                                            sync_compile_dir, write_baselines)
from gradshard.service.compile.report import (CompileReport, environment_failure,
                                              pch_failure_diagnostic, union,
                                              unit_failure_diagnostic)
from gradshard.service.compile.toolchain import (check_header_release, find_toolchain,
                                                 header_fingerprint)
from gradshard.service.files.placement import generated_dir
from gradshard.service.outcome import BuildRequest

if TYPE_CHECKING:
    from gradshard.service.files.spec_location import SpecLocation
    from gradshard.service.open_cache import OpenCache

__all__ = ["CompileOptions", "CompileSource", "compile_generated", "out_text"]


class CompileSource(Protocol):
    """What a compile is cut from: a build's graph run (service/graph_run.py: GraphResult) or
    its host generation (service/host/generation.py: HostCompileInput)."""

    @property
    def files(self) -> dict[str, str]:
        """The files --out holds: index name → text hash."""

    def layout(self, settings: ShardSettings) -> CompileLayout:
        """The compile layout over those files."""

    def texts(self, hashes: dict[str, str]) -> dict[str, str]:
        """The texts of the layout's files, by path (path → text hash)."""

    def placing(self) -> tuple[str, dict[str, str]]:
        """The derivatives.yaml text the files were made from, and the entry of each node
        and kernel (by wrapper name): where compile errors are placed."""


@dataclass(frozen=True)
class CompileOptions:
    """How a build compiles: the build command's compile options (service/options.py:
    compile_options)."""

    directory: Path | None = None  # default: <out>/compile
    cxx: str | None = None
    flags: tuple[str, ...] = ()
    includes: tuple[str, ...] = ()
    launcher: str | None = None
    jobs: int = 0  # 0: the processors it may run on (as options.jobs_of)
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


def compile_generated(request: BuildRequest, build_id: int, run: CompileSource,
                      session: OpenCache, options: CompileOptions,
                      progress: Callable[[str], None],
                      real_files: Mapping[str, str] | None = None) -> CompileReport:
    """Compile what the build generated, from the layout of its graph run `run` (over the
    inputs it read: an edit saved meanwhile waits for the next build); raises CompileError
    (after compiling every unit it can) when generated code does not compile,
    EnvironmentFailure when the machine failed (a full disk). Damaged cache entries it made
    again are the session's warnings (the build's). `real_files`: the files (index name →
    hash of the text written to --out, as builds record them: blob_hash "text"; "" for a
    file of gradshard's that the real generator does not write) that come from the spec's
    real generator; their families compile as they are from --out (pipeline/layout/as_is.py)."""
    try:
        return _compile_generated(request, build_id, run, session, options, progress,
                                  real_files or {})
    except OSError as error:
        failure = EnvironmentFailure.from_os_error(error)
        if failure is None:
            raise
        raise failure from None


def _compile_generated(request: BuildRequest, build_id: int, graph: CompileSource,
                       session: OpenCache, options: CompileOptions,
                       progress: Callable[[str], None],
                       real_files: Mapping[str, str]) -> CompileReport:
    location, out = request.location, request.out
    out_dir = generated_dir(out, request.placement.tree)
    toolchain = find_toolchain(location, options.cxx, options.flags, options.includes,
                               options.launcher)
    check_header_release(toolchain, request.identity.rules_release)
    store = session.open()
    whole = graph.layout(options.shards)  # on the build's own run: the graph ran once
    check_layout(whole, graph.files, store)
    as_is, out_files = AsIsLayout(whole), graph.files
    if real_files:
        as_is, out_files = real_layout(whole, out_files, real_files)
        whole = as_is.layout
    directory = options.directory or out / "compile"
    cache = Path(session.directory or directory / "cache").resolve()  # ninja runs in directory
    plan = CompilePlan(directory, cache, toolchain, options.jobs or processors(),
                       sound_objects=session.sound_objects)
    sync = sync_compile_dir(plan, whole, store, session.known_hashes)
    written = sync.write(compile_dir_texts(graph, dict(whole.files), dict(as_is.copies),
                                           real_files, out_dir, sync.stale) if sync.stale else {})
    layout = selected(whole, options.units)
    fingerprint = header_fingerprint(plan.toolchain, plan.cache / HEADER_MEMO, plan.warnings)
    units, merged, pch_headers = prepare_units(plan, layout, out_files, out_dir,
                                               pch_fingerprint(fingerprint, as_is))
    check_pchs(plan, pch_headers, session.sound_pchs)
    write_compile_commands(plan, [*units, *merged])
    # gradshard's units an as-is file replaces: their objects would define its code twice
    always = frozenset(n for m in whole.merged for n in m.parts) | frozenset(as_is.dropped)
    stale = StaleObjects(linked=not options.units, parts=always)
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


def real_layout(whole: CompileLayout, files: dict[str, str],
                real_files: Mapping[str, str]) -> tuple[AsIsLayout, dict[str, str]]:
    """The layout compiling the real generator's files as they are, and the files --out
    holds (the build's, with the real hashes: what from-out units are keyed by; without
    those the real generator does not write, "" in `real_files`; with those only it does)."""
    out_files = {n: h for n, h in {**files, **real_files}.items() if h}
    as_is = as_is_layout(whole, out_files, real_files)
    # made here from a checked layout and hashes the build computed: a problem is a bug
    check_layout(as_is.layout, out_files, None)
    return as_is, out_files


def compile_dir_texts(graph: CompileSource, hashes: dict[str, str], copies: dict[str, str],
                      real_files: Mapping[str, str], out_dir: Path,
                      names: list[str]) -> dict[str, str]:
    """The texts of these compile-directory files: the real generator's from --out (the
    engine never held them), every other from the graph run."""
    from_out = [n for n in names if copies.get(n) in real_files]
    texts = graph.texts({n: hashes[n] for n in names if n not in from_out})
    texts.update((n, out_text(out_dir / copies[n], hashes[n])) for n in from_out)
    return texts


# A generated header's most bytes (2.13's largest, Functions.h, holds ~0.5 MB).
OUT_TEXT_BYTES = 64 << 20


def out_text(path: Path, digest: str) -> str:
    """An --out file's text as the build wrote it: one that changed since is refused (its
    copy would not be the text the units are keyed by)."""
    data = read_regular(path, OUT_TEXT_BYTES)
    if blob_hash("text", data) != digest:  # as the build records --out's files
        raise UsageError(f"{path} changed after the build wrote it",
                         "run the build again, and leave --out alone while it runs")
    return data.decode("utf-8")


def pch_fingerprint(fingerprint: str, as_is: AsIsLayout) -> str:
    """The header fingerprint the PCH keys hash: the installed headers', and the generated
    headers copied from --out, which the PCHs include (their keys hash the prelude only)."""
    if not as_is.copies:
        return fingerprint
    files = dict(as_is.layout.files)
    copied = sorted(f"{path}={files[path]}" for path, _ in as_is.copies)
    return xxhash.xxh3_128_hexdigest("\0".join((fingerprint, *copied)).encode())


@dataclass(frozen=True)
class FailureSource:
    """Where compiler errors are placed: the compile directory, the derivatives.yaml the
    build read (text and path) and each node's entry."""

    directory: Path
    derivatives: str
    node_entries: dict[str, str]
    path: str

    @classmethod
    def of(cls, directory: Path, source: CompileSource, location: SpecLocation) -> FailureSource:
        derivatives, entries = source.placing()
        return cls(directory, derivatives, entries, str(location.path_of(SpecFile.DERIVATIVES)))


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
    return CompileError(diagnostics, report.failed, raw, source.path, str(source.directory))
