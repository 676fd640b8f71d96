"""How a record is stored: its codec and bytes, its content hash, and the record again."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from gradshard.cache.store.database import FAILURE_CODEC, Blob, blob_hash
from gradshard.pipeline.problems import Failure
from gradshard.pipeline.records import Record, Text, canonical_json

__all__ = ["Refs", "decode", "encode", "encode_hash"]


@dataclass(frozen=True, slots=True)
class Refs(Record):
    """A stored collection: its items' hashes, in order."""

    items: tuple[str, ...]


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
    """The record of a blob read as `kind` (or the Failure any task's output may be)."""
    if blob.codec == FAILURE_CODEC:  # any task's output may be a failure
        return Failure.from_json(json.loads(blob.data))
    if blob.codec == "text":
        return Text(blob.data.decode("utf-8"))
    if blob.codec == "refs":
        return Refs(tuple(blob.data.decode("ascii").split("\n")) if blob.data else ())
    if blob.codec != "json:" + kind.__name__:
        raise TypeError(f"a {blob.codec} blob read as {kind.__name__}")
    return kind.from_json(json.loads(blob.data))


def encode_hash(record: Record) -> str:
    """The content hash of a record, as the store would know it."""
    return blob_hash(*encode(record))
