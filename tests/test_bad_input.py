"""Bad spec input: every case must exit 1 with file:line, the entry, the rule and a hint,
never a traceback, and nothing written anywhere.

Each case copies the mini spec, applies one edit, and runs `gradshard check` on it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from support.specs import DEPRECATED, DERIVATIVES, MINI_SPEC, NATIVE, TAGS

from gradshard.service.cli import main


@dataclass(frozen=True)
class Case:
    id: str
    file: str
    old: str          # text to replace ("" appends `new` to the file)
    new: str
    rule: str
    entry: str
    line_of: str      # the expected line is the first line containing this text
    column: int | None = None


CASES = [
    # --- YAML level
    Case("yaml-syntax", DERIVATIVES, "  self: at::sum_to(grad, self.sym_sizes())",
         "  self: at::sum_to(grad, self.sym_sizes())\n   bad: [unclosed", "yaml.syntax", "expand",
         "bad: [unclosed", column=7),
    Case("yaml-duplicate-key", NATIVE, "  variants: function, method\n  dispatch:\n    SparseCPU, SparseCUDA: mul_sparse",
         "  variants: function, method\n  variants: method  # twice\n  dispatch:\n    SparseCPU, SparseCUDA: mul_sparse",
         "yaml.duplicate-key", "mul.Tensor", "  variants: method  # twice", column=3),
    Case("yaml-not-utf8", DERIVATIVES, "mul_tensor_backward(grad, other, self.scalar_type())",
         "mul_tensor_backward(grad, other, self.scalar_type\xff())", "yaml.not-utf8", "",
         "mul_tensor_backward(grad, other, self.scalar_type"),
    Case("yaml-empty-file", DEPRECATED, "- name: add(Tensor self, Scalar alpha, Tensor other) -> Tensor\n  aten: add(self, other, alpha)\n",
         "", "yaml.empty-file", "", "# Deprecated"),
    Case("yaml-not-a-list", TAGS, "# Tags for the mini spec", "tags:\n# Tags for the mini spec",
         "yaml.not-a-list", "", "tags:"),
    Case("yaml-entry-not-mapping", DEPRECATED, "", "\n- just a string\n", "yaml.entry-not-mapping",
         "entry at line", "- just a string"),
    Case("yaml-control-character", DERIVATIVES, "self: at::sum_to(grad, self.sym_sizes())",
         "self: at::sum_to(grad,\0 self.sym_sizes())", "yaml.control-character", "",
         "at::sum_to(grad,\0", column=25),
    Case("yaml-nesting-too-deep", DERIVATIVES, "  output_differentiability: [True, True]",
         "  output_differentiability: " + "[" * 1000, "yaml.nesting-too-deep", "minmax",
         "  output_differentiability: [[[", column=127),  # the 99th '[' is level 101
    Case("yaml-alias-expansion", DERIVATIVES, "  self: at::sum_to(grad, self.sym_sizes())\n",
         "  self: at::sum_to(grad, self.sym_sizes())\n  x0: &x0 [" + ", ".join(["lol"] * 9) + "]\n"
         + "".join(f"  x{i}: &x{i} [" + ", ".join([f"*x{i - 1}"] * 9) + "]\n" for i in range(1, 6)),
         "yaml.alias-expansion", "expand", "  x4: &x4", column=7),  # x4: 243,577 expanded
    # --- native_functions.yaml entries
    Case("native-unknown-key", NATIVE, "  variants: method\n  device_check: NoCheck\n  device_guard: False",
         "  variant: method\n  device_check: NoCheck\n  device_guard: False", "native.unknown-key", "expand",
         "  variant: method"),
    Case("schema-unknown-type", NATIVE, "- func: mul.Tensor(Tensor self, Tensor other)",
         "- func: mul.Tensor(Tensor self, Tensr other)", "schema.unknown-type", "mul.Tensor",
         "Tensr other"),
    Case("schema-not-canonical", NATIVE, "- func: mul.Tensor(Tensor self, Tensor other)",
         "- func: mul.Tensor(Tensor self,  Tensor other)", "schema.syntax", "mul.Tensor",
         "func: mul.Tensor(Tensor self,  Tensor"),
    Case("schema-out-not-kwarg", NATIVE, "- func: mul.out(Tensor self, Tensor other, *, Tensor(a!) out)",
         "- func: mul.out(Tensor self, Tensor other, Tensor(a!) out)", "schema.invariant", "mul.out",
         "func: mul.out("),
    Case("schema-inplace-return", NATIVE, "- func: mul_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)",
         "- func: mul_.Tensor(Tensor(a!) self, Tensor other) -> Tensor", "schema.invariant",
         "mul_.Tensor", "func: mul_.Tensor"),
    Case("native-unknown-tag", NATIVE, "  autogen: sum.out\n  tags: reduction",
         "  autogen: sum.out\n  tags: reductoin", "native.unknown-tag", "sum", "tags: reductoin"),
    Case("native-bad-dispatch-key", NATIVE, "    CPU, CUDA, MPS: mul_out", "    CPU, CUDB, MPS: mul_out",
         "native.dispatch", "mul.out", "  dispatch:\n    CPU, CUDB"),
    Case("native-missing-delegate", NATIVE, "  structured_delegate: mul.out\n  variants: method",
         "  structured_delegate: mul.outt\n  variants: method", "native.missing-delegate",
         "mul_.Tensor", "- func: mul_.Tensor"),
    Case("native-keyword-argument", NATIVE, "- func: minmax(Tensor self, int dim=0)",
         "- func: minmax(Tensor self, int lambda=0)", "native.keyword-argument", "minmax",
         "- func: minmax("),
    Case("native-bad-variant", NATIVE, "  variants: function, method\n  dispatch:\n    CompositeExplicitAutograd: sum",
         "  variants: funtion, method\n  dispatch:\n    CompositeExplicitAutograd: sum",
         "native.bad-variant", "sum", "variants: funtion"),
    Case("native-out-with-method", NATIVE, "  structured: True\n  structured_inherits: TensorIteratorBase\n  dispatch:\n    CPU, CUDA, MPS: mul_out",
         "  structured: True\n  variants: function, method\n  structured_inherits: TensorIteratorBase\n  dispatch:\n    CPU, CUDA, MPS: mul_out",
         "native.inconsistent", "mul.out", "  variants: function, method\n  structured_inherits"),
    Case("native-random-untagged", NATIVE, "",
         "\n- func: my_rand(Tensor self, *, Generator? generator=None) -> Tensor\n"
         "  dispatch:\n    CompositeExplicitAutograd: my_rand\n",
         "native.inconsistent", "my_rand", "- func: my_rand"),
    Case("native-duplicate-name", NATIVE, "",
         "\n- func: mul.Tensor(Tensor self, Tensor other, int x) -> Tensor\n"
         "  dispatch:\n    CompositeExplicitAutograd: mul_x\n",
         "native.duplicate-name", "mul.Tensor", "- func: mul.Tensor(Tensor self, Tensor other)"),
    Case("native-duplicate-signature", NATIVE, "",
         "\n- func: sum.again(Tensor self, *, ScalarType? dtype=None) -> Tensor\n"
         "  dispatch:\n    CompositeExplicitAutograd: sum_again\n",
         "native.duplicate-signature", "sum.again", "- func: sum.again"),
    Case("native-foreach-device-check", NATIVE,
         "  device_check: NoCheck   # foreach kernels fall back to slow path when tensor are on different devices\n  variants: function\n  dispatch:\n    CompositeExplicitAutograd: foreach_tensor_add_list_kernel_slow\n",
         "  variants: function\n  dispatch:\n    CompositeExplicitAutograd: foreach_tensor_add_list_kernel_slow\n",
         "native.inconsistent", "_foreach_add.List", "- func: _foreach_add.List"),
    Case("views-missing-copy", NATIVE, "",
         "\n- func: my_view(Tensor(a) self) -> Tensor(a)\n"
         "  dispatch:\n    CompositeExplicitAutograd: my_view\n",
         "views.missing-copy", "my_view", "- func: my_view"),
    Case("native-factory-without-dispatch", NATIVE, "",
         "\n- func: ones_like(Tensor self) -> Tensor\n  variants: function\n",
         "native.dispatch", "ones_like", "- func: ones_like"),
    # --- tags.yaml
    Case("tags-no-description", TAGS, "- tag: reduction\n  desc: Reductions.", "- tag: reduction",
         "tags.no-description", "reduction", "- tag: reduction"),
    Case("tags-duplicate", TAGS, "", "- tag: core  # again\n  desc: Again.\n", "tags.duplicate",
         "core", "- tag: core  # again"),
    # --- deprecated.yaml
    Case("deprecated-unknown-argument", DEPRECATED, "aten: add(self, other, alpha)",
         "aten: add(self, other, beta)", "deprecated.unknown-argument", "add", "aten: add(self, other, beta)"),
    Case("deprecated-unknown-key", DEPRECATED, "  aten: add(self, other, alpha)",
         "  aten: add(self, other, alpha)\n  atne: x", "deprecated.unknown-key", "add", "atne: x"),
    # --- derivatives.yaml
    Case("derivatives-unknown-schema", DERIVATIVES, "- name: mul.Tensor(Tensor self, Tensor other) -> Tensor",
         "- name: mul.Tensor(Tensor self, Tensor othr) -> Tensor", "derivatives.unknown-schema",
         "mul.Tensor", "- name: mul.Tensor"),
    Case("derivatives-duplicate-entry", DERIVATIVES, "",
         "\n- name: mul.Tensor(Tensor self, Tensor other) -> Tensor  # again\n  self: grad * other\n",
         "derivatives.duplicate", "mul.Tensor", "-> Tensor  # again"),
    Case("derivatives-unknown-name", DERIVATIVES, "  self: mul_tensor_backward(grad, other, self.scalar_type())",
         "  slef: mul_tensor_backward(grad, other, self.scalar_type())", "derivatives.unknown-formula-key",
         "mul.Tensor", "  slef:"),
    Case("derivatives-sizes", DERIVATIVES, "  self: at::sum_to(grad, self.sym_sizes())",
         "  self: at::sum_to(grad, self.sizes())", "derivatives.sizes", "expand", "self.sizes()"),
    Case("derivatives-mix-grad-grads", DERIVATIVES, "  other: mul_tensor_backward(grad, self, other.scalar_type())",
         "  other: mul_tensor_backward(grads[0], self, other.scalar_type())", "derivatives.grads-usage",
         "mul.Tensor", "- name: mul.Tensor"),
    Case("derivatives-bad-dispatch-key", DERIVATIVES, "    AutogradNestedTensor:", "    AutogradNested:",
         "derivatives.bad-dispatch-key", "sum", "    AutogradNested:"),
    Case("derivatives-overlap", DERIVATIVES, "  result: other_t * self_p + self_t * other_p",
         "  result: other_t * self_p + self_t * other_p\n  self, other: non_differentiable",
         "derivatives.overlap", "mul.Tensor", "- name: mul.Tensor"),
    Case("derivatives-grads-out-of-bounds", DERIVATIVES, "grad_min.expand_symint(self.sym_sizes()) + grad_max",
         "grads[0].expand_symint(self.sym_sizes()) + grads[5]", "derivatives.grads-out-of-bounds",
         "minmax", "grads[5]"),
    Case("derivatives-auto-element-wise", DERIVATIVES, "  result: self_t + maybe_multiply(other_t, alpha)",
         "  result: auto_element_wise", "derivatives.auto-element-wise", "add.Tensor",
         "  result: auto_element_wise"),
    Case("derivatives-forward-bare-name", DERIVATIVES, "  result: other_t * self_p + self_t * other_p",
         "  result: other_t * self + self_t * other_p", "derivatives.forward-bare-name", "mul.Tensor",
         "  result: other_t * self +"),
    Case("derivatives-two-conditions", DERIVATIVES, "  output_differentiability: [True, True]",
         "  output_differentiability: ['a', 'b']", "derivatives.bad-output-differentiability",
         "minmax", "  output_differentiability:"),
    Case("derivatives-key-beside-dispatch", DERIVATIVES, "  dispatch:\n    Default:\n      self: grad.expand_symint",
         "  self: grad\n  dispatch:\n    Default:\n      self: grad.expand_symint",
         "derivatives.unknown-key", "sum", "  self: grad\n"),
    Case("derivatives-formula-not-string", DERIVATIVES, "  self: at::sum_to(grad, self.sym_sizes())",
         "  self: 1", "derivatives.bad-formula", "expand", "  self: 1"),
    Case("derivatives-only-grads0", DERIVATIVES, "grad_min.expand_symint(self.sym_sizes()) + grad_max.expand_symint(self.sym_sizes())",
         "grads[0].expand_symint(self.sym_sizes())", "derivatives.grads-usage", "minmax", "- name: minmax"),
    Case("derivatives-missing-name", DERIVATIVES, "", "\n- self: grad\n", "derivatives.missing-name",
         "entry at line", "- self: grad"),
    # --- Python bindings
    Case("python-duplicate-signature", NATIVE, "",
         "\n- func: sum.again(Tensor self, *, ScalarType? dtype=None) -> Tensor[]\n"
         "  dispatch:\n    CompositeExplicitAutograd: sum_again\n",
         "python.duplicate-signature", "sum.again", "- func: sum.again"),
    Case("python-out-without-base", DEPRECATED,
         "- name: add(Tensor self, Scalar alpha, Tensor other) -> Tensor\n  aten: add(self, other, alpha)",
         "- name: add(Tensor self, Scalar alpha, Tensor other, *, Tensor(a!) out) -> Tensor(a!)\n"
         "  aten: add_out(out, self, other, alpha)",
         "python.out-without-base", "add(Tensor self, Scalar alpha, Tensor other, *, Tensor(a!) out)",
         "- name: add(Tensor self, Scalar alpha, Tensor other, *, Tensor(a!) out)"),
    Case("deprecated-matches-nothing", DEPRECATED, "aten: add(self, other, alpha)",
         "aten: add(self, alpha, other)", "deprecated.no-match", "add(Tensor self, Scalar alpha",
         "- name: add(Tensor self, Scalar alpha, Tensor other) -> Tensor"),
    Case("python-unknown-category", NATIVE, "  dispatch:\n    CompositeExplicitAutograd: zeros_symint",
         "  category_override: factori\n  dispatch:\n    CompositeExplicitAutograd: zeros_symint",
         "native.bad-category", "zeros", "  category_override: factori"),
    Case("python-requires-grad-argument", NATIVE, "",
         "\n- func: my_grad_op(Tensor self, bool requires_grad=False) -> Tensor\n"
         "  dispatch:\n    CompositeExplicitAutograd: my_grad_op\n",
         "python.requires-grad-argument", "my_grad_op", "- func: my_grad_op("),
    # --- templates
    Case("templates-unknown-placeholder", "autograd/templates/Functions.h",
         "using at::Scalar;\n", "using at::Scalar;\n// ${no_such_value}\n",
         "templates.unknown-placeholder", "Functions.h", "// ${no_such_value}"),
    Case("derivatives-strides", DERIVATIVES, "  self: at::sum_to(grad, self.sym_sizes())",
         "  self: at::sum_to(grad, self.strides())", "derivatives.strides", "expand", "self.strides()"),
]


def apply_edit(spec: Path, case: Case) -> None:
    path = spec / case.file
    text = path.read_bytes().decode("utf-8")
    if case.old:
        assert case.old in text, f"{case.id}: edit anchor not found in {case.file}"
        text = text.replace(case.old, case.new, 1)
    else:
        text += case.new
    data = text.encode("utf-8")
    if case.rule == "yaml.not-utf8":
        data = data.replace("\xff".encode("utf-8"), b"\xff")
    path.write_bytes(data)


def expected_line(spec: Path, case: Case) -> int:
    text = (spec / case.file).read_bytes().decode("utf-8", errors="replace")
    index = text.index(case.line_of.replace("\xff", "\ufffd"))
    return text.count("\n", 0, index) + 1 + (1 if case.line_of.startswith("\n") else 0)


def snapshot(*roots: Path) -> dict[str, float]:
    return {str(p): p.stat().st_mtime for root in roots for p in root.rglob("*")}


@pytest.fixture
def bad_spec(tmp_path, monkeypatch):
    spec = tmp_path / "spec"
    shutil.copytree(MINI_SPEC, spec)
    workdir = tmp_path / "cwd"
    workdir.mkdir()
    monkeypatch.chdir(workdir)
    return spec


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_input_is_reported_at_its_source(case, bad_spec, capsys):
    apply_edit(bad_spec, case)
    before = snapshot(bad_spec, Path.cwd())
    code = main(["check", "--spec", str(bad_spec)])
    out, err = capsys.readouterr()
    assert code == 1, err
    assert "Traceback" not in err + out and "internal error" not in err
    line = expected_line(bad_spec, case)
    location = f"{bad_spec / case.file}:{line}:"
    if case.column is not None:
        location += f"{case.column}:"
    first = next((l for l in err.splitlines() if f"[{case.rule}]" in l), None)
    assert first is not None, f"rule {case.rule} not reported:\n{err}"
    assert first.startswith(location), f"expected {location}, got:\n{err}"
    if case.entry:
        assert f"in entry: {case.entry}" in err
    assert "hint: " in err
    assert snapshot(bad_spec, Path.cwd()) == before


def test_independent_errors_are_all_reported(bad_spec, capsys):
    for case_id in ("schema-unknown-type", "tags-no-description", "derivatives-sizes",
                    "deprecated-unknown-argument"):
        apply_edit(bad_spec, next(c for c in CASES if c.id == case_id))
    code = main(["check", "--spec", str(bad_spec)])
    err = capsys.readouterr().err
    assert code == 1
    for rule in ("schema.unknown-type", "tags.no-description", "derivatives.sizes",
                 "deprecated.unknown-argument"):
        assert f"[{rule}]" in err
    assert "gradshard: 4 errors in the spec" in err


def test_json_problems_carry_structured_fields(bad_spec, capsys):
    apply_edit(bad_spec, next(c for c in CASES if c.id == "derivatives-sizes"))
    assert main(["check", "--spec", str(bad_spec), "--json"]) == 1
    import json
    report = json.loads(capsys.readouterr().out)
    [problem] = report["problems"]
    assert report["ok"] is False
    assert problem["rule"] == "derivatives.sizes"
    assert problem["file"] == str(bad_spec / DERIVATIVES)
    assert problem["entry"] == "expand"
    assert problem["line"] == expected_line(bad_spec, next(c for c in CASES if c.id == "derivatives-sizes"))
    assert problem["hint"]


@pytest.mark.parametrize("argv, message", [
    (["check", "--spec", "/nonexistent/spec"], "no such directory"),
    (["show", "nosuchop", "--spec", str(MINI_SPEC)], "no native function, derivatives entry or backward node"),
])
def test_usage_errors_exit_2(argv, message, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_spec_that_is_neither_layout(tmp_path, capsys):
    assert main(["check", "--spec", str(tmp_path)]) == 2
    assert "neither a torchgen packaged spec nor a PyTorch checkout" in capsys.readouterr().err


def test_missing_template(bad_spec, capsys):
    (bad_spec / "autograd" / "templates" / "python_functions.cpp").unlink()
    assert main(["check", "--spec", str(bad_spec)]) == 1
    err = capsys.readouterr().err
    assert f"{bad_spec / 'autograd' / 'templates' / 'python_functions.cpp'}: error: the spec has no " \
           "template python_functions.cpp [templates.missing]" in err


def test_build_writes_nothing_on_error(bad_spec, capsys):
    apply_edit(bad_spec, next(c for c in CASES if c.id == "derivatives-sizes"))
    out = bad_spec.parent / "out"
    assert main(["build", "--codegen-only", "--spec", str(bad_spec), "--out", str(out)]) == 1
    assert not out.exists()


@pytest.mark.parametrize("options, words", [
    (["--cxx", "no-such-compiler-here"], "no-such-compiler-here"),
    (["--launcher", "no-such-launcher-here"], "no-such-launcher-here"),
    (["--units", "NoSuchUnit*"], "no compile unit matches"),
])
def test_compile_options_are_checked(tmp_path, capsys, options, words):
    code = main(["build", "--spec", str(MINI_SPEC), "--out", str(tmp_path / "out"),
                 "--cache", str(tmp_path / "cache"), *options])
    err = capsys.readouterr().err
    assert code == 2 and words in err and "hint:" in err


def test_incomplete_spec(bad_spec, capsys):
    (bad_spec / DEPRECATED).unlink()
    assert main(["check", "--spec", str(bad_spec)]) == 2
    assert "incomplete" in capsys.readouterr().err


def test_console_script_reports_without_traceback(bad_spec):
    apply_edit(bad_spec, next(c for c in CASES if c.id == "yaml-syntax"))
    script = Path(sys.executable).parent / "gradshard"
    done = subprocess.run([str(script), "check", "--spec", str(bad_spec)],
                          capture_output=True, text=True, env={**os.environ, "PYTHONWARNINGS": "error"})
    assert done.returncode == 1
    assert "[yaml.syntax]" in done.stderr and "Traceback" not in done.stderr
    bad_usage = subprocess.run([str(script), "frobnicate"], capture_output=True, text=True)
    assert bad_usage.returncode == 2 and "Traceback" not in bad_usage.stderr
