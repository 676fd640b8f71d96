"""Records for the engine's toy tasks (tests/test_engine*.py)."""

from __future__ import annotations

from dataclasses import dataclass

from gradshard.pipeline.records import Record


@dataclass(frozen=True, slots=True)
class Number(Record):
    value: int
