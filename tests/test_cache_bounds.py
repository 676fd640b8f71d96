"""One store for everything cached: the compile cache's entries are rows of the store, `stats`
lists every kind of file in the cache directory, and `gc --max-size` bounds the whole
directory as its files' sizes on disk add up (PCHs, objects, the database and its WAL,
set-aside damaged databases), keeping what the last build of each output directory needs.

Real builds of the mini spec (g++, ninja, the torch 2.13 headers), real SQLite, and the
directory measured here with os.lstat over every file under it.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from support.specs import MINI_SPEC, MUL_OTHER, mini_spec_pair

from gradshard.cache.errors import UsageError
from gradshard.cache.maintenance import apply_cache_limit
from gradshard.cache.objects import entries as compile_entries
from gradshard.cache.objects.entries import EntryUse
from gradshard.cache.store.database import DB_FILE, Store
from gradshard.service.cli import main

MIB = 1 << 20
SHARDS = ["--shard-nodes", "2,4,0"]  # 5 Functions units, no merged units
# formula edits (one formula unit compiles) and a saved-variable edit (its formula unit
# and its Functions unit compile)
FORMULA_EDIT = MUL_OTHER.replace("grad,", "grad * 2,")
OTHER_FORMULA_EDIT = MUL_OTHER.replace("grad,", "grad * 3,")
SAVED_EDIT = MUL_OTHER.replace("other.scalar_type()", "self.scalar_type()")
DAMAGED = f"{DB_FILE}.damaged-1700000000-4242"
_WRAPPED = re.compile(r"-m gradshard\.cache\.objects\.object_cache \S+ ([0-9a-f]{32}) ")
_PCH = re.compile(r"pch/([0-9a-f]{32})/\w+\.h\.gch")


def gradshard(capsys, *args: str) -> tuple[int, dict, str]:
    """A command with --json in this process: its exit code, report and stderr."""
    code = main([*args, "--json"])
    out, err = capsys.readouterr()
    return code, json.loads(out) if out.strip() else {}, err


def build(capsys, spec: Path, out: Path, cache: Path, *extra: str,
          units: str = "Functions_*") -> dict:
    code, report, err = gradshard(capsys, "build", "--spec", str(spec), "--out", str(out),
                                  "--cache", str(cache), *SHARDS, "--units", units, *extra)
    assert code == 0, err
    return report


def disk_bytes(directory: Path) -> int:
    """The directory as the issue measures it: every file's size, links not followed."""
    return sum(os.lstat(os.path.join(root, name)).st_size
               for root, dirs, files in os.walk(directory)
               for name in [*files, *(d for d in dirs if os.path.islink(os.path.join(root, d)))])


def entries_on_disk(cache: Path) -> tuple[set[str], set[str]]:
    """The object keys and PCH keys whose files are in the cache."""
    objects = {p.stem for p in (cache / "objects").glob("??/*") if p.suffix in (".o", ".sum")}
    pchs = {p.name for p in (cache / "pch").iterdir()} if (cache / "pch").is_dir() else set()
    return objects, pchs


def needed_by(out: Path) -> tuple[set[str], set[str]]:
    """The object keys and PCH keys the last build into `out` used, as its build.ninja says."""
    text = (out / "compile" / "build.ninja").read_text()
    return set(_WRAPPED.findall(text)), set(_PCH.findall(text))


def linked_copy(source: Path, target: Path) -> Path:
    """A copy of a cache that shares its files (gc removes links, never what others read)
    but not its database, which SQLite writes in place."""
    def link_or_copy(src: str, dst: str) -> None:
        if Path(src).name.startswith(DB_FILE):
            shutil.copy2(src, dst)
        else:
            os.link(src, dst)

    shutil.copytree(source, target, copy_function=link_or_copy, symlinks=True)
    return target


def outputs(out: Path) -> dict[str, bytes]:
    """The generated files and the objects to link, by path under `out`."""
    files = [p for p in out.glob("*") if p.is_file()] + list((out / "compile" / "obj").glob("*.o"))
    return {str(p.relative_to(out)): p.read_bytes() for p in files}


def plant_damaged(cache: Path, size: int) -> Path:
    path = cache / DAMAGED
    path.write_bytes(b"\0" * size)
    return path


@pytest.fixture(scope="module")
def compiled(tmp_path_factory) -> tuple[Path, Path]:
    """One cold compile of the mini spec's Functions units: (out, cache)."""
    root = tmp_path_factory.mktemp("bounds")
    out, cache = root / "out", root / "cache"
    assert main(["build", "--spec", str(MINI_SPEC), "--out", str(out), "--cache", str(cache),
                 *SHARDS, "--units", "Functions_*"]) == 0
    return out, cache


@pytest.fixture
def copied(compiled, tmp_path) -> tuple[Path, Path]:
    """The cold compile's output directory and cache, this test's own."""
    out, cache = compiled
    shutil.copytree(out, tmp_path / "out", symlinks=True)
    return tmp_path / "out", linked_copy(cache, tmp_path / "cache")


@pytest.mark.compiler
@pytest.mark.slow
def test_gc_max_size_bounds_the_whole_cache_directory(compiled, copied, capsys, tmp_path):
    """After a cold compile and two edits, --max-size leaves the directory within it; below
    what the last build needs, exactly that and a warning; the next build is the same. (The
    copied cache records the cold compile's own output directory too: its last build's
    needs are kept as well.)"""
    out, cache = copied
    _, formula = mini_spec_pair(tmp_path / "formula", MUL_OTHER, FORMULA_EDIT)
    _, saved = mini_spec_pair(tmp_path / "saved", MUL_OTHER, SAVED_EDIT)
    assert build(capsys, formula, out, cache)["compile"]["compiled"]
    assert len(build(capsys, saved, out, cache)["compile"]["compiled"]) == 2
    damaged = plant_damaged(cache, 3 * MIB)
    objects, pchs = (a | b for a, b in zip(needed_by(out), needed_by(compiled[0])))

    limit = disk_bytes(cache) - 2 * MIB
    code, report, err = gradshard(capsys, "gc", "--cache", str(cache), "--max-size", str(limit))
    assert code == 0, err
    assert disk_bytes(cache) <= limit and report["warnings"] == []
    assert not damaged.exists()
    assert objects <= entries_on_disk(cache)[0] and pchs == entries_on_disk(cache)[1]

    code, report, err = gradshard(capsys, "gc", "--cache", str(cache), "--max-size", "10M")
    assert code == 0, err
    assert disk_bytes(cache) > 10 * MIB and len(report["warnings"]) == 1
    assert "what the last build of each output directory needs" in report["warnings"][0]
    assert entries_on_disk(cache) == (objects, pchs)  # exactly what the last build needs
    assert report["kept_builds"] == 2 and report["dropped_builds"] == 1  # the formula edit's

    again = build(capsys, saved, tmp_path / "fresh", cache)["compile"]
    assert again["compiled"] == [] and len(again["cached"]) == again["units"]
    assert outputs(tmp_path / "fresh") == outputs(out)


@pytest.mark.compiler
@pytest.mark.slow
def test_gc_all_drops_what_the_last_build_needs_and_the_next_build_makes_it(copied, capsys,
                                                                             tmp_path):
    out, cache = copied
    code, report, err = gradshard(capsys, "gc", "--cache", str(cache), "--max-size", "2M",
                                  "--all")
    assert code == 0, err
    assert disk_bytes(cache) <= 2 * MIB and report["warnings"] == []
    assert entries_on_disk(cache)[1] == set()  # the largest went first
    code, report, err = gradshard(capsys, "gc", "--cache", str(cache), "--all")
    assert code == 0, err
    assert entries_on_disk(cache) == (set(), set()) and report["kept_builds"] == 0
    again = build(capsys, MINI_SPEC, tmp_path / "fresh", cache)["compile"]
    assert again["cached"] == [] and len(again["compiled"]) == again["units"]  # misses
    assert outputs(tmp_path / "fresh") == outputs(out)


@pytest.mark.compiler
@pytest.mark.slow
def test_entries_of_a_toolchain_no_longer_used_go_first(copied, capsys, tmp_path):
    """An edit, a build with other flags (another toolchain: another PCH), another edit with
    the usual flags: the other flags' entries go before the first edit's object, which the
    second edit left unused, although that one was used less recently."""
    out, cache = copied
    _, formula = mini_spec_pair(tmp_path / "formula", MUL_OTHER, FORMULA_EDIT)
    _, again = mini_spec_pair(tmp_path / "again", MUL_OTHER, OTHER_FORMULA_EDIT)
    build(capsys, formula, out, cache)
    first, _ = needed_by(out)
    build(capsys, MINI_SPEC, out, cache, "--cxxflags=-DGRADSHARD_OTHER_TOOLCHAIN=1",
          units="Functions_formulas_*")
    other_objects, (other_pch,) = needed_by(out)
    build(capsys, again, out, cache)
    last, _ = needed_by(out)
    (left,) = first - last  # the first edit's formula unit: no build uses it now
    assert gradshard(capsys, "gc", "--cache", str(cache))[0] == 0

    limit = disk_bytes(cache) - 1
    assert gradshard(capsys, "gc", "--cache", str(cache), "--max-size", str(limit))[0] == 0
    objects, pchs = entries_on_disk(cache)
    assert other_pch not in pchs and left in objects and last <= objects
    limit = disk_bytes(cache) - 1
    assert gradshard(capsys, "gc", "--cache", str(cache), "--max-size", str(limit))[0] == 0
    objects, _ = entries_on_disk(cache)
    assert left in objects or not other_objects & objects  # never before the other toolchain's


@pytest.mark.compiler
def test_stats_lists_the_store_objects_and_pchs_with_their_sizes(copied, capsys, tmp_path):
    out, cache = copied
    build(capsys, MINI_SPEC, tmp_path / "restored", cache)  # every unit served
    code, report, err = gradshard(capsys, "stats", "--cache", str(cache))
    assert code == 0, err
    disk = report["disk"]
    objects = sum(p.stat().st_size for p in (cache / "objects").glob("??/*"))
    pchs = sum(p.stat().st_size for p in (cache / "pch").rglob("*") if p.is_file())
    assert disk["objects"]["bytes"] == objects and disk["pchs"]["bytes"] == pchs > 100 * MIB
    assert disk["store"]["bytes"] >= (cache / DB_FILE).stat().st_size
    assert disk["objects"]["entries"] == len(entries_on_disk(cache)[0]) == 5
    assert disk["pchs"]["entries"] == 1 and report["disk_bytes"] >= objects + pchs
    assert report["compile_hits"]["object"] == {"hits": 5, "made": 5}
    assert report["compile_hits"]["pch"] == {"hits": 1, "made": 1}
    assert main(["stats", "--cache", str(cache)]) == 0
    text = capsys.readouterr().out
    for kind, size in (("store", None), ("objects", objects), ("pchs", pchs)):
        line = next(line for line in text.splitlines() if line.strip().startswith(f"{kind}:"))
        assert re.search(r"\d+(\.\d)? (KiB|MiB|GiB)", line), line
        if size is not None:
            assert f"{size / MIB:.1f} MiB" in line or f"{size / 1024:.0f} KiB" in line, line
    assert "50.0% served from the cache" in text


def cache_max() -> str | None:
    """$GRADSHARD_CACHE_MAX as the service reads it and hands it to the cache."""
    return os.environ.get("GRADSHARD_CACHE_MAX")


@pytest.mark.compiler
def test_cache_max_collects_after_a_build(copied, capsys, monkeypatch, tmp_path):
    """GRADSHARD_CACHE_MAX: a build that leaves the cache over it collects it down to it; a
    bad value is a usage error with a hint."""
    out, cache = copied
    damaged = plant_damaged(cache, 3 * MIB)
    limit = disk_bytes(cache) - 2 * MIB
    monkeypatch.setenv("GRADSHARD_CACHE_MAX", str(limit))
    again = build(capsys, MINI_SPEC, tmp_path / "fresh", cache)
    assert again["compile"]["compiled"] == [] and outputs(tmp_path / "fresh") == outputs(out)
    assert not damaged.exists() and disk_bytes(cache) <= limit

    warnings: list[str] = []
    store = Store.open(cache, warnings.append)
    try:
        assert apply_cache_limit(store, warnings.append, cache_max()) is None  # it fits
        monkeypatch.setenv("GRADSHARD_CACHE_MAX", "1M")  # less than the last builds need
        assert apply_cache_limit(store, warnings.append, cache_max()).after_bytes > MIB
        assert len(warnings) == 1 and "last build of each output directory" in warnings[0]
        monkeypatch.delenv("GRADSHARD_CACHE_MAX")
        assert apply_cache_limit(store, warnings.append, cache_max()) is None
        monkeypatch.setenv("GRADSHARD_CACHE_MAX", "lots")
        with pytest.raises(UsageError) as refused:
            apply_cache_limit(store, warnings.append, cache_max())
        assert "GRADSHARD_CACHE_MAX" in refused.value.message and "2G" in refused.value.hint
    finally:
        store.close()


HOLDING_BUILD = """
import sys
from pathlib import Path
from gradshard.cache.objects import entries as compile_entries
from gradshard.cache.objects.entries import EntryUse
from gradshard.cache.store.database import Store
store = Store.open(Path(sys.argv[1]), print)
compile_entries.ensure_tables(store)
build = store.begin_build("running-spec", "running-out")
compile_entries.hold(store, build, "running-compile-dir",
                     [EntryUse("object", f"objects/{k[:2]}/{k}", k) for k in sys.argv[2:]])
print("holding", flush=True)
sys.stdin.read()
store.end_build(build, "built", 0.0, {})
"""


@pytest.mark.compiler
def test_gc_leaves_the_entries_a_running_build_holds(copied, capsys):
    out, cache = copied
    objects, _ = needed_by(out)
    held = sorted(objects)[:2]
    running = subprocess.Popen([sys.executable, "-c", HOLDING_BUILD, str(cache), *held],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert running.stdout.readline().strip() == "holding"
        code, report, err = gradshard(capsys, "gc", "--cache", str(cache), "--all")
        assert code == 0, err
        assert entries_on_disk(cache) == (set(held), set()) and report["running_builds"] == 1
    finally:
        running.communicate("", timeout=60)
    assert gradshard(capsys, "gc", "--cache", str(cache), "--all")[0] == 0
    assert entries_on_disk(cache) == (set(), set())


@pytest.mark.compiler
def test_a_cache_without_compile_rows_is_recorded_when_used(copied, capsys, tmp_path):
    """A cache written before the store recorded compile entries (or with tables of another
    shape): served as before, and its entries recorded from then on."""
    out, cache = copied
    with sqlite3.connect(cache / DB_FILE) as db:
        db.execute("DROP TABLE compile_entries")
        db.execute("DROP TABLE compile_uses")
        db.execute("CREATE TABLE compile_entries (path TEXT, size TEXT)")  # another shape
    again = build(capsys, MINI_SPEC, tmp_path / "fresh", cache)["compile"]
    assert again["compiled"] == [] and len(again["cached"]) == 5
    with sqlite3.connect(cache / DB_FILE) as db:
        kinds = dict(db.execute("SELECT kind, count(*) FROM compile_entries GROUP BY kind"))
    assert kinds == {"object": 5, "pch": 1, "header_memo": 1}


def test_a_damaged_database_counts_and_goes_first(tmp_path, capsys):
    """A set-aside database is part of the directory: stats shows it, gc removes it first
    (before any recorded build)."""
    cache, out = tmp_path / "cache", tmp_path / "out"
    code, _, err = gradshard(capsys, "build", "--codegen-only", "--spec", str(MINI_SPEC),
                             "--out", str(out), "--cache", str(cache))
    assert code == 0, err
    damaged = plant_damaged(cache, 2 * MIB)
    code, report, _ = gradshard(capsys, "stats", "--cache", str(cache))
    assert report["disk"]["damaged"] == {"files": 1, "bytes": 2 * MIB, "entries": 1}
    assert main(["stats", "--cache", str(cache)]) == 0
    assert re.search(r"damaged: +2\.0 MiB", capsys.readouterr().out)
    limit = disk_bytes(cache) - MIB
    code, report, _ = gradshard(capsys, "gc", "--cache", str(cache), "--max-size", str(limit))
    assert code == 0 and not damaged.exists() and report["dropped_builds"] == 0
    assert disk_bytes(cache) <= limit
    code, report, _ = gradshard(capsys, "build", "--codegen-only", "--spec", str(MINI_SPEC),
                                "--out", str(out), "--cache", str(cache))
    assert report["status"] == "up to date"


def test_compile_rows_are_data(tmp_path, capsys):
    """Rows naming paths no entry has (outside the cache, of another kind's shape) are never
    measured or removed by; gc drops them."""
    cache, out = tmp_path / "cache", tmp_path / "out"
    assert gradshard(capsys, "build", "--codegen-only", "--spec", str(MINI_SPEC), "--out",
                     str(out), "--cache", str(cache))[0] == 0
    outside = tmp_path / "outside.o"
    outside.write_bytes(b"\0" * MIB)
    key = "ab" + "0" * 30
    store = Store.open(cache, print)
    try:
        compile_entries.ensure_tables(store)
        with store.transaction() as db:
            db.executemany(
                "INSERT INTO compile_entries VALUES (?,?,?,?,?,?,?,?,?)",
                [("../outside", "object", key, 1, key, "", "", 1, 0.0),
                 (f"objects/ab/{key}", "pch", key, 1, key, "", "", 1, 0.0),
                 (str(outside.with_suffix("")), "object", key, 1, key, "", "", 1, 0.0)])
        compile_entries.hold(store, 1, "somewhere", [EntryUse("object", "../outside", key)])
    finally:
        store.close()
    code, report, err = gradshard(capsys, "gc", "--cache", str(cache), "--all")
    assert code == 0, err
    assert outside.read_bytes() == b"\0" * MIB
    with sqlite3.connect(cache / DB_FILE) as db:
        assert db.execute("SELECT count(*) FROM compile_entries").fetchone() == (0,)
