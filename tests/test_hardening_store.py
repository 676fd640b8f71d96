"""The cache and the output directory under hostile or unlucky conditions (issue 15): a
restored cache naming paths outside --out, a full disk under the cache or the output
directory, a read-only cache, and gc running while a build holds its rows.

Full and read-only filesystems are real tmpfs mounts when the test may mount (root); where it
may not, the same code is driven by a simulated failure of the same call."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Iterator

import pytest
from support.specs import mini_spec_pair

from gradshard.cache.maintenance import LEASE_EXPIRY_SECONDS
from gradshard.cache.store import database as store_module
from gradshard.cache.store.database import DB_FILE, Store, blob_hash, row_check, safe_relative_path
from gradshard.cache.version import code_version
from gradshard.service.cli import main
from gradshard.service.files import outputs as outputs_module
from gradshard.service.files.outputs import UnsafeOutputName, sync_outputs

# ---------------------------------------------------------------------------------------------
# Helpers


def gradshard(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gradshard.service.cli", *args],
                          capture_output=True, text=True, timeout=300)


def build(spec: Path, out: Path, cache: Path) -> subprocess.CompletedProcess:
    return gradshard("build", "--codegen-only", "--spec", str(spec), "--out", str(out),
                     "--cache", str(cache), "--json")


def built(spec: Path, out: Path, cache: Path) -> dict:
    done = build(spec, out, cache)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def in_process_build(spec: Path, out: Path, cache: Path, capsys) -> tuple[int, str]:
    """The CLI in this process (for the simulated failures); returns the code and stderr."""
    code = main(["build", "--codegen-only", "--spec", str(spec), "--out", str(out), "--cache",
                 str(cache)])
    return code, capsys.readouterr().err


@contextlib.contextmanager
def mounted(path: Path, *mount_args: str) -> Iterator[bool]:
    """`mount *mount_args path` for the duration; yields whether the mount succeeded."""
    path.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(["mount", *mount_args, str(path)], capture_output=True)
    try:
        yield done.returncode == 0
    finally:
        if done.returncode == 0:
            subprocess.run(["umount", "-l", str(path)], capture_output=True)


def fill(directory: Path, leave_bytes: int) -> Path:
    """A file taking all but about `leave_bytes` of the filesystem holding directory."""
    stats = shutil.disk_usage(directory)
    filler = directory / "filler"
    with open(filler, "wb") as f:
        f.write(b"\0" * max(stats.free - leave_bytes, 0))
    return filler


def damaged_files(cache: Path) -> list[str]:
    return sorted(p.name for p in cache.iterdir() if ".damaged-" in p.name)


@pytest.fixture
def mini(tmp_path) -> tuple[Path, Path]:
    """The mini spec and a copy with one formula edited (one output file changes)."""
    old = "  self: mul_tensor_backward(grad, other, self.scalar_type())\n"
    return mini_spec_pair(tmp_path, old, old.replace("())", "()) * 2"))


# ---------------------------------------------------------------------------------------------
# Item 1: every name read from the cache stays inside the directory it is joined to


@pytest.mark.parametrize("name,safe", [
    ("Functions.cpp", True), ("pch/formulas.h", True), ("a/b/c.o", True),
    ("/etc/passwd", False), ("../x", False), ("a/../../x", False), ("a/..", False),
    ("", False), (".", False), ("./", False), ("a\0b", False), ("//x", False)])
def test_safe_relative_path(name, safe):
    assert (safe_relative_path(name) is not None) == safe


def test_a_manifest_naming_files_outside_out_deletes_nothing(tmp_path, mini):
    base, _ = mini
    cache, out = tmp_path / "cache", tmp_path / "out"
    built(base, out, cache)
    outside, above = tmp_path / "elsewhere" / "precious.txt", tmp_path / "above.txt"
    outside.parent.mkdir()
    for victim in (outside, above):
        victim.write_text("not gradshard's\n")
    with sqlite3.connect(cache / DB_FILE) as db:  # a crafted cache, its row checksum recomputed
        spec, out_key, inputs, files, manifest = db.execute(
            "SELECT spec, out, inputs, files, manifest FROM manifests").fetchone()
        tampered = json.dumps({**json.loads(files), str(outside): "0" * 32,
                               "../above.txt": "0" * 32}, sort_keys=True)
        db.execute("UPDATE manifests SET files = ?, checksum = ?",
                   (tampered, row_check(spec, out_key, inputs, tampered, manifest)))
    report = built(base, out, cache)
    assert outside.read_text() == above.read_text() == "not gradshard's\n"
    assert report["files"]["removed"] == []
    assert any("outside" in w for w in report["warnings"]), report["warnings"]
    assert sorted(p.name for p in out.iterdir()) == sorted(report["files"]["unchanged"]
                                                          + report["files"]["written"])


def test_sync_outputs_never_acts_on_a_name_outside_its_directory(tmp_path):
    out, elsewhere = tmp_path / "out", tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "kept.txt").write_text("mine\n")
    out.mkdir()
    (out / "sub").symlink_to(elsewhere)  # a name through a symlinked directory leads out too
    text = "x\n"
    files = {"a.h": blob_hash("text", text.encode())}
    sync = sync_outputs(out, files)
    report = sync.write({n: text for n in sync.stale},
                        previous=["sub/kept.txt", "../elsewhere/kept.txt"])
    assert (elsewhere / "kept.txt").exists() and report.removed == []
    with pytest.raises(UnsafeOutputName):
        sync_outputs(out, {"../escaped.h": files["a.h"]})
    assert not (tmp_path / "escaped.h").exists()


# ---------------------------------------------------------------------------------------------
# Item 7: a full disk under the cache is an environment error; the database is kept


class _FullDatabase:
    """The store's connect, but the database cannot grow past its size: SQLITE_FULL, as on
    a full disk."""

    def __init__(self, connect) -> None:
        self.connect = connect

    def __call__(self, path: Path) -> sqlite3.Connection:
        connection = self.connect(path)
        pages = connection.execute("PRAGMA page_count").fetchone()[0]
        connection.execute(f"PRAGMA max_page_count = {max(pages, 1)}")
        return connection


def test_a_full_disk_under_the_cache_keeps_the_database(tmp_path, mini, capsys, monkeypatch):
    base, edited = mini
    cache = tmp_path / "cache"
    with mounted(cache, "-t", "tmpfs", "-o", "size=6m", "tmpfs") as real:
        first = built(base, tmp_path / "out", cache)
        if real:
            filler = fill(cache, leave_bytes=16 << 10)
            done = build(edited, tmp_path / "out", cache)
            code, err = done.returncode, done.stderr
        else:
            with monkeypatch.context() as patch:
                patch.setattr(store_module, "_connect", _FullDatabase(store_module._connect))
                code, err = in_process_build(edited, tmp_path / "out", cache, capsys)
        assert code == 2, err
        assert "full" in err and str(cache) in err and "internal error" not in err
        assert damaged_files(cache) == []
        if real:
            filler.unlink()
        with sqlite3.connect(cache / DB_FILE) as db:
            assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        again = built(base, tmp_path / "out-2", cache)  # every task of the first build kept
        assert again["tasks"]["run"] == 0 and first["tasks"]["run"] > 0
        assert built(edited, tmp_path / "out", cache)["status"] == "built"


# ---------------------------------------------------------------------------------------------
# Item 8: a full output directory leaves the previous outputs as they were


class _FullFile:
    """A file object whose writes fail with ENOSPC, as on a full disk."""

    def __init__(self, handle: int, mode: str = "wb") -> None:
        self.handle = handle

    def __enter__(self) -> _FullFile:
        return self

    def __exit__(self, *exc) -> None:
        os.close(self.handle)

    def write(self, data: bytes) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")


def test_a_full_output_directory_keeps_the_previous_outputs(tmp_path, mini, capsys, monkeypatch):
    base, _ = mini
    cache, out = tmp_path / "cache", tmp_path / "out"
    with mounted(out, "-t", "tmpfs", "-o", "size=1m", "tmpfs") as real:
        built(base, out, cache)
        stale = {"Functions.cpp": "old\n", "python_variable_methods.cpp": "old too\n"}
        for name, text in stale.items():  # two files to rewrite: 27 kB, then 61 kB
            (out / name).write_text(text)
        before = {p.name: p.read_bytes() for p in out.iterdir()}
        if real:
            filler = fill(out, leave_bytes=40 << 10)
            before["filler"] = filler.read_bytes()
            done = build(base, out, cache)
            code, err = done.returncode, done.stderr
        else:
            with monkeypatch.context() as patch:
                patch.setattr(outputs_module.os, "fdopen", _FullFile)
                code, err = in_process_build(base, out, cache, capsys)
        assert code == 2, err
        assert str(out) in err and "internal error" not in err
        assert {p.name: p.read_bytes() for p in out.iterdir()} == before  # no temporaries


# ---------------------------------------------------------------------------------------------
# Item 10 (part): a read-only cache directory is an environment error


def test_a_read_only_cache_is_an_environment_error(tmp_path, mini, capsys, monkeypatch):
    base, _ = mini
    empty, existing = tmp_path / "empty-cache", tmp_path / "cache"
    built(base, tmp_path / "out", existing)
    with mounted(empty, "-t", "tmpfs", "-o", "ro", "tmpfs") as real_empty, \
            mounted(existing, "--bind", str(existing)) as bound:
        read_only = bound and subprocess.run(
            ["mount", "-o", "remount,ro,bind", str(existing)]).returncode == 0
        for cache, real in ((empty, real_empty), (existing, read_only)):
            if real:
                done = build(base, tmp_path / "out-2", cache)
                code, err = done.returncode, done.stderr
            else:
                with monkeypatch.context() as patch:
                    patch.setattr(store_module, "_lock_file", _read_only_lock_file)
                    code, err = in_process_build(base, tmp_path / "out-2", cache, capsys)
            assert code == 2, err
            assert str(cache) in err and "read-only" in err and "hint:" in err
            assert "internal error" not in err


def _read_only_lock_file(directory: Path):
    raise OSError(errno.EROFS, "Read-only file system", str(directory / ".lock"))


# ---------------------------------------------------------------------------------------------
# Item 11: gc leaves what a running build holds


KILLED_BUILD = """
import sys, time
from pathlib import Path
from gradshard.cache.store.database import Store, blob_hash
store = Store.open(Path(sys.argv[1]), print)
build = store.begin_build("killed-spec", "killed-out")
for text in sys.argv[2:]:
    store.put_blob(blob_hash("text", text.encode()), "text", text.encode())
store.flush(build)
print("holding", flush=True)
time.sleep(600)
"""


def _put_text(store: Store, build: int, text: str) -> str:
    name = blob_hash("text", text.encode())
    store.put_blob(name, "text", text.encode())
    store.put_task(blob_hash("text", b"key:" + text.encode()), "test.task", name, 0.0,
                   code_version())
    store.flush(build)
    return name


def _stored(cache: Path, names: list[str]) -> set[str]:
    with sqlite3.connect(cache / DB_FILE) as db:
        marks = ",".join("?" * len(names))
        return {r[0] for r in db.execute(f"SELECT hash FROM blobs WHERE hash IN ({marks})",
                                         names)}


def _killed_build(cache: Path, *texts: str) -> None:
    """A build that flushed these texts and was killed holding its lease."""
    process = subprocess.Popen([sys.executable, "-c", KILLED_BUILD, str(cache), *texts],
                               stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout.readline().strip() == "holding"
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait()


def test_gc_leaves_what_a_running_build_holds(tmp_path, mini):
    base, _ = mini
    cache = tmp_path / "cache"
    built(base, tmp_path / "out", cache)
    _killed_build(cache, "read by the running build", "left by a killed build")
    read, abandoned = (blob_hash("text", t.encode()) for t in
                       ("read by the running build", "left by a killed build"))
    store = Store.open(cache, print)
    try:
        running = store.begin_build("running-spec", "running-out")
        written = _put_text(store, running, "written by the running build")
        assert read in store.blobs([read])
        store.flush(running)
        done = gradshard("gc", "--cache", str(cache), "--json")
        assert done.returncode == 0, done.stderr
        assert _stored(cache, [written, read, abandoned]) == {written, read}
        store.end_build(running, "built", 0.0, {})
    finally:
        store.close()
    done = gradshard("gc", "--cache", str(cache), "--json")
    assert done.returncode == 0, done.stderr
    assert _stored(cache, [written, read]) == set()
    assert built(base, tmp_path / "out-2", cache)["tasks"]["run"] == 0  # recorded builds kept


def test_a_lease_not_renewed_for_too_long_is_ignored(tmp_path, mini):
    base, _ = mini
    cache = tmp_path / "cache"
    built(base, tmp_path / "out", cache)
    store = Store.open(cache, print)
    try:
        running = store.begin_build("hung-spec", "hung-out")  # this process: alive
        written = _put_text(store, running, "written by a hung build")
        with sqlite3.connect(cache / DB_FILE) as db:
            db.execute("UPDATE leases SET heartbeat = heartbeat - ? WHERE build = ?",
                       (LEASE_EXPIRY_SECONDS + 60, running))
        done = gradshard("gc", "--cache", str(cache), "--json")
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["running_builds"] == 0
        assert _stored(cache, [written]) == set()
    finally:
        store.close()
