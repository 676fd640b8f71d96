"""pipeline/render/kernel_lists.py holds the name lists of torchgen's autograd kernel generators in
gradshard's own shape; each is held here to the installed torchgen's list as it stands, so a
torch upgrade that changes one fails here before it shows as a differing file."""

from __future__ import annotations

import pytest

from gradshard.pipeline.render import kernel_lists

gen_variable_type = pytest.importorskip("torchgen.packaged.autograd.gen_variable_type")
gen_inplace_or_view_type = pytest.importorskip(
    "torchgen.packaged.autograd.gen_inplace_or_view_type")
gen_trace_type = pytest.importorskip("torchgen.packaged.autograd.gen_trace_type")


def torchgen_lists() -> dict[str, object]:
    """Each of our lists and torchgen's counterpart, by our name."""
    gvt, giv, gtt = gen_variable_type, gen_inplace_or_view_type, gen_trace_type
    return {
        "DONT_REQUIRE_DERIVATIVE": gvt.DONT_REQUIRE_DERIVATIVE,
        "GRADIENT_IMPLEMENTED_FOR_COMPLEX": (gvt.GRADIENT_IMPLEMENTED_FOR_COMPLEX
                                             | gvt.GRADIENT_IMPLEMENTED_FOR_SPARSE_COMPLEX),
        "RESET_GRAD_ACCUMULATOR": gvt.RESET_GRAD_ACCUMULATOR,
        "DONT_ENFORCE_SAME_TENSOR_IMPL_OR_STORAGE": gvt.DONT_ENFORCE_SAME_TENSOR_IMPL_OR_STORAGE,
        "DONT_ENFORCE_TENSOR_IMPL_USE_COUNT": gvt.DONT_ENFORCE_TENSOR_IMPL_USE_COUNT,
        "DONT_ENFORCE_STORAGE_IMPL_USE_COUNT": gvt.DONT_ENFORCE_STORAGE_IMPL_USE_COUNT,
        "FOREACH_WITHOUT_INFO": gvt._foreach_ops_without_differentiability_info,
        "FOREACH_WITH_DIFFERENT_ARITY": gvt._foreach_ops_with_different_arity,
        "MANUAL_BACKEND": gtt.MANUAL_BACKEND,
        "MANUAL_AUTOGRAD_AND_TRACER": gtt.MANUAL_AUTOGRAD_AND_TRACER,
        "VIEW_FUNCTIONS": giv.VIEW_FUNCTIONS,
        "VIEW_FUNCTIONS_WITH_METADATA_CHANGE": giv.VIEW_FUNCTIONS_WITH_METADATA_CHANGE,
        "RETURNS_VIEWS_OF_INPUT": giv.RETURNS_VIEWS_OF_INPUT,
        "ALL_VIEW_FUNCTIONS": gvt.ALL_VIEW_FUNCTIONS,
    }


@pytest.mark.parametrize("name", sorted(torchgen_lists()))
def test_each_list_equals_torchgens(name):
    ours, theirs = getattr(kernel_lists, name), torchgen_lists()[name]
    if isinstance(theirs, dict):
        assert dict(ours) == dict(theirs)
    else:
        assert set(ours) == set(theirs) and len(ours) > 0


def test_view_info_is_get_view_info():
    """Every name either list knows aliases the argument torchgen's get_view_info names."""
    names = set(kernel_lists.VIEW_FUNCTIONS) | set(kernel_lists.RETURNS_VIEWS_OF_INPUT)
    for base in sorted(names | {"mul", "add_"}):
        expected = gen_inplace_or_view_type.VIEW_FUNCTIONS.get(base)
        if expected is None and base in gen_inplace_or_view_type.RETURNS_VIEWS_OF_INPUT:
            expected = "self"
        assert kernel_lists.view_info(base) == expected, base
