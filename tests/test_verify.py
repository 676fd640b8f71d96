"""`gradshard build --verify`: a task row pointed at another valid value is invisible to
content addressing (the value matches its hash); verifying runs every task, lists each row
that disagrees with a fresh run by task name, rewrites it, and exits 6."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from support.specs import MINI_SPEC

from gradshard.service.cli import main


def build(capsys, out: Path, cache: Path, *extra: str) -> tuple[int, dict, str]:
    code = main(["build", "--codegen-only", "--json", "--spec", str(MINI_SPEC),
                 "--out", str(out), "--cache", str(cache), *extra])
    captured = capsys.readouterr()
    return code, json.loads(captured.out) if captured.out.strip() else {}, captured.err


def point_row_elsewhere(cache: Path, task: str) -> None:
    """Point one row of `task` at the output of another row of the same task: a valid blob
    of the right kind, so nothing but a fresh run can tell."""
    with sqlite3.connect(cache / "gradshard.sqlite3") as db:
        rows = db.execute("SELECT key, output FROM tasks WHERE task = ? ORDER BY key",
                          (task,)).fetchall()
        outputs = sorted({output for _, output in rows})
        assert len(outputs) > 1, rows
        key, output = rows[0]
        other = next(o for o in outputs if o != output)
        db.execute("UPDATE tasks SET output = ? WHERE key = ?", (other, key))


@pytest.fixture
def built(tmp_path, capsys) -> tuple[Path, Path]:
    out, cache = tmp_path / "out", tmp_path / "cache"
    code, _, err = build(capsys, out, cache)
    assert code == 0, err
    return out, cache


def test_an_untouched_cache_verifies(built, capsys, tmp_path):
    _, cache = built
    code, report, err = build(capsys, tmp_path / "again", cache, "--verify")
    assert code == 0, err
    # every task ran, and every one had a row to compare with
    assert report["verify"]["compared"] == report["tasks"]["run"] > 100
    assert report["verify"]["disagreements"] == []
    assert report["tasks"]["reused"] == 0  # every task ran


def test_a_tampered_row_is_found_named_and_rewritten(built, capsys, tmp_path):
    out, cache = built
    point_row_elsewhere(cache, "assemble.functions")
    point_row_elsewhere(cache, "render.node")
    code, report, err = build(capsys, tmp_path / "verified", cache, "--verify")
    assert code == 6, err
    tasks = sorted(d["task"] for d in report["verify"]["disagreements"])
    assert tasks == ["assemble.functions", "render.node"], report["verify"]
    assert "assemble.functions [" in err and "render.node [" in err
    assert "2 cached result(s) disagree" in err
    for name in ("Functions.cpp", "Functions.h"):  # written from the fresh run
        assert (tmp_path / "verified" / name).read_bytes() == (out / name).read_bytes()
    code, report, err = build(capsys, tmp_path / "verified-again", cache, "--verify")
    assert code == 0 and report["verify"]["disagreements"] == [], err


def test_verify_needs_a_cache(capsys, tmp_path):
    code = main(["build", "--codegen-only", "--spec", str(MINI_SPEC), "--out",
                 str(tmp_path / "out"), "--no-cache", "--verify"])
    assert code == 2
    assert "--verify" in capsys.readouterr().err


@pytest.mark.compiler
@pytest.mark.slow
def test_a_tampered_compile_layout_row_is_found(tmp_path, capsys, seeded_pchs):
    """The compile step's own tasks are verified too: a formula unit's source row pointed at
    another unit's source would compile the wrong code."""
    out, cache = tmp_path / "out", seeded_pchs(tmp_path / "cache")
    units = ["--shard-nodes", "2,4,0", "--units", "Functions_formulas_0"]
    code, _, err = build(capsys, out, cache)
    assert code == 0, err
    code = main(["build", "--spec", str(MINI_SPEC), "--out", str(out), "--cache", str(cache),
                 *units])
    assert code == 0
    capsys.readouterr()
    point_row_elsewhere(cache, "compile.formula_shard")
    code = main(["build", "--json", "--spec", str(MINI_SPEC), "--out", str(tmp_path / "again"),
                 "--cache", str(cache), "--verify", *units])
    captured = capsys.readouterr()
    assert code == 6, captured.err
    report = json.loads(captured.out)
    assert [d["task"] for d in report["verify"]["disagreements"]] == ["compile.formula_shard"]
    assert "compile.formula_shard [" in captured.err
