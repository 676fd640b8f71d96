"""`gradshard build` with the cache (summary, JSON, stale files), `stats` and `gc`."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from support.specs import FLAT_FILES, MINI_SPEC, mini_spec_pair

from gradshard.cache.maintenance import parse_size
from gradshard.cache.store.database import Store
from gradshard.service.cli import main


def run(capsys, *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def specs(tmp_path) -> tuple[Path, Path]:
    old = "self: at::sum_to(grad, self.sym_sizes())"
    return mini_spec_pair(tmp_path, old, old + " * 2")


def build(capsys, spec: Path, out: Path, cache: Path) -> dict:
    code, stdout, err = run(capsys, "build", "--codegen-only", "--spec", str(spec), "--out",
                            str(out), "--cache", str(cache), "--json")
    assert code == 0, err
    return json.loads(stdout)


def test_build_summary_names_the_work(tmp_path, specs, capsys):
    base, edited = specs
    cache, out = tmp_path / "cache", tmp_path / "out"
    first = build(capsys, base, out, cache)
    assert first["status"] == "built" and first["tasks"]["reused"] == 0
    assert len(first["files"]["written"]) == FLAT_FILES
    code, text, _ = run(capsys, "build", "--codegen-only", "--spec", str(edited), "--out",
                        str(out), "--cache", str(cache))
    assert code == 0
    assert f"(1 written, {FLAT_FILES - 1} unchanged)" in text
    assert "parse.derivative expand (changed: entry)" in text
    assert "time:" in text and f"cache: {cache}" in text
    again = build(capsys, edited, out, cache)
    assert again["status"] == "up to date" and again["files"]["written"] == []


def test_files_an_earlier_build_wrote_are_removed(tmp_path, specs, capsys):
    base, _ = specs
    cache, out = tmp_path / "cache", tmp_path / "out"
    build(capsys, base, out, cache)
    (out / "python_functions_9.cpp").write_text("// written by an older layout\n")
    (out / "notes.txt").write_text("mine\n")
    store = Store.open(cache, print)  # as if the last build had written it
    last = store.latest_manifest(out=str(out.resolve()))
    store.set_manifest(last.spec, last.out, last.build, last.inputs,
                       {**last.files, "python_functions_9.cpp": "0" * 32}, last.manifest)
    store.close()
    report = build(capsys, base, out, cache)
    assert report["files"]["removed"] == ["python_functions_9.cpp"]
    assert not (out / "python_functions_9.cpp").exists() and (out / "notes.txt").exists()


def test_no_cache_runs_everything_and_keeps_nothing(tmp_path, specs, capsys, private_cache):
    base, _ = specs
    code, stdout, _ = run(capsys, "build", "--codegen-only", "--spec", str(base), "--out",
                          str(tmp_path / "out"), "--no-cache", "--json")
    report = json.loads(stdout)
    assert code == 0 and report["cache"] is None and report["tasks"]["reused"] == 0
    assert not private_cache.exists()


def test_stats(tmp_path, specs, capsys):
    base, edited = specs
    cache = tmp_path / "cache"
    build(capsys, base, tmp_path / "a", cache)
    build(capsys, edited, tmp_path / "a", cache)
    build(capsys, edited, tmp_path / "a", cache)
    code, text, _ = run(capsys, "stats", "--cache", str(cache))
    assert code == 0 and "builds: 3 (1 up to date)" in text and "#3" in text
    # in build's words: looked up = run + reused, on the totals' line and each build's
    counted = [tuple(int(n.replace(",", "")) for n in found) for found in re.findall(
        r"tasks: ([\d,]+) looked up: ([\d,]+) run, ([\d,]+) reused", text)]
    assert len(counted) == 4 and all(up == run + reused for up, run, reused in counted)
    code, stdout, _ = run(capsys, "stats", "--cache", str(cache), "--json")
    report = json.loads(stdout)
    assert report["totals"]["builds"] == 3 and report["blobs"] > 0 and report["tasks"] > 0
    assert [b["status"] for b in report["builds"]] == ["up to date", "built", "built"]


def test_gc_keeps_what_the_latest_builds_need(tmp_path, specs, capsys):
    """Under a limit, gc keeps what the last build of each output directory needs: the
    base spec's build into `a` was followed by the edited spec's, so it goes first."""
    base, edited = specs
    cache = tmp_path / "cache"
    build(capsys, base, tmp_path / "a", cache)
    build(capsys, edited, tmp_path / "a", cache)
    code, stdout, _ = run(capsys, "gc", "--cache", str(cache), "--json")
    assert code == 0 and json.loads(stdout)["kept_builds"] == 2
    code, stdout, _ = run(capsys, "gc", "--cache", str(cache), "--max-size", "1k", "--json")
    report = json.loads(stdout)
    assert report["kept_builds"] == 1 and report["dropped_builds"] == 1
    assert report["removed_blobs"] > 0 and report["after_bytes"] < report["before_bytes"]
    assert any("last build of each output directory" in w for w in report["warnings"])
    shutil.rmtree(tmp_path / "a")
    again = build(capsys, edited, tmp_path / "a", cache)  # the kept build: nothing reruns
    assert again["tasks"]["run"] == 0 and len(again["files"]["written"]) == FLAT_FILES
    other = build(capsys, base, tmp_path / "b", cache)  # the dropped one: rebuilt, correct
    assert other["status"] == "built"


def test_cache_commands_need_a_cache(tmp_path, capsys):
    code, _, err = run(capsys, "stats", "--cache", str(tmp_path / "none"))
    assert code == 2 and "no cache" in err
    code, _, err = run(capsys, "gc", "--cache", str(tmp_path), "--max-size", "lots")
    assert code == 2 and "--max-size" in err


@pytest.mark.parametrize("text,size", [("500M", 500 << 20), ("2G", 2 << 30), ("1.5GiB", 3 << 29),
                                       ("800k", 800 << 10), ("1024", 1024), ("3MB", 3 << 20)])
def test_sizes(text, size):
    assert parse_size(text) == size


def test_bad_sizes():
    for text in ("", "M", "-5M", "big"):
        with pytest.raises(ValueError):
            parse_size(text)


def test_gc_removes_the_compiled_templates_older_versions_kept(tmp_path, capsys):
    """CACHE/jinja/ held Jinja's compiled templates (code); nothing reads it now, gc drops it."""
    from gradshard.service.cli import main

    cache = tmp_path / "cache"
    assert main(["build", "--codegen-only", "--spec", str(MINI_SPEC), "--out",
                 str(tmp_path / "out"), "--cache", str(cache)]) == 0
    (cache / "jinja").mkdir()
    (cache / "jinja" / "__jinja2_0123.cache").write_bytes(b"\x80\x04stale")
    assert main(["gc", "--cache", str(cache)]) == 0
    capsys.readouterr()
    assert not (cache / "jinja").exists()
