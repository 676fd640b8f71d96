"""Problems are task outputs: a task whose inputs break a rule gives a `Failure`, cached like
any output; its dependents are blocked; a group collects the failures its tasks gave, from a
fresh run and from the cache alike (the way Salsa's accumulators are collected)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from support.toy_records import Number

from gradshard.cache.engine.core import Engine
from gradshard.cache.engine.jobs import Group, Task
from gradshard.cache.engine.values import Value
from gradshard.cache.store.database import Store
from gradshard.pipeline.problems import Failure, InternalError, RuleViolation, SpecFile
from gradshard.pipeline.records import Record, Text

CALLS: list[str] = []


@dataclass(frozen=True, slots=True)
class Index(Record):
    total: str
    failures: str


def parse_number(text: Text) -> Number:
    CALLS.append(f"parse {text.text}")
    if not text.text.isdigit():
        raise RuleViolation("toy.not-a-number", f"'{text.text}' is not a number", "write digits",
                            line_in_entry=1)
    return Number(int(text.text))


def double(number: Number) -> Number:
    CALLS.append(f"double {number.value}")
    return Number(number.value * 2)


def total(numbers: tuple[Number, ...]) -> Number:
    return Number(sum(n.value for n in numbers))


def unblamed(text: Text) -> Number:
    raise RuleViolation("toy.rule", "broken", "")


PARSE = Task("toy.parse", "parse", parse_number, Number, ("text",), blames=SpecFile.DERIVATIVES)
DOUBLE = Task("toy.double", "render", double, Number, ("number",))
TOTAL = Task("toy.total", "render", total, Number, ("numbers",))
UNBLAMED = Task("toy.unblamed", "parse", unblamed, Number, ("text",))


def keep_going(engine: Engine, texts: Value) -> Index:
    """Parse every item, double the good ones, and keep the failures."""
    parsed = engine.map(PARSE, [((t,), f"item {k}") for k, t in enumerate(engine.items(texts))])
    doubled = engine.map(DOUBLE, [((p,), "d") for p in parsed if not p.failed])
    good = engine.run(TOTAL, [engine.collection(doubled, Number)], "total")
    return Index(good.hash, engine.collection(engine.failures(), Failure, persist=True).hash)


KEEP_GOING = Group("toy.keep_going", "parse", keep_going, Index, ("texts",))


def run(store: Store | None, words: list[str]) -> tuple[Engine, Index]:
    engine = Engine(store, "v1")
    texts = engine.collection([engine.text(w) for w in words], Text)
    index = engine.record(engine.group(KEEP_GOING, [texts], "all"))
    engine.finish()
    return engine, index


def problems_of(engine: Engine, index: Index) -> list:
    return engine.problems(engine.items(engine.ref_collection(index.failures, Failure)))


def test_a_rule_violation_is_the_task_output_blamed_on_its_entry(tmp_path):
    store = Store.open(tmp_path, print)
    engine, index = run(store, ["1", "x", "2", "y"])
    problems = problems_of(engine, index)
    assert [(p.file, p.entry, p.rule, p.line_in_entry) for p in problems] == [
        (SpecFile.DERIVATIVES, "item 1", "toy.not-a-number", 1),
        (SpecFile.DERIVATIVES, "item 3", "toy.not-a-number", 1)]
    assert engine.record(engine.ref(index.total, Number)) == Number(6)
    store.close()


def test_a_cached_run_reports_the_same_problems_without_running(tmp_path):
    store = Store.open(tmp_path, print)
    first, index = run(store, ["1", "x"])
    expected = problems_of(first, index)
    store.close()
    CALLS.clear()
    store = Store.open(tmp_path, print)
    again, cached = run(store, ["1", "x"])  # a fresh engine: answered from the store
    assert CALLS == [] and sum(again.stats.run.values()) == 0
    assert problems_of(again, cached) == expected
    store.close()


def test_an_inner_failure_is_collected_when_its_group_is_entered_again(tmp_path):
    """A memo hit of a failed task still counts: the group reruns for another item and
    keeps the old failure without parsing it again."""
    store = Store.open(tmp_path, print)
    run(store, ["x", "1"])
    CALLS.clear()
    engine, index = run(store, ["x", "2"])
    assert CALLS == ["parse 2", "double 2"]
    assert [p.entry for p in problems_of(engine, index)] == ["item 0"]
    store.close()


def test_a_task_given_a_failed_input_is_blocked_and_reports_nothing():
    engine = Engine(None, "v1")
    bad = engine.run(PARSE, [engine.text("x")], "item 0")
    CALLS.clear()
    blocked = engine.run(DOUBLE, [bad], "d")
    assert bad.failed and blocked.failed and CALLS == []
    assert engine.problems([blocked]) == []
    also = engine.run(TOTAL, [engine.collection([bad], Number)], "total")
    assert also.failed


def test_a_violation_naming_no_file_is_a_bug_not_a_spec_problem():
    engine = Engine(None, "v1")
    with pytest.raises(InternalError, match="names no spec file"):
        engine.run(UNBLAMED, [engine.text("x")], "x")


def test_a_failure_survives_the_store_and_is_checked_by_its_name(tmp_path):
    """The failure's blob is named apart and read back through the hash check."""
    store = Store.open(tmp_path, print)
    engine = Engine(store, "v1")
    bad = engine.run(PARSE, [engine.text("q")], "item 0")
    engine.finish()
    store.close()
    store = Store.open(tmp_path, print)
    fresh = Engine(store, "v1")
    again = fresh.run(PARSE, [fresh.text("q")], "item 0")
    assert again.hash == bad.hash and again.failed
    assert fresh.problems([again])[0].message == "'q' is not a number"
    store.close()
