"""Looking after the cache directory: what it holds (`stats`) and keeping it small (`gc`).

gc keeps what the recorded builds reach: each manifest refers to its build's index, whose
refs name every output the build's tasks gave (cache/engine/core.py), so sweeping everything
else never costs a later build of those specs more than the work it did not keep. The
compile cache (cache/objects/entries.py) is left as it is, but for rows whose files are gone.

With a size limit (`gc --max-size`, GRADSHARD_CACHE_MAX after each build) gc bounds the whole
directory, measured as the sizes of its files (cache/store/directory.py: the database and its
WAL, objects, PCHs, set-aside `.damaged-*` files, everything), removing in this order:

1. what no entry names: set-aside damaged databases, writes a killed process left, compile
   files without a row (a cache from before the rows, a build killed before it recorded);
2. objects, PCHs and baselines for a toolchain or a header set that no compile directory's
   last build uses, least recently used first;
3. everything else but what the last build of each output directory needs: compile entries
   and manifests (with the blobs only they reach), least recently used first.

What is left is exactly what the last build of each output directory needs (its manifest,
the compile entries its compile used); when that alone exceeds the limit, gc keeps it and
warns with its size, unless told to drop it too (`drop_protected`, `gc --all`: then it goes,
least recently used first; `gc --all` without a limit empties the cache).

gc also keeps what running builds hold. A build takes a lease when it begins (Store.
begin_build) and records, at each flush, every blob it wrote or read (`held`), and before its
ninja runs, the compile entries it uses (compile_uses); gc leaves those, and the task rows
the build wrote, until the build ends, and leaves compile files newer than the oldest
lease. A lease is ignored (and dropped) once its process is gone, or when its build has not
flushed for LEASE_EXPIRY_SECONDS (a pid reused, a build on another machine sharing the cache,
a hang). gc reads the leases and the manifests and deletes in one write transaction, so no
build records a manifest or a lease between what gc decides and what it deletes; compile
entries are removed in a transaction that reads again what leased builds use.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import sqlite_utils

from gradshard.cache.errors import UsageError
from gradshard.cache.objects import entries as compile_entries
from gradshard.cache.store.database import DB_FILE, Store, host_name
from gradshard.cache.store.directory import (BASELINE_FILES, CACHE_MAX_VARIABLE, CATEGORIES,
                                             DAMAGED, LEFTOVER, MEMO, OBJECT_FILES, PCH_FILES,
                                             CacheFile, cache_files, directory_bytes, total_bytes)

__all__ = ["BuildRow", "GcReport", "LEASE_EXPIRY_SECONDS", "StoreStats", "apply_cache_limit",
           "collect_garbage", "parse_size", "size_text", "store_stats"]

# Builds older than this many rows are forgotten by gc (their stats, not their outputs).
KEPT_BUILD_ROWS = 200
# A build flushes at least every few thousand tasks and when its graph is done: a lease not
# renewed for this long belongs to no build that is still working.
LEASE_EXPIRY_SECONDS = 3600
# Compile files this much older than the oldest lease may be an unleased build's: a write's
# mtime is when it began, and a build takes its lease before it compiles.
_LEASE_SLACK_SECONDS = 60
COMPILE_CATEGORIES = (OBJECT_FILES, PCH_FILES, BASELINE_FILES, MEMO)


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
class DiskUse:
    """One kind of file in the cache directory: how many files, bytes and entries."""

    files: int = 0
    bytes: int = 0
    entries: int = 0


@dataclass(frozen=True)
class StoreStats:
    path: str
    file_bytes: int  # the database and its WAL
    blobs: int
    blob_bytes: int
    tasks: int
    manifests: int
    builds: list[BuildRow]
    totals: dict[str, int]
    directory: str = ""
    disk: dict[str, DiskUse] = field(default_factory=dict)  # by cache_files category
    compile_hits: dict[str, tuple[int, int]] = field(default_factory=dict)  # kind → hits, made

    @property
    def disk_bytes(self) -> int:
        return sum(use.bytes for use in self.disk.values())


def store_stats(store: Store, last: int = 10) -> StoreStats:
    db = sqlite_utils.Database(store.connection, execute_plugins=False)
    compile_entries.ensure_tables(store)
    with store.guarded():
        blobs, blob_bytes = db.execute(
            "SELECT count(*), coalesce(sum(size), 0) FROM blobs").fetchone()
        rows = [BuildRow(r[0], r[1], r[2], r[3], r[4], r[5], _summary(r[6])) for r in db.execute(
            "SELECT id, started, seconds, status, spec, out, summary FROM builds "
            "ORDER BY id DESC").fetchall()]
        stats = StoreStats(str(store.path), _file_bytes(store), blobs, blob_bytes,
                           db["tasks"].count, db["manifests"].count, rows[:last], _totals(rows),
                           str(store.directory), disk_use(cache_files(store.directory)),
                           compile_entries.hit_counts(store))
    return stats


def disk_use(files: list[CacheFile]) -> dict[str, DiskUse]:
    """Files, bytes and entries (distinct entry paths) per category, in CATEGORIES order."""
    use = {}
    for category in CATEGORIES:
        mine = [f for f in files if f.category == category]
        use[category] = DiskUse(len(mine), total_bytes(mine), len({f.entry for f in mine}))
    return use


def _summary(text: str) -> dict:
    try:
        value = json.loads(text)
    except (TypeError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def _totals(rows: list[BuildRow]) -> dict[str, int]:
    totals = {"builds": len(rows), "up_to_date": 0, "run": 0, "reused": 0, "compiled": 0,
              "cached": 0, "spliced": 0}
    for row in rows:
        totals["up_to_date"] += row.status == "up to date"
        totals["run"] += sum(row.summary.get("run", {}).values())
        totals["reused"] += sum(row.summary.get("reused", {}).values())
        compiled = row.summary.get("compile", {})
        for name in ("compiled", "cached", "spliced"):
            totals[name] += compiled.get(name, 0) if isinstance(compiled, dict) else 0
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

    removed_blobs: int = 0
    removed_tasks: int = 0
    kept_builds: int = 0
    dropped_builds: int = 0
    running_builds: int = 0  # builds whose live lease gc left alone

    def then(self, later: Sweep) -> Sweep:
        """This pass and a later one: what both removed, what the later one kept."""
        return Sweep(self.removed_blobs + later.removed_blobs,
                     self.removed_tasks + later.removed_tasks, later.kept_builds,
                     self.dropped_builds + later.dropped_builds, later.running_builds)


@dataclass(frozen=True)
class GcReport:
    before_bytes: int  # the whole cache directory, before and after
    after_bytes: int
    removed_blobs: int
    removed_tasks: int
    kept_builds: int
    dropped_builds: int
    seconds: float
    running_builds: int = 0
    removed_entries: int = 0  # compile entries and other files (damaged, leftovers)
    limit: int | None = None
    warnings: tuple[str, ...] = ()


def collect_garbage(store: Store, max_bytes: int | None, version: str,
                    drop_protected: bool = False) -> GcReport:
    """Sweep what neither a recorded build reaches nor a running build holds, and tasks of
    other code versions (their keys can never be asked for again); then, while the cache
    directory is over max_bytes, remove files and forget builds in the order of the module
    docstring. `drop_protected` lets the last builds' needs go too (with no max_bytes:
    everything a running build does not hold)."""
    started = time.perf_counter()
    db = sqlite_utils.Database(store.connection, execute_plugins=False)
    compile_entries.ensure_tables(store)
    _remove_compiled_templates(store.directory)
    before = directory_bytes(store.directory)
    sweep = _sweep_and_compact(store, db, version, [])
    limit = 0 if drop_protected and max_bytes is None else max_bytes
    removed = 0
    if limit is not None:
        sweep, removed = _bound(store, db, version, limit, drop_protected, sweep)
    after = directory_bytes(store.directory)
    warnings = () if limit is None or after <= limit else (
        _over_limit(after, limit, drop_protected),)
    return GcReport(before, after, sweep.removed_blobs, sweep.removed_tasks, sweep.kept_builds,
                    sweep.dropped_builds, time.perf_counter() - started, sweep.running_builds,
                    removed, limit, warnings)


def _over_limit(size: int, limit: int, drop_protected: bool) -> str:
    if drop_protected:
        return (f"the cache directory holds {size_text(size)} after gc, more than the limit of "
                f"{size_text(limit)}: what running builds hold, the database's own pages, logs "
                "and files that are not gradshard's are kept")
    return (f"the cache directory holds {size_text(size)} after gc, more than the limit of "
            f"{size_text(limit)}: that is what the last build of each output directory needs "
            "(and what running builds hold), kept; `gradshard gc --all` drops it too")


def size_text(size: int) -> str:
    """A size in the units limits are written in (parse_size: 1M is 2^20 bytes): 12 KiB,
    3.4 MiB, 1.2 GiB."""
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20)):
        if size >= scale:
            return f"{size / scale:.1f} {unit}"
    return f"{size / 1024:.0f} KiB" if size >= 1024 else f"{size} B"


def apply_cache_limit(store: Store | None, warn: Callable[[str], None],
                      limit_text: str | None) -> GcReport | None:
    """GRADSHARD_CACHE_MAX (a size such as 2G; `limit_text`, its value, which the service
    reads and passes: cache/ reads no environment), as ccache's max_size: after a build, a
    cache directory over it is collected down to it (warnings through `warn`); None when the
    variable is unset or blank, there is no store, or the directory fits. A bad value is a
    UsageError."""
    text = (limit_text or "").strip()
    if not text:
        return None
    try:
        limit = parse_size(text)
    except ValueError as error:
        hint = f"write a size such as 500M or 2G, or unset {CACHE_MAX_VARIABLE}"
        raise UsageError(f"{CACHE_MAX_VARIABLE}: {error}", hint) from None
    if store is None or directory_bytes(store.directory) <= limit:
        return None
    # imports and hashes gradshard's sources: only now
    from gradshard.cache.version import code_version

    report = collect_garbage(store, limit, code_version())
    for warning in report.warnings:
        warn(warning)
    return report


def _remove_compiled_templates(directory: Path) -> None:
    """Older gradshard kept Jinja's compiled templates in CACHE/jinja/; nothing reads them now
    (a stored compiled template is code), so gc removes them. A link there is unlinked, never
    followed."""
    leftover = directory / "jinja"
    if leftover.is_symlink():
        leftover.unlink()
    elif leftover.is_dir():
        shutil.rmtree(leftover, ignore_errors=True)


def _sweep_and_compact(store: Store, db: sqlite_utils.Database, version: str,
                       drop: list[str]) -> Sweep:
    """One sweep (forgetting the manifests `drop`), then the file made as small as its rows."""
    with store.guarded():
        with store.transaction():
            sweep = _sweep(db, version, drop)
        _compact(db)
    return sweep


def _compact(db: sqlite_utils.Database) -> None:
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.vacuum()
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")


def _sweep(db: sqlite_utils.Database, version: str, drop: list[str]) -> Sweep:
    """The deletions, inside the caller's transaction."""
    running = _live_leases(db)
    for chunk in _chunks(drop):
        marks = ",".join("?" * len(chunk))
        db.execute(f"DELETE FROM manifests WHERE manifest IN ({marks})", chunk)
    roots = [r[0] for r in db.execute("SELECT manifest FROM manifests").fetchall()]
    _mark(db, roots + _held(db, running))
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
    return Sweep(removed_blobs, removed_tasks, len(roots), len(drop), len(running))


# ---------------------------------------------------------------------------------------------
# Bounding the directory


@dataclass(frozen=True)
class Candidate:
    """Something gc may remove: a compile entry or a file (`entry`), or a recorded build's
    manifest (`manifest`), with its place in the order and its bytes (a manifest's are only
    known once swept)."""

    order: tuple  # (protected, tier, last build using it, -bytes, last use time)
    entry: str = ""
    manifest: str = ""
    bytes: int = 0


def _bound(store: Store, db: sqlite_utils.Database, version: str, limit: int,
           drop_protected: bool, sweep: Sweep) -> tuple[Sweep, int]:
    """Remove candidates in order until the directory fits the limit; returns the sweeps'
    total and how many entries and files were removed."""
    files = cache_files(store.directory)
    total = total_bytes(files)
    batch: list[str] = []
    removed = 0
    for candidate in _candidates(store, db, files, drop_protected):
        if total <= limit:
            break
        if candidate.entry:
            batch.append(candidate.entry)
            total -= candidate.bytes
            continue
        removed += compile_entries.forget_entries(store, store.directory, batch)
        batch = []
        sweep = sweep.then(_sweep_and_compact(store, db, version, [candidate.manifest]))
        total = directory_bytes(store.directory)
    removed += compile_entries.forget_entries(store, store.directory, batch)
    if removed:
        with store.guarded():
            _compact(db)  # the rows of removed entries
    return sweep, removed


def _candidates(store: Store, db: sqlite_utils.Database, files: list[CacheFile],
                drop_protected: bool) -> list[Candidate]:
    """What gc may remove, in order: unprotected before protected (those only when
    `drop_protected`), then by tier (module docstring), then least recently used first (by
    the last build that used it; of one build's, the largest first)."""
    rows = compile_entries.entry_rows(store)
    used = compile_entries.used_paths(store)
    entries = _entries_on_disk(files)
    compile_entries.drop_rows_without_files(store, rows, set(entries))
    fresh_after = _oldest_lease(db) - _LEASE_SLACK_SECONDS
    toolchains = {rows[p].toolchain for p in used if p in rows}
    header_sets = {rows[p].headers for p in used if p in rows}
    found = []
    for path, (category, size, mtime) in entries.items():
        row = rows.get(path)
        if row is None and mtime >= fresh_after:
            continue  # a leased build may be writing it
        if row is None or category in (DAMAGED, LEFTOVER):
            order = (0, 0, -size, mtime)
        else:
            stale = (row.toolchain not in toolchains | {""}
                     or row.headers not in header_sets | {""})
            order = (1 if stale else 2, row.used_build, -size, row.used_at)
        found.append(Candidate((path in used, *order), entry=path, bytes=size))
    found += _manifest_candidates(db)
    return sorted((c for c in found if drop_protected or not c.order[0]), key=lambda c: c.order)


def _entries_on_disk(files: list[CacheFile]) -> dict[str, tuple[str, int, float]]:
    """Entry path → (category, bytes, newest mtime) of what gc may remove: compile entries,
    damaged databases, leftovers."""
    entries: dict[str, tuple[str, int, float]] = {}
    for f in files:
        if f.category in (*COMPILE_CATEGORIES, DAMAGED, LEFTOVER):
            _, size, mtime = entries.get(f.entry, (f.category, 0, 0.0))
            entries[f.entry] = (f.category, size + f.size, max(mtime, f.mtime))
    return entries


def _oldest_lease(db: sqlite_utils.Database) -> float:
    """When the oldest live lease began (infinity: none; _sweep dropped the dead ones)."""
    oldest = db.execute("SELECT min(started) FROM leases").fetchone()[0]
    return float(oldest) if isinstance(oldest, (int, float)) else float("inf")


def _manifest_candidates(db: sqlite_utils.Database) -> list[Candidate]:
    """Every recorded build's manifest, last used by the last build of its spec into its
    output directory (one that found it up to date too); the last of each output directory
    protected."""
    used = {(spec, out): build for spec, out, build in db.execute(
        "SELECT spec, out, max(id) FROM builds GROUP BY spec, out").fetchall()}
    rows = db.execute("SELECT spec, out, build, manifest FROM manifests ORDER BY build").fetchall()
    last = {out: build for _, out, build, _ in rows}
    return [Candidate((last[out] == build, 2, max(build, used.get((spec, out), 0)), 0, 0.0),
                      manifest=manifest) for spec, out, build, manifest in rows]


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
    if not 0 <= size < float("inf"):  # also NaN
        raise ValueError(f"not a size: {text!r}")
    return int(size * factor)
