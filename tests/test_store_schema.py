"""The store makes its schema without sqlite-utils, as sqlite-utils made it, and a store's
connection can be closed and opened again (as the engine does around a fork)."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

from gradshard.cache.store.database import DB_FILE, Store, blob_hash

OPEN_A_STORE = """
import sys
from pathlib import Path
from gradshard.cache.store.database import Store
Store.open(Path(sys.argv[1]), print).close()
print(sorted(name for name in sys.modules if name.startswith("sqlite_utils")))
"""


def columns(path: Path) -> dict[str, list[tuple]]:
    """Each table's and index's columns: (name, type, not null, default, primary key)."""
    db = sqlite3.connect(path)
    try:
        names = [r[0] for r in db.execute(
            "SELECT name FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' ORDER BY name")]
        found = {n: [tuple(c[1:]) for c in db.execute(f"PRAGMA table_info('{n}')")]
                 for n in names}
        found["indexes"] = sorted(tuple(r) for r in db.execute(
            "SELECT tbl_name, name FROM sqlite_master WHERE type = 'index'"))
        return found
    finally:
        db.close()


def sqlite_utils_schema(path: Path) -> None:
    """The tables as sqlite-utils creates them from the same declarations (the store's
    schema before it wrote its own SQL)."""
    import sqlite_utils

    db = sqlite_utils.Database(path)
    db["meta"].create({"name": str, "value": str}, pk="name")
    db["blobs"].create({"hash": str, "codec": str, "data": bytes, "size": int, "used": int},
                       pk="hash", not_null=["codec", "data"])
    db["refs"].create({"parent": str, "child": str}, pk=("parent", "child"))
    db["tasks"].create({"key": str, "task": str, "output": str, "seconds": float, "used": int,
                        "version": str}, pk="key")
    db["traces"].create({"task": str, "ident": str, "key": str, "inputs": str},
                        pk=("task", "ident"))
    db["builds"].create({"id": int, "started": float, "seconds": float, "status": str,
                         "spec": str, "out": str, "summary": str}, pk="id")
    db["manifests"].create({"spec": str, "out": str, "build": int, "inputs": str,
                            "files": str, "manifest": str, "checksum": str},
                           pk=("spec", "out"))
    db["tasks"].create_index(["output"])
    db.execute("""CREATE TABLE leases (build INTEGER PRIMARY KEY, pid INTEGER NOT NULL,
        host TEXT NOT NULL, started REAL NOT NULL, heartbeat REAL NOT NULL)""")
    db.execute("""CREATE TABLE held (build INTEGER NOT NULL, hash TEXT NOT NULL,
        PRIMARY KEY (build, hash)) WITHOUT ROWID""")
    db.conn.close()


def test_a_new_store_is_made_without_importing_sqlite_utils(tmp_path):
    done = subprocess.run([sys.executable, "-c", OPEN_A_STORE, str(tmp_path / "cache")],
                          capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
    sqlite_utils_schema(tmp_path / "reference.db")
    assert columns(tmp_path / "cache" / DB_FILE) == columns(tmp_path / "reference.db")


def test_a_reopened_store_reads_what_was_committed_and_keeps_its_staged_rows(tmp_path):
    store = Store.open(tmp_path / "cache", print)
    name = blob_hash("text", b"kept")
    store.put_blob(name, "text", b"kept")
    store.flush(1)
    later = blob_hash("text", b"staged")
    store.put_blob(later, "text", b"staged")
    store.close()
    store.reopen()
    assert store.blobs([name])[name].data == b"kept"
    store.flush(1)
    assert store.blobs([later])[later].data == b"staged"
    store.close()
