"""The build and its compile step as one session of the cache (service/build.py:
build_and_compile): one lease from the start of the build to the end of the compile, and one
retry when the cache turns out damaged in either.

Real g++ and ninja on the mini spec's Functions units (as tests/test_compile.py compiles
them)."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support.compile import COMPILING, ESCAPED, name_a_file_outside_the_compile_dir
from support.specs import MINI_SPEC

from gradshard.cache.store.database import DB_FILE

pytestmark = [pytest.mark.compiler, pytest.mark.slow]


def started(*args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "gradshard.service.cli", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def build_args(out: Path, cache: Path, *extra: str) -> list[str]:
    return ["build", "--spec", str(MINI_SPEC), "--out", str(out), "--cache", str(cache),
            "--json", *COMPILING, *extra]


def run(*args: str) -> subprocess.CompletedProcess:
    """gradshard in a process of its own (this one's memory of a cache would answer for it)."""
    return subprocess.run([sys.executable, "-m", "gradshard.service.cli", *args],
                          capture_output=True, text=True, timeout=600)


def built(out: Path, cache: Path, *extra: str) -> dict:
    """`gradshard build --json`'s report (the build must succeed)."""
    done = run(*build_args(out, cache, *extra))
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def damaged_files(cache: Path) -> list[str]:
    return sorted(p.name for p in cache.iterdir() if ".damaged-" in p.name)


def task_rows(cache: Path) -> set[tuple]:
    """Every task row as (key, output, used): a task that runs again rewrites its row with the
    id of the build that ran it."""
    with sqlite3.connect(cache / DB_FILE) as db:
        return set(db.execute("SELECT key, output, used FROM tasks"))


def blob_names(cache: Path) -> set[str]:
    with sqlite3.connect(cache / DB_FILE) as db:
        return {r[0] for r in db.execute("SELECT hash FROM blobs")}


# ---------------------------------------------------------------------------------------------
# Cache damage found by the compile step: set aside, and the build and compile run again


def test_damage_found_by_the_compile_step_is_recovered_in_one_command(tmp_path, seeded_pchs):
    out, cache = tmp_path / "out", seeded_pchs(tmp_path / "cache")
    built(out, cache)
    name_a_file_outside_the_compile_dir(cache)
    report = built(out, cache)
    assert report["compile"]["failed"] == []
    assert any("set aside" in w and ESCAPED in w for w in report["warnings"]), report
    assert damaged_files(cache)  # the damaged database, set aside
    assert not (out / "escaped.h").exists() and not (out / "compile" / ESCAPED).exists()
    again = built(out, cache)
    assert again["status"] == "up to date" and again["warnings"] == []
    assert again["compile"]["compiled"] == []


# ---------------------------------------------------------------------------------------------
# The lease lasts until the compile has finished


# A compiler that, once asked to compile, says so and waits for the test's word.
HELD_CXX = """\
#!/bin/sh
if [ "$1" = --version ]; then exec g++ --version; fi
touch {compiling}
while [ ! -e {release} ]; do sleep 0.05; done
exec g++ "$@"
"""


def held_compiler(root: Path) -> tuple[Path, Path, Path]:
    """The compiler script, the file it creates when a compile starts and the file it waits
    for."""
    compiling, release = root / "compiling", root / "release"
    cxx = root / "held-cxx"
    cxx.write_text(HELD_CXX.format(compiling=compiling, release=release))
    cxx.chmod(0o755)
    return cxx, compiling, release


def wait_for(path: Path, process: subprocess.Popen, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        if process.poll() is not None:
            raise AssertionError(f"the build ended first: {process.communicate()}")
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.05)


def test_gc_during_the_compile_step_leaves_the_builds_rows(tmp_path):
    out, cache = tmp_path / "out", tmp_path / "cache"
    cxx, compiling, release = held_compiler(tmp_path)
    build = started(*build_args(out, cache, "--cxx", str(cxx)))
    try:
        wait_for(compiling, build)  # the layout's tasks have run and been flushed
        rows, blobs = task_rows(cache), blob_names(cache)
        gc = run("gc", "--cache", str(cache), "--json")
        assert gc.returncode == 0, gc.stderr
        swept = json.loads(gc.stdout)
        assert swept["running_builds"] == 1, swept
        assert (task_rows(cache), blob_names(cache)) == (rows, blobs), swept
    finally:
        release.touch()
        _, err = build.communicate(timeout=600)
    assert build.returncode == 0, err
    rows = task_rows(cache)
    again = built(out, cache, "--cxx", str(cxx))
    assert again["status"] == "up to date" and again["compile"]["compiled"] == []
    assert task_rows(cache) == rows  # no task of the build or of its layout ran again


def test_the_build_record_covers_the_compile(tmp_path, seeded_pchs):
    """`stats` shows one build per command, ended after its compile, with what it compiled."""
    out, cache = tmp_path / "out", seeded_pchs(tmp_path / "cache")
    built(out, cache)
    built(out, cache)
    stats = run("stats", "--cache", str(cache), "--json")
    assert stats.returncode == 0, stats.stderr
    builds = json.loads(stats.stdout)["builds"]
    assert [b["status"] for b in builds] == ["up to date", "built"]
    latest, first = builds
    assert first["compile"]["compiled"] > 0 and latest["compile"]["compiled"] == 0
    assert first["seconds"]["compile"] > 0  # the summary's stage times include the compile
    with sqlite3.connect(cache / DB_FILE) as db:
        assert db.execute("SELECT count(*) FROM leases").fetchone() == (0,)
