"""The content-addressed store: one SQLite file holding everything the engine remembers.

    blobs      hash → bytes (canonical JSON of a record, or a text), checked on every read
    refs       which blobs a blob refers to besides its own listing (a collection's blob
               lists its items itself), so gc keeps them together
    tasks      task key → output hash (and the code version that computed it)
    traces     (task, ident) → the key and input hashes it last ran with: why it ran again
    builds     one row per build: when, how long, what ran
    manifests  (spec, out) → the manifest blob of the last build of that spec into that dir
    leases     one row per running build (its process, host, heartbeat), and
    held       the blobs that build wrote or read: gc leaves them while the lease is live

The database runs in WAL mode so that concurrent builds read while one writes; every write
happens in one transaction per flush, so a killed build leaves the store as it was at its
last flush. Nothing waits for the disk (synchronous = OFF): a process that dies loses
nothing it committed (the system has the pages), and what a crash of the whole machine may
leave is what the store copes with anyway (a damaged file is set aside, a row naming a lost
blob is a miss, every blob is checked against its hash); waiting for the disk cost a cold
build about 0.4 s. A damaged or incompatible database is moved aside and rebuilt, never
trusted. A failure of the machine (a full disk, a read-only directory) is not damage: it is
reported as an EnvironmentFailure and the database is left as it is.

A cache directory may come from elsewhere (CI restores it), so whatever it says is data: a
file name read from it is used only once `safe_relative_path` accepts it.

sqlite-utils serves the maintenance commands (stats, gc). A build issues a handful of
statements on the plain sqlite3 connection instead, the schema's among them: importing
sqlite-utils costs ~110 ms, more than a whole no-op build may take.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import sqlite3
import time
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Callable, Iterable, Iterator, Sequence

import xxhash

from gradshard.cache.errors import EnvironmentFailure

__all__ = ["Blob", "DB_FILE", "FAILURE_CODEC", "LastBuild", "NO_SPACE", "Store", "StoreDamaged",
           "Trace", "blob_hash", "disk_full", "host_name", "path_inside", "paths_inside",
           "row_check", "safe_relative_path", "set_aside"]

SCHEMA_VERSION = 3
DB_FILE = "gradshard.sqlite3"
# SQLite's default limit on host parameters is 32766; stay far below it.
_CHUNK = 900
# SQLite result codes (the low byte of an extended code) that report the machine, not the
# file: reported as environment failures, and the database is kept.
_ENVIRONMENT_CODES = frozenset({
    sqlite3.SQLITE_PERM, sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED, sqlite3.SQLITE_NOMEM,
    sqlite3.SQLITE_READONLY, sqlite3.SQLITE_INTERRUPT, sqlite3.SQLITE_IOERR,
    sqlite3.SQLITE_FULL, sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_NOLFS, sqlite3.SQLITE_AUTH})
# The same, for errors that carry no code: words of their messages.
_ENVIRONMENT_WORDS = ("locked", "busy", "readonly", "read-only", "disk is full",
                      "unable to open", "permission", "out of memory", "disk i/o error")
# errnos of a full filesystem (the service's writes share them)
NO_SPACE = (errno.ENOSPC, errno.EDQUOT)
_CACHE_HINT = "pass --cache DIR (or set GRADSHARD_CACHE) to a writable directory, or --no-cache"


# How blob bytes are read: UTF-8 text, a collection's hashes, or canonical JSON of a record
# ("json:" + the record's class name).
_PLAIN_CODECS = frozenset({"text", "refs"})
FAILURE_CODEC = "json:Failure"  # pipeline/problems.py: Failure


class StoreDamaged(Exception):
    """SQLite reports the database file as damaged; the caller rebuilds the store."""

    def __init__(self, message: str, path: Path) -> None:
        super().__init__(message)
        self.path = path


@dataclass(frozen=True, slots=True)
class Blob:
    codec: str  # see _PLAIN_CODECS
    data: bytes


@dataclass(frozen=True, slots=True)
class Trace:
    key: str
    inputs: tuple[str, ...]


@dataclass
class _Pending:
    """Rows waiting for the next flush."""

    blobs: dict[str, tuple[str, bytes]] = field(default_factory=dict)
    refs: list[tuple[str, str]] = field(default_factory=list)
    tasks: dict[str, tuple[str, str, float, str]] = field(default_factory=dict)
    traces: dict[tuple[str, str], tuple[str, str]] = field(default_factory=dict)
    held: set[str] = field(default_factory=set)  # blobs the build holds (see Store.lease)

    def __len__(self) -> int:
        return len(self.blobs) + len(self.tasks)

    def bytes(self) -> int:
        """About what the rows take on disk (their data; SQLite adds pages and the WAL)."""
        return (sum(len(data) for _, data in self.blobs.values())
                + sum(len(t) + len(o) + len(v) + 40 for t, o, _, v in self.tasks.values())
                + sum(len(k) + len(i) + len(t) + len(n) for (t, n), (k, i) in self.traces.items())
                + 64 * (len(self.refs) + len(self.held)))

    def empty(self) -> bool:
        return not (self.blobs or self.tasks or self.traces or self.refs or self.held)


def blob_hash(codec: str, data: bytes) -> str:
    """A blob's name covers how it is read: equal bytes of two kinds (an empty text and an
    empty list, two records with the same JSON) are two blobs, never one."""
    digest = xxhash.xxh3_128(codec.encode("ascii"))
    digest.update(b"\x00")
    digest.update(data)
    name = digest.hexdigest()
    # a failed task's output is named apart ("!" is never a hex digit), so its dependents and
    # the groups collecting problems know it failed without reading it
    return "!" + name[1:] if codec == FAILURE_CODEC else name


def _known_codec(codec: object) -> bool:
    return isinstance(codec, str) and (codec in _PLAIN_CODECS or codec.startswith("json:"))


def row_check(*parts: str) -> str:
    """A short checksum over a row's text columns: a damaged row reads as missing."""
    return xxhash.xxh3_64_hexdigest("\x00".join(parts).encode())


def _chunks(items: Sequence[str]) -> Iterator[Sequence[str]]:
    for start in range(0, len(items), _CHUNK):
        yield items[start:start + _CHUNK]


def _damaged(error: sqlite3.Error) -> bool:
    """Anything but an environment problem means the file cannot be trusted (a damaged page
    shows up as "malformed", "not a database", "no such table", a constraint…)."""
    code = getattr(error, "sqlite_errorcode", None)
    if isinstance(code, int):
        return code & 0xFF not in _ENVIRONMENT_CODES
    return not any(word in str(error).lower() for word in _ENVIRONMENT_WORDS)


def _size(size: int) -> str:
    if size >= 1e9:
        return f"{size / 1e9:.1f} GB"
    return f"{size / 1e6:.1f} MB" if size >= 1e6 else f"{size / 1e3:.0f} kB"


def free_bytes(directory: Path) -> int | None:
    """What an unprivileged writer may still write on the filesystem holding directory."""
    try:
        stats = os.statvfs(directory)
    except OSError:
        return None
    return stats.f_bavail * stats.f_frsize


def disk_full(what: str, directory: Path, needed: int = 0) -> str:
    """The message for a write that found no space: what, where, how much is left and needed."""
    free = free_bytes(directory)
    state = "full" if free is None else f"full ({_size(free)} free)"
    need = f"; the write needed about {_size(needed)}" if needed else ""
    return f"{what}: the filesystem holding {directory} is {state}{need}"


def _environment_failure(path: Path, error: sqlite3.Error, needed: int = 0) -> EnvironmentFailure:
    """What to tell about an SQLite error that is the machine's: the database is kept."""
    code = getattr(error, "sqlite_errorcode", 0) & 0xFF
    directory = path.parent
    full = code == sqlite3.SQLITE_FULL or (code == sqlite3.SQLITE_IOERR
                                           and free_bytes(directory) == 0)
    if full:
        message = disk_full(f"cannot write the cache database {path}", directory, needed)
        return EnvironmentFailure(message + "; the cache was left as it was",
                                  f"free space there, or {_CACHE_HINT}", str(directory))
    if code in (sqlite3.SQLITE_READONLY, sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_PERM):
        return EnvironmentFailure(f"cannot write the cache database {path} ({error})",
                                  f"make {directory} writable, or {_CACHE_HINT}", str(path))
    return EnvironmentFailure(f"the cache at {path} cannot be used: {error}",
                              "pass another --cache DIR, or --no-cache", str(path))


def safe_relative_path(name: object) -> PurePosixPath | None:
    """`name` as a relative path that cannot leave the directory it is joined to, or None:
    it must be a non-empty string without NUL, not absolute, with no '..' part. Every file
    name read from the cache (or from another file a build keeps) passes here before it is
    joined to a directory; a name that does not is damage, never acted on."""
    if not isinstance(name, str) or not name or "\0" in name:
        return None
    path = PurePosixPath(name)
    if path.is_absolute() or not path.parts or ".." in path.parts:
        return None
    return path


def path_inside(directory: Path, name: object) -> Path | None:
    """directory / name when `name` is a safe relative path and no symbolic link among its
    directories leads out of `directory` (its last part may be a link: it is replaced or
    removed, never followed); None otherwise."""
    return paths_inside(directory, [name])[0]


def paths_inside(directory: Path, names: Iterable[object]) -> list[Path | None]:
    """path_inside of each name, each directory among them resolved once (a compile
    directory holds thousands of files in a handful of directories)."""
    inside: dict[tuple[str, ...], bool] = {}  # by the folder's parts: Paths hash slowly
    paths: list[Path | None] = []
    for name in names:
        relative = safe_relative_path(name)
        path = None if relative is None else directory.joinpath(*relative.parts)
        if path is not None and len(relative.parts) > 1:
            folder = relative.parts[:-1]
            if folder not in inside:
                inside[folder] = _resolves_inside(path.parent, directory)
            path = path if inside[folder] else None
        paths.append(path)
    return paths


def _resolves_inside(path: Path, directory: Path) -> bool:
    try:
        return path.resolve().is_relative_to(directory.resolve())
    except (OSError, RuntimeError):  # RuntimeError: a loop of symbolic links
        return False


class Store:
    """One open cache database. Not shared between threads."""

    def __init__(self, directory: Path, connection: sqlite3.Connection,
                 warn: Callable[[str], None]) -> None:
        self.directory = directory
        self.path = directory / DB_FILE
        self.connection = connection
        self.warn = warn
        self.pending = _Pending()
        self.lease: int | None = None  # the build whose lease this store holds (begin_build)

    # -----------------------------------------------------------------------------------------
    # Opening

    @classmethod
    def open(cls, directory: Path, warn: Callable[[str], None]) -> Store:
        """The store in `directory`, created if needed; a damaged or foreign database there is
        moved aside (with a warning) and replaced by an empty one."""
        try:
            directory.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise _unusable_directory(directory, error, "cannot create") from None
        path = directory / DB_FILE
        with _opening_lock(directory):  # creating the schema or switching to WAL is exclusive
            try:
                return cls(directory, _open_checked(path), warn)
            except StoreDamaged as damage:
                warn(f"the cache database {path} {damage}; it was moved aside and is rebuilt")
                set_aside(path)
                return cls(directory, _open_checked(path), warn)

    def close(self) -> None:
        with contextlib.suppress(sqlite3.Error):
            self.connection.close()

    def reopen(self) -> None:
        """A new connection to the same database, after close(): around a fork, so that
        each process has its own (SQLite's rule: a connection never crosses a fork)."""
        with _opening_lock(self.directory):
            self.connection = _open_checked(self.path)

    def reopen_in_child(self) -> None:
        """A forked child's store: a connection of its own, and none of the rows its parent
        had staged (the parent commits those itself, with the rest of its own)."""
        self.pending = _Pending()
        self.reopen()

    @contextlib.contextmanager
    def guarded(self, writing: int | Callable[[], int] = 0) -> Iterator[None]:
        """Translates SQLite errors: damage becomes StoreDamaged, the machine's failures (a
        full disk: `writing` is about how many bytes the write needed, or says it) an
        EnvironmentFailure. Misuse of the connection (another thread, closed) is gradshard's
        bug: it propagates, and the database, which is fine, is never set aside for it."""
        try:
            yield
        except sqlite3.ProgrammingError:
            raise
        except sqlite3.Error as error:
            if _damaged(error):
                raise StoreDamaged(f"is damaged ({error})", self.path) from None
            needed = writing() if callable(writing) else writing
            raise _environment_failure(self.path, error, needed) from None

    # -----------------------------------------------------------------------------------------
    # Reads

    def memo(self, keys: Sequence[str]) -> dict[str, str]:
        """Output hash of each key found. A damaged row needs no check of its own: a key
        that changed is never asked for, and an output hash that changed names no blob, so
        reading it fails and the value is recomputed."""
        found: dict[str, str] = {}
        with self.guarded():
            # in key order: each chunk then walks one part of the index (a third faster on
            # a cache of many builds than keys in the order tasks ask for them)
            for chunk in _chunks(sorted(keys)):
                marks = ",".join("?" * len(chunk))
                found.update(self.connection.execute(
                    f"SELECT key, output FROM tasks WHERE key IN ({marks})", chunk))
        self._hold(found.values())
        return found

    def blobs(self, hashes: Sequence[str]) -> dict[str, Blob]:
        """The blobs found whose bytes still hash to their name. A blob that does not is
        reported, deleted with the task rows that produced it, and left out."""
        found: dict[str, Blob] = {}
        bad: list[str] = []
        with self.guarded():
            for chunk in _chunks(sorted(hashes)):  # in key order, as memo() reads
                marks = ",".join("?" * len(chunk))
                rows = self.connection.execute(
                    f"SELECT hash, codec, data FROM blobs WHERE hash IN ({marks})", chunk)
                for name, codec, data in rows:
                    if (isinstance(data, bytes) and _known_codec(codec)
                            and blob_hash(codec, data) == name):
                        found[name] = Blob(codec, data)
                    else:
                        bad.append(name)
        if bad:
            self.warn(f"{len(bad)} damaged cache entr{'y' if len(bad) == 1 else 'ies'} "
                      f"detected and recomputed ({bad[0][:12]}…)")
            self.forget(bad)
        self._hold(found)
        return found

    def traces(self, task: str, idents: Sequence[str]) -> dict[str, Trace]:
        found: dict[str, Trace] = {}
        with self.guarded():
            for chunk in _chunks(list(idents)):
                marks = ",".join("?" * len(chunk))
                rows = self.connection.execute(
                    f"SELECT ident, key, inputs FROM traces WHERE task = ? AND ident IN ({marks})",
                    [task, *chunk])
                for ident, key, inputs in rows:
                    if isinstance(inputs, str):
                        found[ident] = Trace(key, tuple(inputs.split("\n")) if inputs else ())
        return found

    # -----------------------------------------------------------------------------------------
    # Writes: staged, then committed together by flush()

    def put_blob(self, name: str, codec: str, data: bytes) -> None:
        self.pending.blobs[name] = (codec, data)
        if self.lease is not None:
            self.pending.held.add(name)

    def put_refs(self, parent: str, children: Iterable[str]) -> None:
        self.pending.refs.extend((parent, child) for child in children)

    def put_task(self, key: str, task: str, output: str, seconds: float, version: str) -> None:
        self.pending.tasks[key] = (task, output, seconds, version)

    def put_trace(self, task: str, ident: str, key: str, inputs: Sequence[str]) -> None:
        self.pending.traces[(task, ident)] = (key, "\n".join(inputs))

    def flush(self, build_id: int) -> None:
        """Commit every staged row in one transaction; blobs always land with the task rows
        that name them, so a killed build never leaves a task pointing at nothing. The rows'
        `used` is `build_id`: the `builds` row of the build committing them (0 for a run
        recorded as no build)."""
        pending, self.pending = self.pending, _Pending()
        if pending.empty():
            return
        with self.guarded(pending.bytes), self.transaction() as db:
            db.executemany(
                "INSERT OR IGNORE INTO blobs (hash, codec, data, size, used) VALUES (?,?,?,?,?)",
                ((h, c, d, len(d), build_id) for h, (c, d) in pending.blobs.items()))
            db.executemany("INSERT OR IGNORE INTO refs (parent, child) VALUES (?,?)",
                           pending.refs)
            db.executemany(
                "INSERT OR REPLACE INTO tasks (key, task, output, seconds, used, version) "
                "VALUES (?,?,?,?,?,?)",
                ((k, t, o, s, build_id, v) for k, (t, o, s, v) in pending.tasks.items()))
            db.executemany(
                "INSERT OR REPLACE INTO traces (task, ident, key, inputs) VALUES (?,?,?,?)",
                ((t, i, k, inputs) for (t, i), (k, inputs) in pending.traces.items()))
            if self.lease is not None:
                _renew_lease(db, self.lease, pending.held)

    def checkpoint(self) -> None:
        """Copy what the write-ahead log holds into the database, without waiting for any
        reader or writer. A forked child does it before it exits: the last connection to
        close checkpoints whatever is left, and that is its parent, at its next fork or at
        the end of the build (~60 ms for a cold build's log, on the build's critical path).
        Only a saving: an error leaves the copy to that last close."""
        with contextlib.suppress(sqlite3.Error):
            self.connection.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()

    @contextlib.contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """BEGIN IMMEDIATE … COMMIT: one writer at a time, waiting up to the busy timeout."""
        db = self.connection
        db.execute("BEGIN IMMEDIATE")
        try:
            yield db
            db.execute("COMMIT")
        except BaseException:
            self._roll_back()
            raise

    def _roll_back(self) -> None:
        """SQLite has already rolled back after some errors (SQLITE_FULL, SQLITE_IOERR…): a
        second ROLLBACK would fail with "no transaction is active" and hide the real error
        (which would then pass for damage)."""
        if self.connection.in_transaction:
            with contextlib.suppress(sqlite3.Error):
                self.connection.execute("ROLLBACK")

    def forget(self, hashes: Sequence[str]) -> None:
        """Drop damaged blobs and the task rows whose output they were."""
        with self.guarded(), self.transaction() as db:
            for chunk in _chunks(list(hashes)):
                marks = ",".join("?" * len(chunk))
                db.execute(f"DELETE FROM blobs WHERE hash IN ({marks})", chunk)
                db.execute(f"DELETE FROM tasks WHERE output IN ({marks})", chunk)

    # -----------------------------------------------------------------------------------------
    # Builds and manifests

    def begin_build(self, spec: str, out: str) -> int:
        """Record a running build and take its lease: until end_build (or abandon_build),
        gc leaves every blob this store writes or reads (see cache/maintenance.py)."""
        now = time.time()
        with self.guarded(), self.transaction() as db:
            cursor = db.execute(
                "INSERT INTO builds (started, seconds, status, spec, out, summary) "
                "VALUES (?, 0, 'running', ?, ?, '{}')", (now, spec, out))
            build = int(cursor.lastrowid)
            db.execute("INSERT OR REPLACE INTO leases (build, pid, host, started, heartbeat) "
                       "VALUES (?,?,?,?,?)", (build, os.getpid(), host_name(), now, now))
        self.lease = build
        return build

    def end_build(self, build: int, status: str, seconds: float, summary: dict) -> None:
        """Record how the build went and give its lease up."""
        self._give_up_lease(build)
        with self.guarded(), self.transaction() as db:
            db.execute("UPDATE builds SET status = ?, seconds = ?, summary = ? WHERE id = ?",
                       (status, seconds, json.dumps(summary, sort_keys=True), build))
            _end_lease(db, build)

    def abandon_build(self, build: int) -> None:
        """A build that failed: marked so, its lease given up. Best effort: the store may be
        what failed, and a lease left behind ends with its process anyway."""
        self._give_up_lease(build)
        with contextlib.suppress(sqlite3.Error), self.transaction() as db:
            db.execute("UPDATE builds SET status = 'failed' WHERE id = ?", (build,))
            _end_lease(db, build)

    def _give_up_lease(self, build: int) -> None:
        if self.lease == build:
            self.lease = None
            self.pending.held.clear()

    def _hold(self, hashes: Iterable[str]) -> None:
        """Under a lease, what the build wrote or read is held (recorded at the next flush)."""
        if self.lease is not None:
            self.pending.held.update(hashes)

    def last_build(self, spec: str, out: str) -> LastBuild | None:
        """What the last build of `spec` into `out` read and wrote (None if unknown or if its
        row is damaged)."""
        with self.guarded():
            row = self.connection.execute(
                "SELECT build, inputs, files, manifest, checksum FROM manifests "
                "WHERE spec = ? AND out = ?", (spec, out)).fetchone()
        return self._within_out(_last_build(spec, out, row))

    def latest_manifest(self, spec: str | None = None, out: str | None = None) -> LastBuild | None:
        """The most recent build of `spec` (into any directory), or into `out` (of any spec)."""
        column, value = ("spec", spec) if spec is not None else ("out", out)
        with self.guarded():
            row = self.connection.execute(
                f"SELECT spec, out, build, inputs, files, manifest, checksum FROM manifests "
                f"WHERE {column} = ? ORDER BY build DESC LIMIT 1", (value,)).fetchone()
        return None if row is None else self._within_out(_last_build(row[0], row[1], row[2:]))

    def _within_out(self, last: LastBuild | None) -> LastBuild | None:
        """A record naming a file outside its output directory is damage (or a crafted
        cache): ignored with a warning, so no file it names is ever read, written or removed."""
        if last is None:
            return None
        unsafe = [name for name in last.files if safe_relative_path(name) is None]
        if unsafe:
            self.warn(f"the cache's record of the last build into {last.out} names a file "
                      f"outside it ({unsafe[0]!r}); the record was ignored")
            return None
        return last

    def set_manifest(self, spec: str, out: str, build: int, inputs: dict[str, str],
                     files: dict[str, str], manifest: str) -> None:
        inputs_json, files_json = json.dumps(inputs, sort_keys=True), json.dumps(files, sort_keys=True)
        with self.guarded(), self.transaction() as db:
            db.execute("INSERT OR REPLACE INTO manifests (spec, out, build, inputs, files, manifest, "
                       "checksum) VALUES (?,?,?,?,?,?,?)",
                       (spec, out, build, inputs_json, files_json, manifest,
                        row_check(spec, out, inputs_json, files_json, manifest)))


@dataclass(frozen=True)
class LastBuild:
    spec: str
    out: str
    build: int
    inputs: dict[str, str]
    files: dict[str, str]
    manifest: str  # blob hash of the full Manifest record


def _last_build(spec: str, out: str, row: Sequence | None) -> LastBuild | None:
    if row is None:
        return None
    build, inputs, files, manifest, checksum = row
    if checksum != row_check(spec, out, inputs, files, manifest):
        return None
    try:
        inputs, files = json.loads(inputs), json.loads(files)
    except (TypeError, ValueError):
        return None
    if not (_names_to_hashes(inputs) and _names_to_hashes(files)):
        return None
    return LastBuild(spec, out, build, inputs, files, manifest)


def _names_to_hashes(value: object) -> bool:
    return isinstance(value, dict) and all(isinstance(v, str) for v in value.values())


# ---------------------------------------------------------------------------------------------
# Leases: a running build's hold on what it wrote and read (gc's side: cache/maintenance.py)


def host_name() -> str:
    """The machine a lease's process runs on: its pid means something only there."""
    return os.uname().nodename


def _renew_lease(db: sqlite3.Connection, build: int, held: set[str]) -> None:
    db.executemany("INSERT OR IGNORE INTO held (build, hash) VALUES (?, ?)",
                   ((build, name) for name in held))
    db.execute("UPDATE leases SET heartbeat = ? WHERE build = ?", (time.time(), build))


def _end_lease(db: sqlite3.Connection, build: int) -> None:
    db.execute("DELETE FROM held WHERE build = ?", (build,))
    db.execute("DELETE FROM leases WHERE build = ?", (build,))


# ---------------------------------------------------------------------------------------------
# The file itself


@contextlib.contextmanager
def _opening_lock(directory: Path) -> Iterator[None]:
    """Processes open (and create) the database one at a time."""
    try:
        handle = _lock_file(directory)
    except OSError as error:
        raise _unusable_directory(directory, error, "cannot write into") from None
    try:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield
    finally:
        os.close(handle)  # closing releases the lock


def _lock_file(directory: Path) -> int:
    """The lock file's descriptor; creating it is the first write into the directory, so a
    directory that cannot be written fails here."""
    return os.open(directory / ".lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)


def _unusable_directory(directory: Path, error: OSError, doing: str) -> EnvironmentFailure:
    """The failure to report for a cache directory the machine refuses to write."""
    if error.errno == errno.EROFS:
        message = f"the cache directory {directory} is on a read-only filesystem"
    elif error.errno in NO_SPACE:
        message = disk_full(f"{doing} the cache directory {directory}", directory)
    elif error.errno in (errno.EACCES, errno.EPERM):
        message = f"the cache directory {directory} is not writable ({error.strerror})"
    else:
        message = f"{doing} the cache directory {directory}: {error.strerror or error}"
    return EnvironmentFailure(message, _CACHE_HINT, str(directory))


def _connect(path: Path) -> sqlite3.Connection:
    connection = sqlite3.connect(path, isolation_level=None, timeout=120)
    connection.execute("PRAGMA busy_timeout = 120000")
    return connection


def _open_checked(path: Path) -> sqlite3.Connection:
    """A connection to a database of this schema version, creating the schema if new."""
    connection = None
    try:
        connection = _connect(path)
        tables = {r[0] for r in connection.execute("SELECT name FROM sqlite_master")}
        if not tables:
            _create_schema(connection)
        elif "meta" not in tables or _schema_version(connection) != SCHEMA_VERSION:
            connection.close()
            raise StoreDamaged("was written by another version of gradshard", path)
        elif "leases" not in tables:  # a cache from before leases: they are added, not a reset
            _create_lease_tables(connection)
        connection.execute("PRAGMA journal_mode = WAL")
        connection.execute("PRAGMA synchronous = OFF")  # see the module docstring
        # a cold build writes ~50 MB: checkpoint the WAL every 64 MB, not every 4 MB
        connection.execute("PRAGMA wal_autocheckpoint = 16384")
        return connection
    except sqlite3.Error as error:
        if connection is not None:
            connection.close()
        if _damaged(error):
            raise StoreDamaged(f"is damaged ({error})", path) from None
        raise _environment_failure(path, error) from None


def _schema_version(connection: sqlite3.Connection) -> int | None:
    row = connection.execute("SELECT value FROM meta WHERE name = 'schema_version'").fetchone()
    try:
        return int(row[0]) if row else None
    except ValueError:
        return None


def _create_schema(connection: sqlite3.Connection) -> None:
    """The tables, as sqlite-utils once made them (stats and gc read them through it)."""
    connection.execute("PRAGMA page_size = 16384")  # most of the store is blobs of kilobytes
    connection.execute("PRAGMA journal_mode = WAL")
    connection.executescript(f"""
        BEGIN;
        CREATE TABLE IF NOT EXISTS "meta" ("name" TEXT PRIMARY KEY, "value" TEXT);
        CREATE TABLE IF NOT EXISTS "blobs" ("hash" TEXT PRIMARY KEY, "codec" TEXT NOT NULL,
            "data" BLOB NOT NULL, "size" INTEGER, "used" INTEGER);
        CREATE TABLE IF NOT EXISTS "refs" ("parent" TEXT, "child" TEXT,
            PRIMARY KEY ("parent", "child"));
        CREATE TABLE IF NOT EXISTS "tasks" ("key" TEXT PRIMARY KEY, "task" TEXT, "output" TEXT,
            "seconds" REAL, "used" INTEGER, "version" TEXT);
        CREATE TABLE IF NOT EXISTS "traces" ("task" TEXT, "ident" TEXT, "key" TEXT,
            "inputs" TEXT, PRIMARY KEY ("task", "ident"));
        CREATE TABLE IF NOT EXISTS "builds" ("id" INTEGER PRIMARY KEY, "started" REAL,
            "seconds" REAL, "status" TEXT, "spec" TEXT, "out" TEXT, "summary" TEXT);
        CREATE TABLE IF NOT EXISTS "manifests" ("spec" TEXT, "out" TEXT, "build" INTEGER,
            "inputs" TEXT, "files" TEXT, "manifest" TEXT, "checksum" TEXT,
            PRIMARY KEY ("spec", "out"));
        CREATE INDEX IF NOT EXISTS "idx_tasks_output" ON "tasks" ("output");
        INSERT OR REPLACE INTO "meta" ("name", "value")
            VALUES ('schema_version', '{SCHEMA_VERSION}');
        COMMIT;
    """)
    _create_lease_tables(connection)


def _create_lease_tables(connection: sqlite3.Connection) -> None:
    connection.executescript("""
        BEGIN;
        CREATE TABLE IF NOT EXISTS leases (build INTEGER PRIMARY KEY, pid INTEGER NOT NULL,
            host TEXT NOT NULL, started REAL NOT NULL, heartbeat REAL NOT NULL);
        CREATE TABLE IF NOT EXISTS held (build INTEGER NOT NULL, hash TEXT NOT NULL,
            PRIMARY KEY (build, hash)) WITHOUT ROWID;
        COMMIT;
    """)


def set_aside(path: Path) -> None:
    """Move a database (and its WAL files) out of the way; processes that still hold it open
    keep using the old inode."""
    stamp = f"{int(time.time())}-{os.getpid()}"
    for suffix in ("", "-wal", "-shm"):
        source = path.with_name(path.name + suffix)
        with contextlib.suppress(FileNotFoundError):
            source.rename(path.with_name(f"{path.name}.damaged-{stamp}{suffix}"))
