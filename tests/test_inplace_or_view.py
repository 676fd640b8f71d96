"""ADInplaceOrViewType_0..1.cpp and ADInplaceOrViewTypeEverything.cpp
(pipeline/render/inplace_or_view.py): the kernels of hand-built functions (in-place and out= ops,
views with and without differentiable outputs, list views), which functions get one, the
faults torchgen stops at, the file and its shards, and the time of the whole packaged spec's.
Byte identity with torchgen 2.13, on the packaged spec and on edits aimed at
ADInplaceOrViewType (inplace-and-view-ops-added, view-made-differentiable,
view-made-composite in support/spec_edits.py): test_differential_render.py and
test_incremental.py."""

from __future__ import annotations

import hashlib
import time

import pytest

from gradshard.pipeline.match.match_infos import FunctionMatch
from gradshard.pipeline.parse.differentiability import (Derivative, DifferentiabilityInfo,
                                                        EntryInfos, KeyedInfo)
from gradshard.pipeline.parse.native import NativeFunction
from gradshard.pipeline.problems import RuleViolation
from gradshard.pipeline.releases import DEFAULT_RELEASE, release_named
from gradshard.pipeline.render.inplace_or_view import (InplaceOrViewKernel, RenderedInplaceOrView,
                                                       inplace_or_view_file,
                                                       inplace_or_view_kernels,
                                                       inplace_or_view_shards,
                                                       render_inplace_or_view, view_side_match)
from gradshard.pipeline.render.kernel_lists import view_info
from gradshard.pipeline.render.templating import TemplateSet
from gradshard.pipeline.render.view_funcs import view_func
from gradshard.pipeline.schema import FunctionSchema
from gradshard.service.files.inputs import gradshard_templates

RELEASE = release_named(DEFAULT_RELEASE)

ADIV_FILES = ["ADInplaceOrViewType_0.cpp", "ADInplaceOrViewType_1.cpp",
              "ADInplaceOrViewTypeEverything.cpp"]
GUARD = "at::AutoDispatchBelowADInplaceOrView guard;"
KEYS = "ks & c10::after_ADInplaceOrView_keyset"
REPLAY_TEST = ("      !self.unsafeGetTensorImpl()->support_as_strided() ||\n"
               "      self.unsafeGetTensorImpl()->is_python_dispatch() ||\n"
               "      c10::AutogradState::get_tls_state().get_view_replay_enabled()) {\n")
REPLAY_HEAD = ("  std::unique_ptr<torch::autograd::ViewFunc> func(nullptr);\n"
               "  std::function<at::Tensor(const at::Tensor&)> rev_func=nullptr;\n")
META = ("InferenceMode::is_enabled() ? CreationMeta::INFERENCE_MODE : (at::GradMode::is_enabled()"
        " ? CreationMeta::{} : CreationMeta::NO_GRAD_MODE)")
VIEW_FLAGS = ("/* is_bw_differentiable */ true, /* is_fw_differentiable */ true, "
              "/* view_func */ std::move(func), /* rev_view_func */ rev_func")
ALWAYS_VIEW = "at::functionalization::InverseReturnMode::AlwaysView"


def function(schema: str, **fields) -> NativeFunction:
    """A function with a backend kernel (abstract): it gets derived kernels without formulas."""
    return NativeFunction(FunctionSchema.parse(schema), is_abstract=True, **fields)


def info(fn: NativeFunction, *, outputs: tuple[bool, ...] | None = None,
         formulas: tuple[str, ...] = ()) -> DifferentiabilityInfo:
    """An info for fn: its output_differentiability and backward formulas (for `self`)."""
    return DifferentiabilityInfo(
        name=fn.func.name.name.base, func=fn, op=None,
        derivatives=tuple(Derivative(f, f, ("self",)) for f in formulas),
        forward_derivatives=(), all_saved_inputs=(), all_saved_outputs=(),
        available_named_gradients=(), used_named_gradients=(), args_with_derivatives=(),
        non_differentiable_arg_names=(), output_differentiability=outputs,
        output_differentiability_conditions=None)


def matched(fn: NativeFunction, **infos: DifferentiabilityInfo) -> FunctionMatch:
    """A match giving fn the infos, by dispatch key."""
    entry = EntryInfos(fn.func, tuple(KeyedInfo(k, i) for k, i in infos.items()),
                       str(fn.func))
    return FunctionMatch(str(fn.func.name), entry, exact=True)


def kernel(schema: str, match_infos: dict | None = None, **fields) -> InplaceOrViewKernel:
    fn = function(schema, **fields)
    match = matched(fn, **{k: v(fn) for k, v in match_infos.items()}) if match_infos else None
    (found,) = inplace_or_view_kernels(fn, match)
    return found


def definition(schema: str, match_infos: dict | None = None, **fields) -> str:
    return render_inplace_or_view(kernel(schema, match_infos, **fields),
                                  gradshard_templates()).definition


# ---------------------------------------------------------------------------------------------
# In-place and out= ops


def test_an_in_place_op_redispatches_then_bumps_the_version_of_self():
    assert definition("add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> "
                      "Tensor(a!)") == (
        "at::Tensor & add__Tensor(c10::DispatchKeySet ks, at::Tensor & self, "
        "const at::Tensor & other, const at::Scalar & alpha) {\n"
        "  {\n"
        f"    {GUARD}\n"
        f"    at::_ops::add__Tensor::redispatch({KEYS}, self, other, alpha);\n"
        "  }\n"
        "  increment_version(self);\n"
        "  return self;\n"
        "}\n")


def test_an_out_op_bumps_every_out_and_returns_them_as_a_tuple():
    text = definition("zz_pair.out(Tensor self, *, Tensor(a!) first, Tensor(b!) second) -> "
                      "(Tensor(a!) first, Tensor(b!) second)")
    assert text.startswith("::std::tuple<at::Tensor &,at::Tensor &> zz_pair_out_out(")
    assert ("  increment_version(first);\n  increment_version(second);\n"
            "  return std::forward_as_tuple(first, second);\n}\n") in text
    assert f"at::_ops::zz_pair_out::redispatch({KEYS}, self, first, second);" in text


def test_mutable_tensors_bind_as_const_references_when_asked():
    text = definition("zz.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)",
                      use_const_ref_for_mutable_tensors=True)
    assert text.startswith("const at::Tensor & zz_out_out(c10::DispatchKeySet ks, "
                           "const at::Tensor & self, const at::Tensor & out) {")


def test_an_in_place_view_only_bumps_its_version():
    text = definition("transpose_(Tensor(a!) self, int dim0, int dim1) -> Tensor(a!)",
                      tags=("inplace_view",))
    assert "increment_version(self);" in text and "as_view" not in text


def test_which_functions_get_a_kernel():
    def has_kernel(schema: str, match: FunctionMatch | None = None, **fields) -> bool:
        return bool(inplace_or_view_kernels(NativeFunction(FunctionSchema.parse(schema),
                                                           **fields), match))
    # modifies its arguments but returns nothing (all in-place foreach ops): no kernel
    assert not has_kernel("_foreach_zero_(Tensor(a!)[] self) -> ()", is_abstract=True)
    # functional, not a view
    assert not has_kernel("zz(Tensor self) -> Tensor", is_abstract=True)
    # composite, no formulas: no derived kernels at all
    assert not has_kernel("zz_(Tensor(a!) self) -> Tensor(a!)")
    # written by hand (MANUAL_AUTOGRAD, by C++ name)
    assert not has_kernel("detach_(Tensor(a!) self) -> Tensor(a!)", is_abstract=True)
    # ... but copy.out is not copy_: it gets one
    assert has_kernel("copy.out(Tensor self, Tensor src, bool non_blocking=False, *, "
                      "Tensor(a!) out) -> Tensor(a!)", is_abstract=True)
    # a view by RETURNS_VIEWS_OF_INPUT
    assert has_kernel("narrow(Tensor(a) self, int dim, SymInt start, SymInt length) -> "
                      "Tensor(a)", is_abstract=True)
    # the sparse COO constructor's key lacks its leading `_`: never a view
    assert not has_kernel("_sparse_coo_tensor_with_dims_and_tensors(int sparse_dim, "
                          "int dense_dim, SymInt[] size, Tensor indices, Tensor values, *, "
                          "ScalarType? dtype=None, Layout? layout=None, Device? device=None, "
                          "bool? pin_memory=None, bool? is_coalesced=None) -> Tensor",
                          is_abstract=True)


# ---------------------------------------------------------------------------------------------
# Views


def test_a_view_without_differentiable_output_is_a_plain_as_view():
    assert definition("_values(Tensor(a) self) -> Tensor(a)",
                      {"Default": lambda fn: info(fn, outputs=(False,))}) == (
        "at::Tensor _values(c10::DispatchKeySet ks, const at::Tensor & self) {\n"
        "  auto _tmp = ([&]() {\n"
        f"    {GUARD}\n"
        f"    return at::_ops::_values::redispatch({KEYS}, self);\n"
        "  })();\n"
        "  auto result = as_view(self, _tmp, /* is_bw_differentiable */ false, "
        "/* is_fw_differentiable */ false);\n"
        "  return result;\n"
        "}\n")


def test_a_view_closes_over_copies_of_array_refs_and_optional_ints():
    text = definition("unfold.gs(Tensor(a) self, int dimension, SymInt[] sizes, int? step=None, "
                      "Tensor? weights=None) -> Tensor(a)")
    assert text == (
        "at::Tensor unfold_gs(c10::DispatchKeySet ks, const at::Tensor & self, int64_t dimension, "
        "c10::SymIntArrayRef sizes, ::std::optional<int64_t> step, "
        "const ::std::optional<at::Tensor> & weights) {\n"
        "  auto _tmp = ([&]() {\n"
        f"    {GUARD}\n"
        f"    return at::_ops::unfold_gs::redispatch({KEYS}, self, dimension, sizes, step, "
        "weights);\n"
        "  })();\n" + REPLAY_HEAD +
        "  if (false ||\n" + REPLAY_TEST +
        "    auto sizes_vec = sizes.vec();\n"
        "    auto step_val = step.value_or(0);\n"
        "    func = std::make_unique<torch::autograd::generated::UnfoldGsViewFunc>(dimension, "
        "sizes, step, weights);\n"
        "    rev_func = [=](const at::Tensor& input_view) {\n"
        "      return at::functionalization::FunctionalInverses::unfold_gs_inverse(self, "
        f"input_view, {ALWAYS_VIEW}, dimension, sizes_vec, step_val, weights);\n"
        "    };\n"
        "  }\n"
        f"  auto result = as_view(/* base */ self, /* output */ _tmp, {VIEW_FLAGS}, "
        f"/* creation_meta */ {META.format('DEFAULT')});\n"
        "  return result;\n"
        "}\n")


def test_a_view_changing_metadata_always_replays():
    text = definition("view_as_real(Tensor(a) self) -> Tensor(a)")
    assert "  if (true ||\n" in text
    assert "make_unique<torch::autograd::generated::ViewAsRealViewFunc>();" in text
    assert f"view_as_real_inverse(self, input_view, {ALWAYS_VIEW});" in text


def test_each_output_of_a_list_view_is_a_view_with_its_index():
    text = definition("split.Tensor(Tensor(a -> *) self, SymInt split_size, int dim=0) -> "
                      "Tensor(a)[]")
    assert text.startswith("::std::vector<at::Tensor> split_Tensor(")
    assert ("  for (auto view_idx : c10::irange(_tmp.size())) {\n"
            "    std::unique_ptr<torch::autograd::ViewFunc> func(nullptr);\n") in text
    assert ("      func = std::make_unique<torch::autograd::generated::SplitTensorViewFunc>"
            "(split_size, dim, view_idx);\n") in text
    assert (f"split_Tensor_inverse(self, input_view, {ALWAYS_VIEW}, view_idx, split_size, dim);"
            in text)
    assert (f"    as_view(/* base */ self, /* output */ _tmp[view_idx], {VIEW_FLAGS}, "
            f"/* creation_meta */ {META.format('MULTI_OUTPUT_NODE')});\n"
            "  }\n  auto result = std::move(_tmp);\n  return result;\n}\n") in text


def test_formulas_using_grad_make_only_the_first_output_differentiable():
    fn_infos = {"Default": lambda fn: info(fn, formulas=("grad.sum()",))}
    text = definition("chunk.two(Tensor(a -> *) self) -> (Tensor(a) a, Tensor(a) b)", fn_infos)
    assert "auto [a, b] = as_view(/* base */ self, /* output */ _tmp," in text
    assert "return std::make_tuple(std::move(a), std::move(b));" in text


def test_the_tie_keeps_a_return_name_that_the_return_renames():
    text = definition("alias.named(Tensor(a) self, int self_return) -> Tensor(a) self")
    assert "  auto self = as_view(" in text and "  return self_return;\n" in text


# ---------------------------------------------------------------------------------------------
# Faults torchgen stops at


def test_a_differentiable_view_with_an_argument_it_cannot_close_over_is_refused():
    with pytest.raises(RuleViolation) as caught:
        kernel("view.gs(Tensor(a) self, ScalarType dtype) -> Tensor(a)")
    assert caught.value.rule == "inplace_or_view.view-argument-type"
    # not differentiable: no view function, nothing to close over
    assert kernel("view.gs(Tensor(a) self, ScalarType dtype) -> Tensor(a)",
                  {"Default": lambda fn: info(fn, outputs=(False,))}).view.kind == "none"


def test_a_view_with_formulas_only_for_another_key_is_refused():
    with pytest.raises(RuleViolation) as caught:
        kernel("alias(Tensor(a) self) -> Tensor(a)",
               {"AutogradNestedTensor": lambda fn: info(fn, formulas=("grad",))})
    assert caught.value.rule == "inplace_or_view.view-without-default"


def test_a_view_with_two_differentiable_outputs_is_refused():
    with pytest.raises(RuleViolation) as caught:
        kernel("chunk.two(Tensor(a -> *) self) -> (Tensor(a) a, Tensor(a) b)")
    assert caught.value.rule == "inplace_or_view.multiple-view-outputs"


def test_output_differentiability_must_fit_the_outputs():
    with pytest.raises(RuleViolation) as caught:
        kernel("alias(Tensor(a) self) -> Tensor(a)",
               {"Default": lambda fn: info(fn, outputs=(True, False))})
    assert caught.value.rule == "variable_type.output-differentiability-length"


# ---------------------------------------------------------------------------------------------
# Registrations and files


def test_the_registration_and_the_ops_header():
    rendered = render_inplace_or_view(kernel("__ilshift__.Scalar(Tensor(a!) self, Scalar other) "
                                             "-> Tensor(a!)"), gradshard_templates())
    assert rendered.registration == ('m.impl("__ilshift__.Scalar",\n'
                                     "       TORCH_FN(ADInplaceOrView::__ilshift___Scalar)\n"
                                     ");\n")
    assert rendered.header == "#include <ATen/ops/lshift_ops.h>"
    assert "at::_ops::__ilshift___Scalar::redispatch(" in rendered.definition


def test_shards_by_root_name_into_two_and_everything():
    names = ["lshift", "lshift", "add", "zeros", "view"]
    shards = inplace_or_view_shards(names, RELEASE)
    assert list(shards) == ["_0", "_1", "Everything"]
    assert shards["Everything"] == [0, 1, 2, 3, 4]
    for position, name in enumerate(names):
        shard = int.from_bytes(hashlib.sha1(name.encode()).digest(), "little") % 2
        assert position in shards[f"_{shard}"]


TOY_TEMPLATE = """// ${generated_comment} ${shard_id}
$ops_headers
namespace {
${inplace_or_view_method_definitions}
}
TORCH_LIBRARY_IMPL(aten, ADInplaceOrView, m) {
  ${inplace_or_view_wrapper_registrations};
}
"""


def test_the_file_keeps_duplicate_headers_and_ends_registrations_twice():
    pieces = [RenderedInplaceOrView("a", "#include <ATen/ops/a_ops.h>", "void a() {\n}\n",
                                    'm.impl("a",\n);\n'),
              RenderedInplaceOrView("a.b", "#include <ATen/ops/a_ops.h>", "void b() {\n}\n",
                                    'm.impl("a.b",\n);\n')]
    text = inplace_or_view_file(TemplateSet((("ADInplaceOrViewType.cpp", TOY_TEMPLATE),)),
                                pieces, "packaged", "_1")
    assert text == ("// @generated from packaged/autograd/templates/ADInplaceOrViewType.cpp _1\n"
                    "#include <ATen/ops/a_ops.h>\n#include <ATen/ops/a_ops.h>\n"
                    "namespace {\nvoid a() {\n}\nvoid b() {\n}\n}\n"
                    "TORCH_LIBRARY_IMPL(aten, ADInplaceOrView, m) {\n"
                    '  m.impl("a",\n  );\n  m.impl("a.b",\n  );;\n}\n')


def test_kernels_are_records_that_round_trip():
    for made in (kernel("split.Tensor(Tensor(a -> *) self, SymInt split_size, int dim=0) -> "
                        "Tensor(a)[]"),
                 kernel("mul_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)")):
        assert InplaceOrViewKernel.from_json(made.to_json()) == made


# ---------------------------------------------------------------------------------------------
# The packaged spec


def test_what_the_view_group_reads_of_a_match_decides_the_same_kernels(
        packaged_codegen_inputs):
    """match.view_side's projection over every match of the packaged spec: the same
    ADInplaceOrView kernels and ViewFuncs structs as the whole match; a view keeps its whole
    match, any other function loses its formulas (a formula edit of it changes nothing the
    view group reads)."""
    projected = 0
    for fn, match in packaged_codegen_inputs.items:
        if match is None:
            continue
        side = view_side_match(fn, match)
        assert inplace_or_view_kernels(fn, side) == inplace_or_view_kernels(fn, match)
        assert view_func(fn, side) == view_func(fn, match)
        if view_info(fn.func.name.name.base) is not None:
            assert side == match
        elif side != match:
            projected += 1
            assert side.infos is None or all(
                not k.info.derivatives and not k.info.forward_derivatives
                for k in side.infos.infos)
    assert projected > 1000


def test_the_whole_spec_is_quick(packaged_codegen_inputs):
    inputs = packaged_codegen_inputs
    start = time.perf_counter()
    kernels = [k for fn, match in inputs.items for k in inplace_or_view_kernels(fn, match)]
    rendered = [render_inplace_or_view(k, inputs.templates) for k in kernels]
    files = {f"ADInplaceOrViewType{shard}.cpp": inplace_or_view_file(
        inputs.spec_templates, [rendered[i] for i in positions], inputs.layout, shard)
        for shard, positions in inplace_or_view_shards([k.root_name for k in kernels], RELEASE).items()}
    assert time.perf_counter() - start < 2.0
    assert sorted(files) == sorted(ADIV_FILES)
