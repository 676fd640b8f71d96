"""Issue 15, the compile step: a restored cache directory is input. Nothing read from it is
run or followed outside it, every stored object, depfile, splice and precompiled header is
checked against the hash stored with it, and a compile that fails for another reason than
the code (a killed compiler, a failed PCH build, a full disk) says what failed and why.

Real g++, ninja, files, processes and tmpfs mounts, on the mini spec's merged formula unit
(one PCH, one unit): one cold compile is shared, each test works on a copy of its cache.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import subprocess
from pathlib import Path
from typing import Iterator

import pytest
from support.compile import merged_compiled  # noqa: F401  (a fixture)
from support.compile import (MERGED_UNIT, baseline_record, merged_build, restored_cache,
                             stored_path, warnings_of)
from support.specs import MINI_SPEC, MUL_OTHER, mini_spec_pair

pytestmark = [pytest.mark.compiler, pytest.mark.slow]

EDIT = MUL_OTHER.replace("grad,", "grad * 2,")


def flip_bytes(path: Path) -> None:
    data = bytearray(path.read_bytes())
    middle = len(data) // 2
    data[middle:middle + 8] = bytes(b ^ 0xFF for b in data[middle:middle + 8])
    path.write_bytes(bytes(data))


def warnings_of(report: dict) -> str:
    return "\n".join(report.get("warnings", []))


# ---------------------------------------------------------------------------------------------
# 1. A merged unit's baseline naming an object outside the cache


@pytest.mark.parametrize("where", ["absolute", "parent"])
def test_a_baseline_naming_an_object_outside_the_cache_is_damaged(merged_compiled, capsys,
                                                                     tmp_path, where):
    """A record whose `object` leads out of CACHE/objects (an absolute path, or `..`) is
    rejected: the edit compiles its merged unit whole, nothing outside is linked."""
    cache = restored_cache(merged_compiled, tmp_path / "cache")
    base, edited = mini_spec_pair(tmp_path, MUL_OTHER, EDIT)
    record = baseline_record(cache)
    baseline = json.loads(record.read_text())
    outside = tmp_path / "outside.o"  # a valid object: the splice would link it as is
    shutil.copy(stored_path(cache, baseline["object"], ".o"), outside)
    # objects/<key[:2]>/<key>.o: "../outside" leads to CACHE/../outside.o
    key = str(tmp_path / "outside") if where == "absolute" else "../outside"
    record.write_text(json.dumps({**baseline, "object": key}))
    code, report, err = merged_build(capsys, edited, tmp_path / "out", cache)
    assert code == 0, err
    assert report["compile"]["spliced"] == [] and report["compile"]["compiled"] == [MERGED_UNIT]
    assert str(record) in warnings_of(report) and "damaged" in warnings_of(report)
    assert json.loads(record.read_text())["object"] != key


# ---------------------------------------------------------------------------------------------
# 3. Stored objects, depfiles and splices are checked against their hash


def stored_objects(cache: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in (cache / "objects").glob("??/*.o")}


def test_a_damaged_stored_object_or_depfile_is_compiled_again(merged_compiled, capsys, tmp_path):
    cache = restored_cache(merged_compiled, tmp_path / "cache")
    key = json.loads(baseline_record(cache).read_text())["object"]
    stored = stored_path(cache, key, ".o")
    original = stored.read_bytes()

    flip_bytes(stored)
    code, report, err = merged_build(capsys, MINI_SPEC, tmp_path / "out1", cache)
    assert code == 0, err
    assert report["compile"]["cached"] == [] and report["compile"]["compiled"] == [MERGED_UNIT]
    assert str(stored) in warnings_of(report)
    assert stored.read_bytes() == original  # compiled again, and stored whole
    assert (tmp_path / "out1/compile/obj" / f"{MERGED_UNIT}.o").read_bytes() == original

    depfile = stored_path(cache, key, ".d")
    depfile.write_bytes(depfile.read_bytes()[:40])
    code, report, err = merged_build(capsys, MINI_SPEC, tmp_path / "out2", cache)
    assert code == 0, err
    assert report["compile"]["compiled"] == [MERGED_UNIT] and str(depfile) in warnings_of(report)


def test_a_damaged_stored_splice_is_spliced_again(merged_compiled, capsys, tmp_path):
    """A splice is stored like an object, and checked like one."""
    cache = restored_cache(merged_compiled, tmp_path / "cache")
    base, edited = mini_spec_pair(tmp_path, MUL_OTHER, EDIT)
    before = stored_objects(cache)
    code, report, err = merged_build(capsys, edited, tmp_path / "out1", cache)
    assert code == 0 and report["compile"]["spliced"] == [MERGED_UNIT], err
    spliced = (tmp_path / "out1/compile/obj" / f"{MERGED_UNIT}.o").read_bytes()
    (splice,) = [name for name, data in stored_objects(cache).items()
                 if data == spliced and name not in before]
    stored_splice = cache / "objects" / splice[:2] / splice
    stored_splice.write_bytes(spliced[:len(spliced) // 2])
    code, report, err = merged_build(capsys, edited, tmp_path / "out2", cache)
    assert code == 0, err
    assert report["compile"]["spliced"] == [MERGED_UNIT]
    assert str(stored_splice) in warnings_of(report)
    assert (tmp_path / "out2/compile/obj" / f"{MERGED_UNIT}.o").read_bytes() == spliced


# ---------------------------------------------------------------------------------------------
# 4. A damaged precompiled header is rebuilt; a killed PCH build's temporary is removed


def test_a_damaged_pch_is_rebuilt_and_leftovers_removed(merged_compiled, capsys, tmp_path):
    cache = restored_cache(merged_compiled, tmp_path / "cache", pch="copied", objects=False)
    (gch,) = (cache / "pch").glob("*/autograd.h.gch")
    size = gch.stat().st_size
    leftover = Path(f"{gch}.tmp4242")  # what `sh -c '… -o X.tmp$$'` leaves when killed
    leftover.write_bytes(b"\0" * 4096)
    with open(gch, "r+b") as handle:
        handle.truncate(size // 2)
    code, report, err = merged_build(capsys, MINI_SPEC, tmp_path / "out", cache)
    assert code == 0, err
    assert report["compile"]["compiled"] == [MERGED_UNIT]
    assert str(gch) in warnings_of(report) and "rebuilt" in warnings_of(report)
    assert not leftover.exists() and gch.stat().st_size > size // 2
    log = (tmp_path / "out/compile/obj" / f"{MERGED_UNIT}.o.log")
    assert not log.exists() or "pch" not in log.read_text().lower()  # the unit used the PCH


# ---------------------------------------------------------------------------------------------
# 5. Paths in generated commands are quoted for the shell: tests/test_paths_with_spaces.py
#    (the build's PCH and unit, and try's patch, under hostile directory names)


# ---------------------------------------------------------------------------------------------
# 9. Compile failures that are not compiler errors say what failed and why


def script(path: Path, text: str) -> Path:
    path.write_text("#!/bin/sh\n" + text)
    path.chmod(0o755)
    return path


def test_a_killed_compiler_is_named_with_its_signal(merged_compiled, capsys, tmp_path):
    cache = restored_cache(merged_compiled, tmp_path / "cache", objects=False)
    killer = script(tmp_path / "killed-launcher", "kill -KILL $$\n")
    code, report, err = merged_build(capsys, MINI_SPEC, tmp_path / "out", cache,
                                     "--launcher", str(killer))
    assert code == 3 and report["failed"] == [MERGED_UNIT]
    assert f"{MERGED_UNIT}: error: killed-launcher was killed by signal 9 (SIGKILL)" in err, err
    code, _, raw = merged_build(capsys, MINI_SPEC, tmp_path / "out", cache,
                                "--launcher", str(killer), "--raw")
    assert code == 3 and "killed by signal 9 (SIGKILL)" in raw


def test_a_failed_pch_build_says_why(merged_compiled, capsys, tmp_path):
    """A compiler killed while building the PCH: the PCH is named with the signal, and the
    units waiting on it are said to have waited, not to have failed to compile."""
    cache = restored_cache(merged_compiled, tmp_path / "cache", pch="none", objects=False)
    gxx = shutil.which("g++")
    cxx = script(tmp_path / "g++-killed-on-headers",
                 f'case " $* " in *" c++-header "*) kill -KILL $$;; esac\nexec {gxx} "$@"\n')
    code, report, err = merged_build(capsys, MINI_SPEC, tmp_path / "out", cache,
                                     "--cxx", str(cxx))
    assert code == 3 and report["failed"] == [MERGED_UNIT]
    (header,) = cache.glob("pch/*/autograd.h")
    assert (f"{header}: error: precompiled header failed to build: g++-killed-on-headers was "
            "killed by signal 9 (SIGKILL)") in err, err
    assert f"{MERGED_UNIT}: error: not compiled: its precompiled header failed to build" in err
    assert not list(cache.glob("pch/*/*.tmp*")) and not list(cache.glob("pch/*/*.gch"))


@contextlib.contextmanager
def small_tmpfs(path: Path, size: str) -> Iterator[None]:
    path.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)],
                   check=True, capture_output=True)
    try:
        yield
    finally:
        subprocess.run(["umount", "-l", str(path)], capture_output=True)


def test_a_full_cache_disk_is_an_environment_failure(merged_compiled, capsys, tmp_path):
    """CACHE/objects on a full filesystem: the compile succeeds, storing its object cannot;
    exit 2 naming what could not be written, and no object is reported compiled."""
    cache = restored_cache(merged_compiled, tmp_path / "cache", objects=False)
    with small_tmpfs(cache / "objects", "16k"):
        code, report, err = merged_build(capsys, MINI_SPEC, tmp_path / "out", cache)
        assert code == 2, err
        assert "No space left on device" in err and str(cache / "objects") in err, err
        assert 'File "' not in err and "ninja failed" not in err  # no traceback: what failed
        assert report["ok"] is False and report["hint"]
        assert not list((cache / "objects").glob("??/.*"))  # no temporary left behind
        assert not (tmp_path / "out/compile/obj" / f"{MERGED_UNIT}.o").exists()


def fill(directory: Path, leave_kib: int) -> None:
    """Fill the filesystem holding directory but for about leave_kib KiB."""
    available = shutil.disk_usage(directory).free // 1024
    with open(directory / "filler", "wb") as handle:
        handle.write(b"\0" * (max(available - leave_kib, 0) * 1024))


def test_a_full_compile_directory_is_an_environment_failure(merged_compiled, capsys, tmp_path):
    """The compiler itself meets the full disk (the assembler writing the object): exit 2
    with the compiler's words, not a compile error."""
    cache = restored_cache(merged_compiled, tmp_path / "cache")
    compile_dir = tmp_path / "compile"
    with small_tmpfs(compile_dir, "2m"):
        args = ("--compile-dir", str(compile_dir))
        assert merged_build(capsys, MINI_SPEC, tmp_path / "out", cache, *args)[0] == 0
        (compile_dir / "obj" / f"{MERGED_UNIT}.o").unlink()
        shutil.rmtree(cache / "objects")
        fill(compile_dir, 16)
        code, report, err = merged_build(capsys, MINI_SPEC, tmp_path / "out", cache, *args)
        assert code == 2, err
        assert f"{MERGED_UNIT}: the compiler ran out of disk space" in err
        assert "No space left on device" in err and report["hint"]
