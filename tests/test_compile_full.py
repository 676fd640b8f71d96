"""The generated set of the real 2.13 spec compiles against the installed torch 2.13 headers:
every formula unit, Functions unit, VariableType unit, python_functions file and binding
file, ADInplaceOrViewType's parts, ViewFuncs.cpp and variable_factories.h, and TraceType's
first parts, with the default toolchain (g++, -std=c++20, at the suite's -O0:
tests/conftest.py), precompiled headers and ninja on every core.

The longest test of the suite: it is the one that proves the generated C++ — not only its
text — is right. TraceType's 24 parts were three fifths of its compile: each is a hash's
share of torchgen's own TraceType kernels (the text PyTorch's build compiles) under the same
preamble, so TRACE_PARTS_COMPILED of them prove the cut compiles, and every part's
registrations are checked against TraceTypeEverything.cpp's in the sources.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import time
from collections import Counter

import pytest
from support.daemon import Running, mtime
from support.graph_run import run_graph

from gradshard.pipeline.layout.compile_layout import ShardSettings

pytestmark = [pytest.mark.compiler, pytest.mark.slow]

TRACE_PARTS = 24  # 3·2^k by the hash (pipeline/layout/compile_layout.py: codegen_kernels)
TRACE_PARTS_COMPILED = 3
# every unit but TraceType's parts after the first TRACE_PARTS_COMPILED (the daemon's too)
UNITS = [word for pattern in ("Functions*", "VariableType*", "python_*", "ADInplaceOrViewType*",
                              "ViewFuncs", "variable_factories",
                              *(f"TraceType_part-{k:02d}" for k in range(TRACE_PARTS_COMPILED)))
         for word in ("--units", pattern)]


@pytest.fixture(scope="module")
def full_compile(tmp_path_factory, packaged_spec):
    """One cold build of a copy of the real spec (the daemon test below edits it)."""
    root = tmp_path_factory.mktemp("full")
    spec, out, cache = root / "spec", root / "out", root / "cache"
    shutil.copytree(packaged_spec, spec, ignore=shutil.ignore_patterns("__pycache__", "*.py"))
    done = subprocess.run([sys.executable, "-m", "gradshard.service.entry", "build", "--spec",
                           str(spec), "--out", str(out), "--cache", str(cache), "--json",
                           *UNITS],
                          capture_output=True, text=True, timeout=3000)
    assert done.returncode == 0, done.stderr[-5000:]
    return root, json.loads(done.stdout)


def test_the_whole_generated_set_compiles(full_compile):
    root, built = full_compile
    out = root / "out"
    report = built["compile"]
    names = report["compiled"]
    assert report["failed"] == [] and report["cached"] == [] and len(names) == report["units"]
    # every unit of the layout was compiled but the TraceType parts left out on purpose: a
    # family UNITS does not name fails here, never goes uncompiled unseen
    layout = run_graph(root / "spec").result.layout(ShardSettings())
    merged_parts = {part for unit in layout.merged for part in unit.parts}
    cold = {u.name for u in (*layout.units, *layout.merged) if u.name not in merged_parts}
    assert cold - set(names) == {
        f"TraceType_part-{k:02d}" for k in range(TRACE_PARTS_COMPILED, TRACE_PARTS)}
    kinds = Counter(re.sub(r"_\d+$", "", n) for n in names)
    assert kinds["python_functions"] == 5 and kinds["python_torch_functions"] == 3
    assert kinds["Functions"] == 3
    # a cold build compiles the 24 formula units as two merged units
    assert kinds["Functions_formulas"] == 0
    assert {"Functions_formulas_00-11", "Functions_formulas_12-23"} <= set(names)
    assert "python_variable_methods" in names
    # VariableType compiles as kernel units (a unit per op) merged by a hash of the op's
    # name into 12, not as torchgen's ten files
    kernel_units = [n for n in names if n.startswith("VariableType_")]
    assert len(kernel_units) == 12 and all(re.fullmatch(r"VariableType_merged-\d\d", n)
                                           for n in kernel_units)
    assert not [n for n in names if re.fullmatch(r"VariableType_\d", n)]
    # the small binding files share one unit, which includes each of them once
    small = ["python_enum_tag", "python_fft_functions", "python_linalg_functions",
             "python_nested_functions", "python_nn_functions", "python_return_types",
             "python_sparse_functions", "python_special_functions"]
    assert kinds["python_bindings"] == 1 and not set(small) & set(names)
    shared = (out / "compile" / "src" / "python_bindings_0.cpp").read_text()
    assert re.findall(r'#include "bindings/(\w+)\.cpp"', shared) == small
    commands = json.loads((out / "compile" / "compile_commands.json").read_text())
    # the formula units, kernel units and forward units, compiled or not
    parts = len([p for p in (out / "compile" / "src").glob("VariableType_*.cpp")
                 if "merged-" not in p.name])
    forward = len(list((out / "compile" / "src").glob("VariableTypeForward_*.cpp")))
    assert len(commands) == report["units"] + 24 + parts + forward and parts > 800
    assert forward > 300

    # Every node's methods are defined exactly once across the objects, as in Functions.o.
    objects = sorted((out / "compile" / "obj").glob("*.o"))
    assert len(objects) == report["units"]
    symbols = subprocess.run(["nm", "-C", "--defined-only", *map(str, objects)],
                             capture_output=True, text=True, check=True).stdout
    nodes = re.findall(r"^struct TORCH_API (\w+) : public",
                       (out / "Functions.h").read_text(), re.M)
    assert len(nodes) > 700
    for method in ("apply(std::vector<at::Tensor, std::allocator<at::Tensor> >&&)",
                   "compiled_args(torch::dynamo::autograd::CompiledNodeArgs&) const"):
        defined = Counter(m for m in re.findall(
            rf" T torch::autograd::generated::(\w+)::{re.escape(method)}$", symbols, re.M))
        assert set(defined) == set(nodes) and set(defined.values()) == {1}, method
    # and every formula once, weak in its merged unit
    formulas = Counter(re.findall(r" W torch::autograd::generated::(\w+)_apply_functional\(",
                                  symbols))
    assert set(formulas) == set(nodes) and set(formulas.values()) == {1}
    for k in range(5):
        assert f"torch::autograd::generated::initialize_autogenerated_functions_{k}(" in symbols
    # every kernel of VariableType once, weak in its merged unit, and registered
    kernels = Counter(re.findall(r" W torch::autograd::VariableType::\w+::(\w+)\(c10::DispatchKeySet",
                                 symbols))
    defined = set(re.findall(r"^[^(\n]*\b(\w+)\(c10::DispatchKeySet ks",
                             "".join(p.read_text() for p in out.glob("VariableType_?.cpp")),
                             re.M))
    assert set(kernels) == defined and set(kernels.values()) == {1} and len(defined) > 1500
    # TraceType's and ADInplaceOrViewType's kernels compile in parts cut by a hash of the
    # function's name, which together register every kernel of their Everything file once
    for stem, count in (("TraceType", TRACE_PARTS), ("ADInplaceOrViewType", 6)):
        parts = sorted((out / "compile" / "src").glob(f"{stem}_part-*.cpp"))
        assert len(parts) == count, stem
        compiled = [p for p in parts if p.stem in names]
        assert len(compiled) == (TRACE_PARTS_COMPILED if stem == "TraceType" else count), stem
        registered = Counter(re.findall(r'm\.impl\("([^"]+)"', "".join(
            p.read_text() for p in parts)))
        assert registered == Counter(re.findall(
            r'm\.impl\("([^"]+)"', (out / f"{stem}Everything.cpp").read_text())), stem
        assert len(registered) > 1000, stem
        for part in compiled:  # each registers at load time: its static initializer is there
            assert f"_GLOBAL__sub_I_{part.stem.replace('-', '_')}.cpp" in symbols, part
    # ViewFuncs.cpp: every struct's methods; variable_factories.h's inline functions, included
    assert {"ViewFuncs", "variable_factories"} <= set(names)
    structs = set(re.findall(r"^struct (\w+) : public torch::autograd::ViewFunc",
                             (out / "ViewFuncs.h").read_text(), re.M))
    assert len(structs) == 39 and structs == set(re.findall(
        r" T torch::autograd::generated::(\w+)::get_symints\(\) const$", symbols, re.M))
    # every binding module's entry point is defined once, wherever its file was compiled
    entries = {m for f in small for m in re.findall(r"^\s*void (init\w+)\(PyObject",
                                                    (out / f"{f}.cpp").read_text(), re.M)}
    assert len(entries) == len(small)
    for entry in entries:
        assert len(re.findall(rf" T torch::\w+(::\w+)*::{entry}\(_object\*\)$", symbols,
                              re.M)) == 1, entry


ERFINV = "  self: 0.5 * sqrt(M_PI) * exp(self.erfinv().pow(2)) * grad"


def test_the_daemon_on_the_full_spec(full_compile, tmp_path):
    """Latencies on the real spec, printed: a saved formula's files rewritten, then its
    object recompiled, by a warm daemon sharing the build's cache."""
    root, _ = full_compile
    running = Running(root, root / "spec", *UNITS)
    running.out = tmp_path / "out"  # a fresh output directory: files and objects from the cache
    started = running.start()
    assert started.returncode == 0, started.stderr
    try:
        first = running.wait(timeout=900)
        assert first["last"]["ok"] and first["last"]["compile"]["compiled"] == [], first["last"]
        functions = running.out / "Functions.cpp"
        objects = {p: mtime(p) for p in (running.out / "compile/obj").glob("*.o")}
        saved = time.monotonic()
        running.edit(ERFINV.strip(), ERFINV.strip() + " * 2")
        while "exp(self.erfinv().pow(2)) * grad * 2" not in functions.read_text():
            assert time.monotonic() - saved < 60, "the save was not regenerated"
            time.sleep(0.005)
        generated = time.monotonic() - saved
        while not [p for p, t in objects.items() if mtime(p) not in (t, None)]:
            assert time.monotonic() - saved < 300, "no object was recompiled"
            time.sleep(0.01)
        compiled = time.monotonic() - saved
        print(f"\nfull spec, warm daemon: save → Functions.cpp rewritten {generated:.3f} s, "
              f"→ object recompiled {compiled:.2f} s")
        status = running.wait()
        # its formula unit, and the forward unit of erfinv's and erfinv_'s kernels: their
        # forward formula is auto_element_wise, made from this backward formula (the kernels
        # call it, unchanged)
        recompiled = status["last"]["compile"]["compiled"]
        assert status["last"]["ok"] and len(recompiled) == 2, recompiled
        assert sum(u.startswith("Functions_formulas_") for u in recompiled) == 1
        assert "VariableTypeForward_erfinv" in recompiled
    finally:
        running.cli("daemon", "stop", *running.where(), check=False)
