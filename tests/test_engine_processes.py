"""Work done in forked children: groups (Engine.groups, Engine.begin) and the back of a
long map of a task that forks. Real forks, real SQLite files.

The toy tasks here say which process computed them (their output holds its pid), so the
tests see where each group ran; a task that is not pure this way is a test's device only.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from gradshard.cache.engine import scheduler as scheduler_module
from gradshard.cache.engine.core import Engine
from gradshard.cache.engine.jobs import Group, Task
from gradshard.cache.engine.scheduler import CHILD_SHARE, MAP_FORK_LEAST, ForkScheduler
from gradshard.cache.engine.values import Value
from gradshard.cache.store.database import Store
from gradshard.pipeline.problems import InternalError, RuleViolation, SpecFile
from gradshard.pipeline.records import Record, Text

PARENT = os.getpid()


@dataclass(frozen=True, slots=True)
class Where(Record):
    pid: int
    words: int


@dataclass(frozen=True, slots=True)
class Index(Record):
    parts: str


# A test's device: a child counting "hold" waits until this file exists (the parent makes
# it once inside the inner group), so that the waiting group is forked from there.
HOLD_UNTIL: list[Path] = []


def counted_here(text: Text) -> Where:
    if text.text == "hold" and os.getpid() != PARENT and HOLD_UNTIL:
        deadline = time.monotonic() + 60
        while not HOLD_UNTIL[0].exists() and time.monotonic() < deadline:
            time.sleep(0.005)
    if "die-in-child" in text.text and os.getpid() != PARENT:
        os._exit(3)  # a child killed half-way
    if "raise-in-child" in text.text and os.getpid() != PARENT:
        raise InternalError("a child's task failed")
    if "raise" in text.text and "raise-in-child" not in text.text:
        raise InternalError("the task fails everywhere")
    return Where(os.getpid(), len(text.text.split()))


COUNT = Task("toy.where", "parse", counted_here, Where, ("text",))


def counts(engine: Engine, texts: Value) -> Index:
    items = engine.items(texts)
    values = engine.map(COUNT, [((t,), f"t{k}") for k, t in enumerate(items)])
    return Index(engine.collection(values, Where, persist=True).hash)


FIRST = Group("toy.first", "parse", counts, Index, ("texts",))
SECOND = Group("toy.second", "bindings", counts, Index, ("texts",))


@pytest.fixture
def store(tmp_path):
    warnings: list[str] = []
    opened = Store.open(tmp_path / "cache", warnings.append)
    yield opened
    opened.close()


def texts(engine: Engine, words: list[str]) -> Value:
    return engine.collection([engine.text(w) for w in words], Text)


def results(engine: Engine, index: Value) -> list[Where]:
    listing = engine.ref_collection(engine.record(index).parts, Where)
    return engine.records(list(engine.items(listing)))


@pytest.fixture(autouse=True)
def two_groups_fork(monkeypatch):
    """Most tests here run two groups: let two be enough for `groups` to fork."""
    monkeypatch.setattr(scheduler_module, "GROUPS_LEAST", 2)


def run_both(store: Store | None, first: list[str], second: list[str], processes: int = 2
             ) -> tuple[Engine, list[list[Where]]]:
    engine = Engine(store, "v1", build_id=1, processes=processes)
    values = engine.groups([(FIRST, [texts(engine, first)], "first"),
                            (SECOND, [texts(engine, second)], "second")])
    found = [results(engine, v) for v in values]
    engine.finish()
    return engine, found


def no_child_left() -> bool:
    """No child of this process is running or waiting to be reaped."""
    try:
        os.waitpid(-1, os.WNOHANG)
    except ChildProcessError:
        return True
    return False


def test_the_second_group_runs_in_a_child_and_commits_its_rows(store):
    engine, (first, second) = run_both(store, ["a b", "c"], ["d e f", "g h"])
    assert [w.words for w in first] == [2, 1] and [w.words for w in second] == [3, 2]
    assert {w.pid for w in first} == {PARENT}
    assert len({w.pid for w in second}) == 1 and second[0].pid != PARENT
    # what the child ran is reported by the parent, as its own runs are
    assert sorted(r.ident for r in engine.stats.runs if r.task == "toy.where") == [
        "t0", "t0", "t1", "t1"]
    assert engine.stats.run == {"parse": 5, "bindings": 1}  # the groups and their tasks
    assert no_child_left()
    # the child committed its rows: a later build answers everything from the store
    again, (first_again, second_again) = run_both(store, ["a b", "c"], ["d e f", "g h"])
    assert not again.stats.runs and second_again == second and first_again == first


def log_frames(store: Store) -> tuple[int, int]:
    """(frames in the write-ahead log, frames of it already copied into the database), from
    the wal-index header (SQLite's file format: mxFrame at byte 16, nBackfill at byte 96)."""
    shm = store.path.with_name(store.path.name + "-shm").read_bytes()
    return int.from_bytes(shm[16:20], sys.byteorder), int.from_bytes(shm[96:100], sys.byteorder)


def test_a_child_copies_the_log_into_the_database_before_it_exits(store):
    """The last connection to close checkpoints what the log holds: a parent whose child
    did not would pay for the child's rows at its next fork or at its end."""
    engine = Engine(store, "v1", build_id=1, processes=2)
    engine.groups([(FIRST, [texts(engine, ["a"])], "first"),
                   (SECOND, [texts(engine, ["b c " * 2000])], "second")])
    frames, copied = log_frames(store)  # the parent has committed nothing yet
    assert frames > 0 and copied == frames
    engine.finish()


def test_groups_hand_the_back_half_to_one_child_in_order(store, monkeypatch):
    monkeypatch.setattr(scheduler_module, "GROUPS_LEAST", 4)
    calls = [(FIRST if k % 2 else SECOND, [f"w{k} " * (k + 1)], f"g{k}") for k in range(5)]
    engine = Engine(store, "v1", build_id=1, processes=2)
    values = engine.groups([(g, [texts(engine, words)], ident) for g, words, ident in calls])
    found = [results(engine, v) for v in values]
    engine.finish()
    assert [w.words for ws in found for w in ws] == [1, 2, 3, 4, 5]  # each group's, in order
    pids = [ws[0].pid for ws in found]
    assert pids[:3] == [PARENT] * 3  # the front half (rounded up) here
    assert pids[3] == pids[4] != PARENT  # the back half in one child
    assert no_child_left()
    # the second time every index is known: nothing runs, nothing forks
    again = Engine(store, "v1", build_id=2, processes=2)
    again.groups([(g, [texts(again, words)], ident) for g, words, ident in calls])
    assert not again.stats.runs and no_child_left()


def test_fewer_groups_than_worth_a_fork_run_here(store, monkeypatch):
    monkeypatch.setattr(scheduler_module, "GROUPS_LEAST", 3)
    _, (first, second) = run_both(store, ["a"], ["b c"])
    assert {w.pid for w in first + second} == {PARENT}


def test_without_a_store_or_a_second_processor_nothing_forks(store):
    for engine_store, processes in ((None, 2), (store, 1)):
        _, (first, second) = run_both(engine_store, ["a"], ["b c"], processes)
        assert {w.pid for w in first + second} == {PARENT}


def test_a_process_running_threads_never_forks(store):
    stop = threading.Event()
    thread = threading.Thread(target=stop.wait)
    thread.start()
    try:
        _, (_, second) = run_both(store, ["a"], ["b c"])
    finally:
        stop.set()
        thread.join()
    assert second[0].pid == PARENT


def test_a_group_whose_child_dies_runs_here(store):
    engine, (_, second) = run_both(store, ["a"], ["b", "die-in-child x"])
    assert [w.pid for w in second] == [PARENT, PARENT]
    assert [w.words for w in second] == [1, 2]
    assert no_child_left()
    # what the child did is lost with it: the parent ran (and counts) the whole group
    assert sum(1 for r in engine.stats.runs if r.task == "toy.where") == 3


def test_a_child_error_is_raised_by_the_parent_running_the_group(store):
    engine = Engine(store, "v1", build_id=1, processes=2)
    with pytest.raises(InternalError, match="the task fails everywhere"):
        engine.groups([(FIRST, [texts(engine, ["a"])], "first"),
                       (SECOND, [texts(engine, ["raise now"])], "second")])
    assert no_child_left()


def test_a_child_that_raises_leaves_its_group_to_the_parent(store):
    _, (_, second) = run_both(store, ["a"], ["raise-in-child b"])
    assert second[0].pid == PARENT and second[0].words == 2


def begin_only(engine: Engine, texts: Value) -> Index:
    engine.begin(SECOND, [texts], "second")
    return Index("")


def begin_and_join(engine: Engine, texts: Value) -> Index:
    begun = engine.begin(SECOND, [texts], "second")
    mine = engine.run(COUNT, [engine.text("counted meanwhile")], "mine")
    theirs = begun.join()
    assert engine.record(mine).pid == PARENT
    return Index(engine.record(theirs).parts)


def test_a_group_begun_and_joined_inside_a_group(store):
    engine = Engine(store, "v1", build_id=1, processes=2)
    outer = Group("toy.outer", "parse", begin_and_join, Index, ("texts",))
    value = engine.group(outer, [texts(engine, ["x y", "z"])], "outer")
    found = results(engine, value)
    engine.finish()
    assert [w.words for w in found] == [2, 1] and found[0].pid != PARENT


def test_a_group_begun_and_never_joined_is_a_bug_and_its_child_ends(store):
    engine = Engine(store, "v1", build_id=1, processes=2)
    careless = Group("toy.careless", "parse", begin_only, Index, ("texts",))
    with pytest.raises(InternalError, match="never joined"):
        engine.group(careless, [texts(engine, ["x"])], "careless")
    assert no_child_left()


THIRD = Group("toy.third", "bindings", counts, Index, ("texts",))


def wait_for_a_free_processor(engine: Engine) -> None:
    """A test's device: until the child running beside this process is done."""
    deadline = time.monotonic() + 60
    while not engine.scheduler._free_processor() and time.monotonic() < deadline:
        time.sleep(0.01)


def count_when_a_processor_is_free(engine: Engine, words: Value) -> Index:
    """An inner group whose first task batch comes once the other processor is free: it
    lets the held child go on only once inside (its scope is not the one that began it)."""
    if HOLD_UNTIL:
        HOLD_UNTIL[0].touch()
    wait_for_a_free_processor(engine)
    return counts(engine, words)


INNER = Group("toy.inner", "parse", count_when_a_processor_is_free, Index, ("texts",))


FORK_SCOPES: list[int] = []
FORK = ForkScheduler._fork


def forks_noted(scheduler: ForkScheduler, work):
    """ForkScheduler._fork, noting the scope its engine is in when it forks."""
    FORK_SCOPES.append(scheduler.engine.scope)
    return FORK(scheduler, work)


def begin_two_then_inner(engine: Engine, first: Value, second: Value, words: Value) -> Index:
    running = engine.begin(SECOND, [first], "second")
    waiting = engine.begin(THIRD, [second], "third")
    assert running.child is not None  # a processor was free
    assert waiting.child is None and waiting.waiting  # none was: it waits
    inner = engine.group(INNER, [words], "inner")  # forks the waiting one in its own scope
    assert waiting.child is not None
    parts = [engine.record(v).parts for v in (running.join(), waiting.join(), inner)]
    return Index(" ".join(parts))


def test_a_begun_group_waits_for_a_free_processor_and_forks_at_the_next_batch(store, tmp_path,
                                                                               monkeypatch):
    monkeypatch.setattr(ForkScheduler, "_fork", forks_noted)
    monkeypatch.setattr(sys.modules[__name__], "FORK_SCOPES", [])
    monkeypatch.setattr(sys.modules[__name__], "HOLD_UNTIL", [tmp_path / "inside"])
    engine = Engine(store, "v1", build_id=1, processes=2)
    outer = Group("toy.outer_waits", "parse", begin_two_then_inner, Index,
                  ("first", "second", "words"))
    value = engine.group(outer, [texts(engine, ["hold"]), texts(engine, ["b c"]),
                                 texts(engine, ["d e f"])], "outer")
    # the waiting group was forked from inside the inner group, a scope not its own
    assert len(FORK_SCOPES) == 2 and FORK_SCOPES[1] > FORK_SCOPES[0]
    listings = engine.record(value).parts.split()
    second, third, inner = (engine.records(list(engine.items(engine.ref_collection(h, Where))))
                            for h in listings)
    engine.finish()
    assert [w.words for w in second + third + inner] == [1, 2, 3]
    # each begun group ran in a child of its own, the waiting one forked from inside the
    # inner group (a child that ran it in the wrong scope would fail: the parent would run it)
    assert PARENT != second[0].pid != third[0].pid != PARENT
    assert inner[0].pid == PARENT
    assert no_child_left()
    # both children committed their rows: a row for each of the three texts counted
    rows = store.connection.execute("SELECT count(*) FROM tasks WHERE task = 'toy.where'")
    assert rows.fetchone()[0] == 3


def begin_two_join_the_waiting_one(engine: Engine, first: Value, second: Value) -> Index:
    running = engine.begin(SECOND, [first], "second")
    waiting = engine.begin(THIRD, [second], "third")
    assert waiting.child is None
    mine = waiting.join()  # no batch in between: no processor was looked for
    theirs = running.join()
    return Index(" ".join(engine.record(v).parts for v in (theirs, mine)))


def test_a_begun_group_no_processor_freed_up_for_runs_at_its_join(store):
    engine = Engine(store, "v1", build_id=1, processes=2)
    outer = Group("toy.outer_joins", "parse", begin_two_join_the_waiting_one, Index,
                  ("first", "second"))
    value = engine.group(outer, [texts(engine, ["a"]), texts(engine, ["b c"])], "outer")
    second, third = (engine.records(list(engine.items(engine.ref_collection(h, Where))))
                     for h in engine.record(value).parts.split())
    engine.finish()
    assert second[0].pid != PARENT and second[0].words == 1
    assert third[0].pid == PARENT and third[0].words == 2
    assert no_child_left()


def test_a_group_begun_where_nothing_forks_runs_at_once(store):
    for engine_store, processes in ((None, 2), (store, 1)):
        engine = Engine(engine_store, "v1", build_id=1, processes=processes)
        begun = engine.begin(SECOND, [texts(engine, ["a b"])], "second")
        assert begun.value is not None and begun.child is None and not begun.waiting
        assert [w.pid for w in results(engine, begun.join())] == [PARENT]


def test_what_a_verifying_child_finds_is_reported_by_its_parent(store):
    run_both(store, ["a"], ["b c"])
    engine = Engine(store, "v1", build_id=2, verify=True, processes=2)
    engine.groups([(FIRST, [texts(engine, ["a"])], "first"),
                   (SECOND, [texts(engine, ["b c"])], "second")])
    engine.finish()
    # the toy task's output names its process: a child's fresh run disagrees with the cache
    assert sorted((d.task, d.ident) for d in engine.stats.disagreements) == [
        ("toy.second", "second"), ("toy.where", "t0")]
    assert engine.stats.verified == 4  # two groups, a task in each


# ---------------------------------------------------------------------------------------------
# A long map of a task that forks


def counted_or_refused(text: Text) -> Where:
    if text.text.startswith("refused"):
        raise RuleViolation("toy.refused", f"'{text.text}' is refused", "say something else")
    return counted_here(text)


FORKED_COUNT = Task("toy.where_forked", "parse", counted_or_refused, Where, ("text",),
                   blames=SpecFile.NATIVE_FUNCTIONS, forks=True)
MANY = MAP_FORK_LEAST * 2


def map_many(store: Store | None, words: list[str], processes: int = 2
             ) -> tuple[Engine, list[Value]]:
    engine = Engine(store, "v1", build_id=1, processes=processes)
    values = engine.map(FORKED_COUNT, [((engine.text(w),), f"w{k}") for k, w in enumerate(words)])
    engine.finish()
    return engine, values


def many_words(special: dict[int, str] | None = None) -> list[str]:
    """Texts of 1, 2, 3 … words (each one's output says which it was), some replaced."""
    words = [" ".join(["w"] * (k % 7 + 1)) + f" {k}" for k in range(MANY)]
    for at, text in (special or {}).items():
        words[at] = text
    return words


def test_a_long_map_hands_its_back_to_a_child_and_keeps_the_order(store):
    words = many_words()
    engine, values = map_many(store, words)
    found = engine.records(values)
    assert [w.words for w in found] == [len(w.split()) for w in words]
    pids = [w.pid for w in found]
    assert pids[0] == PARENT and pids[-1] != PARENT  # the back ran in a child
    handed = int(MANY * CHILD_SHARE)  # the first child's share (a slow parent may fork again)
    assert handed < MANY // 2 and len(set(pids[-handed:])) == 1
    assert pids == sorted(pids, key=lambda p: p != PARENT)  # the parent's runs come first
    assert sorted(r.ident for r in engine.stats.runs) == sorted(f"w{k}" for k in range(MANY))
    assert engine.stats.run == {"parse": MANY}
    assert no_child_left()
    # the child committed its rows: the same map again runs nothing and gives the same values
    again, values_again = map_many(store, words)
    assert not again.stats.runs and [v.hash for v in values_again] == [v.hash for v in values]


def test_a_short_map_a_single_processor_or_no_store_never_forks(store):
    short = many_words()[:MAP_FORK_LEAST - 1]
    for engine_store, processes, words in ((store, 2, short), (store, 1, many_words()),
                                           (None, 2, many_words())):
        engine, values = map_many(engine_store, words, processes)
        assert {w.pid for w in engine.records(values)} == {PARENT}


def test_a_map_whose_child_dies_is_finished_here(store):
    engine, values = map_many(store, many_words({MANY - 1: "die-in-child now"}))
    found = engine.records(values)
    assert {w.pid for w in found} == {PARENT} and found[-1].words == 2
    assert len(engine.stats.runs) == MANY  # the child's runs died with it
    assert no_child_left()


def test_a_failure_computed_in_the_child_is_the_parents_failure(store):
    engine, values = map_many(store, many_words({MANY - 2: "refused here"}))
    assert [k for k, v in enumerate(values) if v.failed] == [MANY - 2]
    [problem] = engine.problems([values[MANY - 2]])
    assert problem.rule == "toy.refused" and problem.entry == f"w{MANY - 2}"
    assert engine.record(values[-1]).pid != PARENT


def test_a_map_forks_once_the_group_child_running_beside_it_is_done(store):
    """A begun group's child holds the second processor while it runs; a map beside it
    hands runs to a child of its own once that one is done, joined or not."""
    engine = Engine(store, "v1", build_id=1, processes=2)
    outer = Group("toy.outer_map", "parse", begin_then_map, Index, ("texts", "words"))
    value = engine.group(outer, [texts(engine, ["x"]), texts(engine, many_words())], "outer")
    found = results(engine, value)
    engine.finish()
    assert found[0].pid == PARENT and found[-1].pid != PARENT
    assert no_child_left()


def begin_then_map(engine: Engine, first: Value, words: Value) -> Index:
    begun = engine.begin(SECOND, [first], "second")
    assert begun.child is not None
    deadline = time.monotonic() + 60
    while begun.child.running() and time.monotonic() < deadline:  # done, not joined
        time.sleep(0.01)
    values = engine.map(FORKED_COUNT, [((w,), f"w{k}") for k, w in enumerate(engine.items(words))])
    begun.join()
    return Index(engine.collection(values, Where, persist=True).hash)
