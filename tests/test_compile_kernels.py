"""VariableType's kernels in the compile layout, on the real 2.13 spec: a kernel unit compiles
against the installed torch headers, and a forward formula that does not compile is shown
at its derivatives.yaml line (the kernel unit's kernels are its "nodes", each with the entry
its formulas come from)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from gradshard.pipeline.compile_layout import compile_shard
from support.compile import run_build

pytestmark = [pytest.mark.compiler, pytest.mark.slow]

MM_FORWARD = "  result: at::mm(self_t, mat2_p) + at::mm(self_p, mat2_t)\n"
BROKEN = "  result: at::mm(self_t, mat2_p) + no_such_jvp_anywhere(self_p, mat2_t)\n"
KERNEL_UNITS = 48  # 2.13's kernels: 3·2^4 units of at most 64 functions


def mm_unit() -> str:
    return f"VariableType_k{compile_shard('mm', KERNEL_UNITS):02d}"


@pytest.fixture(scope="module")
def spec_copy(tmp_path_factory, packaged_spec) -> tuple[Path, Path]:
    """A copy of the real spec, and a cache its tests share (one PCH build)."""
    root = tmp_path_factory.mktemp("kernels")
    shutil.copytree(packaged_spec, root / "spec",
                    ignore=shutil.ignore_patterns("__pycache__", "*.py"))
    return root / "spec", root / "cache"


def test_a_kernel_unit_compiles(spec_copy, tmp_path, capsys):
    spec, cache = spec_copy
    code, report, err = run_build(capsys, spec, tmp_path / "out", cache, "--units", mm_unit())
    assert code == 0, err
    assert report["compile"]["compiled"] == [mm_unit()]
    source = (tmp_path / "out" / "compile" / "src" / f"{mm_unit()}.cpp").read_text()
    assert "at::Tensor mm(c10::DispatchKeySet ks" in source
    assert '#include "gradshard/nodes/MmBackward0.h"' in source
    assert 'TORCH_LIBRARY_IMPL(aten, Autograd, m) {' in source


def test_a_forward_formula_error_is_shown_at_its_line(spec_copy, tmp_path, capsys):
    spec, cache = tmp_path / "spec", spec_copy[1]
    shutil.copytree(spec_copy[0], spec)
    derivatives = spec / "autograd" / "derivatives.yaml"
    text = derivatives.read_text()
    assert MM_FORWARD in text
    derivatives.write_text(text.replace(MM_FORWARD, BROKEN, 1))
    line = derivatives.read_text().splitlines().index(BROKEN.rstrip("\n")) + 1
    code, report, err = run_build(capsys, spec, tmp_path / "out", cache, "--units", mm_unit())
    assert code == 3
    assert f"{derivatives}:{line}: error: generated code for mm (mm)" in err
    assert "no_such_jvp_anywhere" in err
    assert report["failed"] == [mm_unit()]
    assert report["errors"][0]["line"] == line
