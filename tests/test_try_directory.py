"""The try directory (service/live/try_directory.py): where it is (the state directory, not a
tmpfs, never the cache), its byte limit after every build (least recently used entries go,
this build's stay), use recorded without touching the mtimes ninja compares, and `gc`.
tests/test_try.py has the private-directory checks; tests/test_try_process.py the counts."""

from __future__ import annotations

import json
import os
import stat
import subprocess
from pathlib import Path

import pytest

from gradshard.cache.errors import EnvironmentFailure, UsageError
from gradshard.cache.store.verdicts import STATE_VARIABLE
from gradshard.service.cli import main
from gradshard.service.compile.toolchain import ninja_binary
from gradshard.service.live.try_directory import (DEFAULT_MAX_SIZE, TRY_DIRECTORY_VARIABLE,
                                                  TRY_MAX_SIZE_VARIABLE, locked,
                                                  prune_try_directory, try_directory, try_limit)

OLD = 1_600_000_000 * 10**9  # ns: long before any test runs


@pytest.fixture
def root(tmp_path, monkeypatch) -> Path:
    """A private try directory named by $GRADSHARD_TRY_DIR (none of the session's)."""
    directory = tmp_path / "try"
    monkeypatch.setenv(TRY_DIRECTORY_VARIABLE, str(directory))
    return try_directory()


def entry(root: Path, age: int, files: dict[str, int]) -> None:
    """Files of known sizes (path → bytes), they and their directories below the kind's
    modified `age` seconds after OLD (the greater, the more recently)."""
    for name, size in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"x" * size)
    for name in files:
        for path in (root / name, *(root / name).parents):
            if len(path.relative_to(root).parts) < 2:
                break
            os.utime(path, ns=(OLD + age * 10**9,) * 2, follow_symlinks=False)


def names(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()} - {
        "usage.json", "lock"}


def test_the_default_is_in_the_state_directory_not_a_tmpfs(tmp_path, monkeypatch):
    monkeypatch.delenv(TRY_DIRECTORY_VARIABLE, raising=False)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "run"))
    monkeypatch.setenv(STATE_VARIABLE, str(tmp_path / "state" / "gradshard"))
    found = try_directory()
    assert found == tmp_path / "state" / "gradshard" / "try"
    assert stat.S_IMODE(found.stat().st_mode) == 0o700
    assert not (tmp_path / "run").exists()
    monkeypatch.setenv(TRY_DIRECTORY_VARIABLE, str(tmp_path / "mine" / "try"))  # parents made
    assert try_directory() == tmp_path / "mine" / "try"


@pytest.mark.parametrize("where", ["$GRADSHARD_CACHE/try", "$GRADSHARD_CACHE", "xdg/gradshard/x",
                                   "link/try", "--cache/patches"])
def test_a_try_directory_inside_a_cache_is_refused(where, tmp_path, monkeypatch):
    """The default cache directory, $GRADSHARD_CACHE's, the XDG one beside it, one reached
    through a link, and a --cache the caller names: refused, and nothing is made there."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("GRADSHARD_CACHE", str(cache))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    (tmp_path / "link").symlink_to(cache, target_is_directory=True)
    given = tmp_path / "given"
    path = {"$GRADSHARD_CACHE/try": cache / "try", "$GRADSHARD_CACHE": cache,
            "xdg/gradshard/x": tmp_path / "xdg" / "gradshard" / "x",
            "link/try": tmp_path / "link" / "try", "--cache/patches": given / "patches"}[where]
    monkeypatch.setenv(TRY_DIRECTORY_VARIABLE, str(path))
    with pytest.raises(EnvironmentFailure, match="inside the cache directory") as refused:
        try_directory(cache=given)
    assert "restored cache" in refused.value.message
    assert TRY_DIRECTORY_VARIABLE in refused.value.hint
    assert not path.exists()
    monkeypatch.setenv(TRY_DIRECTORY_VARIABLE, str(tmp_path / "beside-the-cache"))
    assert try_directory(cache=given) == tmp_path / "beside-the-cache"


def test_another_users_or_a_group_writable_directory_is_refused(tmp_path, monkeypatch):
    """(tests/test_try.py: a world-writable one, a link.)"""
    monkeypatch.setenv(TRY_DIRECTORY_VARIABLE, str(tmp_path / "shared"))
    directory = try_directory()
    directory.chmod(0o720)
    with pytest.raises(EnvironmentFailure, match="not a private directory"):
        try_directory()
    directory.chmod(0o700)
    uid = os.getuid()
    monkeypatch.setattr(os, "getuid", lambda: uid + 1)  # as if another user made it
    with pytest.raises(EnvironmentFailure, match="not a private directory"):
        try_directory()


def test_the_limit_is_a_size(monkeypatch):
    monkeypatch.delenv(TRY_MAX_SIZE_VARIABLE, raising=False)
    assert try_limit() == DEFAULT_MAX_SIZE == 1 << 30
    monkeypatch.setenv(TRY_MAX_SIZE_VARIABLE, "2G")
    assert try_limit() == 2 << 30
    monkeypatch.setenv(TRY_MAX_SIZE_VARIABLE, "lots")
    with pytest.raises(UsageError, match=TRY_MAX_SIZE_VARIABLE):
        try_limit()


def fill(root: Path) -> None:
    """12,000 bytes in six entries, the least recently modified first."""
    entry(root, 0, {"pch/old/a.h.gch": 4000})
    entry(root, 1, {"obj/o1.cpp": 100, "obj/o1.o": 900})
    entry(root, 2, {"lib/l1/patch.so": 990, "lib/l1/sum": 10})
    entry(root, 3, {"obj/o2.cpp": 100, "obj/o2.o": 800, "obj/o2.d": 90,
                    "obj/.o2.cpp.Xy.tmp": 10})  # a killed write's temporary goes with it
    entry(root, 4, {"pch/new/a.h.gch": 3000, "pch/new.o": 1000})
    entry(root, 5, {"obj/o3.cpp": 100, "obj/o3.o": 900})


def test_prune_removes_the_least_recently_used_until_the_directory_fits(root):
    fill(root)
    used = [root / "pch" / "new" / "a.h.gch", root / "obj" / "o3.cpp", root / "obj" / "o3.o"]
    assert prune_try_directory(root, used, limit=7000) is None
    # the old PCH set, then o1, then l1 went: 6,000 bytes and the usage file fit 7,000
    assert names(root) == {"obj/o2.cpp", "obj/o2.o", "obj/o2.d", "obj/.o2.cpp.Xy.tmp",
                           "pch/new/a.h.gch", "pch/new.o", "obj/o3.cpp", "obj/o3.o"}
    assert sum(p.lstat().st_size for p in root.rglob("*") if p.is_file()) <= 7000


def test_what_the_build_used_stays_over_the_limit_and_is_reported(root):
    fill(root)
    used = [root / "pch" / "new", root / "obj" / "o3.o"]
    note = prune_try_directory(root, used, limit=3 << 10)
    assert names(root) == {"pch/new/a.h.gch", "pch/new.o", "obj/o3.cpp", "obj/o3.o"}
    assert note and "holds 5 KiB, over its limit of 3 KiB: what this build used takes" in note
    assert TRY_MAX_SIZE_VARIABLE in note
    assert prune_try_directory(root, used, limit=1 << 20) is None


def test_recorded_use_comes_before_modification_times(root):
    """l1 is the least recently modified left, but a build used it since: o2 goes first."""
    fill(root)
    prune_try_directory(root, [root / "lib" / "l1" / "patch.so"], limit=1 << 20)
    prune_try_directory(root, [], limit=12000 - 4000 - 1000 - 1)  # two must go
    assert not (root / "pch" / "old").exists() and not (root / "obj" / "o1.o").exists()
    assert (root / "lib" / "l1" / "patch.so").exists()
    prune_try_directory(root, [], limit=12000 - 4000 - 1000 - 1000 - 1)  # one more
    assert (root / "lib" / "l1" / "patch.so").exists() and not (root / "obj" / "o2.o").exists()


def test_pruning_changes_no_remaining_files_times(root):
    """Use is recorded in the usage file: no mtime changes (ninja would recompile a source
    newer than its object), nor a file's atime (a directory's is the kernel's: relatime sets
    it when the directory is listed, as measuring it does)."""
    fill(root)
    files = [p for p in root.rglob("*") if p.is_file()]
    before = {p: (p.lstat().st_mtime_ns, p.lstat().st_atime_ns) for p in files}
    directories = {p: p.lstat().st_mtime_ns for p in root.rglob("*") if p.is_dir()}
    prune_try_directory(root, [root / "obj" / "o3.cpp", root / "obj" / "o3.o",
                               root / "pch" / "new"], limit=8000)
    kept = [p for p in files if p.exists()]
    assert len(kept) == 10 and all((p.lstat().st_mtime_ns, p.lstat().st_atime_ns) == before[p]
                                  for p in kept)
    entries = [p for p in directories if p.exists() and p.parent != root]
    assert entries and all(p.lstat().st_mtime_ns == directories[p] for p in entries)


@pytest.mark.compiler
def test_ninja_has_no_work_after_a_prune(root):
    """The bug this replaced: marking use with os.utime(path) made every source newer than
    ninja's log's record of its object, and the next try recompiled every unit."""
    source = root / "obj" / "unit.cpp"
    source.parent.mkdir()
    source.write_text("int x;\n")
    (root / "build.ninja").write_text(
        "rule copy\n  command = cp $in $out\nbuild obj/unit.o: copy obj/unit.cpp\n")

    def ninja(*args: str) -> str:
        return subprocess.run([ninja_binary(), *args], cwd=root, capture_output=True, text=True,
                              check=True).stdout

    ninja()
    assert "no work to do" in ninja("-n", "-d", "explain")
    prune_try_directory(root, [source, source.with_suffix(".o")], limit=1 << 20)
    assert "no work to do" in ninja("-n", "-d", "explain")


def gc(capsys, *args: str) -> tuple[str, dict]:
    assert main(["gc", *args]) == 0
    text = capsys.readouterr().out
    assert main(["gc", "--json", *args]) == 0
    return text, json.loads(capsys.readouterr().out)


def test_gc_reports_and_bounds_the_try_directory(root, private_cache, monkeypatch, capsys):
    """gc prunes it to $GRADSHARD_TRY_MAX_SIZE as a build would, what the last build used
    kept; --all empties it; a build holding its lock leaves it as it is."""
    private_cache.mkdir()
    fill(root)
    prune_try_directory(root, [root / "obj" / "o1.cpp"], limit=1 << 20)  # the last build's
    monkeypatch.setenv(TRY_MAX_SIZE_VARIABLE, "3k")
    with locked(root):
        text, report = gc(capsys)
    assert f"try directory {root}: 12 KiB → 12 KiB (limit 3 KiB)" in text
    assert "warning: a `gradshard try` build is using it: left as it is" in text
    assert report["try_directory"]["removed_entries"] == 0 and len(names(root)) == 13
    text, _ = gc(capsys)  # 12,000 bytes to 2,000: o1 is the last build's, o3 fits beside it
    assert "removed 4 entries" in text  # (the JSON run after it found nothing more)
    assert names(root) == {"obj/o1.cpp", "obj/o1.o", "obj/o3.cpp", "obj/o3.o"}
    assert main(["gc", "--json", "--all"]) == 0
    report = json.loads(capsys.readouterr().out)["try_directory"]
    assert report["path"] == str(root) and report["limit"] == 3 << 10
    assert report["removed_entries"] == 2 and report["after_bytes"] <= report["limit"]
    assert names(root) == set() and report["note"] is None


def test_gc_makes_no_try_directory(tmp_path, private_cache, monkeypatch, capsys):
    private_cache.mkdir()
    monkeypatch.setenv(TRY_DIRECTORY_VARIABLE, str(tmp_path / "none"))
    text, report = gc(capsys)
    assert "try directory" not in text and report["try_directory"] is None
    assert not (tmp_path / "none").exists()
