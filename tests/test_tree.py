"""The drop-in: `build --tree pytorch` writes generate_code's paths under --out, only what
changed, and `--subset` / `--disable-autograd` choose generate_code's files (service/files/placement.py)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from support.spec_edits import ALL_FILES, TREE_FILES
from support.specs import MINI_SPEC

from gradshard.service.files.placement import (FIRST_STAGE, Placement, index_name, index_names,
                                               placed_files, subset_of)

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


@pytest.mark.parametrize("tree", ["flat", "pytorch"])
def test_each_placed_file_names_its_index_file_back(tree):
    for placed, name in index_names(INDEX, Placement(tree)).items():
        assert index_name(placed, tree) == name
    other = "pytorch" if tree == "flat" else "flat"
    assert not any(index_name(p, tree) for p in placed_files(INDEX, Placement(other)))
    assert index_name(f"{GENERATED}/annotated_fn_args.py", "pytorch") is None


def test_a_build_removes_only_files_its_selection_or_another_tree_wrote():
    libtorch = Placement("pytorch", "libtorch")
    assert libtorch.owns(f"{GENERATED}/Functions.cpp")
    assert libtorch.owns(f"{GENERATED}/templates/VariableType.cpp")
    assert not libtorch.owns(f"{GENERATED}/python_functions_0.cpp")  # pybindings' file
    assert not libtorch.owns("torch/testing/_internal/generated/annotated_fn_args.py")
    assert libtorch.owns("Functions.cpp") and libtorch.owns("python_functions_0.cpp")  # flat's
    no_kernels = Placement(autograd=False)
    assert not no_kernels.owns("VariableType_0.cpp") and no_kernels.owns("Functions.cpp")
    assert no_kernels.owns(f"{GENERATED}/VariableType_0.cpp")  # another tree's


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


def test_subsets_written_into_one_checkout_keep_each_others_files(tmp_path):
    """generate_code run once per subset into one checkout leaves the other subsets' files:
    so do gradshard's builds; the whole set afterwards has nothing to remove or rewrite."""
    spec = tmp_path / "spec"
    shutil.copytree(MINI_SPEC, spec)
    out, cache = tmp_path / "checkout", tmp_path / "cache"
    words = ["build", "--spec", str(spec), "--out", str(out), "--cache", str(cache),
             "--codegen-only", "--tree", "pytorch"]
    for subset in ("pybindings", "libtorch", "python"):
        done = gradshard(*words, "--subset", subset, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
    assert sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file()) == TREE_FILES
    stamps = {p: p.stat().st_mtime_ns for p in out.rglob("*") if p.is_file()}
    whole = gradshard(*words, "--json", cwd=tmp_path)
    assert whole.returncode == 0, whole.stderr
    files = json.loads(whole.stdout)["files"]
    assert files["removed"] == [] and files["written"] == []
    assert {p: p.stat().st_mtime_ns for p in stamps} == stamps
    # a subset's build removes its own files it no longer writes: here, none of the others'
    python_only = gradshard(*words, "--subset", "python", "--json", cwd=tmp_path)
    assert python_only.returncode == 0, python_only.stderr
    assert json.loads(python_only.stdout)["files"]["removed"] == []
    assert all(p.exists() for p in stamps)
    # up to date, it reports its own file only (the others are recorded, not its files)
    again = gradshard(*words, "--subset", "python", "--json", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    report = json.loads(again.stdout)
    assert report["status"] == "up to date" and report["files"]["total"] == 1


def test_files_left_to_another_subset_are_removed_by_a_later_change_of_tree(tmp_path):
    """A subset's build leaves the others' files, and goes on recording them: switching to
    the flat tree afterwards removes every file of the checkout's tree."""
    spec = tmp_path / "spec"
    shutil.copytree(MINI_SPEC, spec)
    out, cache = tmp_path / "checkout", tmp_path / "cache"
    words = ["build", "--spec", str(spec), "--out", str(out), "--cache", str(cache),
             "--codegen-only"]
    for extra in (["--tree", "pytorch"], ["--tree", "pytorch", "--subset", "libtorch"], []):
        done = gradshard(*words, *extra, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
    assert not any(p.is_file() for p in (out / "torch").rglob("*"))
    assert sorted(p.name for p in out.iterdir() if p.is_file()) == sorted(ALL_FILES)
