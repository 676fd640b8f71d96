"""Every record serializes to canonical JSON that round-trips exactly, with a stable hash."""

from __future__ import annotations

import json

import pytest
from support.graph_run import spec_records

from gradshard.pipeline.parse.source import Entry
from gradshard.pipeline.problems import SpecFile
from gradshard.pipeline.records import canonical_json, content_hash
from gradshard.pipeline.schema import FunctionSchema


@pytest.fixture(scope="module")
def real_spec(packaged_spec):
    return spec_records(packaged_spec)


def assert_round_trips(records):
    for record in records:
        text = record.canonical_json()
        again = type(record).from_json(json.loads(text))
        assert again == record, type(record).__name__
        assert again.canonical_json() == text


def test_native_functions_round_trip(real_spec):
    assert_round_trips(real_spec.native_functions)


def test_infos_and_entries_round_trip(real_spec):
    assert_round_trips(real_spec.infos)
    assert_round_trips(real_spec.derivative_entries)
    assert_round_trips(real_spec.tags)
    assert_round_trips(real_spec.deprecated)
    assert_round_trips(real_spec.view_grouping.groups)


def test_canonical_json_is_compact_sorted_utf8():
    assert canonical_json({"b": 1, "a": ["é", None]}) == '{"a":["é",null],"b":1}'


def test_content_hashes_are_stable():
    # Pinned values: a change here invalidates every cache and must be deliberate.
    assert content_hash("") == "99aa06d3014798d86001c324468d497f"
    entry = Entry(SpecFile.TAGS, 3, "- tag: core\n  desc: Core.")
    assert entry.canonical_json() == '{"file":"tags.yaml","line":3,"text":"- tag: core\\n  desc: Core."}'
    schema = FunctionSchema.parse("add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor")
    assert schema.to_json() == "add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor"
    assert schema.canonical_json() == json.dumps(schema.to_json())


def test_records_are_immutable(real_spec):
    fn = real_spec.native_functions[0]
    with pytest.raises(Exception):
        fn.namespace = "other"
