"""Looking after the store: what it holds (`stats`) and keeping it small (`gc`).

gc keeps what the recorded builds reach: each manifest refers to its build's index, whose
refs name every output the build's tasks gave (cache/engine.py), so sweeping everything
else never costs a later build of those specs more than the work it did not keep. Under
--max-size, the oldest builds' roots are dropped first.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass

import sqlite_utils

from .store import DB_FILE, Store

# Builds older than this many rows are forgotten by gc (their stats, not their outputs).
KEPT_BUILD_ROWS = 200


@dataclass(frozen=True)
class BuildRow:
    id: int
    started: float
    seconds: float
    status: str
    spec: str
    out: str
    summary: dict


@dataclass(frozen=True)
class StoreStats:
    path: str
    file_bytes: int
    blobs: int
    blob_bytes: int
    tasks: int
    manifests: int
    builds: list[BuildRow]
    totals: dict[str, int]


def store_stats(store: Store, last: int = 10) -> StoreStats:
    db = sqlite_utils.Database(store.connection, execute_plugins=False)
    with store.guarded():
        blobs, blob_bytes = db.execute("SELECT count(*), coalesce(sum(size), 0) FROM blobs").fetchone()
        rows = [BuildRow(r[0], r[1], r[2], r[3], r[4], r[5], _summary(r[6])) for r in db.execute(
            "SELECT id, started, seconds, status, spec, out, summary FROM builds "
            "ORDER BY id DESC").fetchall()]
        stats = StoreStats(str(store.path), _file_bytes(store), blobs, blob_bytes,
                           db["tasks"].count, db["manifests"].count, rows[:last], _totals(rows))
    return stats


def _summary(text: str) -> dict:
    try:
        value = json.loads(text)
    except (TypeError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def _totals(rows: list[BuildRow]) -> dict[str, int]:
    totals = {"builds": len(rows), "up_to_date": 0, "run": 0, "reused": 0}
    for row in rows:
        totals["up_to_date"] += row.status == "up to date"
        totals["run"] += sum(row.summary.get("run", {}).values())
        totals["reused"] += sum(row.summary.get("reused", {}).values())
    return totals


def _file_bytes(store: Store) -> int:
    total = 0
    for suffix in ("", "-wal"):
        path = store.directory / (DB_FILE + suffix)
        if path.exists():
            total += path.stat().st_size
    return total


@dataclass(frozen=True)
class GcReport:
    before_bytes: int
    after_bytes: int
    removed_blobs: int
    removed_tasks: int
    kept_builds: int
    dropped_builds: int
    seconds: float


def collect_garbage(store: Store, max_bytes: int | None, version: str) -> GcReport:
    """Sweep what no recorded build reaches, and tasks of other code versions (their keys
    can never be asked for again); then, while the live data is over max_bytes, forget the
    oldest builds (the newest is always kept)."""
    started = time.perf_counter()
    db = sqlite_utils.Database(store.connection, execute_plugins=False)
    before = _file_bytes(store)
    with store.guarded():
        roots = [r[0] for r in db.execute(
            "SELECT manifest FROM manifests ORDER BY build DESC").fetchall()]
        kept = len(roots)
        while kept > 1 and max_bytes is not None and _live_bytes(db, roots[:kept]) > max_bytes:
            kept -= 1
        with store.transaction():
            if kept < len(roots):
                marks = ",".join("?" * (len(roots) - kept))
                db.execute(f"DELETE FROM manifests WHERE manifest IN ({marks})", roots[kept:])
            _mark(db, roots[:kept])
            removed_blobs = db.execute(
                "DELETE FROM blobs WHERE hash NOT IN (SELECT hash FROM live)").rowcount
            removed_tasks = db.execute(
                "DELETE FROM tasks WHERE version != ? OR output NOT IN (SELECT hash FROM live)",
                [version]).rowcount
            db.execute("DELETE FROM refs WHERE parent NOT IN (SELECT hash FROM live)")
            db.execute("DELETE FROM traces WHERE key NOT IN (SELECT key FROM tasks)")
            db.execute("DELETE FROM builds WHERE id NOT IN "
                       f"(SELECT id FROM builds ORDER BY id DESC LIMIT {KEPT_BUILD_ROWS})")
            db.execute("DROP TABLE live")
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        db.vacuum()
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return GcReport(before, _file_bytes(store), removed_blobs, removed_tasks, kept,
                    len(roots) - kept, time.perf_counter() - started)


def _mark(db: sqlite_utils.Database, roots: list[str]) -> None:
    """TEMP table `live`: every blob the roots reach, through refs rows and through the
    items of collection blobs (codec refs)."""
    db.execute("DROP TABLE IF EXISTS temp.live")
    db.execute("CREATE TEMP TABLE live (hash TEXT PRIMARY KEY)")
    live: set[str] = set()
    frontier = list(dict.fromkeys(roots))
    while frontier:
        live.update(frontier)
        found: list[str] = []
        for chunk in _chunks(frontier):
            marks = ",".join("?" * len(chunk))
            found.extend(r[0] for r in db.execute(
                f"SELECT child FROM refs WHERE parent IN ({marks})", chunk))
            for (data,) in db.execute(
                    f"SELECT data FROM blobs WHERE codec = 'refs' AND hash IN ({marks})", chunk):
                if data:
                    found.extend(bytes(data).decode("ascii", "replace").split("\n"))
        frontier = [h for h in dict.fromkeys(found) if h not in live]
    db.conn.executemany("INSERT INTO live (hash) VALUES (?)", ((h,) for h in live))


def _chunks(items: list[str], size: int = 900) -> list[list[str]]:
    return [items[i:i + size] for i in range(0, len(items), size)]


def _live_bytes(db: sqlite_utils.Database, roots: list[str]) -> int:
    _mark(db, roots)
    total = db.execute(
        "SELECT coalesce(sum(size), 0) FROM blobs WHERE hash IN (SELECT hash FROM live)"
    ).fetchone()[0]
    db.execute("DROP TABLE live")
    return int(total)


def parse_size(text: str) -> int:
    """'500M', '2G', '1.5GB', '800k' or a number of bytes → bytes."""
    value = text.strip().upper().removesuffix("B").removesuffix("I")
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
    factor = units.get(value[-1:], 1)
    number = value[:-1] if value[-1:] in units else value
    try:
        size = float(number)
    except ValueError:
        raise ValueError(f"not a size: {text!r}") from None
    if size < 0:
        raise ValueError(f"not a size: {text!r}")
    return int(size * factor)
