"""The drop-in: `build --tree pytorch` writes generate_code's paths under --out, only what
changed, and `--subset` / `--disable-autograd` choose generate_code's files (service/tree.py)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gradshard.service.tree import (FIRST_STAGE, Placement, index_names, placed_files,
                                    subset_of)
from support.spec_edits import ALL_FILES, TREE_FILES
from support.specs import MINI_SPEC

INDEX = {name: f"h{k}" for k, name in enumerate([*ALL_FILES, FIRST_STAGE])}
GENERATED = "torch/csrc/autograd/generated"


def test_flat_is_every_file_but_the_first_stage():
    assert sorted(placed_files(INDEX, Placement())) == sorted(ALL_FILES)


def test_pytorch_is_generate_codes_tree():
    placed = placed_files(INDEX, Placement("pytorch"))
    assert sorted(placed) == TREE_FILES
    assert placed[f"{GENERATED}/templates/VariableType.cpp"] == INDEX[FIRST_STAGE]
    assert index_names(INDEX, Placement("pytorch"))[
        "torch/testing/_internal/generated/annotated_fn_args.py"] == "annotated_fn_args.py"


@pytest.mark.parametrize("subset, expected", [
    ("pybindings", {n for n in ALL_FILES if n.startswith("python_")}),
    ("python", {"annotated_fn_args.py"}),
    ("libtorch", {n for n in [*ALL_FILES, FIRST_STAGE]
                  if not n.startswith("python_") and n != "annotated_fn_args.py"}),
])
def test_a_subset_is_what_its_generator_writes(subset, expected):
    """generate_code.py: pybindings is gen_autograd_python, libtorch gen_autograd, python
    gen_annotated_fn_args."""
    placed = placed_files(INDEX, Placement("pytorch", subset))
    assert {p.rsplit("/", 1)[-1] if "/templates/" not in p else FIRST_STAGE
            for p in placed} == expected
    assert all(subset_of(name) == subset for name in expected)


def test_disabled_autograd_leaves_the_kernels_out():
    placed = placed_files(INDEX, Placement("pytorch", autograd=False))
    names = {p.rsplit("/", 1)[-1] for p in placed}
    assert not any(n.startswith(("VariableType", "ADInplaceOrViewType", "TraceType"))
                   for n in names) and "templates/VariableType.cpp" not in placed
    assert {"Functions.h", "ViewFuncs.h", "variable_factories.h", "annotated_fn_args.py",
            "python_functions_0.cpp"} <= names


def test_words_are_empty_for_the_default():
    assert Placement().words() == {}
    assert Placement("pytorch", "python", False).words() == {
        "tree": "pytorch", "subset": "python", "autograd": "disabled"}


def gradshard(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gradshard.service.cli", *args], cwd=cwd,
                          capture_output=True, text=True, env={**os.environ, "COLUMNS": "200"})


def test_the_drop_in_writes_only_what_changed(tmp_path):
    """A second build leaves every file (and its mtime) alone; an edit rewrites only the files
    it changes; switching the tree rewrites the out directory's files at their new paths and
    removes the old ones."""
    spec = tmp_path / "spec"
    shutil.copytree(MINI_SPEC, spec)
    out, cache = tmp_path / "checkout", tmp_path / "cache"
    words = ["build", "--spec", str(spec), "--out", str(out), "--cache", str(cache),
             "--codegen-only", "--tree", "pytorch"]
    first = gradshard(*words, cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    files = sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file())
    assert files == TREE_FILES
    stamps = {p: p.stat().st_mtime_ns for p in out.rglob("*") if p.is_file()}
    again = gradshard(*words, cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert {p: p.stat().st_mtime_ns for p in stamps} == stamps
    template = spec / "autograd" / "templates" / "TraceType.cpp"
    template.write_text(template.read_text().replace("using namespace at;",
                                                     "using namespace at; // edited"))
    edited = gradshard(*words, cwd=tmp_path)
    assert edited.returncode == 0, edited.stderr
    changed = sorted(str(p.relative_to(out)) for p, stamp in stamps.items()
                     if p.stat().st_mtime_ns != stamp)
    assert changed == sorted(f for f in TREE_FILES if f.rsplit("/", 1)[-1].startswith("TraceType"))
    flat = gradshard(*words[:-2], cwd=tmp_path)
    assert flat.returncode == 0, flat.stderr
    assert sorted(p.name for p in out.iterdir() if p.is_file()) == sorted(ALL_FILES)
    assert not any(p.is_file() for p in (out / "torch").rglob("*"))
