"""One session (service/session.py) and the builds run in it (service/build.py): the build
graph runs once per build, compile included; the session, not the process, owns the engine
memory; a set-aside cache takes its memory with it.

Real g++ and ninja on the mini spec's Functions units."""

from __future__ import annotations

import functools
import gc
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import time
import weakref
from pathlib import Path

import pytest
from support.compile import suite_flags
from support.specs import DERIVATIVES, MINI_SPEC, MUL_OTHER, NATIVE

from gradshard.cache.errors import EnvironmentFailure
from gradshard.cache.graph import build_graph as graph
from gradshard.cache.maintenance import collect_garbage
from gradshard.cache.store.database import DB_FILE, Store
from gradshard.cache.version import code_version
from gradshard.pipeline.layout.compile_layout import ShardSettings
from gradshard.service import build as build_module
from gradshard.service import graph_run
from gradshard.service.build import build_and_compile
from gradshard.service.compile.driver import CompileOptions
from gradshard.service.files.inputs import read_inputs
from gradshard.service.files.spec_location import locate_spec
from gradshard.service.graph_run import DecodedInputs, run_graph
from gradshard.service.session import Session

FLUSH = Store.flush
COMPILE = CompileOptions(units=("Functions_*",), flags=suite_flags(),
                         shards=ShardSettings(formula_nodes=2, methods_nodes=4,
                                              merged_formula_units=0))


@pytest.fixture
def graph_runs(monkeypatch) -> list:
    """The engine of every run of the whole build graph (cache/graph/build_graph.py: build_index)
    in this process."""
    runs: list = []

    def counted(engine, inputs):
        runs.append(engine)
        return graph.build_index(engine, inputs)

    monkeypatch.setattr(graph_run, "build_index", counted)
    return runs


def edited_spec(root: Path) -> Path:
    spec = root / "spec"
    shutil.copytree(MINI_SPEC, spec)
    path = spec / DERIVATIVES
    path.write_text(path.read_text().replace(MUL_OTHER, MUL_OTHER.replace("grad,", "2 * grad,")))
    return spec


@pytest.mark.compiler
@pytest.mark.slow
def test_a_build_with_its_compile_runs_the_graph_once(tmp_path, graph_runs, seeded_pchs):
    session = Session(seeded_pchs(tmp_path / "cache"))
    location = locate_spec(str(MINI_SPEC))
    cold = build_and_compile(location, tmp_path / "out", session, COMPILE)
    assert len(graph_runs) == 1 and cold.compiled.compiled
    changed = locate_spec(str(edited_spec(tmp_path)))
    edited = build_and_compile(changed, tmp_path / "out", session, COMPILE)
    assert len(graph_runs) == 2 and edited.status == "built"
    # nothing changed: the compile still needs the layout, which one graph run answers
    again = build_and_compile(changed, tmp_path / "out", session, COMPILE)
    assert again.status == "up to date" and len(graph_runs) == 3
    assert again.compiled.compiled == [] and sum(graph_runs[-1].stats.run.values()) == 0
    session.close()


def test_an_up_to_date_build_without_compile_runs_no_graph(tmp_path, graph_runs):
    session = Session(tmp_path / "cache")
    location = locate_spec(str(MINI_SPEC))
    build_and_compile(location, tmp_path / "out", session)
    assert build_and_compile(location, tmp_path / "out", session).status == "up to date"
    assert len(graph_runs) == 1
    session.close()


def flush_noting(store: Store, commits: list[tuple[int, bool]], marker: Path,
                 build_id: int) -> None:
    """Store.flush, noting how many task rows it commits and whether `marker` exists."""
    commits.append((len(store.pending.tasks), marker.exists()))
    FLUSH(store, build_id)


def test_a_build_writes_its_files_before_it_commits_its_rows(tmp_path, monkeypatch):
    """A save's files come first; the rows its tasks computed are committed after them (a
    build killed in between recomputes them), and all are committed by the build's end."""
    out = tmp_path / "out"
    commits: list[tuple[int, bool]] = []  # (task rows committed, Functions.cpp there)
    monkeypatch.setattr(Store, "flush", functools.partialmethod(flush_noting, commits,
                                                                out / "Functions.cpp"))
    session = Session(tmp_path / "cache")
    built = build_and_compile(locate_spec(str(MINI_SPEC)), out, session)
    session.close()
    assert built.status == "built" and sum(built.stats.run.values()) > 0
    # this process's commits of task rows (a forked child commits its own rows itself)
    assert any(tasks for tasks, _ in commits)
    assert all(there for tasks, there in commits if tasks)  # the mini spec stages < 5000 rows
    with sqlite3.connect(tmp_path / "cache" / DB_FILE) as db:
        assert db.execute("SELECT count(*) FROM tasks").fetchone()[0] == sum(
            built.stats.run.values())
    later = Session(tmp_path / "cache")
    again = build_and_compile(locate_spec(str(MINI_SPEC)), tmp_path / "again", later)
    later.close()
    assert sum(again.stats.run.values()) == 0


def test_a_build_whose_files_cannot_be_written_still_commits_what_ran(tmp_path, monkeypatch):
    """The write's failure is what the build reports; what its tasks computed is kept (a
    daemon's session would otherwise commit it with its next build, under another lease)."""
    monkeypatch.setattr(build_module, "sync_outputs", refuse_to_write)
    session = Session(tmp_path / "cache")
    with pytest.raises(EnvironmentFailure, match="refused"):
        build_and_compile(locate_spec(str(MINI_SPEC)), tmp_path / "out", session)
    assert not session.store.pending.tasks
    session.close()
    with sqlite3.connect(tmp_path / "cache" / DB_FILE) as db:
        assert db.execute("SELECT count(*) FROM tasks").fetchone()[0] > 0


def refuse_to_write(*args, **kwargs):
    raise EnvironmentFailure("writing refused (a test's device)", "none", "out")


def test_the_session_owns_the_engine_memory(tmp_path):
    """Two sessions of one cache in one process share nothing in memory (the old module-level
    memory answered the second from the first's): the second reads the store."""
    location = locate_spec(str(MINI_SPEC))
    first = Session(tmp_path / "cache")
    build_and_compile(location, tmp_path / "out-1", first)
    assert first.memory.memo
    second = Session(tmp_path / "cache")
    assert not second.memory.memo
    built = build_and_compile(location, tmp_path / "out-2", second)
    assert sum(built.stats.run.values()) == 0  # answered by the store, not by memory
    first.close()
    second.close()


def test_setting_a_damaged_cache_aside_forgets_its_memory(tmp_path):
    session = Session(tmp_path / "cache")
    build_and_compile(locate_spec(str(MINI_SPEC)), tmp_path / "out", session)
    remembered = session.memory
    session.set_aside()
    assert session.memory is not remembered and not session.memory.memo
    assert any(".damaged-" in p.name for p in (tmp_path / "cache").iterdir())
    session.close()


def test_a_build_applies_gradshard_cache_max_when_it_ends(tmp_path):
    """The automatic limit runs after the build (its record the last of its output
    directory): an old damaged database goes, the build's own needs stay and are warned
    about when they alone exceed the limit, and a bad value is refused."""
    cache = tmp_path / "cache"
    cache.mkdir()
    damaged = cache / f"{DB_FILE}.damaged-1"
    damaged.write_bytes(b"\0" * (4 << 20))
    environment = {**os.environ, "GRADSHARD_CACHE_MAX": "1K"}
    command = [sys.executable, "-m", "gradshard.service.cli", "build", "--codegen-only",
               "--spec", str(MINI_SPEC), "--out", str(tmp_path / "out"), "--cache", str(cache)]
    done = subprocess.run(command, capture_output=True, text=True, env=environment, timeout=300)
    assert done.returncode == 0, done.stderr
    assert not damaged.exists()
    assert "last build of each output directory" in done.stdout + done.stderr
    assert (tmp_path / "out" / "Functions.h").exists()
    environment["GRADSHARD_CACHE_MAX"] = "lots"
    refused = subprocess.run(command, capture_output=True, text=True, env=environment,
                             timeout=300)
    assert refused.returncode == 2 and "GRADSHARD_CACHE_MAX" in refused.stderr


def test_gc_keeps_the_compile_layout_of_a_kept_build(tmp_path):
    """A build's compile layout is reached from its index: gc keeps it with the build, so
    the next compile of that build runs no layout task."""
    location = locate_spec(str(MINI_SPEC))
    session = Session(tmp_path / "cache")
    build_and_compile(location, tmp_path / "out", session)
    decoded = DecodedInputs.decode(read_inputs(location))
    run_graph(decoded, session.open(), session.memory).layout(COMPILE.shards)
    collect_garbage(session.open(), None, code_version())
    session.close()
    fresh = Session(tmp_path / "cache")
    result = run_graph(decoded, fresh.open(), fresh.memory)
    result.layout(COMPILE.shards)
    assert [r.task for r in result.stats.runs] == []
    fresh.close()


def test_a_cached_failing_run_reports_the_same_problems_without_running_a_task(tmp_path):
    """The problems of a failing spec are task outputs, kept like any other: a second run
    in a fresh process prints the same report, every line, and runs no task (no task row is
    rewritten by its build)."""
    spec = tmp_path / "spec"
    shutil.copytree(MINI_SPEC, spec)
    derivatives = spec / DERIVATIVES
    derivatives.write_text(derivatives.read_text().replace(MUL_OTHER, MUL_OTHER[:-1]))
    native = spec / NATIVE
    native.write_text(native.read_text().replace("  variants: function, method\n",
                                                 "  variants: function, methods\n"))
    cache = tmp_path / "cache"
    command = [sys.executable, "-m", "gradshard.service.cli", "build", "--codegen-only",
               "--spec", str(spec), "--out", str(tmp_path / "out"), "--cache", str(cache)]
    first = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert first.returncode == 1 and "4 errors in the spec" in first.stderr
    with sqlite3.connect(cache / DB_FILE) as db:
        rows = set(db.execute("SELECT key, output, used FROM tasks"))
    assert rows
    again = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert (again.returncode, again.stdout, again.stderr) == (1, first.stdout, first.stderr)
    with sqlite3.connect(cache / DB_FILE) as db:
        assert set(db.execute("SELECT key, output, used FROM tasks")) == rows
    assert not (tmp_path / "out").exists()


class _Cycle:
    def __init__(self) -> None:
        self.me = self


def test_freeze_survivors_freezes_what_survives_and_reclaims_cycles_dropped_since(tmp_path):
    """The daemon's housekeeping between builds: survivors are frozen (a full collection
    pass skips them), and a frozen cycle dropped later is reclaimed by the next freeze."""
    session = Session(tmp_path / "cache")
    cycle = _Cycle()
    dropped = weakref.ref(cycle)
    try:
        session.freeze_survivors()
        assert gc.get_freeze_count() > 0
        del cycle
        gc.collect()
        assert dropped() is not None  # frozen: a full pass does not walk it
        session.freeze_survivors()
        assert dropped() is None
    finally:
        gc.unfreeze()
        session.close()


def test_a_session_hashes_a_sound_pch_once_and_a_changed_one_again(tmp_path, monkeypatch):
    """check_pchs: a PCH found sound is not hashed again by the same session while its stat
    signature holds; a write (here: same size, other bytes) is hashed again and removed."""
    from gradshard.cache.objects import object_cache
    from gradshard.service.compile import plan as compile_module

    header = tmp_path / "pch" / "key" / "autograd.h"
    header.parent.mkdir(parents=True)
    gch = Path(f"{header}.gch")
    gch.write_bytes(b"a precompiled header")
    Path(f"{gch}.sum").write_text(json.dumps(
        {"size": gch.stat().st_size, "xxh3_128": object_cache.content_sum(gch.read_bytes())}))
    hashed = []
    checked = object_cache.pch_problem
    monkeypatch.setattr(compile_module, "pch_problem", lambda p: hashed.append(p) or checked(p))
    plan = compile_module.CompilePlan(tmp_path / "compile", tmp_path, None, 1)
    session = Session(tmp_path / "cache")
    for _ in range(2):
        compile_module.check_pchs(plan, {"autograd": header}, session.sound_pchs)
    assert hashed == [gch] and gch.exists() and plan.warnings == []
    gch.write_bytes(b"a damaged  header!!!")  # the same size
    compile_module.check_pchs(plan, {"autograd": header}, session.sound_pchs)
    assert hashed == [gch, gch] and not gch.exists()
    assert "does not match its recorded sum" in plan.warnings[0]
    assert session.sound_pchs == {}


def test_a_session_checks_a_stored_object_once_and_a_changed_one_again(tmp_path, monkeypatch):
    """sound_object (a merged unit's baseline object): checked against its sums once while
    the stat signatures of its two files hold; a write (same size, other bytes) is found."""
    from gradshard.cache.objects import object_cache
    from gradshard.service.compile import plan as compile_module

    objects, key = tmp_path / "objects", "0123456789abcdef0123456789abcdef"
    object_cache.save(objects, key, object_cache.Entry(b"an object file", None))
    loads = []
    real = object_cache.load
    monkeypatch.setattr(compile_module, "load", lambda *a: loads.append(a[1]) or real(*a))
    sound = Session(tmp_path / "cache").sound_objects
    assert compile_module.sound_object(objects, key, sound)
    assert compile_module.sound_object(objects, key, sound)
    assert loads == [key]
    time.sleep(0.02)  # past the file system's timestamp tick
    object_cache.stored(objects, key).with_suffix(".o").write_bytes(b"a damaged  file")
    with pytest.raises(object_cache.DamagedEntry):
        compile_module.sound_object(objects, key, sound)
    assert loads == [key, key] and sound == {}
    assert not compile_module.sound_object(objects, "f" * 32, sound)  # never stored
