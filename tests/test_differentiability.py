"""load_derivatives' rules on small inputs: each saved-value replacement, op naming, the
canonical function, forward formulas and gradient checks."""

from __future__ import annotations

import pytest
from support.facts import parse_spec_dir
from support.specs import MINI_SPEC

from gradshard.pipeline import cpp
from gradshard.pipeline.cpp import CForm, wrap
from gradshard.pipeline.parse.differentiability import op_prefix, saved_variables
from gradshard.pipeline.problems import RuleViolation
from gradshard.service.query.describe import describe_info

TENSOR = cpp.TENSOR
OPT_STR = wrap(CForm.OPTIONAL, cpp.STRING_VIEW)

# (formula, saved name, saved C++ type, saved expr, rewritten formula) for argument `self`
REPLACEMENTS = [
    ("f(self.sym_sizes())", "self_sym_sizes", "c10::SymIntArrayRef", "self.sym_sizes()", "f(self_sym_sizes)"),
    ("f(self->sym_sizes())", "self_sym_sizes_opt", "::std::optional<c10::SymIntArrayRef>",
     "self.has_value() ? std::optional<c10::SymIntArrayRef>(self->sym_sizes()) : std::nullopt",
     "f(self_sym_sizes_opt)"),
    ("f(self.sym_blocksize())", "self_self_sym_blocksize_opt", "::std::optional<c10::SymIntArrayRef>",
     "at::sparse_csr::getSymIntBlockSize(self)", "f(self_self_sym_blocksize_opt)"),
    ("f(self.options())", "self_options", "at::TensorOptions", "self.options()", "f(self_options)"),
    ("zeros_like(self)", "self_info", "torch::autograd::generated::TypeAndSize", "self", "self_info.zeros()"),
    ("f(self.sym_size(-1))", "self_sym_argsize_minus_1", "c10::SymInt", "self.sym_size(-1)",
     "f(self_sym_argsize_minus_1)"),
    ("f(self.sym_size(dim))", "self_sym_argsize_dim", "c10::SymInt", "self.sym_size(dim)", "f(self_sym_argsize_dim)"),
    ("f(self.numel())", "self_numel", "int64_t", "self.numel()", "f(self_numel)"),
    ("f(self.sym_numel())", "self_sym_numel", "c10::SymInt", "self.sym_numel()", "f(self_sym_numel)"),
    ("f(to_args_sizes(self))", "self_args_sizes", "::std::vector<::std::vector<int64_t>>",
     "to_args_sizes(self)", "f(self_args_sizes)"),
    ("f(to_args_sizes_symint(self))", "self_args_sizes_symint", "::std::vector<::std::vector<c10::SymInt>>",
     "to_args_sizes_symint(self)", "f(self_args_sizes_symint)"),
    ("f(to_args_scalartypes(self))", "self_args_scalartypes", "::std::vector<at::ScalarType>",
     "to_args_scalartypes(self)", "f(self_args_scalartypes)"),
    ("f(TensorGeometry(self))", "self_geometry", "at::TensorGeometry", "TensorGeometry(self)", "f(self_geometry)"),
    ("f(self.scalar_type())", "self_scalar_type", "at::ScalarType", "self.scalar_type()", "f(self_scalar_type)"),
    ("f(self.dim())", "self_dim", "int64_t", "self.dim()", "f(self_dim)"),
    ("f(self.sym_strides())", "self_sym_strides", "c10::SymIntArrayRef",
     'strides_or_error(self, "self")', "f(self_sym_strides)"),
    ("f(self.layout())", "self_layout", "at::Layout", "self.layout()", "f(self_layout)"),
    ("f(self.is_conj())", "self_conjugate", "bool", "self.is_conj()", "f(self_conjugate)"),
]


@pytest.mark.parametrize("formula, name, ctype, expr, rewritten", REPLACEMENTS,
                         ids=[r[1] for r in REPLACEMENTS])
def test_each_replacement(formula, name, ctype, expr, rewritten):
    text, saved = saved_variables(formula, [("self", TENSOR)], ("self",))
    assert text == rewritten
    assert [(s.name, str(s.ctype), s.expr) for s in saved] == [(name, ctype, expr)]


def test_remaining_uses_save_the_argument_after_its_properties():
    text, saved = saved_variables("grad * self.sym_numel() + self", [("self", TENSOR)], ("self",))
    assert text == "grad * self_sym_numel + self"
    assert [s.name for s in saved] == ["self_sym_numel", "self"]


def test_arguments_are_processed_in_order_and_duplicates_kept():
    text, saved = saved_variables("f(other.dim(), self.dim(), other.dim())",
                                  [("self", TENSOR), ("other", TENSOR)], ("self",))
    assert text == "f(other_dim, self_dim, other_dim)"
    assert [s.name for s in saved] == ["self_dim", "other_dim", "other_dim"]


def test_patterns_are_not_left_anchored():
    # torchgen's regexes are unescaped and unanchored: 'self' inside 'my_self' still matches
    text, saved = saved_variables("f(my_self.dim())", [("self", TENSOR)], ("self",))
    assert text == "f(my_self_dim)"
    assert [s.name for s in saved] == ["self_dim"]


def test_identifier_boundaries_decide_plain_saves():
    _, saved = saved_variables("f(selfish)", [("self", TENSOR)], ("self",))
    assert saved == ()


def test_optional_string_view_is_rewritten():
    text, saved = saved_variables("f(rounding_mode)", [("rounding_mode", OPT_STR)], ("self",))
    assert text == ("f(rounding_mode.has_value() ? std::optional<std::string_view>"
                    "(rounding_mode.value()) : std::nullopt)")
    assert [s.name for s in saved] == ["rounding_mode"]


@pytest.mark.parametrize("formula, rule", [
    ("f(self.sizes())", "derivatives.sizes"),
    ("f(self->sizes())", "derivatives.sizes"),
    ("f(self.size(0))", "derivatives.sizes"),
    ("f(self->size(-1))", "derivatives.sizes"),
    ("f(self.strides())", "derivatives.strides"),
])
def test_forbidden_accessors(formula, rule):
    with pytest.raises(RuleViolation) as caught:
        saved_variables(formula, [("self", TENSOR)], ("self",))
    assert caught.value.rule == rule


def test_sym_strides_only_for_the_same_single_variable():
    with pytest.raises(RuleViolation) as caught:
        saved_variables("f(self.sym_strides())", [("self", TENSOR)], ("other",))
    assert caught.value.rule == "derivatives.strides"


@pytest.mark.parametrize("name, key, prefix", [
    ("add", "Default", "AddBackward"),
    ("log1p", "Default", "Log1PBackward"),
    ("max_pool2d", "Default", "MaxPool2DBackward"),
    ("_pdist_forward", "Default", "PdistBackward"),
    ("_pdist_backward", "Default", "PdistBackwardBackward"),
    ("sum", "AutogradNestedTensor", "SumBackwardAutogradNestedTensor"),
])
def test_op_prefix(name, key, prefix):
    assert op_prefix(name, key) == prefix


@pytest.fixture(scope="module")
def mini():
    return parse_spec_dir(MINI_SPEC)


def info_of(spec, schema_start, key="Default"):
    entry = next(e for e in spec.infos if str(e.schema).startswith(schema_start))
    return describe_info(entry.info_for(key))


def test_ops_are_numbered_per_prefix_and_key(mini):
    assert info_of(mini, "sum(")["op"] == "SumBackward0"
    assert info_of(mini, "sum(", "AutogradNestedTensor")["op"] == "SumBackwardAutogradNestedTensor0"


def test_view_copy_info(mini):
    info = info_of(mini, "expand_copy(")
    assert info["name"] == "expand_copy." and info["op"] == "ExpandBackward0_copy"
    assert info["func"].startswith("expand_copy(")


def test_named_gradients(mini):
    info = info_of(mini, "minmax(")
    assert info["available_named_gradients"] == ["grad_min", "grad_max"]
    assert info["used_named_gradients"] == ["grad_max", "grad_min"]


def test_formulas_sorted_by_key_and_args_in_schema_order(mini):
    info = info_of(mini, "mul.Tensor(")
    assert [d["var_names"] for d in info["derivatives"]] == [["other"], ["self"]]
    assert [a[0] for a in info["args_with_derivatives"]] == ["self", "other"]
    assert [a[1] for a in info["args_with_derivatives"]] == ["const at::Tensor &"] * 2


def test_structured_group_binds_tensor_lists_as_ilistref():
    from gradshard.pipeline.cpp import CppFlags, cpp_arguments
    from gradshard.pipeline.schema import FunctionSchema
    schema = FunctionSchema.parse("cat(Tensor[] tensors, int dim=0) -> Tensor")
    plain = cpp_arguments(schema, CppFlags())
    structured = cpp_arguments(schema, CppFlags(ilistref_for_tensor_lists=True))
    assert plain[0].type == "at::TensorList"
    assert structured[0].type == "const at::ITensorListRef &"


def test_auto_linear_and_element_wise_expansions(mini):
    assert info_of(mini, "expand(")["forward_derivatives"][0]["formula"] == \
        "self_t.expand_symint(size, implicit)"
    assert info_of(mini, "sum(")["forward_derivatives"][0]["formula"] == "at::sum(self_t, dtype)"
