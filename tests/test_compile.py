"""The compile stage on the mini spec: real g++, real ninja, real precompiled headers and the
object cache, against the installed torch 2.13 headers.

The mini spec's Python binding files name operators real torch lacks, so these tests compile
the autograd units (Functions shards and python_functions); the full spec's whole set is
compiled by test_compile_full.py.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from conftest import MINI_SPEC, mini_spec_pair
from gradshard.pipeline.compile_layout import ShardSettings, functions_shards, shard_count
from gradshard.service.cli import main

AUTOGRAD_UNITS = ["--units", "Functions_*", "--units", "python_functions_*"]
SHARDS = ["--nodes-per-shard", "2"]  # 8 nodes → 4 Functions shards
MUL_OTHER = "other: mul_tensor_backward(grad, self, other.scalar_type())"


def build(capsys, spec: Path, out: Path, cache: Path, *extra: str) -> tuple[int, dict, str]:
    code = main(["build", "--spec", str(spec), "--out", str(out), "--cache", str(cache),
                 "--json", "-j", "2", *SHARDS, *AUTOGRAD_UNITS, *extra])
    captured = capsys.readouterr()
    return code, json.loads(captured.out) if captured.out.strip() else {}, captured.err


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    """One cold compile of the mini spec's autograd units into a shared cache."""
    root = tmp_path_factory.mktemp("compile")
    out, cache = root / "out", root / "cache"
    code = main(["build", "--spec", str(MINI_SPEC), "--out", str(out), "--cache", str(cache),
                 "-j", "2", *SHARDS, *AUTOGRAD_UNITS])
    assert code == 0
    return root, out, cache


def test_autograd_units_compile(compiled, capsys):
    root, out, cache = compiled
    code, report, err = build(capsys, MINI_SPEC, out, cache)
    assert code == 0, err
    units = report["compile"]
    assert units["failed"] == [] and units["units"] == 9
    assert units["compiled"] == [] and units["cached"] == []  # the second build: nothing to do
    objects = sorted(p.name for p in (out / "compile" / "obj").glob("*.o"))
    assert objects == sorted([f"Functions_{k}.o" for k in range(4)]
                             + [f"python_functions_{k}.o" for k in range(5)])
    commands = json.loads((out / "compile" / "compile_commands.json").read_text())
    assert len(commands) == 9
    for entry in commands:
        assert (Path(entry["directory"]) / entry["file"]).is_file()
        assert "-c" in entry["arguments"] and "-std=c++20" in entry["arguments"]
    for log in (out / "compile" / "obj").glob("*.log"):
        assert "pch" not in log.read_text().lower(), log  # every unit used its PCH


def test_units_see_only_their_nodes(compiled):
    root, out, cache = compiled
    shard = next((out / "compile" / "src").glob("Functions_*.cpp")).read_text()
    included = [line for line in shard.splitlines() if line.startswith('#include "gradshard/')]
    assert 1 <= len(included) < 8
    prelude = out / "compile/include/torch/csrc/autograd/generated/Functions.h"
    assert "struct TORCH_API" not in prelude.read_text()


def test_restored_cache_compiles_nothing(compiled, capsys, tmp_path):
    root, out, cache = compiled
    code, report, err = build(capsys, MINI_SPEC, tmp_path / "fresh-checkout", cache)
    assert code == 0, err
    assert report["compile"]["compiled"] == [] and len(report["compile"]["cached"]) == 9


def test_edited_formula_recompiles_one_shard(compiled, capsys, tmp_path):
    root, out, cache = compiled
    base, edited = mini_spec_pair(tmp_path, MUL_OTHER, MUL_OTHER.replace("grad,", "grad * 2,"))
    work = tmp_path / "out"
    shutil.copytree(out, work)
    code, report, err = build(capsys, edited, work, cache)
    assert code == 0, err
    compiled_units = report["compile"]["compiled"]
    assert len(compiled_units) == 1 and compiled_units[0].startswith("Functions_")


def test_formula_error_is_shown_at_its_line(compiled, capsys, tmp_path):
    root, out, cache = compiled
    base, edited = mini_spec_pair(tmp_path, MUL_OTHER,
                                  "other: no_such_function_anywhere(grad, self)")
    derivatives = edited / "autograd" / "derivatives.yaml"
    line = derivatives.read_text().splitlines().index(
        "  other: no_such_function_anywhere(grad, self)") + 1
    code, report, err = build(capsys, edited, tmp_path / "out", cache)
    assert code == 3
    assert f"{derivatives}:{line}: error: generated code for mul.Tensor (MulBackward0)" in err
    assert "other: no_such_function_anywhere(grad, self)" in err
    assert "no_such_function_anywhere" in err and "was not declared in this scope" in err
    assert report["failed"] and all(u.startswith("Functions_") for u in report["failed"])
    assert report["errors"][0]["line"] == line
    # the other units compiled (from the cache): one failing shard does not stop them
    assert len(list((tmp_path / "out" / "compile" / "obj").glob("*.o"))) == 8
    code, _, raw = build(capsys, edited, tmp_path / "out", cache, "--raw")
    assert code == 3 and "src/Functions_" in raw and "no_such_function_anywhere" in raw


def test_shards_are_stable_when_nodes_are_added():
    names = [f"Node{k}Backward0" for k in range(100)]
    settings = ShardSettings(8)
    before = functions_shards(names, settings)
    after = functions_shards(names + ["BrandNewBackward0"], settings)
    assert shard_count(100, 8) == shard_count(101, 8) == 16
    changed = [a for a, b in zip(before, after) if a != b]
    assert len(changed) == 1 and len(after) == len(before)


def test_shards_split_in_two_when_the_spec_outgrows_them():
    names = [f"Node{k}Backward0" for k in range(64)]
    small = functions_shards(names, ShardSettings(8))  # 8 shards
    large = functions_shards(names + [f"Extra{k}" for k in range(64)], ShardSettings(8))
    # doubling the count splits each shard: every old pair of co-sharded nodes either stays
    # together or parts, never joins nodes of another shard
    home = {names[i]: k for k, members in enumerate(small) for i in members}
    every = names + [f"Extra{k}" for k in range(64)]
    for members in large:
        old = {home[every[i]] for i in members if every[i] in home}
        assert len(old) <= 1
