"""VariableType's kernels in the compile layout, on the real 2.13 spec: a cold build compiles
kernel units merged (their kernels weak, their registrations in the merged unit), a
forward-formula edit compiles the edited op's forward unit alone (its kernels call the
formula there) and splices it over the stored merged object, and a forward formula that does
not compile is shown at its derivatives.yaml line (a kernel or forward unit's kernels are its
"nodes", each with the entry its formulas come from)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from support.compile import run_build
from support.programs import install_programs

from gradshard.pipeline.layout.compile_layout import (MERGED_KERNEL_PREFIX, forward_unit_name,
                                                      kernel_unit_name)
from gradshard.service.cli import main

pytestmark = [pytest.mark.compiler, pytest.mark.slow]

MM_FORWARD = "  result: at::mm(self_t, mat2_p) + at::mm(self_p, mat2_t)\n"
SWAPPED = "  result: at::mm(self_p, mat2_t) + at::mm(self_t, mat2_p)\n"
BROKEN = "  result: at::mm(self_t, mat2_p) + no_such_jvp_anywhere(self_p, mat2_t)\n"
_KERNEL_SYMBOL = re.compile(r"^\S+ ([A-Z]) torch::autograd::VariableType::\w+::(\w+)\(c10::Disp",
                            re.M)
_FORWARD_SYMBOL = re.compile(r"^\S+ ([A-Z]) torch::autograd::VariableType::fw_\w+::(\w+)\(", re.M)
MM_UNIT = kernel_unit_name("mm")
MM_FORWARD_UNIT = forward_unit_name("mm")
MM_UNITS = ("--units", MM_UNIT, "--units", MM_FORWARD_UNIT)


def merged_of(out: Path, part: str) -> str:
    """The merged unit that includes `part`."""
    for source in (out / "compile" / "src").glob(f"{MERGED_KERNEL_PREFIX}*.cpp"):
        if f'#include "{part}.cpp"' in source.read_text():
            return source.stem
    raise AssertionError(f"no merged unit includes {part}")


def defined_symbols(obj: Path) -> str:
    """What the object defines, as `nm -C --defined-only` lists it."""
    return subprocess.run(["nm", "-C", "--defined-only", str(obj)], capture_output=True,
                          text=True, check=True).stdout


def kernel_symbols(obj: Path, pattern: re.Pattern = _KERNEL_SYMBOL) -> dict[str, str]:
    """Kernel (or forward formula) → how the object defines it (nm's letter: W weak, T
    strong)."""
    return {kernel: kind for kind, kernel in pattern.findall(defined_symbols(obj))}


@pytest.fixture(scope="module")
def spec_copy(tmp_path_factory, packaged_spec, seeded_pchs) -> tuple[Path, Path]:
    """A copy of the real spec, and a cache its tests share (one build of the PCH of the
    kernel units; the forward units' is the session's: the mini spec's formula units have
    the same)."""
    root = tmp_path_factory.mktemp("kernels")
    shutil.copytree(packaged_spec, root / "spec",
                    ignore=shutil.ignore_patterns("__pycache__", "*.py"))
    return root / "spec", seeded_pchs(root / "cache")


@pytest.fixture(scope="module")
def cold(spec_copy, tmp_path_factory) -> Path:
    """--out of a cold build of the merged unit holding mm's kernel unit (a unit named is
    compiled through its merged unit)."""
    spec, cache = spec_copy
    out = tmp_path_factory.mktemp("kernels-cold") / "out"
    code = main(["build", "--spec", str(spec), "--out", str(out), "--cache", str(cache),
                 *MM_UNITS])
    assert code == 0
    return out


def linked_objects(out: Path) -> list[str]:
    return sorted(p.stem for p in (out / "compile" / "obj").glob("*.o"))


def test_a_cold_build_compiles_kernel_units_merged(cold):
    merged = merged_of(cold, MM_UNIT)
    assert linked_objects(cold) == [merged]
    out = cold
    src = out / "compile" / "src"
    part = (src / f"{MM_UNIT}.cpp").read_text()
    assert "namespace torch::autograd::VariableType::op_mm {" in part
    assert "GRADSHARD_KERNEL_LINKAGE at::Tensor mm(c10::DispatchKeySet ks" in part
    assert '#include "gradshard/nodes/MmBackward0.h"' in part
    assert "TORCH_LIBRARY_IMPL" not in part  # the merged unit registers its parts' kernels
    call = ("::torch::autograd::VariableType::fw_mm::mm_forward_0(result_new_fw_grad_opt, "
            "self_t, self_p, mat2_t, mat2_p);")
    assert call in part and "at::mm(self_t, mat2_p)" not in part
    forward = (src / f"{MM_FORWARD_UNIT}.cpp").read_text()
    assert "result_new_fw_grad_opt = at::mm(self_t, mat2_p) + at::mm(self_p, mat2_t);" in forward
    whole = (src / f"{merged}.cpp").read_text()
    assert f'#include "{MM_UNIT}.cpp"' in whole
    assert f'#include "{MM_FORWARD_UNIT}.cpp"' in whole
    assert "TORCH_LIBRARY_IMPL(aten, Autograd, m) {" in whole
    assert "using op_mm::mm;" in whole
    assert 'm.impl("mm",\n       TORCH_FN(VariableType::mm)\n);' in whole
    symbols = kernel_symbols(out / "compile" / "obj" / f"{merged}.o")
    assert symbols["mm"] == "W" and set(symbols.values()) == {"W"}
    forward = kernel_symbols(out / "compile" / "obj" / f"{merged}.o", _FORWARD_SYMBOL)
    assert forward["mm_forward_0"] == "W" and set(forward.values()) == {"W"}


def test_a_forward_formula_edit_splices_its_forward_unit(spec_copy, cold, tmp_path, capsys):
    spec, cache = tmp_path / "spec", spec_copy[1]
    shutil.copytree(spec_copy[0], spec)
    out = tmp_path / "out"
    shutil.copytree(cold, out)
    merged = merged_of(out, MM_UNIT)
    derivatives = spec / "autograd" / "derivatives.yaml"
    text = derivatives.read_text()
    assert MM_FORWARD in text
    derivatives.write_text(text.replace(MM_FORWARD, SWAPPED, 1))
    code, report, err = run_build(capsys, spec, out, cache, *MM_UNITS)
    assert code == 0, err
    assert report["compile"]["compiled"] == [MM_FORWARD_UNIT]  # not the kernels' unit
    assert report["compile"]["spliced"] == [merged]
    obj = out / "compile" / "obj"
    part = kernel_symbols(obj / "parts" / f"{MM_FORWARD_UNIT}.o", _FORWARD_SYMBOL)
    assert part["mm_forward_0"] == "T" and set(part.values()) == {"T"}
    # the part's formulas replace the merged unit's, which its kernels call; kernels stay weak
    before = kernel_symbols(cold / "compile" / "obj" / f"{merged}.o", _FORWARD_SYMBOL)
    spliced = kernel_symbols(obj / f"{merged}.o", _FORWARD_SYMBOL)
    assert spliced == {k: "T" if k in part else "W" for k in before}
    assert set(kernel_symbols(obj / f"{merged}.o").values()) == {"W"}
    assert linked_objects(out) == [merged]  # the part is not linked twice


def test_a_forward_formula_error_is_shown_at_its_line(spec_copy, cold, tmp_path, capsys):
    spec, cache = tmp_path / "spec", spec_copy[1]
    shutil.copytree(spec_copy[0], spec)
    derivatives = spec / "autograd" / "derivatives.yaml"
    text = derivatives.read_text()
    derivatives.write_text(text.replace(MM_FORWARD, BROKEN, 1))
    line = derivatives.read_text().splitlines().index(BROKEN.rstrip("\n")) + 1
    code, report, err = run_build(capsys, spec, tmp_path / "out", cache, *MM_UNITS)
    assert code == 3
    assert f"{derivatives}:{line}: error: generated code for mm (mm)" in err
    assert "no_such_jvp_anywhere" in err
    assert sorted(report["failed"]) == sorted([MM_FORWARD_UNIT,
                                               merged_of(tmp_path / "out", MM_UNIT)])
    assert report["errors"][0]["line"] == line


def test_clang_compiles_a_merged_kernel_unit_and_splices_a_forward_edit(spec_copy, tmp_path,
                                                                        capsys):
    """Clang rejects a weak kernel in TORCH_FN's static_assert, so the merged unit registers
    its kernels through their addresses at run time under clang: the merged unit compiles,
    its kernels and forward formulas stay weak, and a forward edit is spliced as with GCC,
    its PCH accepted though a header it holds was written again (the same text)."""
    install_programs("clang++")
    spec, cache = tmp_path / "spec", tmp_path / "cache"
    shutil.copytree(spec_copy[0], spec)
    out = tmp_path / "out"
    clang = ("--cxx", "clang++", *MM_UNITS)
    code, report, err = run_build(capsys, spec, out, cache, *clang)
    assert code == 0, err
    merged = merged_of(out, MM_UNIT)
    assert report["compile"]["compiled"] == [merged]
    obj = out / "compile" / "obj"
    assert set(kernel_symbols(obj / f"{merged}.o").values()) == {"W"}
    # registered by address: the runtime-function wrapper
    assert "WrapFunctionIntoRuntimeFunctor_" in defined_symbols(obj / f"{merged}.o")
    # --out made anew writes the Functions.h prelude the PCHs hold again: same text, new mtime
    prelude = out / "compile" / "include" / "torch/csrc/autograd/generated/Functions.h"
    later = prelude.stat().st_mtime + 100
    os.utime(prelude, (later, later))
    derivatives = spec / "autograd" / "derivatives.yaml"
    derivatives.write_text(derivatives.read_text().replace(MM_FORWARD, SWAPPED, 1))
    code, report, err = run_build(capsys, spec, out, cache, *clang)
    assert code == 0, err
    assert report["compile"]["compiled"] == [MM_FORWARD_UNIT]
    assert report["compile"]["spliced"] == [merged]
    spliced = kernel_symbols(obj / f"{merged}.o", _FORWARD_SYMBOL)
    assert spliced["mm_forward_0"] == "T"
    assert set(kernel_symbols(obj / f"{merged}.o").values()) == {"W"}
