"""Fork scheduling: which of an engine's groups and task runs go to forked children
(cache/engine/fork.py), when, and how what they did comes back.

Work leaves the process three ways, each only while a processor is free:

    begin/join   a group begun goes to a child as soon as a processor frees up (now, or at
                 the next group or task batch this process starts); if none does before its
                 join, it runs there
    groups       of groups none of which reads another's output, the back half of those whose
                 body must run goes to one child; the front half runs here meanwhile
    a long map   of a task that `forks`, the back of the runs left goes to a child, again
                 whenever a processor frees up (as a scheduler's work stealing would take it)

A child runs on a store connection of its own, commits its rows itself and hands back the
output hashes its parent needs, with what it ran (its stats) and its warnings; the parent
reads the values back from the store, each blob checked against its hash. Work whose child
failed or died is done in the parent, raising its error there. No child is forked without a
store (its work would be lost with it), while recovering from a stale cache, in a process
that runs other threads, or with a single processor.
"""

from __future__ import annotations

import json
from functools import partial
from typing import Any, Callable, Protocol, Sequence

from gradshard.cache.engine.fork import Child, can_fork, processors
from gradshard.cache.engine.jobs import Group, Task
from gradshard.cache.engine.stats import EngineStats, StageClock, add_stats, stats_json
from gradshard.cache.engine.values import Recipe, Value
from gradshard.cache.store.database import Store
from gradshard.pipeline.problems import InternalError

__all__ = ["CHECK_EVERY", "CHILD_SHARE", "GROUPS_LEAST", "MAP_FORK_LEAST", "Begun",
           "ForkScheduler", "ForkingEngine", "GroupCall", "Run"]

# A map hands runs to a child only when it has at least this many left (a fork and reading
# the outputs back cost about what a few hundred runs do); it looks for a free processor
# again after every CHECK_EVERY runs it did itself.
MAP_FORK_LEAST = 256
# `groups` hands groups to a child only when at least this many must run: a fork and the
# parent's reading back cost ~40 ms, more than the one or two groups an edit reaches.
GROUPS_LEAST = 6
CHECK_EVERY = 4
# A map's child gets less than half of what is left: it also forks, opens the store and commits
# its rows before its parent reads its outputs back (the parent waited ~0.1 s for the child of
# a cold build's parse.native with half).
CHILD_SHARE = 0.42

GroupCall = tuple[Group, tuple[Value, ...], str]  # a group, its inputs, its ident
Run = tuple[Recipe, str]  # a task's run that must happen, and why


class ForkingEngine(Protocol):
    """What the scheduler asks of the engine that owns it (cache/engine/core.py: Engine)."""

    build_id: int
    scope: int  # the group scope the engine's tasks run in
    stats: EngineStats
    clock: StageClock

    def group(self, group: Group, inputs: Sequence[Value], ident: str) -> Value: ...

    def compute(self, recipe: Recipe, reason: str) -> Value: ...

    def must_run(self, group: Group, inputs: Sequence[Value]) -> bool: ...

    def adopt_group(self, call: GroupCall, output: str) -> Value: ...

    def adopt_runs(self, task: Task, recipes: Sequence[Recipe],
                   outputs: Sequence[str]) -> list[Value]: ...


class Begun:
    """A group started by `Engine.begin`; `join()` gives its value. Until a child runs it
    (`child`) or it ran here (`value`), it waits for a free processor (`waiting`)."""

    __slots__ = ("scheduler", "call", "child", "scope", "value", "waiting")

    def __init__(self, scheduler: ForkScheduler, call: GroupCall, scope: int) -> None:
        self.scheduler = scheduler
        self.call = call
        self.child: Child | None = None
        self.scope = scope
        self.value: Value | None = None
        self.waiting = True

    def join(self) -> Value:
        if self.value is None:
            self.value = self.scheduler.join(self)
        return self.value


class ForkScheduler:
    """The forked children of one engine: which of its work they take, and when."""

    def __init__(self, engine: ForkingEngine, store: Store | None, processes: int | None, *,
                 allowed: bool) -> None:
        self.engine = engine
        self.store = store
        # whether children may be forked at all (a store keeps their work, and the engine
        # does not recover a stale cache)
        self.allowed = allowed and store is not None
        # how many processes may run at once (None: the processors there are)
        self.processes = processors() if processes is None else processes
        self.begun: list[Begun] = []  # groups begun, not joined yet (waiting, or in a child)
        self.children: list[Child] = []  # every child that may still be running

    # -----------------------------------------------------------------------------------------
    # Groups begun, joined by their caller

    def begin(self, call: GroupCall) -> Begun:
        """A group whose body must run waits for a free processor, if this process may
        fork; any other runs here, now (see Engine.begin)."""
        begun = Begun(self, call, self.engine.scope)
        group, inputs, _ = call
        if self._may_fork() and self.engine.must_run(group, inputs):
            self.begun.append(begun)
            self.start_waiting()
        else:
            begun.waiting = False
            begun.value = self.engine.group(*call)
        return begun

    def start_waiting(self) -> None:
        """Fork a child for each begun group still waiting, while a processor is free. A
        group whose fork failed stops waiting: it runs at its join."""
        for begun in self.begun:
            if not begun.waiting or not self._free_processor():
                continue
            begun.waiting = False
            begun.child = self._fork(partial(self._group_in_child, begun.scope, *begun.call))

    def join(self, begun: Begun) -> Value:
        if begun.scope != self.engine.scope:
            raise InternalError(f"{begun.call[0].name} is joined outside the group that began it")
        self.begun.remove(begun)
        begun.waiting = False
        if begun.child is None:  # no processor freed up for it (or its fork failed)
            return self.engine.group(*begun.call)
        told = self._collect(begun.child)
        if told is None:
            return self.engine.group(*begun.call)
        return self.engine.adopt_group(begun.call, told["output"])

    def begun_in(self, scope: int) -> bool:
        """Whether a group begun in `scope` is not joined yet."""
        return any(b.scope == scope for b in self.begun)

    def stop_begun(self, scope: int) -> list[Begun]:
        """Drop the groups begun in `scope` and not joined (the body failed, or forgot),
        ending the children running them."""
        left = [b for b in self.begun if b.scope == scope]
        for begun in left:
            self.begun.remove(begun)
            if begun.child is not None:
                begun.child.stop()
        return left

    # -----------------------------------------------------------------------------------------
    # Groups side by side

    def groups(self, calls: list[GroupCall]) -> list[Value]:
        """Each group's value, in order; the back half of those whose body must run in one
        child when a processor is free for it (see Engine.groups)."""
        handed = self._handed_groups(calls)
        child = (self._fork(partial(self._groups_in_child, [calls[p] for p in handed]))
                 if handed else None)
        try:
            return self._run_groups(calls, handed if child is not None else [], child)
        finally:
            if child is not None:
                child.stop()  # collected already, unless this process is failing

    def _handed_groups(self, calls: list[GroupCall]) -> list[int]:
        """The positions of the groups a child may run: the back half of those whose body
        must run, when a processor is free for it."""
        if not self._free_processor():
            return []
        running = [p for p, (group, inputs, _) in enumerate(calls)
                   if self.engine.must_run(group, inputs)]
        if len(running) < GROUPS_LEAST:
            return []
        return running[(len(running) + 1) // 2:]

    def _run_groups(self, calls: list[GroupCall], handed: list[int],
                    child: Child | None) -> list[Value]:
        """Each group's value in order; the child's (at the positions `handed`) are read when
        the first of them is reached (every group run here comes before it)."""
        outputs: list[str] | None = None
        values = []
        for position, call in enumerate(calls):
            if position not in handed:
                values.append(self.engine.group(*call))
                continue
            if outputs is None:
                outputs = self._group_outputs(child, len(handed))  # type: ignore[arg-type]
            values.append(self.engine.adopt_group(call, outputs[handed.index(position)])
                          if outputs else self.engine.group(*call))
        return values

    def _group_outputs(self, child: Child, count: int) -> list[str]:
        """The index hashes of the `count` groups the child ran; none if it failed."""
        told = self._collect(child)
        fits = told is not None and len(told["output"]) == count
        return told["output"] if fits else []  # type: ignore[index]

    # -----------------------------------------------------------------------------------------
    # A long map's runs

    def compute_runs(self, task: Task, work: list[Run]) -> list[Value]:
        """The runs of a task that forks, in order; whenever a processor is free, the back of
        those left (a CHILD_SHARE of them) goes to a forked child."""
        if len(work) < MAP_FORK_LEAST:
            return [self.engine.compute(r, reason) for r, reason in work]
        values: list[Value | None] = [None] * len(work)
        handed = self._compute_handing_on(task, work, values)
        try:
            for child, first, last in handed:
                values[first:last] = self._adopt_runs(task, work[first:last], child)
        finally:
            for child, _, _ in handed:
                child.stop()  # those not collected: this process is failing
        return values  # type: ignore[return-value]

    def _compute_handing_on(self, task: Task, work: list[Run], values: list[Value | None]
                            ) -> list[tuple[Child, int, int]]:
        """Compute the runs into `values` from the front, CHECK_EVERY at a time, handing the
        back of those left to a child whenever a processor is free: each child, with the
        positions of the runs it took (first, last)."""
        handed: list[tuple[Child, int, int]] = []
        start, end, forking = 0, len(work), True
        while start < end:
            if forking and end - start >= MAP_FORK_LEAST and self._free_processor():
                middle = end - int((end - start) * CHILD_SHARE)
                child = self._fork(partial(self._runs_in_child, task, work[middle:end]))
                forking = child is not None
                if child is not None:
                    handed.append((child, middle, end))
                    end = middle
                    continue
            stop = min(end, start + CHECK_EVERY)
            values[start:stop] = [self.engine.compute(r, why) for r, why in work[start:stop]]
            start = stop
        return handed

    def _adopt_runs(self, task: Task, work: list[Run], child: Child) -> list[Value]:
        """The values of runs a child did; runs it gave nothing for are done here."""
        told = self._collect(child)
        if told is None or len(told["outputs"]) != len(work):
            return [self.engine.compute(r, reason) for r, reason in work]
        return self.engine.adopt_runs(task, [r for r, _ in work], told["outputs"])

    # -----------------------------------------------------------------------------------------
    # Children

    def _may_fork(self) -> bool:
        """Whether this engine forks children at all: it is allowed to, forking is safe, and
        there is more than one processor."""
        return self.allowed and self.processes > 1 and can_fork()

    def _free_processor(self) -> bool:
        """Whether a child may be forked now: fewer children run than processors are free."""
        if not self._may_fork():
            return False
        self.children = [c for c in self.children if c.running()]
        return len(self.children) + 1 < self.processes

    def _fork(self, work: Callable[[], bytes]) -> Child | None:
        """A child doing `work`. What this process staged stays staged here: the child
        reads it from memory, and commits only its own rows (flushing first would cost
        the parent tens of milliseconds at every fork)."""
        store = self.store
        assert store is not None
        store.close()  # SQLite: a connection never crosses a fork; each process opens its own
        try:
            child = Child.start(work)
        finally:
            store.reopen()
        if child is not None:
            self.children.append(child)
        return child

    def _collect(self, child: Child) -> dict | None:
        """Wait for a child: its report, its stats and warnings taken as this process's
        own; None if it raised or died."""
        with self.engine.clock.paused():  # the child's stages count its own time
            report = child.collect()
        if report is None:
            return None
        told = json.loads(report)
        add_stats(self.engine.stats, told["stats"])
        for warning in told["warnings"]:
            self.store.warn(warning)  # type: ignore[union-attr]
        return told

    # -----------------------------------------------------------------------------------------
    # In a child

    def _group_in_child(self, scope: int, group: Group, inputs: Sequence[Value],
                        ident: str) -> bytes:
        """A forked child's work: the group run on a connection of its own, in the scope
        that began it (the child may have been forked from inside a later group)."""
        warnings = self._become_child()
        self.engine.scope = scope
        return self._child_report(warnings, output=self.engine.group(group, inputs, ident).hash)

    def _groups_in_child(self, calls: list[GroupCall]) -> bytes:
        """A forked child's share of `groups`: each run on a connection of its own."""
        warnings = self._become_child()
        return self._child_report(warnings,
                                  output=[self.engine.group(*call).hash for call in calls])

    def _runs_in_child(self, task: Task, work: list[Run]) -> bytes:
        """A forked child's share of a map: its runs, their outputs for its parent."""
        warnings = self._become_child()
        with self.engine.clock.stage(task.stage):
            outputs = [self.engine.compute(r, reason).hash for r, reason in work]
        return self._child_report(warnings, outputs=outputs)

    def _become_child(self) -> list[str]:
        """A forked child's engine: its own connection, its own stats, no children of its
        own; the list its store's warnings go to."""
        warnings: list[str] = []
        self.processes = 1
        self.begun = []  # its siblings are its parent's
        self.children = []
        engine = self.engine
        engine.stats = EngineStats()
        engine.clock = StageClock(engine.stats.seconds)
        self.store.warn = warnings.append  # type: ignore[union-attr]
        self.store.reopen_in_child()  # type: ignore[union-attr]
        return warnings

    def _child_report(self, warnings: list[str], **made: Any) -> bytes:
        """A child's last act: its rows committed, and for its parent what it made and what
        it ran (its stats and warnings)."""
        self.store.flush(self.engine.build_id)  # type: ignore[union-attr]
        self.store.checkpoint()  # type: ignore[union-attr]
        return json.dumps({**made, "stats": stats_json(self.engine.stats),
                           "warnings": warnings}).encode()
