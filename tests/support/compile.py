"""`gradshard build` with a compile step, run in this process on the mini spec; restored and
crafted copies of a cache that compiled."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sqlite3
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from support.specs import MINI_SPEC

from gradshard.cache.engine.codec import encode
from gradshard.cache.store.database import DB_FILE, blob_hash
from gradshard.pipeline.layout.compile_layout import CompileLayout
from gradshard.service.cli import main

# The mini spec's three formula units merged into one (a Functions_formulas_* shard count
# of 2,4: one merged group).
MERGED = ["--shard-nodes", "2,4"]
MERGED_UNIT = "Functions_formulas_0-2"
FORMULAS = "Functions_formulas_*"

# The mini spec's Functions units, in a separate `gradshard` process (test_build_session.py).
COMPILING = ["--shard-nodes", "2,4,0", "--units", "Functions_*"]
ESCAPED = "../escaped.h"


def suite_flags() -> tuple[str, ...]:
    """The suite's $CXXFLAGS (tests/conftest.py: -O0), for the CompileOptions a test makes
    itself (the command line reads $CXXFLAGS; CompileOptions takes its flags as given)."""
    return tuple(shlex.split(os.environ.get("CXXFLAGS", "")))


def run_build(capsys, spec: Path, out: Path, cache: Path, *args: str) -> tuple[int, dict, str]:
    """`gradshard build --json ARGS` (-j: the processors it may run on): its exit code, its
    report and its stderr."""
    code = main(["build", "--spec", str(spec), "--out", str(out), "--cache", str(cache),
                 "--json", *args])
    captured = capsys.readouterr()
    return code, json.loads(captured.out) if captured.out.strip() else {}, captured.err


def merged_build(capsys, spec: Path, out: Path, cache: Path, *extra: str,
                 units: str = FORMULAS) -> tuple[int, dict, str]:
    """A build compiling the merged formula unit (or the units named)."""
    return run_build(capsys, spec, out, cache, *MERGED, "--units", units, *extra)


@pytest.fixture(scope="module")
def merged_compiled(tmp_path_factory, seeded_pchs) -> tuple[Path, Path]:
    """One cold compile of the mini spec's merged formula unit (its PCH the session's):
    (out, cache)."""
    root = tmp_path_factory.mktemp("merged-compile")
    out, cache = root / "out", seeded_pchs(root / "cache")
    code = main(["build", "--spec", str(MINI_SPEC), "--out", str(out), "--cache", str(cache),
                 *MERGED, "--units", FORMULAS])
    assert code == 0
    return out, cache


def restored_cache(compiled: tuple[Path, Path], target: Path, *, pch: str = "shared",
                   objects: bool = True) -> Path:
    """A copy of the cache of `compiled` (out, cache), as CI restores one: its PCHs shared
    through a symlink, copied (a test damages them), linked file by file (a test replaces one
    of their files: the shared ones stay) or left out (a test builds others), its objects kept
    or not."""
    cache = compiled[1]
    skipped = ["pch"] + ([] if objects else ["objects"])
    shutil.copytree(cache, target, ignore=lambda d, names: skipped if d == str(cache) else [])
    if pch == "copied":
        shutil.copytree(cache / "pch", target / "pch")
    elif pch == "linked":
        link_files(cache / "pch", target / "pch")
    elif pch == "shared":
        (target / "pch").symlink_to(cache / "pch", target_is_directory=True)
    return target


class PchSeed:
    """The mini spec's Functions units' PCH (g++ builds it in ~17 s of a ~20 s cold compile),
    built once in `root` and linked file by file into the caches of the tests that compile
    those units and test nothing of PCHs themselves, as a restored cache shares them
    (restored_cache's "linked"). A test whose PCH key differs (another compiler, other
    flags, other headers) builds its own as before; one that damages a PCH must not be
    seeded (the damage would reach the seed, which later builds then find and rebuild)."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def seed(self, cache: Path) -> Path:
        built, done_marker = self.root / "cache" / "pch", self.root / "built"
        if not done_marker.exists():
            # in a process of its own: in this one, its output would land in the capsys of
            # whichever test seeds first
            done = subprocess.run([sys.executable, "-m", "gradshard.service.cli", "build",
                                   "--spec", str(MINI_SPEC), "--out", str(self.root / "out"),
                                   "--cache", str(self.root / "cache"), *MERGED,
                                   "--units", FORMULAS],
                                  capture_output=True, text=True, timeout=600)
            assert done.returncode == 0, done.stderr
            done_marker.touch()
        link_files(built, cache / "pch")
        return cache


def link_files(source: Path, target: Path) -> None:
    """target: source's directories, each file a symbolic link to source's (locks aside)."""
    for path in source.rglob("*"):
        if path.is_file() and not path.name.endswith(".lock"):
            link = target / path.relative_to(source)
            link.parent.mkdir(parents=True, exist_ok=True)
            link.symlink_to(path)


def baseline_record(cache: Path) -> Path:
    (record,) = (cache / "objects" / "merged").glob("*.json")
    return record


def stored_path(cache: Path, key: str, suffix: str) -> Path:
    return cache / "objects" / key[:2] / f"{key}{suffix}"


def warnings_of(report: dict) -> str:
    return "\n".join(report.get("warnings", []))


def name_a_file_outside_the_compile_dir(cache: Path) -> None:
    """A crafted (or damaged) cache: the cached compile layout is a valid blob of the right
    type whose files include one outside the compile directory. Only the compile step reads
    it, and finds it when it writes the compile directory."""
    with sqlite3.connect(cache / DB_FILE) as db:
        (output,) = db.execute(
            "SELECT output FROM tasks WHERE task = 'group.compile_layout'").fetchone()
        (data,) = db.execute("SELECT data FROM blobs WHERE hash = ?", (output,)).fetchone()
        layout = CompileLayout.from_json(json.loads(data))
        crafted = replace(layout, files=(*layout.files, (ESCAPED, layout.files[0][1])))
        codec, data = encode(crafted)
        name = blob_hash(codec, data)
        db.execute("INSERT INTO blobs (hash, codec, data, size, used) VALUES (?,?,?,?,0)",
                   (name, codec, data, len(data)))
        db.execute("UPDATE tasks SET output = ? WHERE output = ?", (name, output))
