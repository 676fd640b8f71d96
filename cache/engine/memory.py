"""What the engines of one process remember between builds."""

from __future__ import annotations

from typing import Any

__all__ = ["Memory"]


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
