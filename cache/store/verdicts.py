"""What this machine found when it ran a spec's generator to check gradshard's files.

    checks         (generator, spec) → when it was checked, the files that differ (JSON: name
                   → the real generator's hash, "" when it writes no such file; the files
                   only the real generator writes among them), those only it writes (JSON:
                   name → hash), and whether the difference was reported
    real_files     hash → the real generator's text of a file that differs, checked on read
                   (hashes as a build records its files: database.py's blob_hash "text")

This is not the cache. A cache directory travels (CI restores it on another runner); a
verdict that said "the same" would silence the check there, so verdicts live in a database of
this machine's own state directory ($GRADSHARD_STATE, else $XDG_STATE_HOME/gradshard, else
~/.local/state/gradshard), which no cache command reads or restores. A damaged database is set
aside and started anew: the worst it costs is one more run of the generator.

What is served is keyed by (generator, spec): the hash of the generator's sources and the
hash of every input file's bytes and of the spec's directory (service/generator/check.py:
spec_hash), never by gradshard's hash of a file. The real generator's output is not a function
of gradshard's file: it reads what gradshard does not (a comment, a key) and prints what it
likes (its templates' path relative to itself, hence the directory), so a spec this machine
never checked under a generator runs that generator, and an undo finds its own spec's texts. A
copy of the spec elsewhere, or a checkout at another path, is another spec: its first build
runs the (unknown) generator again; a known generator is never run, so has no record here.
The ledger stays bounded: each generator keeps its last KEPT_CHECKS spec records, and older
ones go while a file's real texts among them are more than KEPT_VERSIONS; a real text no
record names is dropped (a daemon saving all day under a generator that differs would
otherwise keep every text). A ledger of the earlier layout (SCHEMA_VERSION) is started anew.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Mapping

from gradshard.cache.errors import EnvironmentFailure, GeneratorFailed
from gradshard.cache.store.database import blob_hash, set_aside

__all__ = ["CheckRecord", "KEPT_CHECKS", "KEPT_VERSIONS", "LEDGER_FILE", "SCHEMA_VERSION",
           "STATE_VARIABLE", "VerdictLedger"]

STATE_VARIABLE = "GRADSHARD_STATE"
KEPT_VERSIONS = 8  # real texts kept per (generator, file) among the kept records
KEPT_CHECKS = 64  # spec records kept per generator: an undo finds its own
LEDGER_FILE = "generator-verdicts.sqlite3"
# 2: records keyed by (generator, spec) alone; 1 (no user_version) kept verdicts by
# gradshard's hash of each file, which could serve one spec's real text for another's
SCHEMA_VERSION = 2
_EARLIER_TABLES = ("file_verdicts", "checks", "real_files")
_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS real_files (hash TEXT PRIMARY KEY, text BLOB NOT NULL)",
    "CREATE TABLE IF NOT EXISTS checks (generator TEXT NOT NULL, spec TEXT NOT NULL, "
    "checked REAL NOT NULL, differing TEXT NOT NULL, extra TEXT NOT NULL, "
    "reported INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (generator, spec))",
)


@dataclass(frozen=True)
class CheckRecord:
    """One (generator, spec) checked: the files that differ (name → the real generator's
    hash), the files only the real generator writes (name → hash), whether the difference
    was reported."""

    served: Mapping[str, str]
    extra: Mapping[str, str]
    reported: bool

    @property
    def differing(self) -> tuple[str, ...]:
        return tuple(sorted(self.served))


class VerdictLedger:
    """This machine's verdicts, opened on first use (a known generator never opens it)."""

    def __init__(self, directory: Path) -> None:
        """`directory`: this machine's state directory (service/defaults.py:
        state_directory reads the environment for it)."""
        self.path = directory / LEDGER_FILE
        self._connection: sqlite3.Connection | None = None

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None

    def check_record(self, generator: str, spec: str) -> CheckRecord | None:
        """What the check of `spec` under `generator` found, or None: never checked here (or
        the record dropped, or damaged)."""
        with self._guard():
            row = self._db().execute(
                "SELECT differing, extra, reported FROM checks WHERE generator = ? "
                "AND spec = ?", (generator, spec)).fetchone()
            return _record(row) if row else None

    def real_text(self, digest: str) -> bytes | None:
        """The real generator's text with that hash, or None (never stored, or damaged)."""
        with self._guard():
            row = self._db().execute("SELECT text FROM real_files WHERE hash = ?",
                                     (digest,)).fetchone()
            if row is None or blob_hash("text", bytes(row[0])) != digest:
                return None
            return bytes(row[0])

    def record(self, generator: str, spec: str, texts: Mapping[str, bytes],
               differing: Mapping[str, str], extra: Mapping[str, str]) -> None:
        """One check of `spec` under `generator`: the real texts that differ (by hash), the
        files that differ (name → real hash, "" when it writes no such file) and those only
        the real generator writes (name → hash)."""
        with self._guard():
            db = self._db()
            with db:
                db.executemany("INSERT OR IGNORE INTO real_files VALUES (?, ?)",
                               [(h, sqlite3.Binary(t)) for h, t in texts.items()])
                db.execute("INSERT OR REPLACE INTO checks VALUES (?, ?, ?, ?, ?, 0)",
                           (generator, spec, time.time(), _canonical(differing),
                            _canonical(extra)))
                _prune(db, generator)

    def forget(self, generator: str) -> None:
        """Every record of `generator` (a real text was lost: its next build checks again)."""
        with self._guard():
            with self._db() as db:
                db.execute("DELETE FROM checks WHERE generator = ?", (generator,))

    def mark_reported(self, generator: str, spec: str) -> None:
        with self._guard():
            with self._db() as db:
                db.execute("UPDATE checks SET reported = 1 WHERE generator = ? AND spec = ?",
                           (generator, spec))

    @contextlib.contextmanager
    def _guard(self) -> Iterator[None]:
        """The machine's failures (a locked or read-only ledger) as such; a ledger found
        damaged while in use is set aside, and the check it served fails (the next build
        starts a new ledger and runs the generator again)."""
        try:
            yield
        except sqlite3.OperationalError as error:
            raise EnvironmentFailure(f"this machine's generator verdicts ({self.path}): "
                                     f"{error}", f"check {self.path.parent}, or set "
                                     f"{STATE_VARIABLE} to a directory of yours",
                                     str(self.path)) from None
        except sqlite3.DatabaseError as error:
            self.close()
            set_aside(self.path)
            raise GeneratorFailed(f"this machine's generator verdicts were damaged ({error}); "
                                  f"they were set aside", hint="build again: the spec's "
                                  "generator runs again") from None

    def _db(self) -> sqlite3.Connection:
        if self._connection is None:
            self._connection = self._open()
        return self._connection

    def _open(self) -> sqlite3.Connection:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        except OSError as e:
            raise EnvironmentFailure(
                f"cannot make gradshard's state directory {self.path.parent}: {e.strerror}",
                f"set {STATE_VARIABLE} to a directory of yours", str(self.path.parent)) from None
        try:
            return _connect(self.path)
        except sqlite3.OperationalError:
            raise  # locked, read-only, unopenable: the machine's (_guard), never set aside
        except sqlite3.DatabaseError:
            set_aside(self.path)  # damaged: the worst it costs is one more generator run
            return _connect(self.path)


_JSON_OR_NOTHING = "CASE WHEN json_valid(checks.{0}) THEN checks.{0} ELSE '{{}}' END"


def _prune(db: sqlite3.Connection, generator: str) -> None:
    """The bounds (module docstring), for the generator just recorded: its records newest
    first (a replaced row is a new row) are kept until one more would make KEPT_CHECKS, or
    KEPT_VERSIONS real texts of one file; then the real texts no record names are dropped."""
    rows = db.execute("SELECT rowid, differing FROM checks WHERE generator = ? "
                      "ORDER BY checked DESC, rowid DESC", (generator,)).fetchall()
    texts: dict[str, set[str]] = {}
    for kept, (rowid, differing) in enumerate(rows):
        served = _names_and_hashes(differing) or {}  # a damaged record holds no text
        for name, digest in served.items():
            if digest:
                texts.setdefault(name, set()).add(digest)
        if kept >= KEPT_CHECKS or any(len(t) > KEPT_VERSIONS for t in texts.values()):
            db.executemany("DELETE FROM checks WHERE rowid = ?", [(r,) for r, _ in rows[kept:]])
            break
    # a record that is not JSON (damaged: read as a miss, _record) names no text; json_each
    # would raise on it, and every later record of every generator with it
    db.execute("DELETE FROM real_files WHERE hash NOT IN (SELECT value FROM checks, "
               f"json_each({_JSON_OR_NOTHING.format('differing')})) AND hash NOT IN "
               f"(SELECT value FROM checks, json_each({_JSON_OR_NOTHING.format('extra')}))")


def _connect(path: Path) -> sqlite3.Connection:
    connection = sqlite3.connect(path, timeout=60)
    try:
        connection.execute("PRAGMA journal_mode = WAL")
        connection.execute("BEGIN IMMEDIATE")  # one process makes the tables, the others wait
        if connection.execute("PRAGMA user_version").fetchone()[0] != SCHEMA_VERSION:
            for table in _EARLIER_TABLES:  # records that may be wrong: checked again
                connection.execute(f"DROP TABLE IF EXISTS {table}")
            connection.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        for statement in _SCHEMA:
            connection.execute(statement)
        connection.commit()
    except sqlite3.DatabaseError:
        with contextlib.suppress(sqlite3.Error):
            connection.close()
        raise
    return connection


def _record(row: tuple) -> CheckRecord | None:
    """A checks row, or None when it is not what this module writes (a damaged row is a
    miss: the check runs again)."""
    served, extra = _names_and_hashes(row[0]), _names_and_hashes(row[1])
    if served is None or extra is None:
        return None
    return CheckRecord(served, extra, bool(row[2]))


def _names_and_hashes(text: str) -> dict[str, str] | None:
    """A record's JSON of names to hashes (differing, extra), or None when it is not one:
    the one reading of a record, for lookups (_record) and for pruning."""
    try:
        value = json.loads(text)
    except (TypeError, ValueError):
        return None
    return value if _names_to_hashes(value) else None


def _canonical(names_to_hashes: Mapping[str, str]) -> str:
    return json.dumps(dict(sorted(names_to_hashes.items())))


def _names_to_hashes(value: object) -> bool:
    return isinstance(value, dict) and all(isinstance(k, str) and isinstance(v, str)
                                           for k, v in value.items())
