"""What an engine ran and reused, and where its wall time went: its stats, the clock that
charges each stage its time, and the JSON a forked child reports its stats in."""

from __future__ import annotations

import contextlib
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Iterator, NamedTuple

__all__ = ["Disagreement", "EngineStats", "StageClock", "TaskRun", "add_stats", "stats_json"]


class TaskRun(NamedTuple):
    """One task that ran, and why."""

    task: str
    stage: str
    ident: str
    reason: str
    seconds: float


@dataclass(frozen=True, slots=True)
class Disagreement:
    """A task row whose output is not what its task computes from the same inputs."""

    task: str
    ident: str
    cached: str    # the output hash the store's row names
    computed: str  # the output hash the task gives now

    def describe(self) -> str:
        return (f"{self.task} [{self.ident}]: the cache holds {self.cached[:16]}…, "
                f"the task computes {self.computed[:16]}…")


@dataclass
class EngineStats:
    run: Counter[str] = field(default_factory=Counter)      # by stage
    reused: Counter[str] = field(default_factory=Counter)   # by stage
    seconds: Counter[str] = field(default_factory=Counter)  # by stage, wall time
    runs: list[TaskRun] = field(default_factory=list)
    recovered: int = 0
    verified: int = 0  # task rows compared with a fresh run (--verify)
    disagreements: list[Disagreement] = field(default_factory=list)


class StageClock:
    """Wall time goes to the innermost running stage (a group's inner tasks own theirs),
    counted in `seconds` (an EngineStats' seconds)."""

    def __init__(self, seconds: Counter[str]) -> None:
        self.seconds = seconds
        self.running: list[list[Any]] = []  # stack of [stage, started]

    def stage(self, stage: str) -> _Stage:
        """`with clock.stage(s):` charges the block's time to `s`."""
        return _Stage(self, stage)

    def start(self, stage: str) -> None:
        now = time.perf_counter()
        if self.running:
            outer = self.running[-1]
            self.seconds[outer[0]] += now - outer[1]
        self.running.append([stage, now])

    def stop(self) -> None:
        now = time.perf_counter()
        stage, started = self.running.pop()
        self.seconds[stage] += now - started
        if self.running:
            self.running[-1][1] = now

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """Time no running stage is charged with (waiting for a child)."""
        started = time.perf_counter()
        try:
            yield
        finally:
            if self.running:
                self.running[-1][1] += time.perf_counter() - started


class _Stage:
    """One stage's time, as a context manager (a plain class: one is entered per task batch,
    and a generator's costs more)."""

    __slots__ = ("clock", "stage")

    def __init__(self, clock: StageClock, stage: str) -> None:
        self.clock = clock
        self.stage = stage

    def __enter__(self) -> None:
        self.clock.start(self.stage)

    def __exit__(self, *exc: object) -> None:
        self.clock.stop()


def stats_json(stats: EngineStats) -> dict:
    """What a child ran, for its parent's report."""
    return {"run": stats.run, "reused": stats.reused, "seconds": stats.seconds,
            "runs": stats.runs, "recovered": stats.recovered, "verified": stats.verified,
            "disagreements": [list(_disagreement_fields(d)) for d in stats.disagreements]}


def _disagreement_fields(d: Disagreement) -> tuple[str, str, str, str]:
    return d.task, d.ident, d.cached, d.computed


def add_stats(stats: EngineStats, child: dict) -> None:
    """Count what a child ran (its `stats_json`) as this process's own."""
    for total, counts in ((stats.run, child["run"]), (stats.reused, child["reused"]),
                          (stats.seconds, child["seconds"])):
        total.update(counts)
    stats.runs.extend(TaskRun(*run) for run in child["runs"])
    stats.recovered += child["recovered"]
    stats.verified += child["verified"]
    stats.disagreements.extend(Disagreement(*d) for d in child["disagreements"])
