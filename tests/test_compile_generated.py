"""Generated C++ compiles: one translation unit of Functions.cpp's prefix plus a handful of
nodes (a foreach one among them), against a Functions.h holding the same nodes, checked by
g++ -std=c++20 -fsyntax-only with the installed torch 2.13 headers."""

from __future__ import annotations

import shutil
import subprocess
import sysconfig
from pathlib import Path

import pytest
from support.graph_run import spec_records

from gradshard.pipeline.render.template_names import AUTOGRAD_TEMPLATES
from gradshard.pipeline.render.templating import functions_files, render_node
from gradshard.service.files.spec_location import locate_spec
from gradshard.service.files.inputs import gradshard_templates, spec_templates

pytestmark = pytest.mark.compiler

# A spread of node shapes: tensors, scalars, SymInt arrays, tensor lists (ITensorListRef),
# optional tensor lists, strings, named gradients, grad_input_mask, retain_variables, foreach.
NODES = ["MulBackward0", "AddBackward0", "ExpandBackward0", "CatBackward0", "IndexBackward0",
         "DivBackward3", "MaxBackward0", "NativeBatchNormBackward0", "CudnnRnnBackward0",
         "ForeachAddBackward0List", "ForeachMulBackward1Scalar", "ExpandBackward0_copy"]


def compile_flags() -> list[str]:
    include = locate_spec(None).root.parent.parent / "torch" / "include"
    return ["-std=c++20", "-fsyntax-only", "-w", f"-I{include}",
            f"-I{include / 'torch' / 'csrc' / 'api' / 'include'}",
            f"-I{sysconfig.get_paths()['include']}", "-DTORCH_API_INCLUDE_EXTENSION_H"]


@pytest.fixture(scope="module")
def translation_unit(tmp_path_factory) -> Path:
    location = locate_spec(None)
    analysis = spec_records(location.root)
    chosen = [n for n in analysis.nodes if n.op in NODES]
    assert sorted(n.op for n in chosen) == sorted(NODES)
    files = functions_files([render_node(n, gradshard_templates()) for n in chosen],
                            spec_templates(location, AUTOGRAD_TEMPLATES), location.layout)
    root = tmp_path_factory.mktemp("compile")
    header = root / "include" / "torch" / "csrc" / "autograd" / "generated" / "Functions.h"
    header.parent.mkdir(parents=True)
    header.write_text(files["Functions.h"])  # shadows the installed one
    source = root / "Functions.cpp"
    source.write_text(files["Functions.cpp"])
    return source


def test_nodes_compile_with_gxx(translation_unit):
    gxx = shutil.which("g++")
    assert gxx, "g++ is required (the system toolchain)"
    include = translation_unit.parent / "include"
    done = subprocess.run([gxx, f"-I{include}", *compile_flags(), str(translation_unit)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-5000:]


def test_a_broken_formula_fails_to_compile(translation_unit, tmp_path):
    """The check can fail: the same unit with an undefined function in a formula."""
    broken = tmp_path / "Functions.cpp"
    text = translation_unit.read_text()
    assert "mul_tensor_backward(grad, other, self_scalar_type)" in text
    broken.write_text(text.replace("mul_tensor_backward(grad, other, self_scalar_type)",
                                   "no_such_function_anywhere(grad)", 1))
    include = translation_unit.parent / "include"
    done = subprocess.run(["g++", f"-I{include}", *compile_flags(), str(broken)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode != 0 and "no_such_function_anywhere" in done.stderr
