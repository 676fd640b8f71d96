"""Rule edges where a reimplementation is easily wrong, each against torchgen on the same spec:
either both accept it with identical facts, or both reject it (gradshard with a named rule)."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest
from support.facts import comparable, facts, first_differences, parse_spec_dir
from support.oracle import run_oracle
from support.specs import DEPRECATED, DERIVATIVES, MINI_SPEC, NATIVE, TAGS

from gradshard.pipeline.problems import SpecError


@dataclass(frozen=True)
class Case:
    file: str
    text: str            # appended to the file, or the whole file when `replace` is set
    rejected_by: str = ""  # the rule gradshard reports when torchgen rejects too
    replace: bool = False


ACCEPTED = {
    "scratch-out-alone": Case(NATIVE, "\n- func: sc.out(Tensor self, *, Tensor(a!) out, "
                                      "Tensor(b!) _scratch_buf) -> Tensor(a!)\n  dispatch:\n    CPU: sc_out\n"),
    "list-default-without-derivatives": Case(NATIVE, "\n- func: foo(Tensor self, int[] dims=1) -> Tensor\n"),
    "list-default-excluded-from-cpp": Case(
        NATIVE, "\n- func: foo(Tensor self, int[] dims=1) -> Tensor\n  cpp_no_default_args: ['dims']\n"
                "  dispatch:\n    CompositeExplicitAutograd: foo\n"),
    "namespaced-autogen": Case(NATIVE, "\n- func: foo(Tensor self) -> Tensor\n  dispatch:\n"
                                       "    CompositeExplicitAutograd: foo\n  autogen: aten::foo.out\n"),
    "string-default-with-spaces": Case(NATIVE, "\n- func: foo(Tensor self, str sep='a  b') -> Tensor\n"
                                               "  dispatch:\n    CompositeExplicitAutograd: foo\n"),
    "empty-precomputed": Case(NATIVE, "\n- func: foo.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)\n"
                                      "  structured: True\n  precomputed: []\n  dispatch:\n    CPU: foo_out\n"
                                      "\n- func: foo(Tensor self) -> Tensor\n  structured_delegate: foo.out\n"),
    "valid-precomputed": Case(NATIVE, "\n- func: pc.out(Tensor self, int dim, *, Tensor(a!) out) -> Tensor(a!)\n"
                                      "  structured: True\n  precomputed:\n    - dim -> int dim0, int dim1\n"
                                      "    - bool flag\n  dispatch:\n    CPU: pc_out\n"
                                      "\n- func: pc(Tensor self, int dim) -> Tensor\n  structured_delegate: pc.out\n"),
    "null-tag-description": Case(TAGS, "\n- tag: mytag\n  desc:\n"),
    "empty-dispatch-table": Case(DERIVATIVES, "\n- name: zeros(SymInt[] size, *, ScalarType? dtype=None, "
                                              "Layout? layout=None, Device? device=None, bool? pin_memory=None)"
                                              " -> Tensor\n  dispatch: {}\n"),
    "false-output-differentiability": Case(DERIVATIVES, "\n- name: zeros(SymInt[] size, *, ScalarType? dtype=None,"
                                                        " Layout? layout=None, Device? device=None, "
                                                        "bool? pin_memory=None) -> Tensor\n"
                                                        "  output_differentiability: False\n"),
    "empty-deprecated-list": Case(DEPRECATED, "[]\n", replace=True),
    "underscore-names": Case(NATIVE, "\n- func: _functional(Tensor self) -> Tensor\n  dispatch:\n"
                                     "    CompositeExplicitAutograd: f\n"),
    "comma-in-argument-name": Case(NATIVE, "\n- func: foo(Tensor self, int a,b) -> Tensor\n  dispatch:\n"
                                           "    CompositeExplicitAutograd: foo\n"),
}

REJECTED = {
    "python-module-method": Case(NATIVE, "\n- func: foo(Tensor self) -> Tensor\n  variants: function, method\n"
                                         "  python_module: nn\n", "native.inconsistent"),
    "autogen-out-of-mutable-returning-self": Case(
        NATIVE, "\n- func: foo(Tensor(a!) self, Tensor(b!) buf) -> Tensor(a!)\n  dispatch:\n"
                "    CompositeExplicitAutograd: foo\n  autogen: foo.out\n", "native.no-out-variant"),
    "autogen-out-of-functional-mutating-self": Case(
        NATIVE, "\n- func: ms(Tensor(a!) self, Scalar v) -> Tensor(a!)\n  dispatch:\n    CPU: ms\n"
                "  autogen: ms.out\n", "native.no-out-variant"),
    "precomputed-missing-space": Case(
        NATIVE, "\n- func: pc.out(Tensor self, int dim, *, Tensor(a!) out) -> Tensor(a!)\n  structured: True\n"
                "  precomputed:\n    - dim -> int dim0,int dim1\n  dispatch:\n    CPU: pc_out\n"
                "\n- func: pc(Tensor self, int dim) -> Tensor\n  structured_delegate: pc.out\n",
        "native.bad-precomputed"),
    "precomputed-typed-param": Case(
        NATIVE, "\n- func: pc.out(Tensor self, int dim, *, Tensor(a!) out) -> Tensor(a!)\n  structured: True\n"
                "  precomputed:\n    - int dim -> int d0\n  dispatch:\n    CPU: pc_out\n"
                "\n- func: pc(Tensor self, int dim) -> Tensor\n  structured_delegate: pc.out\n",
        "native.bad-precomputed"),
    "duplicate-key-in-flow-mapping": Case(NATIVE, "\n- func: foo(Tensor self) -> Tensor\n"
                                                  "  dispatch: {CPU: foo_a, CPU: foo_b}\n", "yaml.duplicate-key"),
    "list-default-with-derivatives": Case(
        NATIVE, "\n- func: foo(Tensor self, int[] dims=1) -> Tensor\n  dispatch:\n"
                "    CompositeExplicitAutograd: foo\n", "schema.bad-default"),
    "inplace-forward-uses-self_p": Case(
        DERIVATIVES, "\n- name: add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)\n"
                     "  self: grad\n  other: maybe_multiply(grad, alpha.conj())\n"
                     "  result: self_p + maybe_multiply(other_t, alpha)\n", "match.inplace-uses-self"),
    "foreach-unmappable-saved-value": Case(
        DERIVATIVES, (MINI_SPEC / DERIVATIVES).read_text().replace(
            "  self: handle_r_to_c(self.scalar_type(), grad)",
            "  self: handle_r_to_c(self.scalar_type(), grad).as_strided_symint("
            "TensorGeometry(self).sym_sizes(), TensorGeometry(self).sym_strides())"),
        "foreach.unmappable-saved-value", replace=True),
    "duplicate-functional-signature": Case(
        NATIVE, "\n- func: sum.again(Tensor self, *, ScalarType? dtype=None) -> Tensor\n"
                "  dispatch:\n    CompositeExplicitAutograd: sum_again\n", "native.duplicate-signature"),
    "copy-named-twin-of-a-non-view": Case(
        NATIVE, "\n- func: twin(Tensor self) -> Tensor\n  dispatch:\n    CompositeExplicitAutograd: twin\n"
                "\n- func: twin_copy(Tensor self) -> Tensor\n  dispatch:\n"
                "    CompositeExplicitAutograd: twin_copy\n", "views.duplicate-kind"),
}
# torchgen needs the entry in derivatives.yaml to evaluate the C++ default
EXTRA = {"list-default-with-derivatives": Case(DERIVATIVES, "\n- name: foo(Tensor self, int[] dims=1) -> Tensor\n"
                                                            "  self: grad.sum(dims)\n")}


def edited_mini(tmp_path: Path, *cases: Case) -> Path:
    spec = tmp_path / "spec"
    shutil.copytree(MINI_SPEC, spec)
    for case in cases:
        path = spec / case.file
        path.write_text(case.text if case.replace else path.read_text() + case.text)
    return spec


@pytest.mark.parametrize("name", list(ACCEPTED))
def test_accepted_like_torchgen(name, tmp_path):
    spec = edited_mini(tmp_path, ACCEPTED[name])
    theirs = comparable(run_oracle("facts", spec))
    ours = comparable(facts(parse_spec_dir(spec)))
    for key in ("native_functions", "infos", "matches", "matched_infos"):
        assert len(ours[key]) == len(theirs[key]), key
        for mine, their in zip(ours[key], theirs[key]):
            assert mine == their, f"{key}: " + "\n".join(first_differences(mine, their))


@pytest.mark.parametrize("name", list(REJECTED))
def test_rejected_like_torchgen(name, tmp_path):
    spec = edited_mini(tmp_path, REJECTED[name], *([EXTRA[name]] if name in EXTRA else []))
    with pytest.raises(AssertionError, match="torchgen failed"):
        run_oracle("facts", spec)
    with pytest.raises(SpecError) as caught:
        facts(parse_spec_dir(spec))
    assert REJECTED[name].rejected_by in {p.rule for p in caught.value.problems}


def test_top_level_list_may_be_indented(tmp_path):
    spec = edited_mini(tmp_path)
    path = spec / DERIVATIVES
    path.write_text("".join("  " + line if line.strip() else line
                            for line in path.read_text().splitlines(keepends=True)))
    assert facts(parse_spec_dir(spec))["infos"] == run_oracle("facts", spec)["infos"]


def test_alias_across_entries_is_a_clear_error(tmp_path):
    """A documented difference: torchgen reads whole files, gradshard one entry at a time."""
    spec = edited_mini(tmp_path, Case(NATIVE, "\n- func: foo(Tensor self) -> Tensor\n  dispatch: &kern\n"
                                              "    CPU: foo\n\n- func: bar(Tensor self) -> Tensor\n"
                                              "  dispatch: *kern\n"))
    with pytest.raises(SpecError) as caught:
        parse_spec_dir(spec)
    [problem] = caught.value.problems
    assert problem.rule == "yaml.cross-entry-alias" and "kern" in problem.message
