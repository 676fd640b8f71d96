"""The object memo of the host worker (service/host/objects.py), on small functions shaped like
the generator's: a call served from memory leaves every argument as the call itself would
(counters bumped, keys added, an entry's popped keys), and is served only where what it read
is unchanged. (On the real spec, through a warm worker: tests/test_host_worker.py.)"""

from __future__ import annotations

from collections import Counter, defaultdict

import pytest

from gradshard.service.host.keys import ArgumentKeys
from gradshard.service.host.objects import ObjectItem, ObjectMemo

ENTRY = ObjectItem(observed=("table", "counter", "seen"))


def entry(defn: dict, table: dict, counter: Counter, seen: set) -> tuple:
    """create_differentiability_info in small: pops its name, looks it up, numbers its node
    by a counter and notes its dispatch key."""
    name = defn.pop("name")
    prefix = table[name]
    op = f"{prefix}{counter[prefix]}"
    counter[prefix] += 1
    if defn["key"] not in seen:
        seen.add(defn["key"])
    return op, {"formula": [defn["formula"]]}


def _generation(memo: ObjectMemo | None, defns: list[dict], table: dict) -> tuple:
    """One load_derivatives in small: every entry through the memo (or not)."""
    counter, seen, keys = Counter(), set(), ArgumentKeys()
    results, served = [], []
    for defn in defns:
        if memo is None:
            results.append(entry(defn, table, counter, seen))
            continue
        value, hit = memo.call(keys, "entry", ENTRY, entry, (defn, table, counter, seen), {})
        results.append(value)
        served.append(hit)
    return results, dict(counter), seen, defns, served


def _defns(*names: str) -> list[dict]:
    return [{"name": name, "key": "Default" if name != "c" else "Nested", "formula": f"{name}'"}
            for name in names]


TABLE = {"a": "A", "b": "A", "c": "C", "d": "A"}


def test_served_calls_leave_the_state_a_run_leaves():
    memo = ObjectMemo()
    first = _generation(memo, _defns("a", "b", "c"), TABLE)
    again = _generation(memo, _defns("a", "b", "c"), TABLE)
    plain = _generation(None, _defns("a", "b", "c"), TABLE)
    assert first[:4] == again[:4] == plain[:4]
    assert plain[0] == [("A0", {"formula": ["a'"]}), ("A1", {"formula": ["b'"]}),
                        ("C0", {"formula": ["c'"]})]
    assert plain[1] == {"A": 2, "C": 1} and plain[2] == {"Default", "Nested"}
    assert all(defn.keys() == {"key", "formula"} for defn in again[3])  # "name" popped
    assert first[4] == [False] * 3 and again[4] == [True] * 3


def test_a_changed_read_is_not_served():
    """An entry inserted first bumps the counter the others read: they run again, numbered as a
    run numbers them; an entry whose lookup changed runs again."""
    memo = ObjectMemo()
    _generation(memo, _defns("a", "b", "c"), TABLE)
    shifted = _generation(memo, _defns("d", "a", "b", "c"), TABLE)
    assert shifted[:4] == _generation(None, _defns("d", "a", "b", "c"), TABLE)[:4]
    assert shifted[4] == [False, False, False, True]  # c's counter is its own
    relooked = _generation(memo, _defns("a", "b", "c"), {**TABLE, "b": "B"})
    assert relooked[0][1][0] == "B0" and relooked[4] == [True, False, True]


def test_a_served_value_is_a_fresh_copy():
    memo = ObjectMemo()
    first = _generation(memo, _defns("a"), TABLE)
    first[0][0][1]["formula"].append("changed by the caller")
    again = _generation(memo, _defns("a"), TABLE)
    assert again[0][0][1] == {"formula": ["a'"]} and again[4] == [True]


def lookup_or_new(groups: defaultdict, name: str) -> int:
    return len(groups[name])


def test_a_defaultdict_default_is_inserted_again():
    memo, keys = ObjectMemo(), ArgumentKeys()
    item = ObjectItem(observed=("groups",))
    for expected in (False, True):
        groups = defaultdict(list, {"x": [1, 2]})
        value, served = memo.call(keys, "lookup", item, lookup_or_new, (groups, "y"), {})
        assert (value, served, dict(groups)) == (0, expected, {"x": [1, 2], "y": []})


def most_common(counter: Counter) -> str:
    return counter.most_common(1)[0][0]


def test_a_container_use_it_does_not_know_runs_whole():
    value, served = ObjectMemo().call(ArgumentKeys(), "common", ObjectItem(observed=("counter",)),
                                      most_common, (Counter("abb"),), {})
    assert (value, served) == ("b", None)


def refuse(defn: dict, counter: Counter) -> None:
    counter["x"] += 1
    raise RuntimeError(f"bad entry {defn['name']}")


def test_the_generator_s_error_goes_through_and_nothing_is_kept():
    memo, counter = ObjectMemo(), Counter()
    for _ in range(2):
        with pytest.raises(RuntimeError, match="bad entry a"):
            memo.call(ArgumentKeys(), "refuse", ObjectItem(observed=("counter",)), refuse,
                      ({"name": "a"},), {"counter": counter})
    assert counter == Counter()  # what it wrote before raising is not applied


def read_first_line(path: str) -> str:
    with open(path) as file:
        return file.readline().strip()


def test_a_file_argument_is_keyed_by_its_bytes(tmp_path):
    memo, item, path = ObjectMemo(), ObjectItem(files=("path",)), tmp_path / "deprecated.yaml"
    path.write_text("one\n")
    seen = [memo.call(ArgumentKeys(), "read", item, read_first_line, (str(path),), {})
            for _ in range(2)]
    path.write_text("two\n")
    edited = memo.call(ArgumentKeys(), "read", item, read_first_line, (str(path),), {})
    assert seen == [("one", False), ("one", True)] and edited == ("two", False)


def test_forget_drops_every_value():
    memo = ObjectMemo()
    _generation(memo, _defns("a"), TABLE)
    memo.forget()
    assert _generation(memo, _defns("a"), TABLE)[4] == [False]


def test_counters_and_defaultdicts_are_keyed_apart_from_dicts():
    keys = ArgumentKeys()
    digests = {keys.digest(value) for value in
               ({"a": 1}, Counter({"a": 1}), defaultdict(int, {"a": 1}),
                defaultdict(list, {"a": 1}))}
    assert len(digests) == 4


def test_an_items_subject_is_its_node_or_its_op():
    """What `affected` names an item by (items.py: subject), on torchgen's own model objects
    and one shaped like a DifferentiabilityInfo: its node, a pair's or NativeFunction's schema
    name, the bindings' BaseOperatorName."""
    from types import SimpleNamespace as Shaped

    from torchgen.model import BaseOperatorName, FunctionSchema

    from gradshard.service.host.items import subject

    schema = FunctionSchema.parse("sin.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)")
    native = Shaped(func=schema)
    assert subject((Shaped(op="SinBackward0", func=native),)) == "SinBackward0"
    assert subject((Shaped(op=None, func=native),)) == ""  # an info that makes no node
    assert subject((Shaped(func=native, info=None),)) == "sin.out"  # a pair
    assert subject((native, "template")) == "sin.out"
    assert subject((BaseOperatorName.parse("add_"), "torch", [])) == "add_"  # method_impl
    assert subject(()) == subject(("text",)) == ""
