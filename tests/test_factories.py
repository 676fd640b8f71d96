"""variable_factories.h (pipeline/render/factories.py): which functions are factories, their
wrappers' C++ signatures (defaults included) and text, and the file. Byte identity
with torchgen 2.13, on the real spec laid out packaged and as a checkout and on an edit aimed
at it (factory-defaults-and-new-factories in support/spec_edits.py):
test_differential_render.py and test_incremental.py."""

from __future__ import annotations

import pytest

from gradshard.pipeline.parse.native import NativeFunction
from gradshard.pipeline.parse.source import split_entries
from gradshard.pipeline.parse.spec import parse_native_entry
from gradshard.pipeline.problems import RuleViolation, SpecFile
from gradshard.pipeline.releases import DEFAULT_RELEASE, release_named
from gradshard.pipeline.render.factories import (RenderedFactory, is_factory_function,
                                                 render_factory, variable_factories,
                                                 variable_factories_file)
from gradshard.pipeline.render.templating import TemplateSet
from gradshard.pipeline.schema import FunctionSchema
from gradshard.service.files.inputs import gradshard_templates

RELEASE = release_named(DEFAULT_RELEASE)

TAGS = frozenset({"generated", "view_copy", "core", "pointwise"})
OPTIONS = "ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None"


def native(yaml_text: str) -> NativeFunction:
    """One native_functions.yaml entry, with the explicit kernel factories must have."""
    yaml_text += "  dispatch:\n    CompositeExplicitAutograd: kernel\n"
    (entry,) = split_entries(SpecFile.NATIVE_FUNCTIONS, yaml_text)
    return parse_native_entry(entry, TAGS, RELEASE)


def factory_text(yaml_text: str) -> str:
    (factory,) = variable_factories(native(yaml_text))
    return render_factory(factory, gradshard_templates()).definitions


# ---------------------------------------------------------------------------------------------
# Which functions are factories


def test_a_function_with_tensor_options_is_a_factory():
    assert is_factory_function(native(f"- func: ones(int[] size, *, {OPTIONS}) -> Tensor\n"))


def test_a_like_function_without_options_is_a_factory():
    assert is_factory_function(native("- func: zz_like(Tensor self) -> Tensor\n"))


def test_a_method_only_function_is_not_a_factory():
    fn = native(f"- func: new_ones(Tensor self, int[] size, *, {OPTIONS}) -> Tensor\n"
                "  variants: method\n")
    assert not is_factory_function(fn)
    assert variable_factories(fn) == ()


def test_the_out_variant_of_a_like_function_is_not_a_factory():
    # its C++ name is zeros_like_out
    fn = native("- func: zeros_like.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)\n")
    assert not is_factory_function(fn)


# ---------------------------------------------------------------------------------------------
# Wrappers


def test_a_symint_factory_has_a_plain_and_a_symint_wrapper():
    (factory,) = variable_factories(native(
        f"- func: zz_empty.memory_format(SymInt[] size, *, {OPTIONS}, "
        "MemoryFormat? memory_format=None) -> Tensor\n"))
    assert factory.header == "zz_empty"
    plain, symint = factory.wrappers
    assert (plain.name, symint.name) == ("zz_empty", "zz_empty_symint")
    assert [(f.type, f.name, f.default) for f in plain.formals] == [
        ("at::IntArrayRef", "size", ""), ("at::TensorOptions", "options", "{}"),
        ("::std::optional<at::MemoryFormat>", "memory_format", "::std::nullopt")]
    assert symint.formals[0].type == "c10::SymIntArrayRef"
    assert [f.options for f in plain.formals] == [False, True, False]


def test_defaults_follow_the_cpp_api():
    (factory,) = variable_factories(native(
        "- func: zz_range(Scalar start, Scalar end, Scalar step=1, *, bool flag=False, "
        "SymInt[] shape=[], SymInt n=0, ScalarType? dtype=long, Layout? layout=None, "
        "Device? device=None, bool? pin_memory=None) -> Tensor\n"
        "  cpp_no_default_args: ['step']\n"))
    plain, symint = factory.wrappers
    assert [f.default for f in plain.formals] == ["", "", "", "false", "{}", "0", "at::kLong"]
    assert [f.type for f in symint.formals][4:6] == ["c10::SymIntArrayRef", "c10::SymInt"]


def test_options_without_a_none_or_long_default_have_no_default():
    (factory,) = variable_factories(native(
        "- func: zz_full(int[] size, *, ScalarType? dtype=None, Layout? layout=strided, "
        "Device? device=None, bool? pin_memory=None) -> Tensor\n"))
    assert factory.wrappers[0].formals[-1].default == ""


def test_the_wrapper_text():
    assert factory_text(f"- func: zz_eye(int n, float d=1.0, *, {OPTIONS}) -> Tensor\n") == (
        "inline at::Tensor zz_eye(int64_t n, double d = 1.0, at::TensorOptions options = {}) {\n"
        "  at::AutoDispatchBelowADInplaceOrView guard;\n"
        "  return autograd::make_variable(at::zz_eye(n, d, at::TensorOptions(options)"
        ".requires_grad(::std::nullopt)), /*requires_grad=*/options.requires_grad());\n"
        "}\n")


def test_a_like_factory_without_options_never_requires_grad():
    text = factory_text("- func: zz_like(Tensor self, *, MemoryFormat? memory_format=None) -> Tensor\n")
    assert text.startswith("inline at::Tensor zz_like(const at::Tensor & self, "
                           "::std::optional<at::MemoryFormat> memory_format = ::std::nullopt) {\n")
    assert "at::zz_like(self, memory_format), /*requires_grad=*/false);\n" in text


def test_a_symint_factory_prints_both_wrappers_without_a_blank_line():
    text = factory_text(f"- func: zz_zeros(SymInt[] size, *, {OPTIONS}) -> Tensor\n")
    assert text.count("inline at::Tensor ") == 2
    assert "}\ninline at::Tensor zz_zeros_symint(c10::SymIntArrayRef size, " in text
    assert "\n\n" not in text


def test_an_unprintable_list_default_is_the_functions_problem():
    fn = NativeFunction(FunctionSchema.parse(
        f"zz_bad(int[] size=5, *, {OPTIONS}) -> Tensor"))
    with pytest.raises(RuleViolation) as caught:
        variable_factories(fn)
    assert caught.value.rule == "schema.bad-default"
    assert caught.value.entry == "zz_bad"


def test_the_file_keeps_duplicate_headers_in_order():
    spec = TemplateSet((("variable_factories.h",
                         "// ${generated_comment}\n$ops_headers\nA\n${function_definitions}\nB\n"),))
    rendered = [RenderedFactory("a", "#include <ATen/ops/a.h>", "inline a\n"),
                RenderedFactory("a.x", "#include <ATen/ops/a.h>", "inline ax\ninline ay\n")]
    assert variable_factories_file(spec, rendered, "checkout") == (
        "// @generated from ../tools/autograd/templates/variable_factories.h\n"
        "#include <ATen/ops/a.h>\n#include <ATen/ops/a.h>\nA\ninline a\ninline ax\ninline ay\nB\n")
