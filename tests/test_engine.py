"""The task engine and its store, on toy tasks over real SQLite files."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

import pytest
from support.toy_records import Number

from gradshard.cache.engine.core import Engine, StaleCache
from gradshard.cache.engine.jobs import Group, Task
from gradshard.cache.engine.values import Value
from gradshard.cache.store.database import DB_FILE, Store, blob_hash
from gradshard.pipeline.problems import InternalError
from gradshard.pipeline.records import Record, Text


@dataclass(frozen=True, slots=True)
class Index(Record):
    total: str
    parts: str


CALLS: list[str] = []


def count_words(text: Text) -> Number:
    CALLS.append("count")
    return Number(len(text.text.split()))


def parity(number: Number) -> Number:
    CALLS.append("parity")
    return Number(number.value % 2)


def total(numbers: tuple[Number, ...]) -> Number:
    CALLS.append("total")
    return Number(sum(n.value for n in numbers))


def split_words(text: Text) -> tuple[Text, ...]:
    CALLS.append("split")
    return tuple(Text(w) for w in text.text.split())


COUNT = Task("toy.count", "parse", count_words, Number, ("text",))
PARITY = Task("toy.parity", "match", parity, Number, ("number",))
TOTAL = Task("toy.total", "render", total, Number, ("numbers",))
SPLIT = Task("toy.split", "parse", split_words, Text, ("text",), fan_out=True)


def summed(engine: Engine, texts: Value) -> Index:
    counts = engine.map(COUNT, [((t,), f"t{i}") for i, t in enumerate(engine.items(texts))])
    parts = engine.collection(counts, Number)
    return Index(engine.run(TOTAL, [parts], "total").hash, parts.hash)


SUMMED = Group("toy.summed", "parse", summed, Index, ("texts",))


@pytest.fixture
def store(tmp_path):
    warnings: list[str] = []
    opened = Store.open(tmp_path / "cache", warnings.append)
    opened.warnings = warnings
    yield opened
    opened.close()


def reopen(store: Store) -> Store:
    store.close()
    again = Store.open(store.directory, store.warnings.append)
    again.warnings = store.warnings
    return again


def build_parity(store: Store, text: str, build_id: int = 1) -> tuple[int, Engine]:
    engine = Engine(store, "v1", build_id=build_id)
    count = engine.run(COUNT, [engine.text(text)], "words")
    result = engine.run(PARITY, [count], "parity")
    value = engine.record(result).value
    engine.finish()
    return value, engine


def test_second_build_reuses_everything(store):
    CALLS.clear()
    assert build_parity(store, "a b c")[0] == 1
    assert CALLS == ["count", "parity"]
    CALLS.clear()
    value, engine = build_parity(reopen(store), "a b c")
    assert value == 1 and CALLS == []
    assert sum(engine.stats.reused.values()) == 2 and not engine.stats.runs


def test_early_cutoff_stops_an_unchanged_output(store):
    build_parity(store, "a b c")
    CALLS.clear()
    value, engine = build_parity(store, "x y z", build_id=2)  # same count, new text
    assert value == 1
    assert CALLS == ["count"]  # parity's input hash is unchanged: reused
    assert [r.reason for r in engine.stats.runs] == ["changed: text"]


def test_reasons(store):
    _, first = build_parity(store, "a b")
    assert [r.reason for r in first.stats.runs] == ["new", "new"]
    _, second = build_parity(store, "a b c")
    assert [r.reason for r in second.stats.runs] == ["changed: text", "changed: number"]
    engine = Engine(store, "v2")
    engine.run(COUNT, [engine.text("a b c")], "words")
    assert engine.stats.runs[0].reason == "gradshard changed"


def test_fan_out_items_are_values(store):
    engine = Engine(store, "v1")
    words = engine.run(SPLIT, [engine.text("p q r")], "split")
    engine.finish()
    again = Engine(reopen(store), "v1")
    words = again.run(SPLIT, [again.text("p q r")], "split")
    assert words.items is None  # a hit: the list is read only when asked for
    assert [t.text for t in again.records(again.items(words))] == ["p", "q", "r"]


@dataclass(frozen=True, slots=True)
class Parity(Record):
    value: int


def test_equal_bytes_of_two_kinds_are_two_blobs(store):
    """An empty text and an empty list are both zero bytes; two records may share their JSON."""
    engine = Engine(store, "v1")
    empty_text = engine.literal(Text(""), persist=True)  # stored first
    empty_list = engine.run(SPLIT, [engine.text("")], "split")
    assert empty_text.hash != empty_list.hash
    assert engine.literal(Number(1)).hash != engine.literal(Parity(1)).hash
    engine.finish()
    again = Engine(reopen(store), "v1")
    words = again.run(SPLIT, [again.text("")], "split")
    assert again.items(words) == ()
    assert again.record(again.ref(empty_text.hash, Text)) == Text("")
    assert not store.warnings


def test_group_hit_skips_its_inner_tasks(store):
    engine = Engine(store, "v1")
    texts = engine.collection([engine.text("a b"), engine.text("c")], Text)
    index = engine.record(engine.group(SUMMED, [texts], "all"))
    assert engine.record(engine.ref(index.total, Number)).value == 3
    engine.finish()
    CALLS.clear()
    again = Engine(reopen(store), "v1")
    texts = again.collection([again.text("a b"), again.text("c")], Text)
    index = again.record(again.group(SUMMED, [texts], "all"))
    assert again.record(again.ref(index.total, Number)).value == 3
    assert CALLS == [] and sum(again.stats.reused.values()) == 1


def test_group_body_cannot_read_undeclared_values(store):
    engine = Engine(store, "v1")
    outside = engine.text("a")

    def sneaky(inner_engine: Engine, text: Value) -> Index:
        inner_engine.run(COUNT, [outside], "x")
        return Index("", "")

    with pytest.raises(InternalError):
        engine.group(Group("toy.sneaky", "parse", sneaky, Index, ("text",)),
                     [engine.text("b")], "g")


def test_damaged_blob_is_detected_and_recomputed(store):
    build_parity(store, "a b c")
    store.connection.execute("UPDATE blobs SET data = CAST('{\"value\":0}' AS BLOB) "
                             "WHERE codec LIKE 'json:%'")
    CALLS.clear()
    engine = Engine(store, "v1", build_id=2)
    count = engine.run(COUNT, [engine.text("a b c")], "words")
    assert engine.record(count).value == 3  # not the planted 0
    assert "count" in CALLS and any("damaged" in w for w in store.warnings)
    assert engine.stats.recovered == 1


def test_damaged_task_row_is_a_miss(store):
    build_parity(store, "a b c")
    store.connection.execute("UPDATE tasks SET output = '00000000000000000000000000000000'")
    CALLS.clear()
    assert build_parity(store, "a b c", build_id=2)[0] == 1
    assert CALLS == ["count", "parity"]


def test_missing_value_behind_a_group_index_restarts(store):
    engine = Engine(store, "v1")
    texts = engine.collection([engine.text("a b"), engine.text("c")], Text)
    index = engine.record(engine.group(SUMMED, [texts], "all"))
    engine.finish()
    store.connection.execute("DELETE FROM blobs WHERE hash = ?", (index.total,))
    again = Engine(store, "v1")
    texts = again.collection([again.text("a b"), again.text("c")], Text)
    index = again.record(again.group(SUMMED, [texts], "all"))
    with pytest.raises(StaleCache):
        again.records([again.ref(index.total, Number)])
    forced = Engine(store, "v1", force_groups=True)
    texts = forced.collection([forced.text("a b"), forced.text("c")], Text)
    index = forced.record(forced.group(SUMMED, [texts], "all"))
    assert forced.record(forced.ref(index.total, Number)).value == 3


@dataclass(frozen=True, slots=True)
class WordsIndex(Record):
    words: tuple[str, ...]  # each an item of toy.split's fanned-out list


def listed_words(engine: Engine, text: Value) -> WordsIndex:
    return WordsIndex(tuple(w.hash for w in engine.items(engine.run(SPLIT, [text], "split"))))


WORDS = Group("toy.words", "parse", listed_words, WordsIndex, ("text",))


def test_an_item_of_a_fanned_out_list_named_by_an_index_is_recovered(store):
    """A group's index naming items of a fanned-out list (as a kernel family's file groups
    name their kernels): a damaged item is recomputed through its task once the group is
    entered again, not a stale cache for ever."""
    engine = Engine(store, "v1")
    index = engine.record(engine.group(WORDS, [engine.text("p q r")], "words"))
    engine.finish()
    store.connection.execute("UPDATE blobs SET data = CAST('{\"text\":\"zz\"}' AS BLOB) "
                             "WHERE hash = ?", (index.words[1],))
    forced = Engine(reopen(store), "v1", force_groups=True)
    index = forced.record(forced.group(WORDS, [forced.text("p q r")], "words"))
    CALLS.clear()
    words = forced.records([forced.ref(h, Text) for h in index.words])
    assert [w.text for w in words] == ["p", "q", "r"] and CALLS == ["split"]
    assert forced.stats.recovered == 1


def test_without_a_store_everything_runs():
    CALLS.clear()
    engine = Engine(None, "v1")
    count = engine.run(COUNT, [engine.text("a b")], "words")
    assert engine.record(count).value == 2 and CALLS == ["count"]


def test_garbage_database_is_set_aside(tmp_path):
    directory = tmp_path / "cache"
    directory.mkdir()
    (directory / DB_FILE).write_bytes(b"this is not sqlite" * 100)
    warnings: list[str] = []
    store = Store.open(directory, warnings.append)
    assert warnings and "moved aside" in warnings[0]
    assert store.memo(["x"]) == {}
    assert any(p.name.startswith(DB_FILE + ".damaged-") for p in directory.iterdir())


def test_database_of_another_schema_version_is_rebuilt(tmp_path):
    directory = tmp_path / "cache"
    Store.open(directory, print).close()
    with sqlite3.connect(directory / DB_FILE) as db:
        db.execute("UPDATE meta SET value = '999' WHERE name = 'schema_version'")
    warnings: list[str] = []
    Store.open(directory, warnings.append).close()
    assert warnings and "another version" in warnings[0]


@dataclass(frozen=True, slots=True)
class Numbers(Record):
    items: tuple[Number, ...]


def as_numbers(text: Text) -> Numbers:
    return Numbers(tuple(Number(len(w)) for w in text.text.split()))


NUMBERS = Task("toy.numbers", "parse", as_numbers, Numbers, ("text",))


def test_a_stored_record_of_the_wrong_shape_is_recomputed(tmp_path):
    """A blob whose bytes match its hash but whose JSON is not the record's shape (a crafted
    cache: an item that is not an object) is a miss with a warning, never a crash."""
    warnings: list[str] = []
    store = Store.open(tmp_path, warnings.append)
    engine = Engine(store, "v1")
    value = engine.run(NUMBERS, [engine.text("ab cde")], "t")
    engine.finish()
    forged = b'{"items":[5]}'
    codec = "json:Numbers"
    name = blob_hash(codec, forged)
    store.put_blob(name, codec, forged)
    store.flush(0)
    with sqlite3.connect(tmp_path / DB_FILE) as db:
        db.execute("UPDATE tasks SET output = ? WHERE output = ?", (name, value.hash))
    store.close()
    store = Store.open(tmp_path, warnings.append)
    again = Engine(store, "v1")
    record = again.record(again.run(NUMBERS, [again.text("ab cde")], "t"))
    assert record == Numbers((Number(2), Number(3)))
    assert any("does not decode" in w for w in warnings), warnings
    store.close()
