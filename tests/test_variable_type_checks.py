"""gen_autograd's checks (the ones PyTorch's build runs while it generates VariableType,
ADInplaceOrViewType and ViewFuncs): each is a problem of `check` and `build`, located at the
derivatives.yaml entry or native function the user edited, and torchgen 2.13 rejects the
same edited spec."""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest
from support.oracle import run_oracle
from support.specs import DERIVATIVES, MINI_SPEC, NATIVE, stage_packaged_spec

from gradshard.service.cli import main


@dataclass(frozen=True)
class BadSpec:
    rule: str
    file: str  # where the problem is reported
    anchor: str  # the text of the reported line in the edited file
    edits: tuple[tuple[str, str, str], ...]  # (file, old, new); old "" appends new
    torchgen_says: str  # a fragment of torchgen's own error
    oracle: str = "render"  # torchgen_oracle.py's command that meets it (tree: gen_autograd whole)


MINMAX = "- name: minmax(Tensor self, int dim=0) -> (Tensor min, Tensor max)\n"
MINMAX_GRADS = "  self: grad_min.expand_symint(self.sym_sizes()) + grad_max.expand_symint(self.sym_sizes())\n"
EXPAND = "- name: expand(Tensor(a) self, SymInt[] size, *, bool implicit=False) -> Tensor(a)\n"
MY_OP = "\n- func: my_op(Tensor self) -> Tensor\n  variants: function\n"


def new_view(schema: str, copy_returns: str) -> str:
    """A new overload of expand (a view op by its base name, gen_inplace_or_view_type's
    VIEW_FUNCTIONS), with its view_copy variant, as native_functions.yaml entries."""
    name, arguments = schema.split("(", 1)
    base, overload = name.split(".")
    arguments = arguments.split(") -> ")[0].replace("Tensor(a -> *) self", "Tensor self")
    return (f"\n- func: {schema}\n  dispatch:\n    CPU: {base}_{overload}\n"
            f"\n- func: {base}_copy.{overload}({arguments.replace('Tensor(a) self', 'Tensor self')})"
            f" -> {copy_returns}\n  dispatch:\n"
            f"    CompositeExplicitAutogradNonFunctional: {base}_copy_{overload}\n"
            "  tags: view_copy\n")


VIEW_DTYPE = "expand.gs(Tensor(a) self, ScalarType dtype) -> Tensor(a)"
VIEW_TWO = "expand.two(Tensor(a -> *) self) -> (Tensor(a) a, Tensor(a) b)"
VIEW_PLAIN = "expand.gs(Tensor(a) self) -> Tensor(a)"
VIEW_INT_FIRST = "expand.gs(int k, Tensor(a) self) -> Tensor(a)"

CASES = {
    "output-differentiability-length": BadSpec(
        "variable_type.output-differentiability-length", DERIVATIVES, MINMAX,
        ((DERIVATIVES, "  output_differentiability: [True, True]", "  output_differentiability: [True]"),),
        "does not match the number of outputs"),
    "inplace-not-differentiable": BadSpec(
        "variable_type.inplace-not-differentiable", DERIVATIVES,
        "- name: mul_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)\n",
        ((DERIVATIVES, "", "\n- name: mul_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)\n"
                           "  self: grad\n  output_differentiability: [False]\n"),),
        "output_differentiability=False for inplace operation"),
    "missing-arguments": BadSpec(
        "variable_type.missing-arguments", DERIVATIVES, "  implicit: grad\n",
        ((DERIVATIVES, EXPAND, EXPAND + "  implicit: grad\n"),),
        "Missing arguments for derivatives"),
    "derivative-ignored": BadSpec(
        "variable_type.derivative-ignored", DERIVATIVES, MINMAX,
        ((DERIVATIVES, "  output_differentiability: [True, True]",
          "  output_differentiability: [False, False]"),),
        "derivative ignored for minmax"),
    "forward-count": BadSpec(
        "variable_type.forward-count", DERIVATIVES, "  min, max: (self_t, self_t)\n",
        ((DERIVATIVES, MINMAX_GRADS + "  output_differentiability: [True, True]",
          "  self: grad.expand_symint(self.sym_sizes())\n  min, max: (self_t, self_t)"),),
        "Expected the number of forward derivatives implemented (2) to match the number of "
        "differentiable outputs (1)"),
    "formula-needs-dispatch": BadSpec(
        "variable_type.formula-needs-dispatch", DERIVATIVES, "- name: my_op(Tensor self) -> Tensor\n",
        ((NATIVE, "", MY_OP),
         (DERIVATIVES, "", "\n- name: my_op(Tensor self) -> Tensor\n  self: grad\n")),
        "It's required to add a dispatch section"),
    "manual-kernel-registration": BadSpec(
        "variable_type.manual-kernel-registration", NATIVE, "- func: my_op(Tensor self) -> Tensor\n",
        ((NATIVE, "", MY_OP + "  manual_kernel_registration: True\n"),
         (DERIVATIVES, "", "\n- name: my_op(Tensor self) -> Tensor\n  self: grad\n")),
        "(name in MANUAL_BACKEND) != f.manual_kernel_registration"),
    "foreach-without-info": BadSpec(
        "variable_type.foreach-without-info", NATIVE,
        "- func: _foreach_exp_(Tensor(a!)[] self) -> ()\n",
        ((NATIVE, "", "\n- func: _foreach_exp_(Tensor(a!)[] self) -> ()\n  device_check: NoCheck\n"
                      "  variants: function\n"
                      "  dispatch:\n    CompositeExplicitAutograd: foreach_tensor_exp_slow_\n"),),
        "_foreach_exp. should have a differentiability info"),
    "forward-without-tangent": BadSpec(
        "variable_type.forward-without-tangent", DERIVATIVES, "  result: at::zeros_like(self_p)\n",
        ((DERIVATIVES, "  result: other_t * self_p + self_t * other_p",
          "  result: at::zeros_like(self_p)"),),
        "is a differentiable Tensor"),
    # (load_derivatives refuses a condition per output before gen_variable_type could)
    "output-differentiability-conditions": BadSpec(
        "derivatives.bad-output-differentiability", DERIVATIVES,
        '  output_differentiability: ["self.is_floating_point()", "self.is_floating_point()"]',
        ((DERIVATIVES, "  output_differentiability: [True, True]",
          '  output_differentiability: ["self.is_floating_point()", "self.is_floating_point()"]'),),
        "we only support single-output functions"),
    "wrap-opt-if": BadSpec(
        "variable_type.wrap-opt-if", DERIVATIVES, "  self, other: mul_pair(grad, wrap_opt_if(other2, true), other)\n",
        ((DERIVATIVES, "  self: mul_tensor_backward(grad, other, self.scalar_type())\n"
                       "  other: mul_tensor_backward(grad, self, other.scalar_type())\n",
          "  self, other: mul_pair(grad, wrap_opt_if(other2, true), other)\n"),),
        "wrap_opt_if_match is None"),
    # ADInplaceOrViewType and ViewFuncs (gen_inplace_or_view_type, gen_view_funcs)
    "view-argument-type": BadSpec(
        "inplace_or_view.view-argument-type", NATIVE, f"- func: {VIEW_DTYPE}\n",
        ((NATIVE, "", new_view(VIEW_DTYPE, "Tensor")),),
        "argument to op expand in addition to known types", "tree"),
    "multiple-view-outputs": BadSpec(
        "inplace_or_view.multiple-view-outputs", NATIVE, f"- func: {VIEW_TWO}\n",
        ((NATIVE, "", new_view(VIEW_TWO, "(Tensor a, Tensor b)")),),
        "return multiple differentiable output when at least one of them is view", "tree"),
    "view-without-default": BadSpec(
        "inplace_or_view.view-without-default", DERIVATIVES, f"- name: {VIEW_PLAIN}\n",
        ((NATIVE, "", new_view(VIEW_PLAIN, "Tensor")),
         (DERIVATIVES, "", f"\n- name: {VIEW_PLAIN}\n  dispatch:\n"
                           "    AutogradNestedTensor:\n      self: grad\n")),
        "KeyError: 'Default", "tree"),
    "view-funcs-argument-order": BadSpec(
        "view_funcs.argument-order", NATIVE, f"- func: {VIEW_INT_FIRST}\n",
        ((NATIVE, "", new_view(VIEW_INT_FIRST, "Tensor")),),
        "UnsatError", "tree"),
}


def edited_mini(root: Path, case: BadSpec) -> Path:
    spec = root / "spec"
    shutil.copytree(MINI_SPEC, spec)
    apply(spec, case.edits)
    return spec


def apply(spec: Path, edits) -> None:
    for file, old, new in edits:
        path = spec / file
        text = path.read_text()
        if old:
            assert old in text, f"edit anchor not in {file}: {old!r}"
            text = text.replace(old, new, 1)
        else:
            text += new
        path.write_text(text)


def line_of(path: Path, anchor: str) -> int:
    text = path.read_text()
    at = text.index(anchor)
    return text.count("\n", 0, at) + 1


@pytest.mark.parametrize("name", list(CASES))
def test_check_reports_at_the_edit(name, tmp_path, capsys):
    case = CASES[name]
    spec = edited_mini(tmp_path, case)
    assert main(["check", "--spec", str(spec), "--json"]) == 1
    problems = json.loads(capsys.readouterr().out)["problems"]
    mine = [p for p in problems if p["rule"] == case.rule]
    assert mine, problems
    where = spec / case.file
    assert mine[0]["file"] == str(where)
    assert mine[0]["line"] == line_of(where, case.anchor)


@pytest.mark.parametrize("name", ["missing-arguments", "manual-kernel-registration",
                                  "multiple-view-outputs"])
def test_build_refuses_and_writes_nothing(name, tmp_path, capsys):
    case = CASES[name]
    spec = edited_mini(tmp_path, case)
    out = tmp_path / "out"
    code = main(["build", "--codegen-only", "--spec", str(spec), "--out", str(out),
                 "--cache", str(tmp_path / "cache")])
    err = capsys.readouterr().err
    assert code == 1
    assert f"[{case.rule}]" in err
    assert f"{spec / case.file}:{line_of(spec / case.file, case.anchor)}:" in err
    assert not out.exists() or not any(out.iterdir())


@pytest.mark.parametrize("name", list(CASES))
def test_torchgen_rejects_it_too(name, tmp_path):
    """The same edit on the mini spec, staged as a torchgen package: PyTorch's generator
    fails on it, with its own message."""
    case = CASES[name]
    pythonpath, spec = stage_packaged_spec(tmp_path / "stage")
    for file in (NATIVE, DERIVATIVES, "ATen/native/tags.yaml", "autograd/deprecated.yaml"):
        shutil.copy(MINI_SPEC / file, spec / file)
    apply(spec, case.edits)
    with pytest.raises(AssertionError) as failed:
        run_oracle(case.oracle, spec, str(tmp_path / "out"), pythonpath=pythonpath)
    assert case.torchgen_says in str(failed.value)
