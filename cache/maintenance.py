"""Looking after the store: what it holds (`stats`) and keeping it small (`gc`).

gc keeps what the recorded builds reach: each manifest refers to its build's index, whose
refs name every output the build's tasks gave (cache/engine.py), so sweeping everything
else never costs a later build of those specs more than the work it did not keep. Under
--max-size, the oldest builds' roots are dropped first.

gc also keeps what running builds hold. A build takes a lease when it begins (Store.
begin_build) and records, at each flush, every blob it wrote or read (`held`); gc leaves
those, and the task rows the build wrote, until the build ends. A lease is ignored (and
dropped) once its process is gone, or when its build has not flushed for
LEASE_EXPIRY_SECONDS (a pid reused, a build on another machine sharing the cache, a hang).
gc reads the leases and the manifests and deletes in one write transaction, so no build
records a manifest or a lease between what gc decides and what it deletes.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import sqlite_utils

from .store import DB_FILE, Store, host_name

# Builds older than this many rows are forgotten by gc (their stats, not their outputs).
KEPT_BUILD_ROWS = 200
# A build flushes at least every few thousand tasks and when its graph is done: a lease not
# renewed for this long belongs to no build that is still working.
LEASE_EXPIRY_SECONDS = 3600


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
class Sweep:
    """What one gc pass decided and removed."""

    removed_blobs: int
    removed_tasks: int
    kept_builds: int
    dropped_builds: int
    running_builds: int  # builds whose live lease gc left alone


@dataclass(frozen=True)
class GcReport:
    before_bytes: int
    after_bytes: int
    removed_blobs: int
    removed_tasks: int
    kept_builds: int
    dropped_builds: int
    seconds: float
    running_builds: int = 0


def collect_garbage(store: Store, max_bytes: int | None, version: str) -> GcReport:
    """Sweep what neither a recorded build reaches nor a running build holds, and tasks of
    other code versions (their keys can never be asked for again); then, while the live data
    is over max_bytes, forget the oldest builds (the newest is always kept)."""
    started = time.perf_counter()
    db = sqlite_utils.Database(store.connection, execute_plugins=False)
    _remove_compiled_templates(store.directory)
    before = _file_bytes(store)
    with store.guarded():
        with store.transaction():
            sweep = _sweep(db, max_bytes, version)
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        db.vacuum()
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return GcReport(before, _file_bytes(store), sweep.removed_blobs, sweep.removed_tasks,
                    sweep.kept_builds, sweep.dropped_builds, time.perf_counter() - started,
                    sweep.running_builds)


def _remove_compiled_templates(directory: Path) -> None:
    """Older gradshard kept Jinja's compiled templates in CACHE/jinja/; nothing reads them now
    (a stored compiled template is code), so gc removes them. A link there is unlinked, never
    followed."""
    leftover = directory / "jinja"
    if leftover.is_symlink():
        leftover.unlink()
    elif leftover.is_dir():
        shutil.rmtree(leftover, ignore_errors=True)


def _sweep(db: sqlite_utils.Database, max_bytes: int | None, version: str) -> Sweep:
    """The deletions, inside the caller's transaction."""
    running = _live_leases(db)
    roots = [r[0] for r in db.execute(
        "SELECT manifest FROM manifests ORDER BY build DESC").fetchall()]
    kept = len(roots)
    while kept > 1 and max_bytes is not None and _live_bytes(db, roots[:kept]) > max_bytes:
        kept -= 1
    if kept < len(roots):
        marks = ",".join("?" * (len(roots) - kept))
        db.execute(f"DELETE FROM manifests WHERE manifest IN ({marks})", roots[kept:])
    _mark(db, roots[:kept] + _held(db, running))
    removed_blobs = db.execute(
        "DELETE FROM blobs WHERE hash NOT IN (SELECT hash FROM live)").rowcount
    # a running build's task rows carry its id in `used`, whatever code version wrote them
    oldest_running = min(running, default=sys.maxsize)
    removed_tasks = db.execute(
        "DELETE FROM tasks WHERE output NOT IN (SELECT hash FROM live) "
        "OR (version != ? AND used < ?)", [version, oldest_running]).rowcount
    db.execute("DELETE FROM refs WHERE parent NOT IN (SELECT hash FROM live)")
    db.execute("DELETE FROM traces WHERE key NOT IN (SELECT key FROM tasks)")
    db.execute("DELETE FROM builds WHERE id NOT IN "
               f"(SELECT id FROM builds ORDER BY id DESC LIMIT {KEPT_BUILD_ROWS})")
    db.execute("DROP TABLE live")
    return Sweep(removed_blobs, removed_tasks, kept, len(roots) - kept, len(running))


def _live_leases(db: sqlite_utils.Database) -> list[int]:
    """The builds whose lease is live; the other leases (and what they held) are dropped."""
    now = time.time()
    live, dead = [], []
    for build, pid, host, heartbeat in db.execute(
            "SELECT build, pid, host, heartbeat FROM leases").fetchall():
        (live if _lease_alive(pid, host, heartbeat, now) else dead).append(build)
    for chunk in _chunks(dead):
        marks = ",".join("?" * len(chunk))
        db.execute(f"DELETE FROM held WHERE build IN ({marks})", chunk)
        db.execute(f"DELETE FROM leases WHERE build IN ({marks})", chunk)
    return live


def _lease_alive(pid: object, host: object, heartbeat: object, now: float) -> bool:
    if not isinstance(heartbeat, (int, float)) or now - heartbeat > LEASE_EXPIRY_SECONDS:
        return False
    # a pid says nothing about a process on another machine: there, only the heartbeat counts
    return host != host_name() or _process_exists(pid)


def _process_exists(pid: object) -> bool:
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)  # signal 0: only asks whether the process exists
    except PermissionError:
        return True  # it does, as another user's
    except OSError:
        return False
    return True


def _held(db: sqlite_utils.Database, builds: list[int]) -> list[str]:
    held: list[str] = []
    for chunk in _chunks(builds):
        marks = ",".join("?" * len(chunk))
        held.extend(r[0] for r in db.execute(
            f"SELECT hash FROM held WHERE build IN ({marks})", chunk))
    return held


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


def _chunks(items: list, size: int = 900) -> list[list]:
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
