"""The content-addressed store: one SQLite file holding everything the engine remembers.

    blobs      hash → bytes (canonical JSON of a record, or a text), checked on every read
    refs       which blobs a blob refers to besides its own listing (a collection's blob
               lists its items itself), so gc keeps them together
    tasks      task key → output hash (and the code version that computed it)
    traces     (task, ident) → the key and input hashes it last ran with: why it ran again
    builds     one row per build: when, how long, what ran
    manifests  (spec, out) → the manifest blob of the last build of that spec into that dir

The database runs in WAL mode so that concurrent builds read while one writes; every write
happens in one transaction per flush, so a killed build leaves the store as it was at its
last flush. A damaged or incompatible database is moved aside and rebuilt, never trusted.

sqlite-utils creates the schema and serves the maintenance commands (stats, gc). The build's
hot path issues a handful of statements on the plain sqlite3 connection instead: importing
sqlite-utils costs ~110 ms, more than a whole no-op build may take.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import sqlite3
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Iterator, Sequence

import xxhash

from gradshard.pipeline.errors import UsageError

SCHEMA_VERSION = 3
DB_FILE = "gradshard.sqlite3"
# SQLite's default limit on host parameters is 32766; stay far below it.
_CHUNK = 900
# SQLite errors that are about the environment, not the file: reported as usage errors.
_ENVIRONMENT_WORDS = ("locked", "busy", "readonly", "read-only", "disk is full",
                      "unable to open", "permission", "out of memory")


# How blob bytes are read: UTF-8 text, a collection's hashes, or canonical JSON of a record
# ("json:" + the record's class name).
_PLAIN_CODECS = frozenset({"text", "refs"})


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

    def __len__(self) -> int:
        return len(self.blobs) + len(self.tasks)


def blob_hash(codec: str, data: bytes) -> str:
    """A blob's name covers how it is read: equal bytes of two kinds (an empty text and an
    empty list, two records with the same JSON) are two blobs, never one."""
    digest = xxhash.xxh3_128(codec.encode("ascii"))
    digest.update(b"\x00")
    digest.update(data)
    return digest.hexdigest()


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
    return not any(word in str(error).lower() for word in _ENVIRONMENT_WORDS)


class Store:
    """One open cache database. Not shared between threads."""

    def __init__(self, directory: Path, connection: sqlite3.Connection,
                 warn: Callable[[str], None]) -> None:
        self.directory = directory
        self.path = directory / DB_FILE
        self.connection = connection
        self.warn = warn
        self.pending = _Pending()

    # -----------------------------------------------------------------------------------------
    # Opening

    @classmethod
    def open(cls, directory: Path, warn: Callable[[str], None]) -> Store:
        """The store in `directory`, created if needed; a damaged or foreign database there is
        moved aside (with a warning) and replaced by an empty one."""
        try:
            directory.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise UsageError(f"cannot create the cache directory {directory}: {e.strerror}",
                             "pass --cache DIR (or set GRADSHARD_CACHE) to a writable place")
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

    @contextlib.contextmanager
    def guarded(self) -> Iterator[None]:
        """Translates SQLite errors: damage becomes StoreDamaged, the rest a usage error.
        Misuse of the connection (another thread, closed) is gradshard's bug: it propagates,
        and the database, which is fine, is never set aside for it."""
        try:
            yield
        except sqlite3.ProgrammingError:
            raise
        except sqlite3.Error as error:
            if _damaged(error):
                raise StoreDamaged(f"is damaged ({error})", self.path) from None
            raise UsageError(f"the cache at {self.path} cannot be used: {error}",
                             "pass another --cache DIR, or --no-cache") from None

    # -----------------------------------------------------------------------------------------
    # Reads

    def memo(self, keys: Sequence[str]) -> dict[str, str]:
        """Output hash of each key found. A damaged row needs no check of its own: a key
        that changed is never asked for, and an output hash that changed names no blob, so
        reading it fails and the value is recomputed."""
        found: dict[str, str] = {}
        with self.guarded():
            for chunk in _chunks(list(keys)):
                marks = ",".join("?" * len(chunk))
                found.update(self.connection.execute(
                    f"SELECT key, output FROM tasks WHERE key IN ({marks})", chunk))
        return found

    def blobs(self, hashes: Sequence[str]) -> dict[str, Blob]:
        """The blobs found whose bytes still hash to their name. A blob that does not is
        reported, deleted with the task rows that produced it, and left out."""
        found: dict[str, Blob] = {}
        bad: list[str] = []
        with self.guarded():
            for chunk in _chunks(list(hashes)):
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

    def put_refs(self, parent: str, children: Iterable[str]) -> None:
        self.pending.refs.extend((parent, child) for child in children)

    def put_task(self, key: str, task: str, output: str, seconds: float, version: str) -> None:
        self.pending.tasks[key] = (task, output, seconds, version)

    def put_trace(self, task: str, ident: str, key: str, inputs: Sequence[str]) -> None:
        self.pending.traces[(task, ident)] = (key, "\n".join(inputs))

    def flush(self, generation: int) -> None:
        """Commit every staged row in one transaction; blobs always land with the task rows
        that name them, so a killed build never leaves a task pointing at nothing."""
        pending, self.pending = self.pending, _Pending()
        if not (pending.blobs or pending.tasks or pending.traces or pending.refs):
            return
        with self.guarded(), self.transaction() as db:
            db.executemany(
                "INSERT OR IGNORE INTO blobs (hash, codec, data, size, used) VALUES (?,?,?,?,?)",
                [(h, c, d, len(d), generation) for h, (c, d) in pending.blobs.items()])
            db.executemany("INSERT OR IGNORE INTO refs (parent, child) VALUES (?,?)",
                           pending.refs)
            db.executemany(
                "INSERT OR REPLACE INTO tasks (key, task, output, seconds, used, version) "
                "VALUES (?,?,?,?,?,?)",
                [(k, t, o, s, generation, v) for k, (t, o, s, v) in pending.tasks.items()])
            db.executemany(
                "INSERT OR REPLACE INTO traces (task, ident, key, inputs) VALUES (?,?,?,?)",
                [(t, i, k, inputs) for (t, i), (k, inputs) in pending.traces.items()])

    @contextlib.contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """BEGIN IMMEDIATE … COMMIT: one writer at a time, waiting up to the busy timeout."""
        db = self.connection
        db.execute("BEGIN IMMEDIATE")
        try:
            yield db
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")

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
        with self.guarded(), self.transaction() as db:
            cursor = db.execute(
                "INSERT INTO builds (started, seconds, status, spec, out, summary) "
                "VALUES (?, 0, 'running', ?, ?, '{}')", (time.time(), spec, out))
            return int(cursor.lastrowid)

    def end_build(self, build: int, status: str, seconds: float, summary: dict) -> None:
        with self.guarded(), self.transaction() as db:
            db.execute("UPDATE builds SET status = ?, seconds = ?, summary = ? WHERE id = ?",
                       (status, seconds, json.dumps(summary, sort_keys=True), build))

    def last_build(self, spec: str, out: str) -> LastBuild | None:
        """What the last build of `spec` into `out` read and wrote (None if unknown or if its
        row is damaged)."""
        with self.guarded():
            row = self.connection.execute(
                "SELECT build, inputs, files, manifest, checksum FROM manifests "
                "WHERE spec = ? AND out = ?", (spec, out)).fetchone()
        return _last_build(spec, out, row)

    def latest_manifest(self, spec: str | None = None, out: str | None = None) -> LastBuild | None:
        """The most recent build of `spec` (into any directory), or into `out` (of any spec)."""
        column, value = ("spec", spec) if spec is not None else ("out", out)
        with self.guarded():
            row = self.connection.execute(
                f"SELECT spec, out, build, inputs, files, manifest, checksum FROM manifests "
                f"WHERE {column} = ? ORDER BY build DESC LIMIT 1", (value,)).fetchone()
        return None if row is None else _last_build(row[0], row[1], row[2:])

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
        return LastBuild(spec, out, build, json.loads(inputs), json.loads(files), manifest)
    except ValueError:
        return None


# ---------------------------------------------------------------------------------------------
# The file itself


@contextlib.contextmanager
def _opening_lock(directory: Path) -> Iterator[None]:
    """Processes open (and create) the database one at a time."""
    with open(directory / ".lock", "a+b") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


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
        connection.execute("PRAGMA journal_mode = WAL")
        connection.execute("PRAGMA synchronous = NORMAL")
        # a cold build writes ~50 MB: checkpoint the WAL every 64 MB, not every 4 MB
        connection.execute("PRAGMA wal_autocheckpoint = 16384")
        return connection
    except sqlite3.Error as error:
        if connection is not None:
            connection.close()
        if _damaged(error):
            raise StoreDamaged(f"is damaged ({error})", path) from None
        raise UsageError(f"cannot open the cache database {path}: {error}",
                         "pass another --cache DIR, or --no-cache") from None


def _schema_version(connection: sqlite3.Connection) -> int | None:
    row = connection.execute("SELECT value FROM meta WHERE name = 'schema_version'").fetchone()
    try:
        return int(row[0]) if row else None
    except ValueError:
        return None


def _create_schema(connection: sqlite3.Connection) -> None:
    import sqlite_utils  # only here and in maintenance: see the module docstring

    db = sqlite_utils.Database(connection, execute_plugins=False)
    connection.execute("PRAGMA page_size = 16384")  # most of the store is blobs of kilobytes
    connection.execute("PRAGMA journal_mode = WAL")
    with db.atomic():
        db["meta"].create({"name": str, "value": str}, pk="name", if_not_exists=True)
        db["blobs"].create({"hash": str, "codec": str, "data": bytes, "size": int, "used": int},
                           pk="hash", not_null=["codec", "data"], if_not_exists=True)
        db["refs"].create({"parent": str, "child": str}, pk=("parent", "child"),
                          if_not_exists=True)
        db["tasks"].create({"key": str, "task": str, "output": str, "seconds": float,
                            "used": int, "version": str}, pk="key", if_not_exists=True)
        db["traces"].create({"task": str, "ident": str, "key": str, "inputs": str},
                            pk=("task", "ident"), if_not_exists=True)
        db["builds"].create({"id": int, "started": float, "seconds": float, "status": str,
                             "spec": str, "out": str, "summary": str}, pk="id",
                            if_not_exists=True)
        db["manifests"].create({"spec": str, "out": str, "build": int, "inputs": str,
                                "files": str, "manifest": str, "checksum": str},
                               pk=("spec", "out"), if_not_exists=True)
        db["tasks"].create_index(["output"], if_not_exists=True)
        db["meta"].insert({"name": "schema_version", "value": str(SCHEMA_VERSION)}, replace=True)


def set_aside(path: Path) -> None:
    """Move a database (and its WAL files) out of the way; processes that still hold it open
    keep using the old inode."""
    stamp = f"{int(time.time())}-{os.getpid()}"
    for suffix in ("", "-wal", "-shm"):
        source = path.with_name(path.name + suffix)
        with contextlib.suppress(FileNotFoundError):
            source.rename(path.with_name(f"{path.name}.damaged-{stamp}{suffix}"))
