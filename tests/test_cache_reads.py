"""The compile step reads a restored cache as input: what it reads cannot hang it, exhaust its
memory, or send a write or a removal outside the cache and the compile directory.

- A crafted compile layout (its blob and hash rewritten together, the group's row pointed at
  it) naming a unit `../../../x`, a precompiled header kind `/abs/path`, or a source, header
  or part it does not hold sets the cache database aside; nothing outside is touched.
- A FIFO or a link to /dev/zero in place of a stored object (with a valid-looking sum), of a
  precompiled header's sum, of the header fingerprint memo, of a merged unit's record or of
  the compile directory's file list is damage: a warning, and the build finishes. One in
  --out is a file to write again. Each build runs in a child process of its own session
  under a timeout (a hang is killed with everything it started) and an address-space limit
  (an endless read fails instead of taking the machine's memory).
- The same in an include directory (--include is input too): fingerprinted, never read.
- read_regular itself: what it refuses, and that it never blocks.

Real g++ and ninja on the mini spec's merged formula unit, from support.compile's
shared cold compile (merged_compiled).
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

import pytest
from support.compile import merged_compiled  # noqa: F401  (a fixture: the shared cold compile)
from support.compile import (FORMULAS, MERGED, MERGED_UNIT, baseline_record, merged_build,
                             restored_cache, stored_path, warnings_of)
from support.specs import MINI_SPEC

from gradshard.cache.store.database import blob_hash
from gradshard.cache.store.regular_files import FileTooLarge, NotRegularFile, read_regular
from gradshard.pipeline.records import canonical_json

TIMEOUT = 120  # seconds: a build served from the cache takes a few
PCH_TIMEOUT = 600  # a build that rebuilds the precompiled header of the torch headers
# what a build, ninja and g++ may map: far above what they use, far below the machine's memory
ADDRESS_SPACE = 6 << 30
LAYOUT_TASK = "group.compile_layout"


def limit_address_space() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))


def child_build(out: Path, cache: Path, *extra: str,
                timeout: float = TIMEOUT) -> tuple[int, dict, str]:
    """`gradshard build --json` of the merged formula unit in a child process: its exit
    code, report and stderr. A build still running at the timeout fails the test, and its
    whole process group (ninja, object_cache, g++) is killed."""
    command = [sys.executable, "-m", "gradshard.service.entry", "build", "--json",
               "--spec", str(MINI_SPEC), "--out", str(out), "--cache", str(cache),
               *MERGED, "--units", FORMULAS, *extra]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, start_new_session=True,
                               preexec_fn=limit_address_space)
    try:
        stdout, stderr = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
        pytest.fail(f"the build hung (killed after {timeout} s)")
    return process.returncode, json.loads(stdout) if stdout.strip() else {}, stderr


def plant(path: Path, kind: str) -> None:
    """A FIFO (no writer: opening it to read blocks) or a link to /dev/zero (never ends)
    where a file was."""
    path.unlink(missing_ok=True)
    if kind == "fifo":
        os.mkfifo(path)
    else:
        path.symlink_to("/dev/zero")


KINDS = ["fifo", "dev-zero"]


# ---------------------------------------------------------------------------------------------
# 1. A crafted compile layout


def forge_layout(cache: Path, change: Callable[[dict], None]) -> None:
    """Rewrite the cached compile layout as a crafted cache would: a new blob under its own
    hash, and the layout group's row pointed at it (only --verify can tell)."""
    with contextlib.closing(sqlite3.connect(cache / "gradshard.sqlite3")) as db, db:
        (output,) = db.execute("SELECT output FROM tasks WHERE task = ?",
                               (LAYOUT_TASK,)).fetchone()
        codec, data, used = db.execute("SELECT codec, data, used FROM blobs WHERE hash = ?",
                                       (output,)).fetchone()
        layout = json.loads(data)
        change(layout)
        forged = canonical_json(layout).encode()
        name = blob_hash(codec, forged)
        db.execute("INSERT INTO blobs (hash, codec, data, size, used) VALUES (?, ?, ?, ?, ?)",
                   (name, codec, forged, len(forged), used))
        db.execute("UPDATE tasks SET output = ? WHERE task = ?", (name, LAYOUT_TASK))


def rename_merged_unit(layout: dict, victim: Path) -> None:
    layout["merged"][0]["name"] = "../../../escaped"  # obj/../../../escaped.o: beside out/


def pch_kind_outside(layout: dict, victim: Path) -> None:
    """`pch//abs/x.h` is a safe relative name in the compile directory, but the cache's
    `pch/<key>/` joined with `/abs/x.h` is `/abs/x.h`: its lock, its leftovers and the PCH
    would be made and removed there."""
    kind = str(victim / "x")
    files = dict(layout["files"])
    files[f"pch/{kind}.h"] = files["pch/autograd.h"]
    layout["files"] = sorted([name, digest] for name, digest in files.items())
    for unit in [*layout["units"], *layout["merged"]]:
        unit["pch"] = kind


def source_missing(layout: dict, victim: Path) -> None:
    layout["merged"][0]["source"] = "src/nowhere.cpp"


def header_missing(layout: dict, victim: Path) -> None:
    layout["units"][0]["headers"].append("include/nowhere.h")


def part_missing(layout: dict, victim: Path) -> None:
    layout["merged"][0]["parts"].append("Functions_formulas_9")


def out_source_outside(layout: dict, victim: Path) -> None:
    layout["units"][0].update(from_out=True, source="../../../escaped.cpp")


FORGERIES = [rename_merged_unit, pch_kind_outside, source_missing, header_missing, part_missing,
             out_source_outside]


def set_aside_said(cache: Path, code: int, report: dict, err: str) -> bool:
    """The cache database was found holding a damaged compile layout and set aside: an error
    asking to run again (exit 2), or a warning if the build ran again by itself."""
    said = err + warnings_of(report)
    return (code in (0, 2) and "compile layout" in said and "aside" in said
            and bool(list(cache.glob("gradshard.sqlite3.damaged-*"))))


@pytest.mark.compiler
@pytest.mark.slow
@pytest.mark.parametrize("forgery", FORGERIES, ids=lambda f: f.__name__)
def test_a_crafted_compile_layout_sets_the_cache_aside(merged_compiled, capsys, tmp_path, forgery):
    cache = restored_cache(merged_compiled, tmp_path / "cache")
    victim = tmp_path / "victim"
    victim.mkdir()
    victims = {"x.h": "// not the cache's\n", "x.h.gch.tmp1": "not a killed build's\n"}
    for name, text in victims.items():
        (victim / name).write_text(text)
    forge_layout(cache, lambda layout: forgery(layout, victim))
    code, report, err = merged_build(capsys, MINI_SPEC, tmp_path / "out", cache)
    assert set_aside_said(cache, code, report, err), (code, err, report.get("warnings"))
    assert {p.name: p.read_text() for p in victim.iterdir()} == victims
    assert not list(tmp_path.glob("escaped*")) and not list(tmp_path.glob("out/escaped*"))
    code, report, err = merged_build(capsys, MINI_SPEC, tmp_path / "out", cache)
    assert code == 0, err  # on a new database: the objects and PCH still serve
    assert report["compile"]["compiled"] == []


# ---------------------------------------------------------------------------------------------
# 2. Files that never end, or never open, in place of what the cache stores


@pytest.mark.compiler
@pytest.mark.slow
@pytest.mark.parametrize("kind", KINDS)
def test_a_stored_object_that_is_no_file_is_compiled_again(merged_compiled, tmp_path, kind):
    cache = restored_cache(merged_compiled, tmp_path / "cache")
    stored = stored_path(cache, json.loads(baseline_record(cache).read_text())["object"], ".o")
    plant(stored, kind)  # its .sum is left as it was: valid
    code, report, err = child_build(tmp_path / "out", cache)
    assert code == 0, err
    assert report["compile"]["compiled"] == [MERGED_UNIT]
    assert str(stored) in warnings_of(report) and "not a regular file" in warnings_of(report)
    assert stored.is_file() and not stored.is_symlink()  # compiled, and stored again


@pytest.mark.compiler
@pytest.mark.slow
@pytest.mark.parametrize("kind", KINDS)
def test_a_pch_sum_that_is_no_file_rebuilds_the_pch(merged_compiled, tmp_path, kind):
    cache = restored_cache(merged_compiled, tmp_path / "cache", pch="linked", objects=False)
    (gch,) = (cache / "pch").glob("*/autograd.h.gch")
    plant(Path(f"{gch}.sum"), kind)
    code, report, err = child_build(tmp_path / "out", cache, timeout=PCH_TIMEOUT)
    assert code == 0, err
    assert str(gch) in warnings_of(report) and "rebuilt" in warnings_of(report)
    assert gch.is_file() and not gch.is_symlink()
    assert Path(f"{gch}.sum").is_file() and not Path(f"{gch}.sum").is_symlink()


@pytest.mark.compiler
@pytest.mark.slow
def test_a_pch_lock_that_is_a_link_is_replaced_not_followed(merged_compiled, tmp_path):
    """A lock is opened to be created: through a link, it would create a file anywhere."""
    cache = restored_cache(merged_compiled, tmp_path / "cache", pch="linked")
    (gch,) = (cache / "pch").glob("*/autograd.h.gch")
    lock = Path(f"{gch}.lock")
    lock.symlink_to(tmp_path / "elsewhere")
    code, report, err = child_build(tmp_path / "out", cache)
    assert code == 0, err
    assert not (tmp_path / "elsewhere").exists()
    assert lock.is_file() and not lock.is_symlink()


@pytest.mark.compiler
@pytest.mark.slow
@pytest.mark.parametrize("kind", KINDS)
def test_a_header_memo_that_is_no_file_is_made_again(merged_compiled, tmp_path, kind):
    cache = restored_cache(merged_compiled, tmp_path / "cache")
    memo = cache / "headers.json"
    plant(memo, kind)
    code, report, err = child_build(tmp_path / "out", cache)
    assert code == 0, err
    assert report["compile"]["compiled"] == []  # the same headers: the same fingerprint
    assert str(memo) in warnings_of(report)
    assert memo.is_file() and not memo.is_symlink()


@pytest.mark.compiler
@pytest.mark.slow
@pytest.mark.parametrize("kind", KINDS)
def test_a_merged_record_that_is_no_file_is_removed(merged_compiled, tmp_path, kind):
    cache = restored_cache(merged_compiled, tmp_path / "cache")
    record = baseline_record(cache)
    plant(record, kind)
    code, report, err = child_build(tmp_path / "out", cache)
    assert code == 0, err
    assert report["compile"]["compiled"] == []  # its object still serves
    assert str(record) in warnings_of(report)
    assert record.is_file() and not record.is_symlink()  # written again after the run


def rewrite_out(out: Path, name: str, kind: str) -> Path:
    path = out / name
    path.parent.mkdir(parents=True, exist_ok=True)
    plant(path, kind)
    return path


@pytest.mark.compiler
@pytest.mark.slow
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("name", ["Functions.h", "compile/pch/autograd.h"])
def test_a_file_of_out_that_is_no_file_is_written_again(merged_compiled, tmp_path, kind, name):
    """In --out and in its compile directory: a file whose content cannot be read differs."""
    cache = restored_cache(merged_compiled, tmp_path / "cache")
    out = tmp_path / "out"
    path = rewrite_out(out, name, kind)
    code, report, err = child_build(out, cache)
    assert code == 0, err
    assert path.is_file() and not path.is_symlink() and path.stat().st_size > 0
    assert report["compile"]["compiled"] == []


# ---------------------------------------------------------------------------------------------
# 4. The compile directory's file list


@pytest.mark.compiler
@pytest.mark.slow
@pytest.mark.parametrize("listing", ['[["x"]]', "5", '{"a": 1}', "fifo", "dev-zero"])
def test_a_damaged_file_list_is_a_warning(merged_compiled, tmp_path, listing):
    cache = restored_cache(merged_compiled, tmp_path / "cache")
    out = tmp_path / "out"
    assert child_build(out, cache)[0] == 0
    path = out / "compile" / ".gradshard-files.json"
    if listing in KINDS:
        plant(path, listing)
    else:
        path.write_text(listing)
    code, report, err = child_build(out, cache)
    assert code == 0, err
    assert str(path) in warnings_of(report)
    assert json.loads(path.read_text())  # written again


@pytest.mark.compiler
@pytest.mark.slow
def test_stale_names_in_a_file_list_are_still_removed(merged_compiled, tmp_path):
    """Of a list holding other things too, its names still say what to remove."""
    cache = restored_cache(merged_compiled, tmp_path / "cache")
    out = tmp_path / "out"
    assert child_build(out, cache)[0] == 0
    stale = out / "compile" / "src" / "old_unit.cpp"
    stale.write_text("// an earlier layout's\n")
    path = out / "compile" / ".gradshard-files.json"
    path.write_text(json.dumps([*json.loads(path.read_text()), "src/old_unit.cpp", ["x"], 5]))
    code, report, err = child_build(out, cache)
    assert code == 0, err
    assert not stale.exists() and str(path) in warnings_of(report)


# ---------------------------------------------------------------------------------------------
# The include directories (--include names input too)


FINGERPRINT = """
import sys
from pathlib import Path
from gradshard.service.compile.toolchain import Toolchain, header_fingerprint
warnings = []
toolchain = Toolchain("g++", "g++ 0", (), (sys.argv[1],), ())
print(header_fingerprint(toolchain, Path(sys.argv[2]), warnings), warnings)
"""


def test_an_include_directory_holding_no_files_is_hashed_without_reading_them(tmp_path):
    """A FIFO, a link to /dev/zero and a dangling link beside a header: fingerprinted (in a
    child process: a read of either would hang or take all memory), never read."""
    include = tmp_path / "include"
    include.mkdir()
    (include / "a.h").write_text("int a;\n")
    plant(include / "fifo.h", "fifo")
    plant(include / "zero.h", "dev-zero")
    (include / "dangling.h").symlink_to(tmp_path / "nowhere.h")
    done = subprocess.run([sys.executable, "-c", FINGERPRINT, str(include),
                           str(tmp_path / "headers.json")], capture_output=True, text=True,
                          timeout=TIMEOUT, preexec_fn=limit_address_space)
    assert done.returncode == 0, done.stderr
    fingerprint, warnings = done.stdout.split(" ", 1)
    assert len(fingerprint) == 32 and warnings.strip() == "[]"


# ---------------------------------------------------------------------------------------------
# read_regular


def test_read_regular_reads_a_file_up_to_its_limit(tmp_path):
    path = tmp_path / "file"
    path.write_bytes(b"x" * 100)
    assert read_regular(path, 100) == b"x" * 100
    with pytest.raises(FileTooLarge) as refused:
        read_regular(path, 99)
    assert refused.value.size == 100 and "larger than" in str(refused.value)
    with pytest.raises(FileNotFoundError):
        read_regular(tmp_path / "missing", 100)


@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "directory"])
def test_read_regular_refuses_what_is_no_file_without_blocking(tmp_path, kind):
    path = tmp_path / "file"
    if kind == "directory":
        path.mkdir()
    else:
        plant(path, kind)
    started = time.monotonic()
    with pytest.raises(NotRegularFile) as refused:
        read_regular(path, 1 << 20)
    assert time.monotonic() - started < 5
    expected = {"fifo": "a FIFO", "dev-zero": "a character device", "directory": "a directory"}
    assert refused.value.kind == expected[kind]
    assert str(refused.value) == f"{path} is not a regular file ({expected[kind]})"
    assert isinstance(refused.value, OSError)  # what every cache reader already handles
