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

Which work goes to forked children, and when, is the engine's `scheduler`'s
(cache/engine/scheduler.py).
"""

from __future__ import annotations

import time
from collections import defaultdict
from typing import Any, Sequence

from gradshard.cache.engine.codec import Refs, decode, encode
from gradshard.cache.engine.jobs import Group, Task, task_key
from gradshard.cache.engine.memory import Memory
from gradshard.cache.engine.scheduler import Begun, ForkScheduler, GroupCall, Run
from gradshard.cache.engine.stats import Disagreement, EngineStats, StageClock, TaskRun
from gradshard.cache.engine.values import Recipe, Value, has_failed, in_scope, rescoped
from gradshard.cache.store.database import Store, Trace, blob_hash
from gradshard.pipeline.problems import Failure, InternalError, RuleViolation, SpecError
from gradshard.pipeline.records import Record, Text

__all__ = ["Engine", "StaleCache"]


class StaleCache(Exception):
    """A value named by a group index is gone from the store: rebuild with groups re-entered."""


class Engine:
    """Runs tasks against a store (or none: everything runs, nothing is kept). `build_id`
    is the build whose rows it commits (Store.flush); `processes` how many processes may
    run at once (None: the processors there are)."""

    def __init__(self, store: Store | None, code_version: str, *, build_id: int = 0,
                 force_groups: bool = False, memory: Memory | None = None,
                 verify: bool = False, processes: int | None = None) -> None:
        self.store = store
        self.code_version = code_version
        self.build_id = build_id
        self.verify = verify
        self.force_groups = force_groups or verify
        self.stats = EngineStats()
        self.clock = StageClock(self.stats.seconds)
        # a verifying engine must not answer from what this process remembers either
        self.memory = memory if memory is not None and not verify else Memory()
        self._memo = self.memory.memo        # key → output
        self._records = self.memory.records  # hash → record
        self._recipes: dict[str, Recipe] = {}  # hash → how this build made (or reused) it
        self._listings: dict[str, tuple[Value, ...]] = {}  # collection hash → items
        self._reached: list[list[str]] = []  # per running group: every output its tasks gave
        self.scope = 0  # the group scope tasks run in (0: outside every group)
        self._scopes = 0
        # entering every group to recover what a stale cache lost: no child then, since a
        # value a group's index names is recovered from its recipe, which only the process
        # that ran (or reused) its task knows (see StaleCache)
        recovering = force_groups and not verify
        self.scheduler = ForkScheduler(self, store, processes, allowed=not recovering)

    # -----------------------------------------------------------------------------------------
    # Making values

    def literal(self, record: Record, *, persist: bool = False) -> Value:
        """A value the caller holds; persisted when an index may name it."""
        codec, data = encode(record)
        name = blob_hash(codec, data)
        if persist:
            self._persist(name, codec, data)
        self._records[name] = record
        return Value(name, type(record), record=record, scope=self.scope)

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
            self._persist(name, codec, data)
        self._listings[name] = items
        self._records[name] = listing
        return Value(name, kind, items=items, scope=self.scope)

    def ref(self, name: str, kind: type) -> Value:
        """A value named by a group's index: without a recipe unless this build's tasks made
        or reused it (see StaleCache)."""
        return Value(name, kind, recipe=self._recipes.get(name), scope=self.scope)

    def ref_collection(self, name: str, kind: type) -> Value:
        return Value(name, kind, is_collection=True, recipe=self._recipes.get(name),
                     scope=self.scope)

    def _persist(self, name: str, codec: str, data: bytes) -> None:
        """Keep a blob an index may name (the running group reaches it)."""
        self._note(name)
        if self.store is not None:
            self.store.put_blob(name, codec, data)

    # -----------------------------------------------------------------------------------------
    # Running

    def run(self, task: Task, inputs: Sequence[Value], ident: str) -> Value:
        return self.map(task, [(tuple(inputs), ident)])[0]

    def map(self, task: Task, calls: Sequence[tuple[tuple[Value, ...], str]]) -> list[Value]:
        """Run `task` once per (inputs, ident); hits are answered without running."""
        if not calls:
            return []
        with self.clock.stage(task.stage):
            for inputs, _ in calls:
                for v in inputs:
                    self._check_scope(v, task.name)
            keys = [self._key(task, inputs) for inputs, _ in calls]
            recipes = [Recipe(task, inputs, ident, key)
                       for (inputs, ident), key in zip(calls, keys)]
            values = self._answered(task, recipes)
            if self._reached:
                self._reached[-1].extend(v.hash for v in values)
            return values

    def _answered(self, task: Task, recipes: list[Recipe]) -> list[Value]:
        """Each run's value: from the memo, or computed (and, verifying, compared with what
        the store's row names)."""
        keys = [r.key for r in recipes]
        found = {} if self.verify else self._lookup(keys)
        held = self._held(keys)
        values = [self._output_value(task, found[r.key], r) if r.key in found else None
                  for r in recipes]
        misses = [r for r, v in zip(recipes, values) if v is None]
        self.stats.reused[task.stage] += len(recipes) - len(misses)
        if not misses:
            return values  # type: ignore[return-value]
        computed = self._execute(task, misses)
        self._compare(misses, computed, held)
        fresh = iter(computed)
        return [v if v is not None else next(fresh) for v in values]

    def group(self, group: Group, inputs: Sequence[Value], ident: str) -> Value:
        """Run a group: its index when the inputs are unchanged, else its body."""
        with self.clock.stage(group.stage):
            for v in inputs:
                self._check_scope(v, group.name)
            key = self._key(group, inputs)
            recipe = Recipe(group, tuple(inputs), ident, key)
            if not self.force_groups:
                output = self._lookup([key]).get(key)
                if output is not None:
                    self.stats.reused[group.stage] += 1
                    return self._reused_group(recipe, output)
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
        for v in inputs:
            self._check_scope(v, group.name)
        return self.scheduler.begin((group, tuple(inputs), ident))

    def groups(self, calls: Sequence[tuple[Group, Sequence[Value], str]]) -> list[Value]:
        """Run groups none of which reads another's output, as `group` runs each, in order:
        when a processor is free, the back half of those whose body must run goes to one
        forked child (run there one after another), the front half runs here meanwhile."""
        ordered = [(g, tuple(inputs), ident) for g, inputs, ident in calls]
        for group, inputs, _ in ordered:
            for v in inputs:
                self._check_scope(v, group.name)
        return self.scheduler.groups(ordered)

    def records(self, values: Sequence[Value]) -> list[Any]:
        """The records of single values (loading what is not in memory)."""
        self._load(values)
        return [v.record for v in values]

    def record(self, value: Value) -> Any:
        """The record of one single value (loading it if it is not in memory)."""
        return self.records([value])[0]

    def items(self, value: Value) -> tuple[Value, ...]:
        """The item values of a collection (reading a fanned-out list if needed)."""
        return self.items_of([value])[0]

    def items_of(self, values: Sequence[Value]) -> list[tuple[Value, ...]]:
        self._expand(values)
        return [in_scope(v.items, v.scope) for v in values]  # type: ignore[arg-type]

    def failures(self) -> list[Value]:
        """The failed outputs the running group's tasks gave so far, computed or answered
        from the cache alike (collected the way Salsa's accumulators are): what its index
        keeps, so that a cached run reports the same problems."""
        reached = dict.fromkeys(h for h in self._reached[-1] if h[0] == "!")
        return [Value(h, Failure, recipe=self._recipes.get(h), scope=self.scope)
                for h in reached]

    def problems(self, failures: Sequence[Value]) -> list:
        """Every problem these failed values hold, in order."""
        return [p for f in self.records(list(failures)) for p in f.problems]

    def finish(self) -> None:
        """Commit what this build computed."""
        if self.scheduler.stop_begun(self.scope):
            raise InternalError("a group begun was never joined")
        if self.store is not None:
            self.store.flush(self.build_id)
        self.memory.trim()

    # -----------------------------------------------------------------------------------------
    # What the scheduler asks (cache/engine/scheduler.py: ForkingEngine)

    def compute(self, recipe: Recipe, reason: str) -> Value:
        """Run a task's recipe here, and remember its output."""
        task = recipe.job
        assert isinstance(task, Task)
        started = time.perf_counter()
        output = _outcome(task, recipe)
        seconds = time.perf_counter() - started
        value = self._keep(task, output, recipe)
        self._remember(recipe, value.hash, reason, seconds)
        return value

    def must_run(self, group: Group, inputs: Sequence[Value]) -> bool:
        """Whether the group runs its body (its index is not known)."""
        key = self._key(group, inputs)
        return self.force_groups or key not in self._lookup([key])

    def adopt_group(self, call: GroupCall, output: str) -> Value:
        """The value of a group a forked child ran, from the index hash it reported."""
        group, inputs, ident = call
        key = self._key(group, inputs)
        self._memo[key] = output
        return self._reused_group(Recipe(group, tuple(inputs), ident, key), output)

    def adopt_runs(self, task: Task, recipes: Sequence[Recipe],
                   outputs: Sequence[str]) -> list[Value]:
        """The values of runs a forked child did, from the output hashes it reported: read
        back from the store (each blob checked against its hash)."""
        values = []
        for recipe, output in zip(recipes, outputs):
            self._memo[recipe.key] = output
            values.append(self._output_value(task, output, recipe))
        self._load(values)
        return values

    # -----------------------------------------------------------------------------------------
    # Internals

    def _key(self, job: Task | Group, inputs: Sequence[Value]) -> str:
        return task_key(job.name, self.code_version, [v.hash for v in inputs])

    def _note(self, name: str) -> None:
        if self._reached:
            self._reached[-1].append(name)

    def _check_scope(self, value: Value, user: str) -> None:
        if value.scope != self.scope:
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
                         scope=self.scope)
        return Value(output, task.output, recipe=recipe, scope=self.scope)

    def _reused_group(self, recipe: Recipe, output: str) -> Value:
        """The value of a group whose index is known (the memo's, or a child's)."""
        self._recipes[output] = recipe
        self._note(output)
        return Value(output, recipe.job.output, recipe=recipe, scope=self.scope)

    def _execute(self, task: Task, misses: list[Recipe]) -> list[Value]:
        self.scheduler.start_waiting()
        self._load([v for r in misses for v in r.inputs if not v.failed])
        work: list[Run] = list(zip(misses, self._reasons(task, misses)))
        if task.forks:
            return self.scheduler.compute_runs(task, work)
        return [self.compute(r, reason) for r, reason in work]

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

    def _run_group(self, recipe: Recipe, reason: str) -> Value:
        group = recipe.job
        assert isinstance(group, Group)
        self.scheduler.start_waiting()
        index, reached, seconds = self._run_body(group, recipe.inputs)
        value = self._store_record(index, recipe)
        if self.store is not None:
            # gc keeps whatever the latest builds' indexes reach, inner tasks' outputs
            # included: the index refers to a listing of them
            reach = self._store_record(Refs(tuple(dict.fromkeys(reached))), recipe)
            self.store.put_refs(value.hash, [reach.hash])
        self._remember(recipe, value.hash, reason, seconds)
        return value

    def _run_body(self, group: Group, inputs: tuple[Value, ...]
                  ) -> tuple[Record, list[str], float]:
        """A group's body run in a scope of its own: its index, every output its tasks gave,
        and its seconds."""
        outer = self.scope
        self._scopes += 1
        self.scope = self._scopes
        self._reached.append([])
        try:
            inner = [rescoped(v, self.scope) for v in inputs]
            started = time.perf_counter()
            index = group.body(self, *inner)
            seconds = time.perf_counter() - started
            if self.scheduler.begun_in(self.scope):
                raise InternalError(f"{group.name} began a group it never joined")
        finally:
            self.scheduler.stop_begun(self.scope)
            self.scope = outer
            reached = self._reached.pop()
        return index, reached, seconds

    def _keep(self, task: Task, output: Any, recipe: Recipe) -> Value:
        if not task.fan_out or isinstance(output, Failure):
            return self._store_record(output, recipe)
        items = tuple(self._store_record(item, recipe) for item in output)
        stored = self._store_record(Refs(tuple(i.hash for i in items)), recipe)
        self._listings[stored.hash] = items
        return Value(stored.hash, task.output, items=items, recipe=recipe, scope=self.scope)

    def _store_record(self, record: Record, recipe: Recipe) -> Value:
        codec, data = encode(record)
        name = blob_hash(codec, data)
        if self.store is not None:
            self.store.put_blob(name, codec, data)
        self._records[name] = record
        self._recipes[name] = recipe
        return Value(name, type(record), record=record, recipe=recipe, scope=self.scope)

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
                    v.items = in_scope(known, v.scope)
        if pending:
            self._read_listings(pending)

    def _read_listings(self, pending: list[Value]) -> None:
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
            again = self.compute(recipe, "its cached output was damaged")
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


def _outcome(task: Task, recipe: Recipe) -> Any:
    """The task's output for the recipe's inputs: its record(s), or a Failure holding the
    problems the inputs have (the empty one when an input failed already)."""
    if any(has_failed(v) for v in recipe.inputs):
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
