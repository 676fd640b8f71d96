"""The task engine: pure stage functions run as cached tasks.

A task is (name, code version, inputs) → output. Its key is xxh3-128 over the name, the code
version and the content hashes of its inputs, so it is known before anything runs. A key in
the memo is a hit: the task does not run, and its output is not even loaded unless a task
that does run needs it. A task that runs to the output it produced before gives its
dependents the same input hashes, so the change stops there (early cutoff).

Values are records known by content hash (`Value`); a collection is an ordered list of
values, hashed over its items' hashes. A task may fan out (return a tuple of records, each
its own value). A group is a task whose body runs tasks itself and returns an index record
of the hashes its callers need: when the group's inputs are unchanged, none of its inner
tasks is even looked at. A group body may only hand its tasks values derived from its
declared inputs; the engine checks this (`scope`).

The store is never trusted: every blob is checked against its hash when read. A value that
cannot be read is recomputed from its recipe (the task and inputs that made it); a value
named only by a group's index has no recipe, so the build restarts with every group
re-entered (`StaleCache`), which re-creates it.

What content addressing cannot catch is a task row naming another valid value. A verifying
engine (`gradshard build --verify`) therefore answers nothing from the memo: every task and
group runs, and each output that differs from the one the store's row names is recorded as
a `Disagreement` (the row is then rewritten with the computed output).
"""

from __future__ import annotations

import contextlib
import json
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Callable, Iterator, NamedTuple, Sequence

import xxhash

from gradshard.pipeline.problems import Failure, InternalError, RuleViolation, SpecError, SpecFile
from gradshard.pipeline.records import Record, Text, canonical_json

from gradshard.cache.engine.fork import Child, can_fork, processors
from gradshard.cache.store.database import FAILURE_CODEC, Blob, Store, Trace, blob_hash

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


@dataclass(frozen=True, slots=True)
class Refs(Record):
    """A stored collection: its items' hashes, in order."""

    items: tuple[str, ...]


@dataclass(frozen=True)
class Task:
    """A pure function over records. `inputs` names each argument (for "why it ran");
    `output` is the record type it returns, or of each item when it fans out. A rule the
    inputs break (RuleViolation, SpecError) makes the output a `Failure`; a violation that
    names no entry blames the task's ident, an entry of the file `blames`. A task that
    `forks` costs well above reading its output back: a long map of it may hand part of
    its runs to a forked child while a processor is free."""

    name: str
    stage: str
    compute: Callable[..., Any]
    output: type
    inputs: tuple[str, ...]
    fan_out: bool = False
    blames: SpecFile | None = None
    forks: bool = False


@dataclass(frozen=True)
class Group:
    """A task whose body runs tasks: body(engine, *input values) → an index record."""

    name: str
    stage: str
    body: Callable[..., Record]
    output: type
    inputs: tuple[str, ...]


class Recipe:
    """How a value is made: the job, its inputs, the ident and the key of the run. (A plain
    class: one is made per task of a build, and a frozen dataclass costs thrice as much.)"""

    __slots__ = ("job", "inputs", "ident", "key")

    def __init__(self, job: Task | Group, inputs: tuple[Value, ...], ident: str,
                 key: str) -> None:
        self.job = job
        self.inputs = inputs
        self.ident = ident
        self.key = key


class Value:
    """A record by content hash. `items` is set for collections (None while a fanned-out
    output's list is not read yet); `record` once the record is in memory."""

    __slots__ = ("hash", "type", "items", "record", "recipe", "scope", "is_collection")

    def __init__(self, hash: str, type: type, *, record: Any = None,
                 items: tuple[Value, ...] | None = None, is_collection: bool = False,
                 recipe: Recipe | None = None, scope: int = 0) -> None:
        self.hash = hash
        self.type = type
        self.record = record
        self.items = items
        self.is_collection = is_collection or items is not None
        self.recipe = recipe
        self.scope = scope

    def __repr__(self) -> str:
        kind = f"[{self.type.__name__}]" if self.is_collection else self.type.__name__
        return f"Value({kind} {self.hash[:12]})"

    @property
    def failed(self) -> bool:
        """The output of a task whose inputs broke a rule (its record is a Failure)."""
        return self.hash[0] == "!"


class Begun:
    """A group started by `Engine.begin`; `join()` gives its value. Until a child runs it
    (`child`) or it ran here (`value`), it waits for a free processor (`waiting`)."""

    __slots__ = ("engine", "call", "child", "scope", "value", "waiting")

    def __init__(self, engine: Engine, call: tuple[Group, tuple[Value, ...], str],
                 scope: int) -> None:
        self.engine = engine
        self.call = call
        self.child: Child | None = None
        self.scope = scope
        self.value: Value | None = None
        self.waiting = True

    def join(self) -> Value:
        if self.value is None:
            self.value = self.engine._join(self)
        return self.value


class StaleCache(Exception):
    """A value named by a group index is gone from the store: rebuild with groups re-entered."""


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


def encode(record: Record) -> tuple[str, bytes]:
    """How a record is stored: texts as their bytes, a collection as its hashes one per line
    (the engine reads thousands of both per build), everything else as canonical JSON."""
    kind = type(record)
    if kind is Text:
        return "text", record.text.encode("utf-8")  # type: ignore[attr-defined]
    if kind is Refs:
        return "refs", "\n".join(record.items).encode("ascii")  # type: ignore[attr-defined]
    return "json:" + kind.__name__, canonical_json(record.to_json()).encode("utf-8")


def decode(blob: Blob, kind: type) -> Any:
    if blob.codec == FAILURE_CODEC:  # any task's output may be a failure
        return Failure.from_json(json.loads(blob.data))
    if blob.codec == "text":
        return Text(blob.data.decode("utf-8"))
    if blob.codec == "refs":
        return Refs(tuple(blob.data.decode("ascii").split("\n")) if blob.data else ())
    if blob.codec != "json:" + kind.__name__:
        raise TypeError(f"a {blob.codec} blob read as {kind.__name__}")
    return kind.from_json(json.loads(blob.data))


def task_key(name: str, version: str, inputs: Sequence[str]) -> str:
    return xxhash.xxh3_128_hexdigest("\x00".join((name, version, *inputs)).encode())


def collection_hash(hashes: Sequence[str]) -> str:
    return encode_hash(Refs(tuple(hashes)))


def encode_hash(record: Record) -> str:
    return blob_hash(*encode(record))


class Memory:
    """What the engines of one process remember between builds: task keys → outputs and
    hashes → records. Both are content-addressed, so never stale: a record is the record of
    its hash, and an output named here but gone from the store is recomputed like any
    missing value. A long-lived process (`gradshard daemon`) keeps one; it forgets its
    oldest half when it grows past `limit` entries."""

    def __init__(self, limit: int = 400_000) -> None:
        self.limit = limit
        self.memo: dict[str, str] = {}
        self.records: dict[str, Any] = {}

    def trim(self) -> None:
        for table in (self.memo, self.records):
            if len(table) > self.limit:
                for key in list(table)[: len(table) // 2]:
                    del table[key]


class Engine:
    """Runs tasks against a store (or none: everything runs, nothing is kept)."""

    def __init__(self, store: Store | None, code_version: str, *, build_id: int = 0,
                 force_groups: bool = False, memory: Memory | None = None,
                 verify: bool = False, processes: int | None = None) -> None:
        self.store = store
        self.code_version = code_version
        self.build_id = build_id
        self.verify = verify
        self.force_groups = force_groups or verify
        # entering every group to recover what a stale cache lost: no child then, since a
        # value a group's index names is recovered from its recipe, which only the process
        # that ran (or reused) its task knows (see StaleCache)
        self.recovering = force_groups and not verify
        # how many processes `groups` may run at once (None: the processors there are)
        self.processes = processors() if processes is None else processes
        self.stats = EngineStats()
        # a verifying engine must not answer from what this process remembers either
        self.memory = memory if memory is not None and not verify else Memory()
        self._memo = self.memory.memo        # key → output
        self._records = self.memory.records  # hash → record
        self._recipes: dict[str, Recipe] = {}  # hash → how this build made (or reused) it
        self._listings: dict[str, tuple[Value, ...]] = {}  # collection hash → items
        self._reached: list[list[str]] = []  # per running group: every output its tasks gave
        self._scope = 0
        self._scopes = 0
        self._timing: list[list[Any]] = []   # stack of [stage, started]
        self._begun: list[Begun] = []  # groups begun, not joined yet (waiting, or in a child)
        self._children: list[Child] = []  # every child that may still be running

    # -----------------------------------------------------------------------------------------
    # Making values

    def literal(self, record: Record, *, persist: bool = False) -> Value:
        """A value the caller holds; persisted when an index may name it."""
        codec, data = encode(record)
        name = blob_hash(codec, data)
        if persist:
            self._note(name)
            if self.store is not None:
                self.store.put_blob(name, codec, data)
        self._records[name] = record
        return Value(name, type(record), record=record, scope=self._scope)

    def text(self, text: str) -> Value:
        return self.literal(Text(text))

    def collection(self, values: Sequence[Value], kind: type, *, persist: bool = False) -> Value:
        """An ordered list of values; persisted when an index names it."""
        for v in values:
            self._check_scope(v, "a collection")
        items = tuple(values)
        listing = Refs(tuple(v.hash for v in items))
        codec, data = encode(listing)
        name = blob_hash(codec, data)
        if persist:
            self._note(name)
            if self.store is not None:
                self.store.put_blob(name, codec, data)
        self._listings[name] = items
        self._records[name] = listing
        return Value(name, kind, items=items, scope=self._scope)

    def ref(self, name: str, kind: type) -> Value:
        """A value named by a group's index: without a recipe unless this build's tasks made
        or reused it (see StaleCache)."""
        return Value(name, kind, recipe=self._recipes.get(name), scope=self._scope)

    def ref_collection(self, name: str, kind: type) -> Value:
        return Value(name, kind, is_collection=True, recipe=self._recipes.get(name),
                     scope=self._scope)

    # -----------------------------------------------------------------------------------------
    # Running

    def run(self, task: Task, inputs: Sequence[Value], ident: str) -> Value:
        return self.map(task, [(tuple(inputs), ident)])[0]

    def map(self, task: Task, calls: Sequence[tuple[tuple[Value, ...], str]]) -> list[Value]:
        """Run `task` once per (inputs, ident); hits are answered without running."""
        if not calls:
            return []
        with self._stage(task.stage):
            for inputs, _ in calls:
                for v in inputs:
                    self._check_scope(v, task.name)
            keys = [self._key(task, inputs) for inputs, _ in calls]
            found = {} if self.verify else self._lookup(keys)
            held = self._held(keys)
            values: list[Value | None] = []
            misses: list[Recipe] = []
            for (inputs, ident), key in zip(calls, keys):
                recipe = Recipe(task, inputs, ident, key)
                output = found.get(key)
                if output is None:
                    misses.append(recipe)
                    values.append(None)
                else:
                    values.append(self._output_value(task, output, recipe))
            self.stats.reused[task.stage] += len(calls) - len(misses)
            if misses:
                computed = self._execute(task, misses)
                self._compare(misses, computed, held)
                computed = iter(computed)
                values = [v if v is not None else next(computed) for v in values]
            if self._reached:
                self._reached[-1].extend(v.hash for v in values)  # type: ignore[union-attr]
            return values  # type: ignore[return-value]

    def group(self, group: Group, inputs: Sequence[Value], ident: str) -> Value:
        """Run a group: its index when the inputs are unchanged, else its body."""
        with self._stage(group.stage):
            for v in inputs:
                self._check_scope(v, group.name)
            key = self._key(group, inputs)
            recipe = Recipe(group, tuple(inputs), ident, key)
            if not self.force_groups:
                output = self._lookup([key]).get(key)
                if output is not None:
                    self.stats.reused[group.stage] += 1
                    self._recipes[output] = recipe
                    self._note(output)
                    return Value(output, group.output, recipe=recipe, scope=self._scope)
            reason = self._reasons(group, [recipe])[0]
            held = self._held([key])
            value = self._run_group(recipe, reason)
            self._note(value.hash)
            self._compare([recipe], [value], held)
            return value

    def begin(self, group: Group, inputs: Sequence[Value], ident: str) -> Begun:
        """Start a group whose value the caller reads only at `join()`. When its body must
        run and this process may fork, it goes to a forked child (cache/engine/fork.py) as soon as
        a processor is free: now, or at the next group or task batch this process starts
        (as a scheduler starts a ready job when a worker frees up); if none frees up before
        `join()`, it runs there. Otherwise it runs here, now. A child commits its rows to the
        store itself and hands back its index and what it ran; a group whose child failed
        runs at `join()`, raising its error there. A group body joins every group it
        began."""
        call = (group, tuple(inputs), ident)
        for v in inputs:
            self._check_scope(v, group.name)
        begun = Begun(self, call, self._scope)
        if self._may_fork() and self._must_run(group, inputs):
            self._begun.append(begun)
            self._fork_waiting()
        else:
            begun.waiting = False
            begun.value = self.group(*call)
        return begun

    def groups(self, calls: Sequence[tuple[Group, Sequence[Value], str]]) -> list[Value]:
        """Run groups none of which reads another's output, as `group` runs each, in order:
        when a processor is free, the back half of those whose body must run goes to one
        forked child (run there one after another), the front half runs here meanwhile."""
        ordered = [(g, tuple(inputs), ident) for g, inputs, ident in calls]
        handed = self._handed_groups(ordered)
        child = (self._fork(partial(self._groups_in_child, [ordered[p] for p in handed]))
                 if handed else None)
        try:
            return self._run_groups(ordered, handed if child is not None else [], child)
        finally:
            if child is not None:
                child.stop()  # collected already, unless this process is failing

    def _handed_groups(self, calls: list[tuple[Group, tuple[Value, ...], str]]) -> list[int]:
        """The positions of the groups a child may run: the back half of those whose body
        must run, when a processor is free for it."""
        for group, inputs, _ in calls:
            for v in inputs:
                self._check_scope(v, group.name)
        if not self._free_processor():
            return []
        running = [p for p, (group, inputs, _) in enumerate(calls)
                   if self._must_run(group, inputs)]
        if len(running) < GROUPS_LEAST:
            return []
        return running[(len(running) + 1) // 2:]

    def _run_groups(self, calls: list[tuple[Group, tuple[Value, ...], str]],
                    handed: list[int], child: Child | None) -> list[Value]:
        """Each group's value in order; the child's (at the positions `handed`) are read when
        the first of them is reached (every group run here comes before it)."""
        outputs: list[str] | None = None
        values = []
        for position, call in enumerate(calls):
            if position not in handed:
                values.append(self.group(*call))
                continue
            if outputs is None:
                told = self._collect(child)  # type: ignore[arg-type]
                fits = told is not None and len(told["output"]) == len(handed)
                outputs = told["output"] if fits else []  # type: ignore[index]
            at = handed.index(position)
            values.append(self._adopt_group(call, outputs[at]) if outputs
                          else self.group(*call))
        return values

    def records(self, values: Sequence[Value]) -> list[Any]:
        """The records of single values (loading what is not in memory)."""
        self._load(values)
        return [v.record for v in values]

    def items(self, value: Value) -> tuple[Value, ...]:
        """The item values of a collection (reading a fanned-out list if needed)."""
        return self.items_of([value])[0]

    def items_of(self, values: Sequence[Value]) -> list[tuple[Value, ...]]:
        self._expand(values)
        return [_in_scope(v.items, v.scope) for v in values]  # type: ignore[arg-type]

    def failures(self) -> list[Value]:
        """The failed outputs the running group's tasks gave so far, computed or answered
        from the cache alike (collected the way Salsa's accumulators are): what its index
        keeps, so that a cached run reports the same problems."""
        reached = dict.fromkeys(h for h in self._reached[-1] if h[0] == "!")
        return [Value(h, Failure, recipe=self._recipes.get(h), scope=self._scope)
                for h in reached]

    def problems(self, failures: Sequence[Value]) -> list:
        """Every problem these failed values hold, in order."""
        return [p for f in self.records(list(failures)) for p in f.problems]

    def finish(self) -> None:
        """Commit what this build computed."""
        if self._stop_begun(self._scope):
            raise InternalError("a group begun was never joined")
        if self.store is not None:
            self.store.flush(self.build_id)
        self.memory.trim()

    # -----------------------------------------------------------------------------------------
    # Internals

    def _fork_waiting(self) -> None:
        """Fork a child for each begun group still waiting, while a processor is free. A
        group whose fork failed stops waiting: it runs at its join."""
        for begun in self._begun:
            if not begun.waiting or not self._free_processor():
                continue
            begun.waiting = False
            begun.child = self._fork(partial(self._group_in_child, begun.scope, *begun.call))

    def _join(self, begun: Begun) -> Value:
        if begun.scope != self._scope:
            raise InternalError(f"{begun.call[0].name} is joined outside the group that began it")
        self._begun.remove(begun)
        begun.waiting = False
        if begun.child is None:  # no processor freed up for it (or its fork failed)
            return self.group(*begun.call)
        told = self._collect(begun.child)
        if told is None:
            return self.group(*begun.call)
        return self._adopt_group(begun.call, told["output"])

    def _stop_begun(self, scope: int) -> list[Begun]:
        """Drop the groups begun in `scope` and not joined (the body failed, or forgot),
        ending the children running them."""
        left = [b for b in self._begun if b.scope == scope]
        for begun in left:
            self._begun.remove(begun)
            if begun.child is not None:
                begun.child.stop()
        return left

    def _may_fork(self) -> bool:
        """Whether this engine forks children at all: a store keeps their work (without one
        it would be lost with them), the run is not recovering, forking is safe, and there
        is more than one processor."""
        return (self.store is not None and not self.recovering and self.processes > 1
                and can_fork())

    def _free_processor(self) -> bool:
        """Whether a child may be forked now: fewer children run than processors are free."""
        if not self._may_fork():
            return False
        self._children = [c for c in self._children if c.running()]
        return len(self._children) + 1 < self.processes

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
            self._children.append(child)
        return child

    def _become_child(self) -> list[str]:
        """A forked child's engine: its own connection, its own stats, no children of its
        own; the list its store's warnings go to."""
        warnings: list[str] = []
        self.processes = 1
        self.stats = EngineStats()
        self._timing = []
        self._begun = []  # its siblings are its parent's
        self._children = []
        self.store.warn = warnings.append  # type: ignore[union-attr]
        self.store.reopen_in_child()  # type: ignore[union-attr]
        return warnings

    def _child_report(self, warnings: list[str], **made: Any) -> bytes:
        """A child's last act: its rows committed, and for its parent what it made and what
        it ran (its stats and warnings)."""
        self.store.flush(self.build_id)  # type: ignore[union-attr]
        self.store.checkpoint()  # type: ignore[union-attr]
        return json.dumps({**made, "stats": _stats_json(self.stats),
                           "warnings": warnings}).encode()

    def _collect(self, child: Child) -> dict | None:
        """Wait for a child: its report, its stats and warnings taken as this process's
        own; None if it raised or died."""
        with self._paused():  # the child's stages count its own time
            report = child.collect()
        if report is None:
            return None
        told = json.loads(report)
        _add_stats(self.stats, told["stats"])
        for warning in told["warnings"]:
            self.store.warn(warning)  # type: ignore[union-attr]
        return told

    def _group_in_child(self, scope: int, group: Group, inputs: Sequence[Value],
                        ident: str) -> bytes:
        """A forked child's work: the group run on a connection of its own, in the scope
        that began it (the child may have been forked from inside a later group)."""
        warnings = self._become_child()
        self._scope = scope
        return self._child_report(warnings, output=self.group(group, inputs, ident).hash)

    def _groups_in_child(self, calls: list[tuple[Group, tuple[Value, ...], str]]) -> bytes:
        """A forked child's share of `groups`: each run on a connection of its own."""
        warnings = self._become_child()
        return self._child_report(warnings, output=[self.group(*call).hash for call in calls])

    def _adopt_group(self, call: tuple[Group, Sequence[Value], str], output: str) -> Value:
        """The value of a group a child ran, from its report."""
        group, inputs, ident = call
        key = self._key(group, inputs)
        recipe = Recipe(group, tuple(inputs), ident, key)
        self._memo[key] = output
        self._recipes[output] = recipe
        self._note(output)
        return Value(output, group.output, recipe=recipe, scope=self._scope)

    def _must_run(self, group: Group, inputs: Sequence[Value]) -> bool:
        """Whether the group runs its body (its index is not known)."""
        key = self._key(group, inputs)
        return self.force_groups or key not in self._lookup([key])

    def _key(self, job: Task | Group, inputs: Sequence[Value]) -> str:
        return task_key(job.name, self.code_version, [v.hash for v in inputs])

    def _note(self, name: str) -> None:
        if self._reached:
            self._reached[-1].append(name)

    def _check_scope(self, value: Value, user: str) -> None:
        if value.scope != self._scope:
            raise InternalError(f"{user} reads a value its group did not declare as an input")

    def _lookup(self, keys: list[str]) -> dict[str, str]:
        found = {k: self._memo[k] for k in keys if k in self._memo}
        if self.store is not None:
            missing = [k for k in keys if k not in found]
            if missing:
                stored = self.store.memo(missing)
                found.update(stored)
                self._memo.update(stored)
        return found

    def _output_value(self, task: Task, output: str, recipe: Recipe) -> Value:
        self._recipes[output] = recipe
        if task.fan_out and output[0] != "!":
            return Value(output, task.output, is_collection=True, recipe=recipe,
                         scope=self._scope)
        return Value(output, task.output, recipe=recipe, scope=self._scope)

    def _execute(self, task: Task, misses: list[Recipe]) -> list[Value]:
        if self._begun:
            self._fork_waiting()
        self._load([v for r in misses for v in r.inputs if not v.failed])
        work = list(zip(misses, self._reasons(task, misses)))
        if task.forks and len(work) >= MAP_FORK_LEAST:
            return self._execute_forking(task, work)
        return [self._compute(r, reason) for r, reason in work]

    def _execute_forking(self, task: Task, work: list[tuple[Recipe, str]]) -> list[Value]:
        """The runs, in order; whenever a processor is free, the back of those left (a
        CHILD_SHARE of them) goes to a forked child (as a scheduler's work stealing would
        take it)."""
        values: list[Value | None] = [None] * len(work)
        handed: list[tuple[Child, int, int]] = []
        start, end, forking = 0, len(work), True
        while start < end:
            if forking and end - start >= MAP_FORK_LEAST and self._free_processor():
                middle = end - int((end - start) * CHILD_SHARE)
                child = self._fork(partial(self._tasks_in_child, task, work[middle:end]))
                forking = child is not None
                if child is not None:
                    handed.append((child, middle, end))
                    end = middle
                    continue
            stop = min(end, start + CHECK_EVERY)
            values[start:stop] = [self._compute(r, reason) for r, reason in work[start:stop]]
            start = stop
        try:
            for child, first, last in handed:
                values[first:last] = self._adopt_tasks(task, work[first:last], child)
        finally:
            for child, _, _ in handed:
                child.stop()  # those not collected: this process is failing
        return values  # type: ignore[return-value]

    def _tasks_in_child(self, task: Task, work: list[tuple[Recipe, str]]) -> bytes:
        """A forked child's share of a map: its runs, their outputs for its parent."""
        warnings = self._become_child()
        with self._stage(task.stage):
            outputs = [self._compute(r, reason).hash for r, reason in work]
        return self._child_report(warnings, outputs=outputs)

    def _adopt_tasks(self, task: Task, work: list[tuple[Recipe, str]],
                     child: Child) -> list[Value]:
        """The values of runs a child did, read back from the store (each blob checked
        against its hash); runs it gave nothing for are done here."""
        told = self._collect(child)
        if told is None or len(told["outputs"]) != len(work):
            return [self._compute(r, reason) for r, reason in work]
        values = []
        for (recipe, _), output in zip(work, told["outputs"]):
            self._memo[recipe.key] = output
            values.append(self._output_value(task, output, recipe))
        self._load(values)
        return values

    def _held(self, keys: list[str]) -> dict[str, str]:
        """--verify: the outputs the store's rows name, read before the tasks run (running
        them rewrites the rows)."""
        if not self.verify or self.store is None:
            return {}
        return self.store.memo(keys)

    def _compare(self, recipes: list[Recipe], values: list[Value], held: dict[str, str]) -> None:
        for recipe, value in zip(recipes, values):
            cached = held.get(recipe.key)
            if cached is None:
                continue
            self.stats.verified += 1
            if cached != value.hash:
                self.stats.disagreements.append(
                    Disagreement(recipe.job.name, recipe.ident, cached, value.hash))

    def _compute(self, recipe: Recipe, reason: str) -> Value:
        task = recipe.job
        assert isinstance(task, Task)
        started = time.perf_counter()
        output = _outcome(task, recipe)
        seconds = time.perf_counter() - started
        value = self._keep(task, output, recipe)
        self._remember(recipe, value.hash, reason, seconds)
        return value

    def _run_group(self, recipe: Recipe, reason: str) -> Value:
        group = recipe.job
        assert isinstance(group, Group)
        if self._begun:
            self._fork_waiting()
        outer = self._scope
        self._scopes += 1
        self._scope = self._scopes
        self._reached.append([])
        try:
            inner = [_rescoped(v, self._scope) for v in recipe.inputs]
            started = time.perf_counter()
            index = group.body(self, *inner)
            seconds = time.perf_counter() - started
            if any(b.scope == self._scope for b in self._begun):
                raise InternalError(f"{group.name} began a group it never joined")
        finally:
            self._stop_begun(self._scope)
            self._scope = outer
            reached = self._reached.pop()
        value = self._store_record(index, recipe)
        if self.store is not None:
            # gc keeps whatever the latest builds' indexes reach, inner tasks' outputs
            # included: the index refers to a listing of them
            reach = self._store_record(Refs(tuple(dict.fromkeys(reached))), recipe)
            self.store.put_refs(value.hash, [reach.hash])
        self._remember(recipe, value.hash, reason, seconds)
        return value

    def _keep(self, task: Task, output: Any, recipe: Recipe) -> Value:
        if not task.fan_out or isinstance(output, Failure):
            return self._store_record(output, recipe)
        items = tuple(self._store_record(item, recipe) for item in output)
        stored = self._store_record(Refs(tuple(i.hash for i in items)), recipe)
        self._listings[stored.hash] = items
        return Value(stored.hash, task.output, items=items, recipe=recipe, scope=self._scope)

    def _store_record(self, record: Record, recipe: Recipe) -> Value:
        codec, data = encode(record)
        name = blob_hash(codec, data)
        if self.store is not None:
            self.store.put_blob(name, codec, data)
        self._records[name] = record
        self._recipes[name] = recipe
        return Value(name, type(record), record=record, recipe=recipe, scope=self._scope)

    def _remember(self, recipe: Recipe, output: str, reason: str, seconds: float) -> None:
        job = recipe.job
        self._memo[recipe.key] = output
        self.stats.run[job.stage] += 1
        self.stats.runs.append(TaskRun(job.name, job.stage, recipe.ident, reason, seconds))
        if self.store is not None:
            self.store.put_task(recipe.key, job.name, output, seconds, self.code_version)
            self.store.put_trace(job.name, recipe.ident, recipe.key,
                                 [v.hash for v in recipe.inputs])
            if len(self.store.pending) > 5000:
                self.store.flush(self.build_id)

    def _reasons(self, job: Task | Group, recipes: list[Recipe]) -> list[str]:
        """Why each task runs: new, which inputs changed, gradshard changed, or not cached."""
        if self.store is None:
            return ["no cache"] * len(recipes)
        if self.verify:
            return ["verifying the cache"] * len(recipes)
        traces = self.store.traces(job.name, [r.ident for r in recipes])
        return [_reason(job, r, traces.get(r.ident)) for r in recipes]

    # Loading ---------------------------------------------------------------------------------

    def _expand(self, values: Sequence[Value]) -> None:
        """Fill `items` of collections read from the store (a fanned-out output's list)."""
        pending = []
        for v in values:
            if v.is_collection and v.items is None:
                known = self._listings.get(v.hash)
                if known is None:
                    pending.append(v)
                else:
                    v.items = _in_scope(known, v.scope)
        if not pending:
            return
        listings = self._fetch([v.hash for v in pending], Refs)
        for v in pending:
            listing = listings.get(v.hash)
            if listing is None:
                self._recover(v)
                continue
            v.items = tuple(Value(h, v.type, recipe=v.recipe, scope=v.scope)
                            for h in listing.items)
            self._listings[v.hash] = v.items
            if v.recipe is not None:
                # an index naming one item (a family's kernel) refers to it with this recipe
                for h in listing.items:
                    self._recipes.setdefault(h, v.recipe)

    def _load(self, values: Sequence[Value]) -> None:
        """Bring every record of these values (and their items) into memory."""
        self._expand(values)
        singles: dict[str, list[Value]] = defaultdict(list)
        for v in values:
            for single in (v.items if v.is_collection else (v,)):
                if single.record is None:
                    singles[single.hash].append(single)
        if not singles:
            return
        kinds = {h: vs[0].type for h, vs in singles.items()}
        found = self._fetch_typed(kinds)
        for name, waiting in singles.items():
            if name in found:
                for v in waiting:
                    v.record = found[name]
            else:
                self._recover(waiting[0])
                for v in waiting[1:]:
                    v.record = waiting[0].record

    def _fetch(self, names: list[str], kind: type) -> dict[str, Any]:
        return self._fetch_typed({n: kind for n in names})

    def _fetch_typed(self, kinds: dict[str, type]) -> dict[str, Any]:
        records = {n: self._records[n] for n in kinds if n in self._records}
        missing = [n for n in kinds if n not in records]
        if self.store is None or not missing:
            return records
        for name, blob in self.store.blobs(missing).items():
            try:
                records[name] = self._records[name] = decode(blob, kinds[name])
            except (ValueError, TypeError, KeyError, AttributeError, UnicodeDecodeError):
                self.store.warn(f"cache entry {name[:12]}… does not decode; recomputed")
                self.store.forget([name])
        return records

    def _recover(self, value: Value) -> None:
        """Recompute a value whose blob is gone, from its recipe."""
        recipe = value.recipe
        if recipe is None:
            raise StaleCache(value.hash)
        self.stats.recovered += 1
        self._memo.pop(recipe.key, None)
        if isinstance(recipe.job, Group):
            again = self._run_group(recipe, "its cached output was damaged")
        else:
            self._load(list(recipe.inputs))
            again = self._compute(recipe, "its cached output was damaged")
        if value.is_collection:
            value.hash, value.items = again.hash, again.items
        elif again.hash == value.hash or again.items is None:
            # a different hash means the memo row itself was damaged: the recomputed value
            # is the right one (the row is now rewritten)
            value.hash, value.record = again.hash, again.record
        else:
            # an item of a fanned-out list, recomputed through its whole task
            match = next((i for i in again.items if i.hash == value.hash), None)
            if match is None:
                raise StaleCache(value.hash)
            value.record = match.record

    def _stage(self, stage: str) -> _StageTimer:
        return _StageTimer(self, stage)

    @contextlib.contextmanager
    def _paused(self) -> Iterator[None]:
        """Time no running stage is charged with (waiting for a child)."""
        started = time.perf_counter()
        try:
            yield
        finally:
            if self._timing:
                self._timing[-1][1] += time.perf_counter() - started


class _StageTimer:
    """Wall time goes to the innermost running stage (a group's inner tasks own theirs)."""

    def __init__(self, engine: Engine, stage: str) -> None:
        self.engine = engine
        self.stage = stage

    def __enter__(self) -> None:
        now = time.perf_counter()
        stack = self.engine._timing
        if stack:
            outer = stack[-1]
            self.engine.stats.seconds[outer[0]] += now - outer[1]
        stack.append([self.stage, now])

    def __exit__(self, *exc: object) -> None:
        now = time.perf_counter()
        stack = self.engine._timing
        stage, started = stack.pop()
        self.engine.stats.seconds[stage] += now - started
        if stack:
            stack[-1][1] = now


def _outcome(task: Task, recipe: Recipe) -> Any:
    """The task's output for the recipe's inputs: its record(s), or a Failure holding the
    problems the inputs have (the empty one when an input failed already)."""
    if any(_has_failed(v) for v in recipe.inputs):
        return Failure()
    args = [tuple(i.record for i in v.items) if v.is_collection else v.record
            for v in recipe.inputs]
    try:
        return task.compute(*args)
    except SpecError as error:
        return Failure(error.problems)
    except RuleViolation as violation:
        file = violation.file or task.blames
        if file is None:
            raise InternalError(f"{task.name} broke the rule {violation.rule} ({violation}) "
                                "but names no spec file to blame") from None
        return Failure((violation.to_problem(file, recipe.ident),))


def _stats_json(stats: EngineStats) -> dict:
    """What a child ran, for its parent's report."""
    return {"run": stats.run, "reused": stats.reused, "seconds": stats.seconds,
            "runs": stats.runs, "recovered": stats.recovered, "verified": stats.verified,
            "disagreements": [list(_disagreement_fields(d)) for d in stats.disagreements]}


def _disagreement_fields(d: Disagreement) -> tuple[str, str, str, str]:
    return d.task, d.ident, d.cached, d.computed


def _add_stats(stats: EngineStats, child: dict) -> None:
    for total, counts in ((stats.run, child["run"]), (stats.reused, child["reused"]),
                          (stats.seconds, child["seconds"])):
        total.update(counts)
    stats.runs.extend(TaskRun(*run) for run in child["runs"])
    stats.recovered += child["recovered"]
    stats.verified += child["verified"]
    stats.disagreements.extend(Disagreement(*d) for d in child["disagreements"])


def _has_failed(value: Value) -> bool:
    return value.failed or (value.items is not None and any(i.failed for i in value.items))


def _reason(job: Task | Group, recipe: Recipe, trace: Trace | None) -> str:
    if trace is None:
        return "new"
    if trace.key == recipe.key:
        return "not in the cache"
    hashes = [v.hash for v in recipe.inputs]
    if list(trace.inputs) == hashes:
        return "gradshard changed"
    if len(trace.inputs) != len(hashes):
        return "inputs changed"
    changed = [label for label, old, new in zip(job.inputs, trace.inputs, hashes) if old != new]
    return "changed: " + ", ".join(changed)


def _rescoped(value: Value, scope: int) -> Value:
    """The same value as seen inside another group (records are shared, never copied)."""
    return Value(value.hash, value.type, record=value.record, items=value.items,
                 is_collection=value.is_collection, recipe=value.recipe, scope=scope)


def _in_scope(items: tuple[Value, ...], scope: int) -> tuple[Value, ...]:
    if all(i.scope == scope for i in items):
        return items
    return tuple(_rescoped(i, scope) for i in items)
