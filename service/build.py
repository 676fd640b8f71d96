"""`gradshard build`: the cached one-shot build, for CI and for terminals.

1. Read and hash the inputs. If the last build of this spec into this directory read the
   same inputs and every output file still holds what it wrote, stop: nothing heavy is
   imported on this path.
2. Otherwise run the build graph on the engine (cache/graph/build_graph.py), write the files that
   differ, remove the files an earlier build wrote that this one does not produce, and
   record the manifest.
3. Unless --codegen-only, compile what was generated (service/compile/driver.py), from the layout
   of the same graph run (an up-to-date build runs the graph once, for the layout only).
4. Apply GRADSHARD_CACHE_MAX, once the build has ended.

The cache is never trusted: a damaged database found by either step is set aside and both
run again; a value missing behind a group index restarts the graph with every group
re-entered; a file name from the cache that would leave --out (or the compile directory) is
damage too. A spec error stops everything before any file is written; the graph reports
every problem of its first failing phase, each at its file and line, and keeps them as
task outputs (the next run reports them from the cache). From its first read to its last
compile, a build holds a lease on the cache (gc leaves what it wrote and read); a build
that fails gives it up.
"""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path
from functools import partial
from typing import TYPE_CHECKING, Callable

from gradshard.cache.store.directory import CACHE_MAX_VARIABLE
from gradshard.cache.store.database import LastBuild, Store, StoreDamaged
from gradshard.pipeline.problems import GradshardError
from gradshard.cache.errors import CompileError

from gradshard.service.files.inputs import InputBytes, read_inputs
from gradshard.service.open_cache import OpenCache
from gradshard.service.outcome import BuildOutcome
from gradshard.service.files.outputs import (UnsafeOutputName, WriteReport, cache_damage,
                                             files_left, outputs_match, sync_outputs)
from gradshard.service.files.spec_location import SpecLocation
from gradshard.service.files.placement import Placement, index_names, placed_files

if TYPE_CHECKING:
    from gradshard.service.compile.driver import CompileOptions
    from gradshard.service.compile.report import CompileReport
    from gradshard.service.graph_run import Generation, GraphResult


def build_and_compile(location: SpecLocation, out: Path, session: OpenCache,
                      options: CompileOptions | None, progress: Callable[[str], None],
                      verify: bool = False,
                      generated: Callable[[], None] | None = None,
                      placement: Placement = Placement()) -> BuildOutcome:
    """The build, then the compile of what it generated (none when `options` is None:
    --codegen-only), as one build of the cache: one lease from the first read to the last
    object, one run of the graph (the compile reads its layout from the build's own run),
    and a cache found damaged in either step set aside and both run again. A spec error or a
    compile error is reported, never retried. `verify` runs every task and compares it with
    the cache (never "up to date"). `generated` runs between a successful generation and the
    compile (the daemon's --try checks: service/daemon/try_checks.py). `placement`: which files go
    where under `out` (service/files/placement.py)."""
    return session.retrying(partial(_build_and_compile_once, location, out, session, options,
                                    progress, verify, generated, placement))


def ignore_progress(line: str) -> None:
    """A compile's progress lines, for nobody."""


def _build_and_compile_once(location: SpecLocation, out: Path, session: OpenCache,
                            options: CompileOptions | None, progress: Callable[[str], None],
                            verify: bool, generated: Callable[[], None] | None,
                            placement: Placement) -> BuildOutcome:
    started = time.perf_counter()
    generate, keys = _generator(location, out, session, started, verify, placement)
    store = session.store
    build = store.begin_build(*keys) if store is not None else 0
    outcome = None
    try:
        outcome = generate(build)
        if generated is not None:
            generated()
        if options is not None:
            outcome.compiled = compile_outcome(outcome, session, options, progress)
    except BaseException as failure:
        _give_up(session, build, outcome, failure, started)
        raise
    _end_build(session, outcome, outcome.status, started)
    _bound_cache(session)
    return outcome


def _bound_cache(session: OpenCache) -> None:
    """GRADSHARD_CACHE_MAX, after the build has ended (its lease given up, its record the
    last of its output directory, so gc keeps what it needs)."""
    if os.environ.get(CACHE_MAX_VARIABLE, "").strip():
        from gradshard.cache.maintenance import apply_cache_limit  # sqlite-utils: only now

        apply_cache_limit(session.store, session.warnings.append)


def _generator(location: SpecLocation, out: Path, session: OpenCache, started: float,
               verify: bool, placement: Placement
               ) -> tuple[Callable[[int], BuildOutcome], tuple[str, str]]:
    """How this build makes its files, once given its build id: nothing to do when the last
    build of this spec into `out` (placed alike) read the same inputs and its files are
    intact, else the graph's run; and the build's keys in the cache (spec, out)."""
    inputs = read_inputs(location)
    fingerprint = inputs.fingerprint()
    fingerprint.update(placement.words())
    keys = spec_key, out_key = str(location.root.resolve()), str(out.resolve())
    store = session.open()
    last = store.last_build(spec_key, out_key) if store is not None else None
    if (not verify and last is not None and last.inputs == fingerprint
            and outputs_match(out, last.files)):
        return partial(_up_to_date, location, inputs, out, session, last, started,
                       placement), keys
    return _generation(location, inputs, fingerprint, out, session, started, verify,
                       placement), keys


def compile_outcome(built: BuildOutcome, session: OpenCache, options: CompileOptions,
                    progress: Callable[[str], None]) -> CompileReport:
    """Compile what a build generated, from the layout of its graph run (an up-to-date build
    ran none: one run, answered by the cache's indexes, gives it)."""
    from gradshard.service.compile.driver import compile_generated  # the compile driver: imported only to compile

    return compile_generated(_with_graph(built, session), session, options, progress)


def _with_graph(outcome: BuildOutcome, session: OpenCache) -> BuildOutcome:
    """The outcome with its graph run: an up-to-date build ran none, and its compile needs
    the layout (answered by the cache's indexes: no task runs when nothing changed)."""
    if outcome.graph is None:
        outcome.generation = _prepare(outcome.inputs)
        outcome.graph = session.run_graph(outcome.generation, outcome.build_id)
    return outcome


def _prepare(inputs: InputBytes | None) -> Generation:
    from gradshard.service.graph_run import Generation  # the pipeline: imported only when there is work

    assert inputs is not None
    return Generation.prepare(inputs)


def _end_build(session: OpenCache, outcome: BuildOutcome, status: str, started: float) -> None:
    """Record how the build and its compile went; the build's lease ends here."""
    if session.store is not None:
        session.store.end_build(outcome.build_id, status, time.perf_counter() - started,
                                summary_record(outcome))


def _give_up(session: OpenCache, build: int, outcome: BuildOutcome | None,
             failure: BaseException, started: float) -> None:
    """A failed build gives its lease up. When the compiler's errors are what failed, the
    generation's work is recorded all the same (`stats` counts its tasks)."""
    if session.store is None:
        return
    if outcome is not None and isinstance(failure, CompileError):
        _end_build(session, outcome, "failed", started)
    else:
        session.store.abandon_build(build)


def _up_to_date(location: SpecLocation, inputs: InputBytes, out: Path, session: OpenCache,
                last: LastBuild, started: float, placement: Placement,
                build: int) -> BuildOutcome:
    seconds = {"total": time.perf_counter() - started}
    mine = sorted(n for n in last.files if placement.owns(n))  # not those left to a subset
    return BuildOutcome("up to date", location, out, session.directory,
                        WriteReport(unchanged=mine), seconds, warnings=session.warnings,
                        files=len(mine), build_id=build, inputs=inputs, tree=placement.tree)


def _generation(location: SpecLocation, inputs: InputBytes, fingerprint: dict[str, str],
                out: Path, session: OpenCache, started: float,
                verify: bool, placement: Placement) -> Callable[[int], BuildOutcome]:
    """The graph's run, to be given its build id; the inputs are decoded first (a file that
    is not text is a spec error before any build is recorded)."""
    return partial(_build_leased, location, inputs, _prepare(inputs), fingerprint, out,
                   session, started=started, verify=verify, placement=placement)


def _build_leased(location: SpecLocation, inputs: InputBytes, generation: Generation,
                  fingerprint: dict[str, str], out: Path, session: OpenCache, build: int, *,
                  started: float, verify: bool, placement: Placement) -> BuildOutcome:
    """The build proper, under its lease (build is 0 without a cache)."""
    spec_key, out_key = str(location.root.resolve()), str(out.resolve())
    store = session.store
    # the files first, then the cache's rows (~20 ms of a formula edit's ~0.16 s: a save's
    # files appear that much sooner); a build killed in between only recomputes those rows
    result = session.run_graph(generation, build, verify, commit=False)
    previous, left_to_others = _split_previous(_previous_files(store, out_key), placement)
    writing = time.perf_counter()
    files = placed_files(result.files, placement)
    names = index_names(result.files, placement)
    try:
        writes = sync_outputs(out, files, partial(_load_placed, result, names), previous,
                              session.known_hashes)
    except UnsafeOutputName as unsafe:
        raise cache_damage(unsafe, store) from None
    except BaseException:
        _commit_what_ran(result)
        raise
    result.seconds["write"] = time.perf_counter() - writing
    result.engine.finish()
    if store is not None:
        # the files left to another subset stay recorded (a later build may remove them)
        left = files_left(out, left_to_others)
        generation.record(store, build, spec_key, out_key, fingerprint, result,
                          {**left, **files})
    seconds = dict(result.seconds)
    seconds["total"] = time.perf_counter() - started
    return BuildOutcome("built", location, out, session.directory, writes, seconds,
                        result.stats, session.warnings, len(files), result.nodes,
                        build, inputs=inputs, verified=verify, graph=result,
                        generation=generation, tree=placement.tree)


def _commit_what_ran(result: GraphResult) -> None:
    """Writing the files failed: what the build's tasks computed is still right, and is
    committed (a long-lived session would otherwise commit it with its next build); a failure
    of that commit gives way to the write's, which is what the user must see."""
    with contextlib.suppress(GradshardError, StoreDamaged):
        result.engine.finish()


def _load_placed(result: GraphResult, names: dict[str, str], placed: list[str]
                 ) -> dict[str, str]:
    """The texts of files by their placed names (service/files/placement.py)."""
    texts = result.load([names[p] for p in placed])
    return {p: texts[names[p]] for p in placed}


def _split_previous(previous: list[str], placement: Placement) -> tuple[list[str], list[str]]:
    """The earlier build's files this build removes once it no longer writes them, and those
    it leaves to another subset (Placement.owns)."""
    owned: list[str] = []
    left: list[str] = []
    for name in previous:
        (owned if placement.owns(name) else left).append(name)
    return owned, left


def _previous_files(store: Store | None, out_key: str) -> list[str]:
    if store is None:
        return []
    last = store.latest_manifest(out=out_key)
    return list(last.files) if last is not None else []


def summary_record(outcome: BuildOutcome) -> dict:
    """What `stats` shows of a build: its tasks, its stages' seconds (the compile's among
    them), the files it wrote and what it compiled."""
    stats, compiled = outcome.stats, outcome.compiled
    seconds = dict(outcome.seconds, **({"compile": compiled.seconds} if compiled else {}))
    summary = {"status": outcome.status,
               "run": dict(stats.run) if stats else {},
               "reused": dict(stats.reused) if stats else {},
               "seconds": {k: round(v, 4) for k, v in seconds.items()},
               "written": len(outcome.writes.written)}
    if compiled is not None:
        summary["compile"] = {"units": compiled.units, "compiled": len(compiled.compiled),
                              "cached": len(compiled.cached), "spliced": len(compiled.spliced)}
    return summary
