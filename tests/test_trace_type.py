"""TraceType_0..9.cpp and TraceTypeEverything.cpp (pipeline/render/trace_type.py): tracer kernels of
hand-built functions, the file and its shards, and the time of the whole packaged spec's.
Byte identity with torchgen 2.13, on the packaged spec and on edits aimed at TraceType
(traced-ops-added, ops-moved-and-autogen-lost in support/spec_edits.py):
test_differential_render.py and test_incremental.py."""

from __future__ import annotations

import hashlib
import time

import pytest

from gradshard.pipeline.parse.native import NativeFunction
from gradshard.pipeline.releases import DEFAULT_RELEASE, release_named
from gradshard.pipeline.render.templating import TemplateSet
from gradshard.pipeline.render.trace_type import (RenderedTrace, TraceKernel, is_trace_item,
                                                  render_trace, trace_kernel, trace_shards,
                                                  trace_type_file)
from gradshard.pipeline.schema import FunctionSchema
from gradshard.service.files.inputs import gradshard_templates

RELEASE = release_named(DEFAULT_RELEASE)

TRACE_FILES = [f"TraceType_{i}.cpp" for i in range(10)] + ["TraceTypeEverything.cpp"]
TRACING = ("  torch::jit::Node* node = nullptr;\n"
           "  std::shared_ptr<jit::tracer::TracingState> tracer_state;\n"
           "  if (jit::tracer::isTracing()) {\n"
           "    tracer_state = jit::tracer::getTracingState();\n"
           "    at::Symbol op_name;\n")
NODE = ("    node = tracer_state->createNode(op_name, /*num_outputs=*/0);\n"
        "    jit::tracer::recordSourceLocation(node);\n")
DISPATCH = "::redispatch(ks & c10::DispatchKeySet(c10::DispatchKeySet::FULL_AFTER, c10::DispatchKey::Tracer), "
RECORDED = "  if (tracer_state) {\n    jit::tracer::setTracingState(std::move(tracer_state));\n"


def function(schema: str, **fields) -> NativeFunction:
    return NativeFunction(FunctionSchema.parse(schema), **fields)


def definition(schema: str, **fields) -> str:
    return render_trace(trace_kernel(function(schema, **fields)), gradshard_templates()).definition


# ---------------------------------------------------------------------------------------------
# One kernel


def test_a_functional_op_records_its_name_inputs_and_output():
    assert definition("add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor") == (
        "at::Tensor add_Tensor(c10::DispatchKeySet ks, const at::Tensor & self, "
        "const at::Tensor & other, const at::Scalar & alpha) {\n" + TRACING +
        '    op_name = c10::Symbol::fromQualString("aten::add");\n' + NODE +
        '    jit::tracer::addInputs(node, "self", self);\n'
        '    jit::tracer::addInputs(node, "other", other);\n'
        '    jit::tracer::addInputs(node, "alpha", alpha);\n'
        "    tracer_state->insertNode(node);\n"
        "\n"  # no in-place guard: its line stays, empty
        "    jit::tracer::setTracingState(nullptr);\n"
        "  }\n"
        # the tie starts TRACE_DISPATCH's line: CodeTemplate strips its space
        "  auto result =at::_ops::add_Tensor" + DISPATCH + "self, other, alpha);\n" + RECORDED +
        "    jit::tracer::addOutput(node, result);\n"
        "  }\n"
        "  return result;\n"
        "}\n")


def test_an_untraceable_op_only_redispatches():
    expected = ("bool is_nonzero(c10::DispatchKeySet ks, const at::Tensor & self) {\n"
                "  auto result =at::_ops::is_nonzero" + DISPATCH + "self);\n"
                "  return result;\n"
                "}\n")
    assert definition("is_nonzero(Tensor self) -> bool") == expected
    # traced through its parts, or taking a Storage
    assert not trace_kernel(function("conv2d(Tensor input, Tensor weight) -> Tensor")).traced
    assert not trace_kernel(function(
        "set_.source_Storage(Tensor(a!) self, Storage source) -> Tensor(a!)")).traced
    assert trace_kernel(function("set_.source_Tensor(Tensor(a!) self, Tensor source) -> "
                                 "Tensor(a!)")).traced


def test_fill_in_place_traces_as_full_like_with_the_options_it_lacks():
    text = definition("fill_.Scalar(Tensor(a!) self, Scalar value) -> Tensor(a!)")
    assert text.startswith("at::Tensor & fill__Scalar(c10::DispatchKeySet ks, at::Tensor & self, "
                           "const at::Scalar & value) {\n")
    assert ("    at::Symbol op_name;\n"
            "\n"  # SELECT's first line
            "    if (tracer_state->force_outplace) {\n"
            '      op_name = c10::Symbol::fromQualString("aten::full_like");\n'
            "    } else {\n"
            '      op_name = c10::Symbol::fromQualString("aten::fill_");\n'
            "    }\n") in text
    # the options follow the inputs with no blank line, at 10 spaces, the else branch empty
    assert ('    jit::tracer::addInputs(node, "value", value);\n'
            "    if (tracer_state->force_outplace) {\n"
            '          jit::tracer::addInputs(node, "options", ::std::optional<ScalarType>());\n'
            ) in text
    assert ('          jit::tracer::addInputs(node, "memory_format", memory_format);\n'
            "    } else {\n"
            "\n"
            "    }\n"
            "    tracer_state->insertNode(node);\n"
            '    jit::tracer::ensureUniqueIfOutOfPlaced("fill_", self);\n') in text
    assert "  at::_ops::fill__Scalar" + DISPATCH + "self, value);\n" in text
    assert text.endswith("    jit::tracer::addOutput(node, self);\n  }\n  return self;\n}\n")


def test_the_functional_fill_and_zero_are_renamed_too():
    assert trace_kernel(function("fill.Scalar(Tensor self, Scalar value) -> Tensor")).op_names \
        == ("full_like",)
    assert trace_kernel(function("zero(Tensor self) -> Tensor")).op_names == ("zeros_like",)
    zero = trace_kernel(function("zero_(Tensor(a!) self) -> Tensor(a!)"))
    assert zero.op_names == ("zeros_like", "zero_") and zero.adds_options
    assert not trace_kernel(function("add_.Tensor(Tensor(a!) self, Tensor other) -> "
                                     "Tensor(a!)")).adds_options


def test_a_factory_out_records_its_out_options_when_traced_out_of_place():
    text = definition("arange.out(Scalar end, *, Tensor(a!) out) -> Tensor(a!)")
    assert ('    op_name = c10::Symbol::fromQualString("aten::arange");\n' + NODE +
            '    jit::tracer::addInputs(node, "end", end);\n'
            "\n"
            "    if (tracer_state->force_outplace) {\n"
            '      jit::tracer::addInputs(node, "out", '
            "c10::optTypeMetaToScalarType(out.options().dtype_opt()));\n"
            '      jit::tracer::addInputs(node, "out", out.options().layout());\n'
            '      jit::tracer::addInputs(node, "out", out.options().device());\n'
            '      jit::tracer::addInputs(node, "out", out.options().pinned_memory());\n'
            "    } else {\n"
            '      jit::tracer::addInputs(node, "out", out);\n'
            "    }\n"
            "    tracer_state->insertNode(node);\n"
            '    jit::tracer::ensureUniqueIfOutOfPlaced("arange_out", out);\n') in text
    assert "  at::_ops::arange_out" + DISPATCH + "end, out);\n" in text
    assert text.endswith("    jit::tracer::addOutput(node, out);\n  }\n  return out;\n}\n")


def test_which_out_ops_are_factories():
    def factory(schema: str, **fields) -> bool:
        return trace_kernel(function(schema, **fields)).factory
    assert not factory("abs.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)")
    assert factory("linspace.Tensor_Tensor_out(Tensor start, Tensor end, int steps, *, "
                   "Tensor(a!) out) -> Tensor(a!)", category_override="factory")
    # every normal is one, whatever its inputs (the old codegen decided per base name)
    assert factory("normal.Tensor_float_out(Tensor mean, float std=1, *, "
                   "Generator? generator=None, Tensor(a!) out) -> Tensor(a!)")
    # only out= ops record their out's options
    assert not factory("randn(SymInt[] size) -> Tensor")


def test_a_plain_out_op_records_nothing_when_forced_out_of_place():
    text = definition("abs.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)")
    assert ('    jit::tracer::addInputs(node, "self", self);\n'
            "\n"
            "    if (tracer_state->force_outplace) {\n"
            "\n"
            "    } else {\n"
            '      jit::tracer::addInputs(node, "out", out);\n'
            "    }\n") in text


def test_a_dunder_in_place_op_records_one_name_and_no_guard():
    kernel = trace_kernel(function("__ilshift__.Scalar(Tensor(a!) self, Scalar other) -> "
                                   "Tensor(a!)"))
    assert (kernel.op_names, kernel.guarded, kernel.root_name) == (("__ilshift__",), "", "lshift")
    text = render_trace(kernel, gradshard_templates()).definition
    assert "    tracer_state->insertNode(node);\n\n    jit::tracer::setTracingState" in text
    assert "  at::_ops::__ilshift___Scalar" + DISPATCH + "self, other);\n" in text


def test_several_returns_are_tied_and_returned_as_a_tuple():
    text = definition("aminmax(Tensor self, *, int? dim=None, bool keepdim=False) -> "
                      "(Tensor min, Tensor max)")
    assert text.startswith("::std::tuple<at::Tensor,at::Tensor> aminmax(c10::DispatchKeySet ks, "
                           "const at::Tensor & self, ::std::optional<int64_t> dim, bool keepdim) {")
    assert "  auto [min, max] =at::_ops::aminmax" + DISPATCH + "self, dim, keepdim);\n" in text
    assert text.endswith("    jit::tracer::addOutput(node, min);\n"
                         "    jit::tracer::addOutput(node, max);\n  }\n"
                         "  return std::make_tuple(std::move(min), std::move(max));\n}\n")
    out = definition("aminmax.out(Tensor self, *, int? dim=None, bool keepdim=False, "
                     "Tensor(a!) min, Tensor(b!) max) -> (Tensor(a!) min, Tensor(b!) max)")
    assert "  at::_ops::aminmax_out" + DISPATCH + "self, dim, keepdim, min, max);\n" in out
    assert out.endswith("  return std::forward_as_tuple(min, max);\n}\n")


def test_a_return_named_like_an_argument_is_tied_by_its_schema_name():
    # tie_return_values uses the schema name; cpp.return_names renames it (torchgen's quirk)
    text = definition("zz_named(Tensor self, Tensor other) -> Tensor other")
    assert "  auto other =at::_ops::zz_named" + DISPATCH + "self, other);\n" in text
    assert text.endswith("    jit::tracer::addOutput(node, other_return);\n  }\n"
                         "  return other_return;\n}\n")


def test_a_mutable_op_records_both_names_but_no_guard():
    kernel = trace_kernel(function("zz_m(Tensor self, Tensor(a!) running) -> Tensor"))
    assert (kernel.op_names, kernel.guarded, kernel.ties) == (("zz_m", "zz_m"), "", ("result",))


def test_outs_that_are_not_all_returned_are_recorded_by_force_outplace():
    text = definition("zz.out(Tensor self, *, Tensor(a!) out, Tensor(b!) _scratch_x) -> "
                      "Tensor(a!)")
    assert ('      op_name = c10::Symbol::fromQualString("aten::zz");\n'
            "    } else {\n"
            '      op_name = c10::Symbol::fromQualString("aten::zz_out");\n') in text
    assert (RECORDED + "\n"
            "    if (force_outplace) {\n"
            "      jit::tracer::addOutput(node, out);\n"
            "      jit::tracer::addOutput(node, _scratch_x);\n"
            "    } else {\n"
            "      jit::tracer::addOutput(node, out);\n"
            "    }\n"
            "  }\n"
            "  return out;\n") in text
    # a scratch op is neither in place nor out=: no guard
    assert "    tracer_state->insertNode(node);\n\n" in text


def test_mutable_tensors_bind_as_const_references_when_asked():
    text = definition("zz.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)",
                      use_const_ref_for_mutable_tensors=True)
    assert text.startswith("const at::Tensor & zz_out_out(c10::DispatchKeySet ks, "
                           "const at::Tensor & self, const at::Tensor & out) {")


def test_hand_written_kernels_are_no_items():
    assert not is_trace_item(function("copy_(Tensor(a!) self, Tensor src, bool non_blocking=False) "
                                      "-> Tensor(a!)"))
    assert is_trace_item(function("copy.out(Tensor self, Tensor src, bool non_blocking=False, *, "
                                  "Tensor(a!) out) -> Tensor(a!)"))
    with pytest.raises(ValueError):
        trace_kernel(function("detach(Tensor(a) self) -> Tensor(a)"))


def test_the_registration_and_the_ops_header():
    rendered = render_trace(trace_kernel(function("add_.Tensor(Tensor(a!) self, Tensor other) -> "
                                                  "Tensor(a!)")), gradshard_templates())
    assert rendered.registration == ('m.impl("add_.Tensor",\n'
                                     "       TORCH_FN(TraceType::add__Tensor)\n"
                                     ");\n")
    assert rendered.ops_header == "#include <ATen/ops/add_ops.h>"


# ---------------------------------------------------------------------------------------------
# Files


def test_shards_by_root_name_with_everything_last():
    names = ["add", "add", "mul", "lshift", "zeros"]
    shards = trace_shards(names, RELEASE)
    assert list(shards) == [f"_{i}" for i in range(10)] + ["Everything"]
    assert shards["Everything"] == [0, 1, 2, 3, 4]
    for position, name in enumerate(names):
        shard = int.from_bytes(hashlib.sha1(name.encode()).digest(), "little") % 10
        assert position in shards[f"_{shard}"]
    assert sum(len(v) for k, v in shards.items() if k != "Everything") == 5


TOY_TEMPLATE = """// ${generated_comment}
$ops_headers
namespace {
${trace_method_definitions}
}
TORCH_LIBRARY_IMPL(aten, Tracer, m) {
  ${trace_wrapper_registrations};
}
"""


def test_the_file_keeps_duplicate_headers_and_ends_registrations_twice():
    pieces = [RenderedTrace("a", "#include <ATen/ops/add_ops.h>", "void a() {\n}\n", 'm.impl("a",\n);\n'),
              RenderedTrace("b", "#include <ATen/ops/add_ops.h>", "void b() {\n}\n", 'm.impl("b",\n);\n')]
    text = trace_type_file(TemplateSet((("TraceType.cpp", TOY_TEMPLATE),)), pieces, "checkout", "_3")
    assert text == ("// @generated from ../tools/autograd/templates/TraceType.cpp\n"
                    "#include <ATen/ops/add_ops.h>\n#include <ATen/ops/add_ops.h>\n"
                    "namespace {\nvoid a() {\n}\nvoid b() {\n}\n}\n"
                    "TORCH_LIBRARY_IMPL(aten, Tracer, m) {\n"
                    '  m.impl("a",\n  );\n  m.impl("b",\n  );;\n}\n')


def test_kernels_are_records_that_round_trip():
    kernel = trace_kernel(function("fill_.Scalar(Tensor(a!) self, Scalar value) -> Tensor(a!)"))
    assert TraceKernel.from_json(kernel.to_json()) == kernel


# ---------------------------------------------------------------------------------------------
# The packaged spec


def test_the_whole_spec_is_quick(packaged_codegen_inputs):
    inputs = packaged_codegen_inputs
    start = time.perf_counter()
    kernels = [trace_kernel(fn) for fn in inputs.functions if is_trace_item(fn)]
    rendered = [render_trace(k, inputs.templates) for k in kernels]
    files = {f"TraceType{shard}.cpp": trace_type_file(inputs.spec_templates,
                                                      [rendered[i] for i in positions],
                                                      inputs.layout, shard)
             for shard, positions in trace_shards([k.root_name for k in kernels], RELEASE).items()}
    assert time.perf_counter() - start < 2.0
    assert sorted(files) == sorted(TRACE_FILES)
