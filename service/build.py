"""`gradshard build`: the cached one-shot build, for CI and for terminals.

1. Read and hash the inputs. If the last build of this spec into this directory read the
   same inputs and every output file still holds what it wrote, stop: nothing heavy is
   imported on this path.
2. Otherwise run the build graph on the engine (cache/graph.py), write the files that
   differ, remove the files an earlier build wrote that this one does not produce, and
   record the manifest.

The cache is never trusted: a damaged database is set aside and the build runs again; a
value missing behind a group index restarts the graph with every group re-entered; a file
name from the cache that would leave --out is damage too. A spec error stops everything
before any file is written, and is reported through the straight pipeline, which locates
every problem at its file and line. While it runs, a build holds a lease on the cache (gc
leaves what it wrote and read); a build that fails gives it up.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from functools import partial
from typing import TYPE_CHECKING, Any, Callable, TypeVar

from gradshard.cache.store import LastBuild, Store, StoreDamaged, set_aside
from gradshard.pipeline.errors import InternalError, RuleViolation, SpecError

from .inputs import InputBytes, read_inputs
from .outputs import UnsafeOutputName, WriteReport, outputs_match, sync_outputs
from .spec_location import SpecLocation

if TYPE_CHECKING:
    from .incremental import Generation


T = TypeVar("T")


@dataclass
class BuildOutcome:
    status: str  # "built" or "up to date"
    location: SpecLocation
    out: Path
    cache: Path | None
    writes: WriteReport
    seconds: dict[str, float] = field(default_factory=dict)
    stats: Any = None  # the engine's EngineStats when the graph ran
    warnings: list[str] = field(default_factory=list)
    files: int = 0
    nodes: int = 0
    build_id: int = 0  # the cache's record of this build (0 without a cache)
    inputs: InputBytes | None = None  # what the build read (the compile step reads the same)
    compiled: Any = None  # the CompileReport when the build compiled
    verified: bool = False  # every task ran and was compared with the cache (--verify)


@dataclass
class Session:
    """One command's view of the cache: the store (if any) and the warnings it gave."""

    directory: Path | None
    warnings: list[str] = field(default_factory=list)
    store: Store | None = None

    def open(self) -> Store | None:
        if self.directory is not None and self.store is None:
            self.store = Store.open(self.directory, self.warnings.append)
        return self.store

    def reset(self) -> Store | None:
        """Replace a damaged store by an empty one."""
        if self.store is not None:
            self.store.close()
            set_aside(self.store.path)
            self.store = None
        return self.open()

    def close(self) -> None:
        if self.store is not None:
            self.store.close()

    def retrying(self, work: Callable[[], T]) -> T:
        """work(); a cache found damaged on the way is set aside and work runs again."""
        try:
            return work()
        except StoreDamaged as damage:
            self.warnings.append(f"the cache database {damage}; it was set aside and rebuilt")
            self.reset()
            return work()


def build_command(location: SpecLocation, out: Path, session: Session,
                  verify: bool = False) -> BuildOutcome:
    """The build; a cache found damaged on the way is set aside and the build runs again.
    `verify` runs every task and compares it with the cache (never "up to date")."""
    return session.retrying(partial(_build_once, location, out, session, verify))


def _build_once(location: SpecLocation, out: Path, session: Session,
                verify: bool = False) -> BuildOutcome:
    started = time.perf_counter()
    inputs = read_inputs(location)
    fingerprint = inputs.fingerprint()
    spec_key, out_key = str(location.root.resolve()), str(out.resolve())
    store = session.open()
    last = store.last_build(spec_key, out_key) if store is not None else None
    if (not verify and last is not None and last.inputs == fingerprint
            and outputs_match(out, last.files)):
        return _up_to_date(location, inputs, out, session, last, started)
    return _build(location, inputs, fingerprint, out, session, started, verify)


def _up_to_date(location: SpecLocation, inputs: InputBytes, out: Path, session: Session,
                last: LastBuild, started: float) -> BuildOutcome:
    seconds = {"total": time.perf_counter() - started}
    store = session.store
    assert store is not None
    build = store.begin_build(last.spec, last.out)
    store.end_build(build, "up to date", seconds["total"], {"status": "up to date"})
    return BuildOutcome("up to date", location, out, session.directory,
                        WriteReport(unchanged=sorted(last.files)), seconds,
                        warnings=session.warnings, files=len(last.files), build_id=build,
                        inputs=inputs)


def _build(location: SpecLocation, inputs: InputBytes, fingerprint: dict[str, str], out: Path,
           session: Session, started: float, verify: bool = False) -> BuildOutcome:
    from .incremental import Generation  # the pipeline: imported only when there is work

    run = partial(_build_leased, location, inputs, Generation.prepare(inputs), fingerprint,
                  out, session, started=started, verify=verify)
    store = session.open()
    if store is None:
        return run(0)
    build = store.begin_build(str(location.root.resolve()), str(out.resolve()))
    try:
        return run(build)
    except BaseException:
        store.abandon_build(build)
        raise


def _build_leased(location: SpecLocation, inputs: InputBytes, generation: Generation,
                  fingerprint: dict[str, str], out: Path, session: Session, build: int, *,
                  started: float, verify: bool) -> BuildOutcome:
    """The build proper, under its lease (build is 0 without a cache)."""
    spec_key, out_key = str(location.root.resolve()), str(out.resolve())
    store = session.store
    result = generation.run(store, build, verify)
    previous = _previous_files(store, out_key)
    writing = time.perf_counter()
    try:
        writes = sync_outputs(out, result.files, result.load, previous)
    except UnsafeOutputName as unsafe:
        raise cache_damage(unsafe, store) from None
    result.seconds["write"] = time.perf_counter() - writing
    if store is not None:
        generation.record(store, build, spec_key, out_key, fingerprint, result)
    seconds = dict(result.seconds)
    seconds["total"] = time.perf_counter() - started
    outcome = BuildOutcome("built", location, out, session.directory, writes, seconds,
                           result.stats, session.warnings, len(result.files), result.nodes,
                           build, inputs=inputs, verified=verify)
    if session.store is not None:
        session.store.end_build(build, "built", seconds["total"], summary_record(outcome))
    return outcome


def cache_damage(unsafe: UnsafeOutputName, store: Store | None) -> Exception:
    """A build's index naming a file outside --out came from a damaged (or crafted) cache:
    the cache is set aside and the build runs again (Session.retrying). Without a cache the
    names are the pipeline's own, so this is a bug."""
    if store is None:
        return InternalError(f"the build {unsafe}")
    return StoreDamaged(str(unsafe), store.path)


def _previous_files(store: Store | None, out_key: str) -> list[str]:
    if store is None:
        return []
    last = store.latest_manifest(out=out_key)
    return list(last.files) if last is not None else []


def summary_record(outcome: BuildOutcome) -> dict:
    """What `stats` shows of a build."""
    stats = outcome.stats
    return {"status": outcome.status,
            "run": dict(stats.run) if stats else {},
            "reused": dict(stats.reused) if stats else {},
            "seconds": {k: round(v, 4) for k, v in outcome.seconds.items()},
            "written": len(outcome.writes.written)}


def rejected(error: SpecError | RuleViolation, analyze: Callable[[], object]) -> SpecError:
    """The error to report for a spec the graph rejected: the straight pipeline's, which
    collects and locates every problem."""
    try:
        analyze()
    except SpecError as located:
        return located
    raise InternalError(f"the cached build rejected the spec ({error}) but the straight "
                        "pipeline accepts it")

