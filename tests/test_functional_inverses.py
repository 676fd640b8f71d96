"""FunctionalInverses.h (pipeline/layout/functional_inverses.py, templates/codegen/functional_inverses.j2):
hand-built views, the template against CodeTemplate on ATen's own template, and the whole
header against torchgen's gen.py on the packaged spec and on edited copies of it."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.graph_run import parsed_records
from support.oracle import run_oracle
from support.specs import NATIVE, installed_torchgen, stage_packaged_spec

from gradshard.pipeline.layout.functional_inverses import (RenderedInverse,
                                                           functional_inverses_file,
                                                           functional_inverses_header,
                                                           inverse_views, render_inverse,
                                                           view_inverse)
from gradshard.pipeline.parse.native import COMPOSITE_IMPLICIT, Kernel, NativeFunction
from gradshard.pipeline.parse.views import ViewGroup, ViewGrouping
from gradshard.pipeline.problems import RuleViolation
from gradshard.pipeline.render.code_template import expand_template
from gradshard.pipeline.schema import FunctionSchema
from gradshard.service.files.inputs import gradshard_templates

TEMPLATES = gradshard_templates()
LEADING = ("const at::Tensor & base, const at::Tensor & mutated_view, "
           "at::functionalization::InverseReturnMode inverse_return_mode")


def function(schema: str, key: str = "CPU", **fields) -> NativeFunction:
    return NativeFunction(FunctionSchema.parse(schema), dispatch=(Kernel(key, "k"),), **fields)


def declaration(schema: str, **fields) -> str:
    return render_inverse(view_inverse(function(schema, **fields)), TEMPLATES).declaration


# ---------------------------------------------------------------------------------------------
# One view's inverse


def test_a_view_without_overload_takes_its_arguments_after_self_with_symint_kept() -> None:
    assert declaration("view(Tensor(a) self, SymInt[] size) -> Tensor(a)") == (
        f"static at::Tensor view_inverse({LEADING}, c10::SymIntArrayRef size);")


def test_the_overload_joins_the_name_and_defaults_are_not_printed() -> None:
    assert declaration("select.int(Tensor(a) self, int dim, SymInt index=0) -> Tensor(a)") == (
        f"static at::Tensor select_int_inverse({LEADING}, int64_t dim, c10::SymInt index);")


def test_a_view_returning_a_list_takes_the_output_index_first() -> None:
    inverse = view_inverse(function(
        "split.Tensor(Tensor(a -> *) self, SymInt split_size, int dim=0) -> Tensor(a)[]"))
    assert inverse.name == "split_Tensor_inverse" and inverse.return_type == "at::Tensor"
    assert [(p.type, p.name) for p in inverse.parameters[3:]] == [
        ("int64_t", "out_index"), ("c10::SymInt", "split_size"), ("int64_t", "dim")]


def test_several_returns_take_the_output_index_too() -> None:
    names = [p.name for p in view_inverse(function(
        "pair(Tensor(a) self) -> (Tensor(a), Tensor(a))")).parameters]
    assert names == ["base", "mutated_view", "inverse_return_mode", "out_index"]


def test_optional_and_keyword_arguments_bind_as_the_dispatcher_binds_them() -> None:
    assert declaration("jag(Tensor(a) self, Tensor? lengths=None, *, SymInt? start=None, "
                       "int[]? dims=None) -> Tensor(a)") == (
        f"static at::Tensor jag_inverse({LEADING}, const ::std::optional<at::Tensor> & lengths, "
        "::std::optional<c10::SymInt> start, at::OptionalIntArrayRef dims);")


def test_a_view_of_a_tensor_list_has_no_inverse() -> None:
    with pytest.raises(RuleViolation) as caught:
        view_inverse(function("stack_view(Tensor(a)[] tensors) -> Tensor(a)"))
    assert caught.value.rule == "views.inverse-first-argument"


def test_a_view_returning_a_non_tensor_has_no_inverse() -> None:
    with pytest.raises(RuleViolation) as caught:
        view_inverse(function("odd(Tensor(a) self) -> (Tensor(a), int)"))
    assert caught.value.rule == "views.inverse-returns"


# ---------------------------------------------------------------------------------------------
# The views that get one, and the file


def test_composite_implicit_views_get_no_inverse_and_group_order_is_kept() -> None:
    zeta = function("zeta(Tensor(a) self) -> Tensor(a)")
    alpha = function("alpha(Tensor(a) self) -> Tensor(a)")
    composite = function("mid(Tensor(a) self) -> Tensor(a)", key=COMPOSITE_IMPLICIT)
    grouping = ViewGrouping((zeta, composite, alpha),
                            (ViewGroup(zeta), ViewGroup(composite), ViewGroup(alpha)))
    assert [str(v.func.name) for v in inverse_views(grouping)] == ["zeta", "alpha"]
    header = functional_inverses_header(grouping, TEMPLATES)
    assert header.index("zeta_inverse(") < header.index("alpha_inverse(")
    assert "mid_inverse" not in header


def aten_template() -> str:
    return (installed_torchgen() / "packaged" / "ATen" / "templates" /
            "FunctionalInverses.h").read_text()


@pytest.mark.parametrize("declarations", [[], ["static at::Tensor a_inverse();"],
                                          ["static at::Tensor a_inverse();",
                                           "static at::Tensor b_inverse(int64_t k);"]])
def test_the_file_is_atens_template_as_codetemplate_fills_it(declarations: list[str]) -> None:
    expected = expand_template(aten_template(), {
        "generated_comment": "@" + "generated by torchgen/gen.py from FunctionalInverses.h",
        "view_inverse_declarations": declarations})
    rendered = [RenderedInverse(f"f{i}", d) for i, d in enumerate(declarations)]
    assert functional_inverses_file(TEMPLATES, rendered) == expected


# ---------------------------------------------------------------------------------------------
# Against torchgen


NEW_VIEW = """- func: gs_view.dim(Tensor(a) self, int dim, SymInt[]? sizes=None) -> Tensor(a)
  variants: function, method
  dispatch:
    CompositeExplicitAutograd: gs_view

- func: gs_view_copy.dim(Tensor self, int dim, SymInt[]? sizes=None) -> Tensor
  variants: function
  dispatch:
    CompositeExplicitAutogradNonFunctional: gs_view_copy
  tags: view_copy
  autogen: gs_view_copy.dim_out

"""

SPLIT_AND_COMPOSITE = """- func: gs_split(Tensor(a -> *) self, SymInt[] sizes, Tensor? weights=None) -> Tensor(a)[]
  dispatch:
    CPU: gs_split

- func: gs_split_copy(Tensor self, SymInt[] sizes, Tensor? weights=None) -> Tensor[]
  dispatch:
    CompositeExplicitAutogradNonFunctional: gs_split_copy
  tags: view_copy

- func: gs_alias(Tensor(a) self) -> Tensor(a)

"""

# Each edit inserts its entries before unfold's, so the new groups land among the others.
EDITS = {"packaged": "", "new-view": NEW_VIEW, "split-and-composite": SPLIT_AND_COMPOSITE}
ANCHOR = "- func: unfold(Tensor(a) self, int dimension, int size, int step) -> Tensor(a)\n"


def edited_native(spec: Path, entries: str) -> None:
    path = spec / NATIVE
    text = path.read_text()
    assert ANCHOR in text, "edit anchor not in native_functions.yaml"
    path.write_text(text.replace(ANCHOR, entries + ANCHOR, 1))


# What each edit must change in the header (so the comparison covers the new views).
EXPECTED = {
    "packaged": ("static at::Tensor unfold_inverse(", ()),
    "new-view": ("static at::Tensor gs_view_dim_inverse(" + LEADING +
                 ", int64_t dim, at::OptionalSymIntArrayRef sizes);", ()),
    "split-and-composite": ("static at::Tensor gs_split_inverse(" + LEADING +
                            ", int64_t out_index, c10::SymIntArrayRef sizes, "
                            "const ::std::optional<at::Tensor> & weights);", ("gs_alias",)),
}


@pytest.fixture(scope="module", params=sorted(EDITS))
def both_headers(request, tmp_path_factory) -> tuple[str, str, str]:
    """(the edit, gradshard's header, torchgen's) for the packaged spec with one edit."""
    root = tmp_path_factory.mktemp(request.param)
    pythonpath, spec = stage_packaged_spec(root / "stage")
    edited_native(spec, EDITS[request.param])
    run_oracle("inverses", spec, str(root / "out"), pythonpath=pythonpath)
    theirs = (root / "out" / "FunctionalInverses.h").read_text()
    # the oracle is the script torchgen names on the first line, where PyTorch's build runs gen.py
    theirs = theirs.replace("generated by torchgen_oracle.py from",
                            "generated by torchgen/gen.py from", 1)
    ours = functional_inverses_header(parsed_records(spec).view_grouping, TEMPLATES)
    return request.param, ours, theirs


def test_the_header_is_torchgens_byte_for_byte(both_headers: tuple[str, str, str]) -> None:
    edit, ours, theirs = both_headers
    assert ours.encode() == theirs.encode()
    present, absent = EXPECTED[edit]
    assert present in ours and not any(name in ours for name in absent)
    # the new groups sit among the others, in torchgen's order: before unfold's
    assert edit == "packaged" or ours.index(present) < ours.index("unfold_inverse(")
