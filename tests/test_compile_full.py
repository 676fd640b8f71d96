"""The whole generated set of the real 2.13 spec compiles against the installed torch 2.13
headers: every formula unit, Functions unit, VariableType unit, python_functions file and
binding file, ViewFuncs.cpp and variable_factories.h, and TraceType's and
ADInplaceOrViewType's parts (one of each compiled: COMPILED_PARTS says why), with the default
toolchain (g++, -std=c++20, at the suite's -O0: tests/conftest.py), precompiled headers and
ninja on every core.

The longest test of the suite: it is the one that proves the generated C++ — not only its
text — is right.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from support.daemon import Running, mtime

pytestmark = [pytest.mark.compiler, pytest.mark.slow]

# TraceType's and ADInplaceOrViewType's parts are one template of torchgen's (the frame:
# includes, namespaces, the TORCH_LIBRARY_IMPL block) around kernels cut by a hash of their
# name, and the frame and every kernel are byte for byte those of torchgen's own
# <stem>Everything.cpp (the test checks both: frame_of), whose kernels PyTorch's build
# compiles in that same frame. So one part of each compiles what is gradshard's (the frame
# around a cut); all 30 would be ~385 of the ~900 CPU-seconds this compile takes (measured
# 2026-12-02: a TraceType part 13.5 s, an ADInplaceOrViewType part 15 s).
COMPILED_PARTS = {"TraceType": "TraceType_part-00",
                  "ADInplaceOrViewType": "ADInplaceOrViewType_part-0"}
# every other unit by its family's name: a family these miss fails the test (its units
# would be neither compiled nor among the parts left out)
UNITS = ("Functions*", "VariableType*", "python_*", "ViewFuncs", "variable_factories",
         *COMPILED_PARTS.values())
UNIT_OPTIONS = tuple(word for pattern in UNITS for word in ("--units", pattern))
# a kernel definition (it starts at the line's start and ends at the first `}` there); a
# registration; the per-operator includes (the ops of a part's kernels, under #else)
KERNEL = re.compile(r"^(?!namespace |TORCH_LIBRARY|using |#|//|})\S[^\n]*\{\n.*?^}\n", re.M | re.S)
REGISTRATION = re.compile(r"^[ \t]*m\.impl\(.*?\);+\n", re.M | re.S)
OPERATOR_INCLUDES = re.compile(r"(?<=#else\n)(?:#include <ATen/ops/\w+\.h>\n)+")


def frame_of(text: str) -> str:
    """A TraceType or ADInplaceOrViewType file without its kernels, registrations and
    per-operator includes: the template around them."""
    return REGISTRATION.sub("", OPERATOR_INCLUDES.sub("", KERNEL.sub("", text)))


@pytest.fixture(scope="module")
def full_compile(tmp_path_factory, packaged_spec, seeded_pchs):
    """One cold build of a copy of the real spec (the daemon test below edits it); the
    formula and forward units' PCH is the session's (support/compile.py: PchSeed)."""
    root = tmp_path_factory.mktemp("full")
    spec, out, cache = root / "spec", root / "out", seeded_pchs(root / "cache")
    shutil.copytree(packaged_spec, spec, ignore=shutil.ignore_patterns("__pycache__", "*.py"))
    done = subprocess.run([sys.executable, "-m", "gradshard.service.entry", "build", "--spec",
                           str(spec), "--out", str(out), "--cache", str(cache), "--json",
                           *UNIT_OPTIONS],
                          capture_output=True, text=True, timeout=3000)
    assert done.returncode == 0, done.stderr[-5000:]
    return root, json.loads(done.stdout)


def test_the_whole_generated_set_compiles(full_compile):
    root, built = full_compile
    out = root / "out"
    report = built["compile"]
    names = report["compiled"]
    assert report["failed"] == [] and report["cached"] == [] and len(names) == report["units"]
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
    sources = sorted((out / "compile" / "src").glob("*.cpp"))
    parts = len([p for p in sources if re.fullmatch(r"VariableType_(?!merged-).*", p.stem)])
    forward = len([p for p in sources if p.stem.startswith("VariableTypeForward_")])
    assert len(commands) == report["units"] + 24 + parts + forward
    # every unit compiled but the codegen families' parts left out (COMPILED_PARTS)
    left_out = {p.stem for p in sources} - set(names) - {
        p.stem for p in sources if re.fullmatch(
            r"Functions_formulas_\d+|VariableType_(?!merged-).*|VariableTypeForward_.*", p.stem)}
    every_part = ({f"TraceType_part-{k:02}" for k in range(24)}
                  | {f"ADInplaceOrViewType_part-{k}" for k in range(6)})
    assert left_out == every_part - set(COMPILED_PARTS.values())
    assert parts > 800 and forward > 300

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
    # function's name: each part is their Everything file's frame, and together they hold
    # and register every kernel of it once
    for stem, compiled in COMPILED_PARTS.items():
        parts = sorted((out / "compile" / "src").glob(f"{stem}_part-*.cpp"))
        # 3·2^k units by the hash (pipeline/layout/compile_layout.py: ShardSettings.codegen_kernels)
        assert len(parts) == {"TraceType": 24, "ADInplaceOrViewType": 6}[stem], stem
        everything = (out / f"{stem}Everything.cpp").read_text()
        texts = [p.read_text() for p in parts]
        assert {frame_of(text) for text in texts} == {frame_of(everything)}, stem
        kernels = [k for text in texts for k in KERNEL.findall(text)]
        assert sorted(kernels) == sorted(KERNEL.findall(everything)), stem
        registered = Counter(re.findall(r'm\.impl\("([^"]+)"', "".join(texts)))
        assert registered == Counter(re.findall(r'm\.impl\("([^"]+)"', everything)), stem
        assert len(registered) > 1000 and len(kernels) == len(registered), stem
        # the part compiled registers at load time: its static initializer is there
        assert compiled in names
        assert f"_GLOBAL__sub_I_{compiled.replace('-', '_')}.cpp" in symbols, compiled
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
    running = Running(root, root / "spec", *UNIT_OPTIONS)
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
