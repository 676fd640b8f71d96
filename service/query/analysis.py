"""`check` and `show`: the build graph run (service/graph_run.py) on a located spec, on the
session's cache (a spec the cache has seen is answered by its indexes; an edited entry reruns
what it reaches, as a build would) or in memory (--no-cache: every task runs); no file is
written. `check` reads the counts and the formula check's findings from the indexes
(cache/graph/spec_records.py: spec_counts); `show` every record of the spec.

A spec with problems raises SpecError from the graph, every problem at its line, as `build`
reports it; the formula check's findings are `check`'s errors too (CheckResult)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, TypeVar

from gradshard.cache.graph.spec_records import SpecRecords, spec_counts, spec_records
from gradshard.pipeline.problems import Problem
from gradshard.service.files.inputs import read_inputs
from gradshard.service.files.spec_location import SpecLocation
from gradshard.service.graph_run import (DecodedInputs, GraphResult, fresh_reads,
                                         run_graph)
from gradshard.service.open_cache import OpenCache

__all__ = ["CheckResult", "analyze", "check_spec", "prepare", "records_of"]

T = TypeVar("T")


def prepare(location: SpecLocation, release: str | None = None) -> DecodedInputs:
    """The spec's inputs, read and decoded (a file that is not text is a spec problem here),
    by the rules of `release` (its generator's rules_release, identified when not given)."""
    return DecodedInputs.decode(read_inputs(location), release)


def analyze(decoded: DecodedInputs, session: OpenCache | None = None) -> SpecRecords:
    """Every stage on the spec, on the session's cache (none: all in memory)."""
    return _read(decoded, session or OpenCache(None), records_of)


@dataclass(frozen=True)
class CheckResult:
    """What `check` says of a spec that its stages accept: its counts, and the formula
    check's findings (each at its line)."""

    counts: dict[str, int]
    findings: tuple[Problem, ...]


def check_spec(location: SpecLocation, session: OpenCache, release: str | None = None
               ) -> CheckResult:
    """The spec's counts and findings from a graph run on the session's cache (by `release`:
    its generator's, identified when not given); a damaged cache is set aside and the check
    runs again, once."""
    for attempt in session.attempts():
        with attempt:
            return _read(prepare(location, release), session, _check_result)
    raise AssertionError("the last attempt returns or raises")


def _check_result(run: GraphResult) -> CheckResult:
    return CheckResult(spec_counts(run.engine, run.index), run.findings())


def _read(decoded: DecodedInputs, session: OpenCache, read: Callable[[GraphResult], T]) -> T:
    """What `read` finds of the graph's run (commited first); a value an index names that
    is gone makes the run enter every group again."""
    run = run_graph(decoded, session.open(), session.memory)
    for fresh in fresh_reads():
        with fresh:
            return read(run)
        run.rerun_entering_groups()
    raise AssertionError("the last read returns or raises")


def records_of(run: GraphResult) -> SpecRecords:
    return spec_records(run.engine, run.index, run.decoded.texts)
