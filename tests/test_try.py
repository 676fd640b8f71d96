"""`gradshard try` end to end on the real 2.13 spec and the installed torch: real compiles,
the patch loaded into a worker process, torch's gradcheck on OpInfo samples.

The end-to-end tests share the session's try directory (its PCHs are built once, ~45 s), spec
copy and cache: conftest.py's try_workspace (tests/test_try_semantics.py uses them too).
"""

from __future__ import annotations

import json
import re
import stat
import subprocess
import sys
from pathlib import Path
from typing import Callable

import pytest
from support.specs import edited_derivatives as edited

from gradshard.cache.errors import EnvironmentFailure
from gradshard.service.cli import main
from gradshard.service.live.elf_symbols import hidden_functions, load_anchor, undefined_symbols
from gradshard.service.live.patch_sources import PatchNode, patch_namespace, trampoline_source
from gradshard.service.live.plan import patch_templates
from gradshard.service.live.try_directory import TRY_DIRECTORY_VARIABLE, try_directory

SIN = "- name: sin(Tensor self) -> Tensor\n  self: grad * self.cos().conj()\n"
MUL_SELF = ("- name: mul.Tensor(Tensor self, Tensor other) -> Tensor\n"
            "  self: mul_tensor_backward(grad, other, self.scalar_type())\n")


def node(declaration: str, definition: str = "") -> PatchNode:
    return PatchNode("SinBackward0", declaration, definition, "", "", True)


def test_namespace_follows_the_structs_only():
    """A formula edit keeps the namespace (so the Python and kernel units keep their text and
    objects); a changed struct gets a namespace of its own."""
    one = patch_namespace([node("struct A { int x; };", "formula 1")])
    assert one == patch_namespace([node("struct A { int x; };", "formula 2")])
    assert one != patch_namespace([node("struct A { int y; };", "formula 1")])
    assert one.startswith("gradshard_patch_")


def test_trampolines_jump_through_their_slots():
    text = trampoline_source(["_ZN1a1fEv", "_ZN1a1gEv"], patch_templates())
    assert "jmp *gradshard_patch_slots+0(%rip)" in text
    assert "jmp *gradshard_patch_slots+8(%rip)" in text
    assert ".hidden _ZN1a1gEv" in text


def test_try_directory_is_private(tmp_path, monkeypatch):
    private = tmp_path / "mine"
    monkeypatch.setenv(TRY_DIRECTORY_VARIABLE, str(private))
    assert try_directory() == private
    assert stat.S_IMODE(private.stat().st_mode) == 0o700
    private.chmod(0o777)
    with pytest.raises(EnvironmentFailure, match="not a private directory"):
        try_directory()
    link = tmp_path / "link"
    link.symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    (tmp_path / "elsewhere").mkdir(mode=0o700)
    monkeypatch.setenv(TRY_DIRECTORY_VARIABLE, str(link))
    with pytest.raises(EnvironmentFailure, match="not a private directory"):
        try_directory()


@pytest.mark.compiler
def test_hidden_functions_are_found_in_the_symbol_table(tmp_path):
    """A library's hidden function is in its .symtab, not its .dynsym: found with its value;
    an object's undefined reference to it is listed; a stripped library has none."""
    source = tmp_path / "lib.cpp"
    source.write_text('__attribute__((visibility("hidden"))) int helper(int x) { return x + 1; }\n'
                      'int exported(int x) { return helper(x) * 2; }\n')
    library = tmp_path / "libhelper.so"
    subprocess.run(["g++", "-shared", "-fPIC", "-O0", str(source), "-o", str(library)], check=True)
    user = tmp_path / "user.cpp"
    user.write_text("int helper(int x);\nint use() { return helper(3); }\n")
    subprocess.run(["g++", "-c", "-fPIC", str(user), "-o", str(tmp_path / "user.o")], check=True)
    needed = undefined_symbols([tmp_path / "user.o"])
    assert "_Z6helperi" in needed
    found = hidden_functions(library, needed)
    listed = subprocess.run(["nm", str(library)], capture_output=True, text=True).stdout
    value = next(int(line.split()[0], 16) for line in listed.splitlines()
                 if line.endswith(" _Z6helperi"))
    assert found == {"_Z6helperi": value}
    assert load_anchor(library)[0] == "_Z8exportedi"
    subprocess.run(["strip", str(library)], check=True)
    assert hidden_functions(library, needed) == {}


# ---------------------------------------------------------------------------------------------
# End to end


def run_try(capsys, *args: str) -> tuple[int, dict, str]:
    code = main(["try", *args, "--json"])
    captured = capsys.readouterr()
    return code, json.loads(captured.out) if captured.out.strip() else {}, captured.err


@pytest.mark.compiler
@pytest.mark.slow
@pytest.mark.every_try_compiler
def test_wrong_sin_formula_fails_and_the_stock_one_passes(try_workspace, capsys):
    spec, cache = try_workspace
    with edited(spec, SIN, SIN.replace("conj()\n", "conj() * 2\n")) as line:
        # float64 only: _foreach_sin's samples at both dtypes take a minute
        code, report, _ = run_try(capsys, "--spec", str(spec), "--cache", str(cache),
                                  "--dtype", "float64")
    assert code == 5, report
    ops = {op["op"]: op for op in report["ops"]}
    assert set(ops) == {"sin", "_foreach_sin"}  # the foreach op's node comes from sin's entry
    sin = ops["sin"]
    assert sin["line"] == line and sin["file"].endswith("derivatives.yaml")
    assert sin["functions"] == ["sin", "sin_", "sin.out"] and sin["nodes"] == ["SinBackward0"]
    verdicts = {(s["variant"], s["dtype"]) for s in sin["samples"] if s["verdict"] == "FAIL"}
    assert ("function", "float64") in verdicts and ("inplace", "float64") in verdicts
    located = next(s for s in sin["samples"] if s["dtype"] == "float64")
    assert located["error"] > 0.1
    assert located["where"] == {"input": 0, "input_name": "self", "output": 0,
                                "element": located["where"]["element"]}  # sin(Tensor self)
    # the stock formula, named: every sample passes
    code, report, _ = run_try(capsys, "sin", "--spec", str(spec), "--cache", str(cache))
    assert code == 0, report
    (sin,) = report["ops"]
    assert sin["samples"] and all(s["verdict"] == "PASS" for s in sin["samples"])


@pytest.mark.compiler
@pytest.mark.slow
def test_damaged_files_in_the_try_directory_are_made_again(try_workspace, capsys):
    """What a try directory remembers (the hidden symbols, the PCH object's undefined names, a
    library and its sum, the link's stub libraries and theirs) is checked when read: damaged,
    it is made again, never trusted."""
    spec, cache = try_workspace
    where = ("--spec", str(spec), "--cache", str(cache), "--dtype", "float64")
    with edited(spec, SIN, SIN.replace("conj()\n", "conj() * 5\n")):
        code, report, _ = run_try(capsys, *where)
        assert code == 5, report
        root = try_directory()
        damaged = [*root.glob("symbols/*.json"), *root.glob("pch/*/*.undefined"),
                   *root.glob("obj/*.undefined"), *root.glob("lib/*/sum"),
                   *root.glob("lib/*/patch.so"), *root.glob("stubs/*/*")]
        assert any(p.parent.name == "symbols" for p in damaged), damaged
        assert any(p.parent.parent.name == "stubs" for p in damaged), damaged
        for path in damaged:
            path.write_bytes(b"[1, {" if path.suffix != ".so" else b"\x7fELF damaged")
        code, report, err = run_try(capsys, *where)
    assert code == 5, (report, err)
    assert any(s["verdict"] == "FAIL" for op in report["ops"] for s in op["samples"])


@pytest.mark.compiler
@pytest.mark.slow
def test_a_formula_edit_compiles_only_the_units_holding_its_code(try_workspace, capsys):
    """A second formula edit compiles the nodes' and the kernels' code again, never the
    registrations or the Python classes (their text is the same), and rebuilds no object in
    place: an object is named by its unit's text."""
    spec, cache = try_workspace
    where = ("sin", "--spec", str(spec), "--cache", str(cache), "--dtype", "float64")
    compiled, before, after = recompiled_parts(spec, lambda: run_try(capsys, *where)[:2], 7, 8)
    assert compiled and set().union(*compiled) == {"nodes", "kernels"}, compiled
    assert all(after[path] == when for path, when in before.items() if path in after)


def recompiled_parts(spec: Path, run: Callable[[], tuple[int, dict]], first: int, second: int
                     ) -> tuple[list[set[str]], dict[Path, int], dict[Path, int]]:
    """`try` run on sin's formula times `first`, then times `second`: the parts of each object
    the second compiled, and every object's time before and after it."""
    root = try_directory()
    with edited(spec, SIN, SIN.replace("conj()\n", f"conj() * {first}\n")):
        code, report = run()
    assert code == 5, report
    before = {path: path.stat().st_mtime_ns for path in root.glob("obj/*.o")}
    with edited(spec, SIN, SIN.replace("conj()\n", f"conj() * {second}\n")):
        code, report = run()
    assert code == 5, report
    after = {path: path.stat().st_mtime_ns for path in root.glob("obj/*.o")}
    return [unit_parts(path) for path in set(after) - set(before)], before, after


# the first line of each part (templates/live/patch.j2) and the part it names
PART_KINDS = {"the nodes' definitions": "nodes", "the autograd kernels": "kernels",
              "the registrations": "registrations", "the nodes' Python classes": "python"}


def unit_parts(unit_object) -> set[str]:
    """The parts a unit's object was compiled from: its source, or the parts it includes."""
    source = unit_object.with_suffix(".cpp").read_text()
    texts = [source] + [Path(line.split('"')[1]).read_text()
                        for line in source.splitlines() if line.startswith('#include "/')]
    return {kind for text in texts for first, kind in PART_KINDS.items()
            if text.startswith(f"// @generated by gradshard: {first}")}


@pytest.mark.compiler
@pytest.mark.slow
@pytest.mark.every_try_compiler
def test_a_formula_calling_a_hidden_helper_is_patched(try_workspace, capsys):
    """mul.Tensor's formula calls mul_tensor_backward, which libtorch_cpu does not export:
    the patch reaches torch's own copy; the stock formula passes, a wrong one fails."""
    spec, cache = try_workspace
    code, report, _ = run_try(capsys, "mul.Tensor", "--spec", str(spec), "--cache", str(cache),
                              "--dtype", "float64")
    assert code == 0, report
    with edited(spec, MUL_SELF, MUL_SELF.replace("(grad, other", "(grad * 2, other")):
        code, report, _ = run_try(capsys, "mul", "--spec", str(spec), "--cache", str(cache),
                                  "--dtype", "float64")
    assert code == 5, report
    assert any(s["verdict"] == "FAIL" for s in report["ops"][0]["samples"])


@pytest.mark.compiler
@pytest.mark.slow
@pytest.mark.every_try_compiler
def test_a_formula_that_does_not_compile_is_shown_at_its_line(try_workspace, capsys):
    """Placed at its formula's line; with --raw (which the hint names), the compiler's
    output as it is: its own words at the patch's source line, nothing placed."""
    spec, cache = try_workspace
    broken = SIN.replace("self.cos().conj()", "self.cos().conj() * no_such_helper_anywhere(self)")
    with edited(spec, SIN, broken) as line:
        code = main(["try", "sin", "--spec", str(spec), "--cache", str(cache)])
        err = capsys.readouterr().err
        raw_code = main(["try", "sin", "--raw", "--spec", str(spec), "--cache", str(cache)])
        raw = capsys.readouterr().err
    assert code == 3
    assert f"derivatives.yaml:{line + 1}: error: generated code for sin (SinBackward0)" in err
    assert "no_such_helper_anywhere" in err and "hint: --raw shows the compiler's output" in err
    assert raw_code == 3 and "generated code for" not in raw and "derivatives.yaml:" not in raw
    # the compiler's own diagnostic (clang: use of undeclared identifier; g++: was not
    # declared, in the locale's quotes) at the patch's source, a part of the try directory's
    said = re.compile(r"/obj/\w+\.part\.cpp:\d+:\d+: error: (use of undeclared identifier "
                      r"'no_such_helper_anywhere'|\W?no_such_helper_anywhere\W? was not declared)")
    assert said.search(raw) and re.search(r"gradshard: error: \d unit\(s\) failed to compile",
                                          raw), raw
    assert "hint: --raw" not in raw  # named only to a reader who has not asked for it


@pytest.mark.compiler
@pytest.mark.slow
def test_an_op_without_a_kernel_of_its_own_says_why(try_workspace, capsys):
    """dropout is CompositeImplicitAutograd: VariableType has no kernel for it."""
    spec, cache = try_workspace
    code, report, err = run_try(capsys, "dropout", "--spec", str(spec), "--cache", str(cache))
    assert code == 10  # nothing could be checked: not usage's 2
    (op,) = report["ops"]
    assert "no autograd kernel of its own" in op["reason"] and not op["samples"]
    code, report, _ = run_try(capsys, "--spec", str(spec), "--cache", str(cache))
    assert code == 10 and report["ops"] == []  # the spec is the installed one's: nothing changed


GRADIENT_TESTS = '''
import torch
from torch.testing._internal.common_methods_invocations import op_db
from torch.testing._internal.common_utils import gradcheck

SIN = next(info for info in op_db if info.name == "sin")


def test_sin_gradients():
    for sample in SIN.sample_inputs("cpu", torch.float64, requires_grad=True):
        assert gradcheck(SIN.get_op(), (sample.input,), fast_mode=SIN.gradcheck_fast_mode)


def test_grad_fn_is_the_patched_node():
    x = torch.randn(3, dtype=torch.float64, requires_grad=True)
    y = torch.sin(x)
    assert type(y.grad_fn).__name__ == "SinBackward0"
    assert torch.equal(y.grad_fn._saved_self, x)
'''


@pytest.mark.compiler
@pytest.mark.slow
def test_the_pytest_plugin_runs_a_suite_against_the_patch(try_workspace, tmp_path):
    """`pytest --gradshard-spec` (the pytest11 entry point): an OpInfo gradient test fails
    under a wrong formula and passes under the stock one; grad_fn keeps its name and saved
    values either way."""
    spec, cache = try_workspace
    tests = tmp_path / "test_gradients.py"
    tests.write_text(GRADIENT_TESTS)
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", str(tests),
               "--gradshard-spec", str(spec), "--gradshard-cache", str(cache),
               "--gradshard-op", "sin"]
    with edited(spec, SIN, SIN.replace("conj()\n", "conj() * 2\n")):
        failing = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path)
    assert failing.returncode == 1, failing.stdout + failing.stderr
    assert "gradshard: patched ops: sin" in failing.stdout
    assert "1 failed, 1 passed" in failing.stdout
    passing = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path)
    assert passing.returncode == 0, passing.stdout + passing.stderr
    assert "2 passed" in passing.stdout
