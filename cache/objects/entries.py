"""The compile cache in the store: a row per entry of CACHE/objects and CACHE/pch, and what
each compile directory's last build used.

    compile_entries  entry path → kind (object, splice, pch, baseline, header_memo), key,
                     size, content hash (its xxh3-128 as its sum records it), what it depends
                     on (xxh3-128 of the toolchain's identity; the header fingerprint) and its
                     last use (build id, time)
    compile_uses     (build, compile directory, entry path): the entries the last build of each
                     compile directory uses, written before its ninja runs (so gc, seeing the
                     build's lease, leaves them) and replacing that directory's earlier build's
    compile_hits     kind → entries served from the cache, and made, over every build

The files are the truth: object_cache (under ninja, one process per unit, no SQLite) writes
and checks them, and the compile driver records them here after ninja ran. A row whose files
are gone is a row to drop; files without a row (a cache from before these tables, a build
killed before it recorded) are measured all the same and are gc's first to go. Paths read from
these rows are data: only an entry path of the row's kind (cache/store/directory.py: ENTRY_PATHS) is used.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from gradshard.cache.objects.object_cache import RECORD_BYTES, content_sum, is_key
from gradshard.cache.store.database import Store, path_inside
from gradshard.cache.store.directory import entry_kind_matches, remove_entry
from gradshard.cache.store.regular_files import read_regular

__all__ = ["EntryUse", "drop_rows_without_files", "ensure_tables", "entry_rows", "forget_entries",
           "hit_counts", "hold", "record", "used_paths"]

_COLUMNS = {
    "compile_entries": ("path", "kind", "key", "size", "hash", "toolchain", "headers",
                        "used_build", "used_at"),
    "compile_uses": ("build", "directory", "path"),
    "compile_hits": ("kind", "hits", "made"),
}
_SCHEMA = """
    CREATE TABLE IF NOT EXISTS compile_entries (path TEXT PRIMARY KEY, kind TEXT NOT NULL,
        key TEXT NOT NULL, size INTEGER NOT NULL, hash TEXT NOT NULL, toolchain TEXT NOT NULL,
        headers TEXT NOT NULL, used_build INTEGER NOT NULL, used_at REAL NOT NULL);
    CREATE TABLE IF NOT EXISTS compile_uses (build INTEGER NOT NULL, directory TEXT NOT NULL,
        path TEXT NOT NULL, PRIMARY KEY (build, path)) WITHOUT ROWID;
    CREATE TABLE IF NOT EXISTS compile_hits (kind TEXT PRIMARY KEY, hits INTEGER NOT NULL,
        made INTEGER NOT NULL);
"""
KINDS = ("object", "splice", "pch", "baseline", "header_memo")


@dataclass(frozen=True)
class EntryUse:
    """One entry a build used: what the driver knows of it before reading its files."""

    kind: str
    path: str  # its entry path (cache_files)
    key: str
    toolchain: str = ""  # xxh3-128 of the toolchain identity; "" for what depends on none
    headers: str = ""  # the header fingerprint
    served: bool | None = None  # True: a hit; False: made by this build; None: neither


@dataclass(frozen=True)
class EntryRow:
    path: str
    kind: str
    size: int
    toolchain: str
    headers: str
    used_build: int
    used_at: float


def ensure_tables(store: Store) -> None:
    """Create the tables (once per database); tables of another shape (another gradshard's)
    are dropped and made again: they only describe files, which stay."""
    db = store.connection
    with store.guarded():
        for table, columns in _COLUMNS.items():
            found = tuple(r[1] for r in db.execute(f"PRAGMA table_info({table})"))
            if found and found != columns:
                db.execute(f"DROP TABLE {table}")
        db.executescript(f"BEGIN; {_SCHEMA} COMMIT;")


def hold(store: Store, build: int, directory: str, uses: Iterable[EntryUse]) -> None:
    """Before ninja runs: these are the entries the build of `directory` uses; they replace
    what its earlier builds used. gc leaves them while the build's lease is live, and after
    it as what the directory's last build needs."""
    paths = [(build, directory, u.path) for u in uses]
    with store.guarded(), store.transaction() as db:
        db.execute("DELETE FROM compile_uses WHERE directory = ? AND build != ?",
                   (directory, build))
        db.executemany("INSERT OR IGNORE INTO compile_uses (build, directory, path) "
                       "VALUES (?,?,?)", paths)


def record(store: Store, build: int, cache: Path, uses: Iterable[EntryUse]) -> None:
    """After ninja ran: each entry whose files are there gets its row (size, content hash,
    last use); the hits and entries made are counted by kind. An entry without files (a
    failed compile, a removed damaged one) loses its row."""
    now = time.time()
    rows, gone, counts = [], [], {}
    for use in uses:
        measured = measure(cache, use.kind, use.path)
        if measured is None:
            gone.append((use.path,))
            continue
        size, digest = measured
        rows.append((use.path, use.kind, use.key, size, digest, use.toolchain, use.headers,
                     build, now))
        if use.served is not None:
            hits, made = counts.get(use.kind, (0, 0))
            counts[use.kind] = (hits + use.served, made + (not use.served))
    with store.guarded(), store.transaction() as db:
        db.executemany("INSERT OR REPLACE INTO compile_entries (path, kind, key, size, hash, "
                       "toolchain, headers, used_build, used_at) VALUES (?,?,?,?,?,?,?,?,?)",
                       rows)
        db.executemany("DELETE FROM compile_entries WHERE path = ?", gone)
        db.executemany("INSERT INTO compile_hits (kind, hits, made) VALUES (?,?,?) ON CONFLICT "
                       "(kind) DO UPDATE SET hits = hits + excluded.hits, "
                       "made = made + excluded.made",
                       [(kind, h, m) for kind, (h, m) in counts.items()])


def measure(cache: Path, kind: str, path: str) -> tuple[int, str] | None:
    """An entry's size on disk and content hash (an object's and a PCH's as their sums
    record them: they were checked against it when served), or None when it is not whole."""
    entry = path_inside(cache, path) if entry_kind_matches(kind, path) else None
    if entry is None:
        return None
    if kind in ("object", "splice"):
        files = [Path(f"{entry}{suffix}") for suffix in (".o", ".d", ".sum")]
        digest = _sum_field(Path(f"{entry}.sum"), "object")
    elif kind == "pch":
        files = sorted(entry.iterdir()) if entry.is_dir() and not entry.is_symlink() else []
        digest = next(filter(None, (_sum_field(f, "xxh3_128") for f in files
                                    if f.name.endswith(".gch.sum"))), None)
    else:
        files = [entry]
        digest = _content_sum(entry)
    sizes = [_size(f) for f in files]
    return None if digest is None else (sum(sizes), digest)


def _size(path: Path) -> int:
    try:
        return path.lstat().st_size
    except OSError:
        return 0


def _sum_field(path: Path, field: str) -> str | None:
    try:
        recorded = json.loads(read_regular(path, RECORD_BYTES))
    except (OSError, ValueError):
        return None
    value = recorded.get(field) if isinstance(recorded, dict) else None
    return value if is_key(value) else None


def _content_sum(path: Path) -> str | None:
    try:
        return content_sum(read_regular(path, RECORD_BYTES))
    except OSError:
        return None


# ---------------------------------------------------------------------------------------------
# What gc and stats read


def entry_rows(store: Store) -> dict[str, EntryRow]:
    """Every row whose path is an entry path of its kind (others are dropped: damage)."""
    rows, bad = {}, []
    with store.guarded():
        for path, kind, size, toolchain, headers, build, used in store.connection.execute(
                "SELECT path, kind, size, toolchain, headers, used_build, used_at "
                "FROM compile_entries"):
            if entry_kind_matches(kind, path):
                rows[path] = EntryRow(path, kind, _number(size, int), str(toolchain),
                                      str(headers), _number(build, int), _number(used, float))
            else:
                bad.append((path,))
    if bad:
        with store.guarded(), store.transaction() as db:
            db.executemany("DELETE FROM compile_entries WHERE path = ?", bad)
    return rows


def _number(value: object, kind: type) -> int | float:
    return kind(value) if isinstance(value, (int, float)) else kind(0)


def used_paths(store: Store) -> dict[str, set[int]]:
    """Entry path → the builds whose compile directory's last build uses it."""
    used: dict[str, set[int]] = {}
    with store.guarded():
        for build, path in store.connection.execute("SELECT build, path FROM compile_uses"):
            if isinstance(path, str):
                used.setdefault(path, set()).add(build)
    return used


def hit_counts(store: Store) -> dict[str, tuple[int, int]]:
    """Kind → (served from the cache, made), over every recorded build."""
    with store.guarded():
        return {kind: (_number(hits, int), _number(made, int)) for kind, hits, made in
                store.connection.execute("SELECT kind, hits, made FROM compile_hits")
                if kind in KINDS}


def forget_entries(store: Store, cache: Path, paths: list[str]) -> int:
    """Remove these entries' files and rows, except those a build holding a lease uses: read
    in the transaction that removes, so an entry a build has just taken for its next ninja
    run (`hold`, itself a transaction) is left. Returns how many were removed."""
    removed = 0
    with store.guarded(), store.transaction() as db:
        held = {r[0] for r in db.execute(
            "SELECT path FROM compile_uses WHERE build IN (SELECT build FROM leases)")}
        for path in paths:
            if path in held:
                continue
            remove_entry(cache, path)
            db.execute("DELETE FROM compile_entries WHERE path = ?", (path,))
            db.execute("DELETE FROM compile_uses WHERE path = ?", (path,))
            removed += 1
    return removed


def drop_rows_without_files(store: Store, rows: dict[str, EntryRow], present: set[str]) -> None:
    """Rows of entries whose files are gone (removed as damaged, by hand, by an older gc)."""
    gone = [(path,) for path in rows if path not in present]
    if gone:
        with store.guarded(), store.transaction() as db:
            db.executemany("DELETE FROM compile_entries WHERE path = ?", gone)
