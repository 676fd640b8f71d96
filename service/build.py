"""`gradshard build`: the cached one-shot build, for CI, for terminals and for the daemon.

A build is one straight sequence, every step in this module (build_and_compile):

1. inputs: read and hash the spec's files (the request's keys in the cache are computed
   once, in its BuildRequest);
2. up-to-date check: when the last build of this spec into this directory (placed alike)
   read the same inputs and every output file still holds what it wrote, no graph runs and
   nothing heavy is imported on this path;
3. graph run: otherwise the inputs are decoded (a spec error before any build is recorded)
   and the build graph runs on the session's store and memory (service/graph_run.py);
4. outputs: write the files that differ, remove those an earlier build wrote that this one
   does not produce (service/files/outputs.py);
5. record: commit what ran and keep the manifest (the next build's up-to-date check);
6. compile: unless --codegen-only, compile what was generated (service/compile/driver.py),
   from the layout of the same graph run; an up-to-date build with a compile runs the graph
   once for it, answered by the cache's indexes.

The daemon's hook (`after_graph`: the --try checks) runs between the graph run (3., with the
generator's verdict known) and the outputs (4.), on the graph's run, so that its verdicts
come first.

Then the build ends (its record, what `stats` shows) and GRADSHARD_CACHE_MAX is applied. The
outcome (service/outcome.py) is made once, at the end; it holds no engine.

The cache is never trusted: a damaged database found by any step is set aside and the whole
build runs again, once; a value missing behind a group index restarts the graph with every
group re-entered (service/graph_run.py); a file name from the cache that would leave --out
(or the compile directory) is damage too. A spec error stops everything before any file is
written; the graph reports every problem of its first failing phase, each at its file and
line, and keeps them as task outputs (the next run reports them from the cache). From its
first read to its last compile, a build holds a lease on the cache (gc leaves what it wrote
and read); a build that fails gives it up, except that a compile error still records the
build with what its graph run did (`stats` counts its tasks).
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from gradshard.cache.errors import CompileError, GeneratorFailed, UsageError
from gradshard.cache.store.database import LastBuild, Store, StoreDamaged
from gradshard.pipeline.problems import GradshardError, Problem
from gradshard.service.defaults import GRADSHARD_CACHE_MAX, value_of
from gradshard.service.files.inputs import InputBytes, data_file_hashes, read_inputs
from gradshard.service.files.outputs import (UnsafeOutputName, WriteReport, cache_damage,
                                             files_left, outputs_match, sync_outputs)
from gradshard.service.files.placement import (Placement, generated_dir, index_names,
                                              placed_files)
from gradshard.service.files.spec_location import SpecLocation
from gradshard.service.generator.check import (HOST_STAMP, STRICT, UNCHECKED_STAMP,
                                               GeneratorCheck, GeneratorVerdict,
                                               failed_verdict, host_net, host_verdict,
                                               real_texts, recorded_verdict, served_files,
                                               spec_hash, verdict_for, verdict_stamp)
from gradshard.service.generator.identity import identify_generator
from gradshard.service.open_cache import OpenCache
from gradshard.service.outcome import BuildOutcome, BuildRequest

if TYPE_CHECKING:
    from gradshard.cache.engine.stats import EngineStats
    from gradshard.service.compile.driver import CompileOptions
    from gradshard.service.compile.report import CompileReport
    from gradshard.service.graph_run import DecodedInputs, GraphResult
    from gradshard.service.host.generation import HostRun

__all__ = ["build_and_compile"]


def ignore_progress(line: str) -> None:
    """A compile's progress lines, for nobody."""


def build_and_compile(location: SpecLocation, out: Path, session: OpenCache,
                      options: CompileOptions | None = None,
                      progress: Callable[[str], None] = ignore_progress,
                      verify: bool = False,
                      after_graph: Callable[[GraphResult | None], None] | None = None,
                      placement: Placement = Placement(),
                      check: GeneratorCheck = GeneratorCheck()) -> BuildOutcome:
    """Generate the spec's files into `out` (placed as `placement` says), then compile them
    (none when `options` is None: --codegen-only), as one build of the session's cache: one
    lease from the first read to the last object, one graph run, and a cache found damaged
    in any step set aside and the whole build run again, once. A spec error or a compile
    error is reported, never retried. `verify` runs every task and compares it with the
    cache (never "up to date"). `after_graph` runs once the graph has run and the spec's
    generator's verdict is known, with the run (None when the build is up to date), before
    the files are written and the compile (the daemon's --try checks:
    service/daemon/try_checks.py, whose verdicts come sooner). `check`: how the
    spec's generator is checked (service/generator/check.py); a generator that fails leaves
    gradshard's files written, unverified, and raises GeneratorFailed once the build ended."""
    request = BuildRequest.of(location, out, placement, verify, check,
                              identify_generator(location))
    for attempt in session.attempts():
        with attempt:
            return _build(request, session, options, progress, after_graph)
    raise AssertionError("the last attempt returns or raises")


@dataclass(frozen=True)
class FilesOutcome:
    """What a build's steps before the compile did: up to date or built, the files
    written, unchanged and removed, the seconds of its stages (and "total"), what the
    generator check found and, when its graph ran, what the engine ran and reused."""

    status: str
    writes: WriteReport
    seconds: dict[str, float]
    verdict: GeneratorVerdict
    stats: EngineStats | None = None
    files: int = 0
    nodes: int = 0
    failure: GeneratorFailed | None = None  # the generator's, raised once the build ended
    findings: tuple[Problem, ...] = ()  # gradshard's own rules' warnings: the formula check's,
    #                                     and on the host path every rule's


def _build(request: BuildRequest, session: OpenCache, options: CompileOptions | None,
           progress: Callable[[str], None],
           after_graph: Callable[[GraphResult | None], None] | None) -> BuildOutcome:
    """One attempt at the build, in order: inputs, up-to-date check, lease, graph run,
    generator check, outputs and record, compile, end."""
    started = time.perf_counter()
    placement = request.placement
    if request.on_host and options is not None and (placement.subset or not placement.autograd):
        # its units are cut from every file the generator writes, which --out then lacks
        raise UsageError("a host-path build compiles the whole set of files: not with "
                         "--subset or --disable-autograd",
                         "add --codegen-only, or drop the subset")
    inputs = read_inputs(request.location)
    fingerprint = inputs.fingerprint()
    spec = spec_hash(fingerprint)
    stamp = (_host_stamp(request.check) if request.on_host
             else verdict_stamp(request.identity, request.check, spec, session.verdicts))
    fingerprint.update(request.placement.words())
    fingerprint.update(request.generator_words(stamp))
    if request.on_host:  # what the generator may read besides its sources and the spec
        fingerprint.update(data_file_hashes(
            [request.location.templates, *filter(None, [request.identity.autograd])]))
    last = _up_to_date(request, session.open(), fingerprint, stamp)
    # decoded before the lease: a file that is not text is a spec error, and no build (the
    # host path reads the spec with the generator's own code)
    decoded = _decode(inputs, request) if last is None and not request.on_host else None
    store = session.store
    build_id = store.begin_build(request.spec_key, request.out_key) if store is not None else 0
    done: FilesOutcome | None = None
    try:
        run, done = _files(request, session, inputs, decoded, last, build_id, fingerprint,
                           spec, started, after_graph)
        compiled = (_compile(request, build_id, run, done.verdict, inputs, session, options,
                             progress)
                    if options is not None and done.failure is None else None)
    except BaseException as failure:
        _give_up(session, build_id, done, failure, started)
        raise
    _end_build(session, build_id, done.status, done, compiled, started)
    _bound_cache(session)
    if done.failure is not None:
        raise _unverified(done.failure, request)
    if done.verdict.report:  # the outcome shows it: not again for this (generator, spec)
        session.verdicts.mark_reported(request.identity.hash, done.verdict.spec)
    return BuildOutcome(done.status, request.location, request.out, session.directory,
                        done.writes, done.seconds, done.stats, tuple(session.warnings),
                        done.files, done.nodes, build_id, compiled, request.verify,
                        request.placement.tree, done.verdict, done.findings)


def _host_stamp(check: GeneratorCheck) -> str:
    """A host build's verdict stamp: under `strict` the net runs on every build, so such a
    build is never up to date (one whose net failed after its files were recorded included)."""
    return UNCHECKED_STAMP if check.mode == STRICT else HOST_STAMP


def _up_to_date(request: BuildRequest, store: Store | None, fingerprint: dict[str, str],
                stamp: str) -> LastBuild | None:
    """The last build of this spec into this directory, when this build has nothing to do:
    it read the same inputs (placed alike, under the same generator verdicts) and its files
    are intact. Never for --verify, never while the generator is unchecked."""
    last = store.last_build(request.spec_key, request.out_key) if store is not None else None
    if (request.verify or stamp == UNCHECKED_STAMP or last is None
            or last.inputs != fingerprint
            or not outputs_match(request.out, last.files)):
        return None
    return last


def _decode(inputs: InputBytes, request: BuildRequest) -> DecodedInputs:
    """The inputs decoded by the rules of the generator the request identified."""
    from gradshard.service.graph_run import DecodedInputs  # the pipeline: only when there is work

    return DecodedInputs.decode(inputs, request.identity.rules_release)


def _files(request: BuildRequest, session: OpenCache, inputs: InputBytes,
           decoded: DecodedInputs | None, last: LastBuild | None, build_id: int,
           fingerprint: dict[str, str], spec: str, started: float,
           after_graph: Callable[[GraphResult | None], None] | None
           ) -> tuple[GraphResult | HostRun | None, FilesOutcome]:
    """The build's files: up to date (`last`: no graph runs), else the graph's run, its
    generator check, `after_graph`, its files written and the build recorded. What the run
    computed stays staged until its files are written (the files of a save appear sooner)."""
    if last is not None:
        done = _files_up_to_date(request, session, last, spec, started)
        if after_graph is not None:
            after_graph(None)
        return None, done
    if request.on_host:  # the generator's own files (service/host/); nothing was decoded
        return _host_files(request, session, inputs, build_id, fingerprint, spec, started,
                           after_graph)
    run = _run_graph(decoded, session, build_id, request.verify, commit=False)
    try:
        verdict, failure = _verdict_for(request, session, run, spec)
        if after_graph is not None and failure is None:
            after_graph(run)
    except BaseException:
        _commit_what_ran(run)
        raise
    # what the check found is what the next build compares ("unchecked" if it failed)
    stamp = verdict_stamp(request.identity, request.check, spec, session.verdicts)
    fingerprint = {**fingerprint, **request.generator_words(stamp)}
    done = _write_and_record(request, session, run, verdict, build_id, fingerprint, started)
    return run, replace(done, failure=failure, findings=run.findings())


def _host_files(request: BuildRequest, session: OpenCache, inputs: InputBytes, build_id: int,
                fingerprint: dict[str, str], spec: str, started: float,
                after_graph: Callable[[GraphResult | None], None] | None
                ) -> tuple[HostRun, FilesOutcome]:
    """The files of the spec's own generator, run by the session's worker, written and
    recorded as the graph run's are."""
    from gradshard.service.host.generation import generate_on_host

    run = generate_on_host(request, session, inputs)
    if after_graph is not None:
        after_graph(None)
    verdict = host_verdict(request.identity, request.check, spec)
    done = _write_and_record(request, session, run, verdict, build_id, fingerprint, started)
    # the net, once per generator on this machine: its cost apart from the build's
    checked = host_net(request.identity, request.check, request.location, spec, run.files,
                       run.load, session.verdicts)
    seconds = {**done.seconds, "check": checked.seconds} if checked.checked else done.seconds
    return run, replace(done, verdict=checked, findings=run.findings, seconds=seconds)


def _verdict_for(request: BuildRequest, session: OpenCache, run: GraphResult,
            spec: str) -> tuple[GeneratorVerdict, GeneratorFailed | None]:
    """The generator check of the run's files (service/generator/check.py): a generator
    that fails leaves gradshard's files served, unverified, and its failure to raise once
    the build has ended."""
    try:
        return verdict_for(request.identity, request.check, request.location, spec, run.files,
                      run.load, session.verdicts), None
    except GeneratorFailed as failure:
        return failed_verdict(request.identity, request.check, spec, failure), failure


def _run_graph(decoded: DecodedInputs, session: OpenCache, build_id: int, verify: bool,
               commit: bool) -> GraphResult:
    """The graph on the session's store and memory (service/graph_run.py: run_graph)."""
    from gradshard.service.graph_run import run_graph

    return run_graph(decoded, session.open(), session.memory, build_id, verify, commit)


def _files_up_to_date(request: BuildRequest, session: OpenCache, last: LastBuild, spec: str,
                      started: float) -> FilesOutcome:
    mine = sorted(n for n in last.files if request.placement.owns(n))  # not another subset's
    verdict = (host_verdict(request.identity, request.check, spec) if request.on_host
               else recorded_verdict(request.identity, request.check, spec, session.verdicts))
    return FilesOutcome("up to date", WriteReport(unchanged=mine),
                        {"total": time.perf_counter() - started}, verdict, files=len(mine))


def _write_and_record(request: BuildRequest, session: OpenCache, run: GraphResult | HostRun,
                      verdict: GeneratorVerdict, build_id: int, fingerprint: dict[str, str],
                      started: float) -> FilesOutcome:
    """The files first (the real generator's where the check says so), then the cache's
    rows (~20 ms of a formula edit's ~0.16 s: a save's files appear that much sooner); a
    build killed in between only recomputes those rows."""
    store, placement = session.store, request.placement
    previous, left_to_others = _split_previous(_previous_files(store, request.out_key),
                                               placement)
    writing = time.perf_counter()
    served = served_files(run.files, verdict)
    files = placed_files(served, placement)
    names = index_names(served, placement)
    try:
        sync = sync_outputs(request.out, files, session.known_hashes)
        texts = (_served_texts(run, verdict, session, [names[p] for p in sync.stale])
                 if sync.stale else {})
        writes = sync.write({p: texts[names[p]] for p in sync.stale}, previous)
    except UnsafeOutputName as unsafe:
        raise cache_damage(unsafe, store) from None
    except BaseException:
        _commit_what_ran(run)
        raise
    seconds = dict(run.seconds, write=time.perf_counter() - writing)
    run.finish()
    if store is not None:
        # the files left to another subset stay recorded (a later build may remove them)
        left = files_left(request.out, left_to_others)
        run.record(store, build_id, request.spec_key, request.out_key, fingerprint,
                   {**left, **files})
    seconds["total"] = time.perf_counter() - started
    return FilesOutcome("built", writes, seconds, verdict, run.stats, len(files), run.nodes)


def _compile(request: BuildRequest, build_id: int, run: GraphResult | HostRun | None,
             verdict: GeneratorVerdict, inputs: InputBytes, session: OpenCache,
             options: CompileOptions, progress: Callable[[str], None]) -> CompileReport:
    """The compile, from the layout of the build's graph run; the files the real generator
    wrote compile as they are (the verdict the files were written by). An up-to-date build
    ran none: one run, answered by the cache's indexes (no task runs when nothing changed),
    gives it, and the verdicts its files were written by, decided again (a generator that
    fails now fails the build: --out holds its files). On the host path the units are cut
    from the generation's items (service/host/generation.py): the build's own, or the
    last one recorded for an up-to-date build."""
    from gradshard.service.compile.driver import compile_generated  # only to compile

    if request.on_host:
        from gradshard.service.host.generation import host_compile_input

        source = host_compile_input(request, session, run, inputs,
                                    generated_dir(request.out, request.placement.tree))
        return compile_generated(request, build_id, source, session, options, progress)
    if run is None:
        run = _run_graph(_decode(inputs, request), session, build_id, verify=False,
                         commit=True)
        verdict = verdict_for(request.identity, replace(request.check, later=False),
                         request.location, verdict.spec, run.files, run.load, session.verdicts)
    return compile_generated(request, build_id, run, session, options, progress, verdict.real)


def _commit_what_ran(run: GraphResult | HostRun) -> None:
    """Writing the files failed: what the build's tasks computed is still right, and is
    committed (a long-lived session would otherwise commit it with its next build); a failure
    of that commit gives way to the write's, which is what the user must see."""
    with contextlib.suppress(GradshardError, StoreDamaged):
        run.finish()


def _served_texts(run: GraphResult | HostRun, verdict: GeneratorVerdict, session: OpenCache,
                  names: list[str]) -> dict[str, str]:
    """The texts of served files (by index name): the real generator's where the verdict
    says so (from this machine's ledger), else the run's."""
    real = [n for n in names if verdict.real.get(n)]
    texts = real_texts(real, verdict, session.verdicts) if real else {}
    mine = [n for n in names if n not in texts]
    texts.update(run.load(mine) if mine else {})
    return texts


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


def _end_build(session: OpenCache, build_id: int, status: str, done: FilesOutcome,
               compiled: CompileReport | None, started: float) -> None:
    """Record how the build and its compile went; the build's lease ends here."""
    if session.store is not None:
        session.store.end_build(build_id, status, time.perf_counter() - started,
                                summary_record(done, compiled))


def _give_up(session: OpenCache, build_id: int, done: FilesOutcome | None,
             failure: BaseException, started: float) -> None:
    """A failed build gives its lease up. When the compiler's errors are what failed, the
    build is recorded all the same, with what its graph run did (`stats` counts its tasks)."""
    if session.store is None:
        return
    if done is not None and isinstance(failure, CompileError):
        _end_build(session, build_id, "failed", done, None, started)
    else:
        session.store.abandon_build(build_id)


def _unverified(failure: GeneratorFailed, request: BuildRequest) -> GeneratorFailed:
    """The generator's failure, saying what the build left: its own files, unverified."""
    hint = (f"gradshard's own files were written to {request.out}, unverified (not compiled); "
            f"the next build runs the generator again"
            + (f"; {failure.hint}" if failure.hint else ""))
    return GeneratorFailed(failure.message, failure.detail, hint)


def _bound_cache(session: OpenCache) -> None:
    """GRADSHARD_CACHE_MAX, after the build has ended (its lease given up, its record the
    last of its output directory, so gc keeps what it needs)."""
    limit = value_of(GRADSHARD_CACHE_MAX)
    if (limit or "").strip():
        from gradshard.cache.maintenance import apply_cache_limit  # sqlite-utils: only now

        apply_cache_limit(session.store, session.warnings.append, limit)


def summary_record(done: FilesOutcome, compiled: CompileReport | None) -> dict:
    """What `stats` shows of a build: its tasks, its stages' seconds (the compile's among
    them), the files it wrote and what it compiled."""
    stats = done.stats
    seconds = dict(done.seconds, **({"compile": compiled.seconds} if compiled else {}))
    summary = {"status": done.status,
               "run": dict(stats.run) if stats else {},
               "reused": dict(stats.reused) if stats else {},
               "seconds": {k: round(v, 4) for k, v in seconds.items()},
               "written": len(done.writes.written),
               "generator": done.verdict.summary()}
    if compiled is not None:
        summary["compile"] = {"units": compiled.units, "compiled": len(compiled.compiled),
                              "cached": len(compiled.cached), "spliced": len(compiled.spliced),
                              "launcher": (compiled.launcher.to_json() if compiled.launcher
                                           else None)}
    return summary
