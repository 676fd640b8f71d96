"""Issue 15, items 19-21: each fault is reported once, where the user's edit is.

Every case edits a copy of the mini spec and runs the CLI twice: `check --json` (the build
graph in memory) and `build --codegen-only --json` (the build graph on a cache). Both must
give exactly the expected problems.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest
from support.spec_edits import Edit, apply_edits
from support.specs import DERIVATIVES, MINI_SPEC, NATIVE

from gradshard.pipeline.parse.spec import parse_derivatives_entry, split_spec
from gradshard.pipeline.problems import SpecFile
from gradshard.service.cli import main
from gradshard.service.files.spec_location import locate_spec
from gradshard.service.files.inputs import load_texts


@dataclass(frozen=True)
class Fault:
    file: str     # the spec file edited, relative to the spec directory
    old: str      # text replaced ("" appends `new`)
    new: str
    blamed: str   # the file the one problem must name
    line_of: str  # the problem's line is the first line of `blamed` containing this text
    rule: str
    entry: str
    mentions: str = ""  # what the message must name besides the entry (the native function)


def spec_with(tmp_path: Path, fault: Fault) -> Path:
    spec = tmp_path / "spec"
    shutil.copytree(MINI_SPEC, spec)
    apply_edits(spec, [Edit(fault.file, fault.old, fault.new)])
    return spec


def line_of(path: Path, needle: str) -> int:
    text = path.read_text()
    return text.count("\n", 0, text.index(needle)) + 1


def reported(capsys, spec: Path, tmp_path: Path) -> dict[str, list[dict]]:
    """The problems `check` and `build --codegen-only` report, per command."""
    problems = {}
    out = tmp_path / "out"
    for command in (["check"], ["build", "--codegen-only", "--out", str(out)]):
        code = main([*command, "--json", "--spec", str(spec)])
        report = json.loads(capsys.readouterr().out)
        assert code == 1 and report["ok"] is False, report
        problems[command[0]] = report["problems"]
    assert not out.exists() or not any(out.iterdir()), "a rejected spec wrote files"
    return problems


def assert_one_report(capsys, tmp_path: Path, fault: Fault) -> None:
    spec = spec_with(tmp_path, fault)
    expected = {"file": str(spec / fault.blamed), "line": line_of(spec / fault.blamed, fault.line_of),
                "rule": fault.rule, "entry": fault.entry}
    for command, problems in reported(capsys, spec, tmp_path).items():
        found = [{key: p[key] for key in expected} for p in problems]
        assert found == [expected], f"{command}: {json.dumps(problems, indent=1)}"
        assert fault.mentions in problems[0]["message"]


# ---------------------------------------------------------------------------------------------
# Item 19: formula faults found while matching are blamed on the formula


INPLACE_ENTRY = ("\n- name: add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)\n"
                 "  self: grad\n  other: maybe_multiply(grad, alpha.conj())\n"
                 "  result: self_p + maybe_multiply(other_t, alpha)\n")
STRIDED_SELF = ("  self: handle_r_to_c(self.scalar_type(), grad).as_strided_symint("
                "TensorGeometry(self).sym_sizes(), TensorGeometry(self).sym_strides())")

FORMULA_FAULTS = {
    # an in-place op's own forward formula reads self_p (torchgen: a RuntimeError)
    "inplace-uses-self_p": Fault(DERIVATIVES, "", INPLACE_ENTRY, DERIVATIVES,
                                 "  result: self_p + maybe", "match.inplace-uses-self",
                                 "add_.Tensor", "in-place add_.Tensor"),
    # _foreach_add.List borrows add.Tensor's formulas and cannot map TensorGeometry(self)
    "foreach-unmappable-saved-value": Fault(
        DERIVATIVES, "  self: handle_r_to_c(self.scalar_type(), grad)", STRIDED_SELF, DERIVATIVES,
        "TensorGeometry(self)", "foreach.unmappable-saved-value", "add.Tensor", "_foreach_add.List"),
}


@pytest.mark.parametrize("name", list(FORMULA_FAULTS))
def test_formula_faults_found_by_matching_are_reported_at_the_formula(name, tmp_path, capsys):
    assert_one_report(capsys, tmp_path, FORMULA_FAULTS[name])


# ---------------------------------------------------------------------------------------------
# Item 20: preprocessor lines in formulas


BLOCK_WITH_INCLUDE = ("  self: |\n    mul_tensor_backward(grad, other,\n    #include <vector>\n"
                      "      self.scalar_type())\n")
BLOCK_WITH_DEFINE_FIRST = "  self: |\n    #define G grad\n    at::sum_to(G, self.sym_sizes())\n"

PREPROCESSOR_FAULTS = {
    "include-inside-a-block": Fault(
        DERIVATIVES, "  self: mul_tensor_backward(grad, other, self.scalar_type())\n",
        BLOCK_WITH_INCLUDE, DERIVATIVES, "    #include <vector>", "derivatives.preprocessor",
        "mul.Tensor"),
    "define-as-first-line": Fault(
        DERIVATIVES, "  self: at::sum_to(grad, self.sym_sizes())\n", BLOCK_WITH_DEFINE_FIRST,
        DERIVATIVES, "    #define G grad", "derivatives.preprocessor", "expand"),
}


@pytest.mark.parametrize("name", list(PREPROCESSOR_FAULTS))
def test_preprocessor_line_in_a_formula_is_rejected_at_its_line(name, tmp_path, capsys,
                                                                 packaged_spec):
    assert_one_report(capsys, tmp_path, PREPROCESSOR_FAULTS[name])
    # and no formula of the real spec trips the rule
    texts = load_texts(locate_spec(str(packaged_spec)))
    entries = split_spec(texts, (SpecFile.DERIVATIVES,))[SpecFile.DERIVATIVES]
    assert len(entries) > 600
    for entry in entries:
        parse_derivatives_entry(entry)  # raises on any rule, the new one included


# ---------------------------------------------------------------------------------------------
# Item 21: one report per fault on the Python and view side


QSCHEME_OP = ("\n- func: qfoo(Tensor self, QScheme q) -> Tensor\n  variants: function, method\n"
              "  dispatch:\n    CompositeExplicitAutograd: qfoo\n")
DUPLICATE_SUM = ("\n- func: sum.again(Tensor self, *, ScalarType? dtype=None) -> Tensor\n"
                 "  variants: function, method\n  dispatch:\n    CompositeExplicitAutograd: sum_again\n")

SEVEN_TENSORS_OP = ("\n- func: seven(Tensor self) -> (Tensor, Tensor, Tensor, Tensor, Tensor, Tensor, "
                    "Tensor)\n  variants: function, method\n  dispatch:\n"
                    "    CompositeExplicitAutograd: seven\n")
SUM_AS_LIST = ("\n- func: sum.again(Tensor self, *, ScalarType? dtype=None) -> Tensor[]\n"
               "  variants: function, method\n  dispatch:\n    CompositeExplicitAutograd: sum_again\n")

SINGLE_REPORT_FAULTS = {
    # bound as a function and as a method: one fault of the function, not one per binding
    "unsupported-python-type": Fault(NATIVE, "", QSCHEME_OP, NATIVE, "- func: qfoo(",
                                     "python.unsupported-type", "qfoo"),
    "unsupported-python-return": Fault(NATIVE, "", SEVEN_TENSORS_OP, NATIVE, "- func: seven(",
                                       "python.unsupported-return", "seven"),
    "python-signature-clash-in-both-bindings": Fault(NATIVE, "", SUM_AS_LIST, NATIVE,
                                                     "- func: sum.again(",
                                                     "python.duplicate-signature", "sum.again"),
    # a second functional sum: not also a clash of view kinds (sum is not a view)
    "duplicate-signature": Fault(NATIVE, "", DUPLICATE_SUM, NATIVE, "- func: sum.again(",
                                 "native.duplicate-signature", "sum.again"),
}


@pytest.mark.parametrize("name", list(SINGLE_REPORT_FAULTS))
def test_one_report_per_fault(name, tmp_path, capsys):
    assert_one_report(capsys, tmp_path, SINGLE_REPORT_FAULTS[name])
