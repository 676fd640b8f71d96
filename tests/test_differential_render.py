"""Every generated file byte for byte against torchgen 2.13, run in this test on the same
spec: Functions.h/.cpp, python_functions*, and all of gen_python_functions' files, for the
real spec, the real one laid out as a checkout, the mini spec, and hand-edited copies."""

from __future__ import annotations

from pathlib import Path

import pytest

from support.graph_run import generated_files
from support.oracle import file_digests, torchgen_files
from support.spec_edits import ALL_FILES, EDITS, apply_edits
from support.specs import MINI_SPEC, stage_checkout_spec, stage_packaged_spec

def gradshard_files(spec_dir: Path) -> dict[str, str]:
    return generated_files(spec_dir)


def assert_identical(ours: dict[str, str], theirs: dict[str, str]) -> None:
    """Our files (texts) equal torchgen's (content hashes), every one of them."""
    assert sorted(theirs) == sorted(ALL_FILES)
    assert sorted(ours) == sorted(theirs)
    different = [name for name, digest in file_digests(ours).items() if theirs[name] != digest]
    assert not different, f"differ from torchgen: {different}"


def render_both(tmp_path: Path, pythonpath: Path, spec_dir: Path) -> None:
    assert_identical(gradshard_files(spec_dir), torchgen_files(spec_dir, pythonpath, tmp_path))


def test_real_spec_is_byte_identical(tmp_path):
    pythonpath, spec_dir = stage_packaged_spec(tmp_path / "stage")
    render_both(tmp_path, pythonpath, spec_dir)
    files = gradshard_files(spec_dir)
    assert files["Functions.h"].count("struct TORCH_API ") == 711
    assert "// @generated from packaged/autograd/templates/Functions.h\n" in files["Functions.h"]


def test_checkout_layout_is_byte_identical(tmp_path):
    pythonpath, spec_dir = stage_checkout_spec(tmp_path / "pytorch")
    render_both(tmp_path, pythonpath, spec_dir)
    assert "// @generated from ../tools/autograd/templates/Functions.cpp\n" in \
        gradshard_files(spec_dir)["Functions.cpp"]


@pytest.mark.parametrize("name", list(EDITS))
def test_edited_spec_is_byte_identical(name, tmp_path):
    pythonpath, spec_dir = stage_packaged_spec(tmp_path / "stage")
    apply_edits(spec_dir, EDITS[name])
    render_both(tmp_path, pythonpath, spec_dir)


def test_mini_spec_is_byte_identical(tmp_path):
    import shutil
    pythonpath, spec_dir = stage_packaged_spec(tmp_path / "stage")
    for name in ("ATen/native/native_functions.yaml", "ATen/native/tags.yaml",
                 "autograd/derivatives.yaml", "autograd/deprecated.yaml"):
        shutil.copy(MINI_SPEC / name, spec_dir / name)
    render_both(tmp_path, pythonpath, spec_dir)
