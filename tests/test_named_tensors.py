"""torchgen 2.12's named tensors (Dimname) and its two binding spellings that 2.13 changed: the
C++ and Python types of Dimname arguments, their parser accessors, the local init of an
optional name list, the overload order, annotated_fn_args' and variable_factories.h's
spellings, that a release without named tensors refuses Dimname at parse, and the
torch-function check of no-argument methods (G3) and the device init of methods (G4).
Byte identity with torchgen 2.12 on its own spec: the release builds in
test_differential_render.py's way (`gradshard build --spec <2.12 packaged>`)."""

from __future__ import annotations

import pytest

from gradshard.pipeline.cpp import CppFlags, cpp_arguments
from gradshard.pipeline.parse.native import NativeFunction
from gradshard.pipeline.parse.source import split_entries
from gradshard.pipeline.parse.spec import parse_deprecated_entry, parse_native_entry
from gradshard.pipeline.problems import RuleViolation, SpecFile
from gradshard.pipeline.releases import Release, release_named
from gradshard.pipeline.render.annotated_args import annotated_function
from gradshard.pipeline.render.factories import render_factory, variable_factories
from gradshard.pipeline.render.python.bindings import binding
from gradshard.pipeline.render.python.files import render_binding
from gradshard.pipeline.render.python.signatures import (argument_type_str, group_overloads,
                                                         python_pair, unpack_method)
from gradshard.pipeline.schema import SchemaType
from gradshard.service.files.inputs import gradshard_templates

R212, R213 = release_named("2.12.0"), release_named("2.13.0")
TAGS = frozenset({"generated", "view_copy", "core", "pointwise"})
OPTIONS = "ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None"


def native(yaml_text: str, release: Release = R212) -> NativeFunction:
    """One native_functions.yaml entry, with the explicit kernel factories must have."""
    yaml_text += "  dispatch:\n    CompositeExplicitAutograd: kernel\n"
    (entry,) = split_entries(SpecFile.NATIVE_FUNCTIONS, yaml_text)
    return parse_native_entry(entry, TAGS, release)


def method_text(yaml_texts: list[str], release: Release, *, method: bool = True,
                module: str | None = None) -> str:
    """The printed PyObject* function of the binding made of these entries."""
    pairs = [python_pair(native(text, release), method) for text in yaml_texts]
    made = binding(str(pairs[0].function.func.name.name), pairs, module, method, release)
    return render_binding(made, gradshard_templates()).method


# ---------------------------------------------------------------------------------------------
# Types and parser accessors


def test_cpp_types_of_dimname_arguments():
    fn = native("- func: zz(Tensor self, Dimname dim, Dimname[1] one, Dimname[] names, "
                "Dimname[]? maybe) -> Tensor\n")
    assert [b.type for b in cpp_arguments(fn.func, CppFlags())][1:] == [
        "at::Dimname", "at::DimnameList", "at::DimnameList", "::std::optional<at::DimnameList>"]


@pytest.mark.parametrize("text, parser, simple, accessor", [
    ("Dimname", "Dimname", "Dimname", "dimname"),
    ("Dimname[1]", "DimnameList[1]", "DimnameList", "dimnamelist"),
    ("Dimname[]", "DimnameList", "DimnameList", "dimnamelist"),
    ("Dimname[]?", "DimnameList?", "DimnameList?", "toDimnameListOptional"),
])
def test_python_types_and_accessors_of_dimname(text, parser, simple, accessor):
    t = SchemaType.parse(text)
    assert argument_type_str(t) == parser
    assert argument_type_str(t, simple_type=True) == simple
    assert unpack_method(t, None, None) == accessor


def test_an_optional_name_list_is_rewrapped_before_the_call():
    text = method_text([f"- func: zz_empty.names(int[] size, *, Dimname[]? names, {OPTIONS}) "
                        "-> Tensor\n"], R212, method=False, module="torch")
    assert ("auto __names = _r.toDimnameListOptional(1);\n"
            "  ::std::optional<DimnameList> names = __names ? "
            "::std::make_optional(DimnameList(__names.value())) : ::std::nullopt;\n") in text
    assert "[](at::IntArrayRef size, ::std::optional<at::DimnameList> names, " in text
    assert "dispatch_zz_empty(_r.intlist(0), names, options)" in text


def test_a_dimname_overload_is_tried_after_its_positional_one():
    pairs = [python_pair(native(f"- func: transpose.{overload}\n  variants: function, method\n"),
                         False)
             for overload in ("Dimname(Tensor(a) self, Dimname dim0, Dimname dim1) -> Tensor(a)",
                              "int(Tensor(a) self, int dim0, int dim1) -> Tensor(a)")]
    assert [o.signature.signature_str() for o in group_overloads(pairs)] == [
        "transpose(Tensor input, int64_t dim0, int64_t dim1)",
        "transpose(Tensor input, Dimname dim0, Dimname dim1)"]


def test_annotated_args_show_the_simple_types():
    entry = annotated_function(native(
        "- func: zz(Tensor self, Dimname dim, Dimname[1] one, Dimname[]? names) -> Tensor\n"))
    assert [(a.simple_type, a.size) for a in entry.args][1:] == [
        ("Dimname", 0), ("DimnameList", 1), ("DimnameList?", 0)]


def test_a_factory_takes_an_optional_name_list():
    fn = native(f"- func: zz_ones.names(int[] size, *, Dimname[]? names, {OPTIONS}) -> Tensor\n")
    (factory,) = variable_factories(fn)
    text = render_factory(factory, gradshard_templates()).definitions
    assert text.startswith("inline at::Tensor zz_ones(at::IntArrayRef size, "
                           "::std::optional<at::DimnameList> names, "
                           "at::TensorOptions options = {}) {\n")


DEPRECATED_DIMNAME = ("- name: sub(Tensor self, Dimname junk, Tensor other) -> Tensor\n"
                     "  aten: sub(self, other)\n")


def test_a_release_without_named_tensors_refuses_dimname():
    with pytest.raises(RuleViolation) as caught:
        native("- func: zz(Tensor self, Dimname dim) -> Tensor\n", R213)
    assert caught.value.rule == "schema.unknown-type"


def test_a_deprecated_signature_takes_dimname_only_in_a_release_with_named_tensors():
    """gen_python_functions.py: load_deprecated_signatures parses with model.py too."""
    (entry,) = split_entries(SpecFile.DEPRECATED, DEPRECATED_DIMNAME)
    assert parse_deprecated_entry(entry, R212).call_args == ("self", "other")
    with pytest.raises(RuleViolation) as caught:
        parse_deprecated_entry(entry, R213)
    assert caught.value.rule == "schema.unknown-type" and caught.value.line_in_entry == 0


# ---------------------------------------------------------------------------------------------
# G3 and G4


NOARG_METHOD = "- func: zz_noarg(Tensor self) -> Tensor\n  variants: method\n"
NEW_METHOD = (f"- func: new_zz(Tensor self, int[] size, *, {OPTIONS}) -> Tensor\n"
              "  variants: method\n")


def test_a_noarg_method_checks_for_torch_functions_as_its_release_spells_it():
    assert "  if(check_has_torch_function(self_)) {\n" in method_text([NOARG_METHOD], R212)
    assert "if (has_torch_function(self_))" not in method_text([NOARG_METHOD], R212)
    assert "  if (has_torch_function(self_)) {\n" in method_text([NOARG_METHOD], R213)
    assert "check_has_torch_function" not in method_text([NOARG_METHOD], R213)


def test_a_method_initializes_the_device_as_its_release_spells_it():
    old, new = method_text([NEW_METHOD], R212), method_text([NEW_METHOD], R213)
    assert "tensor_has_dispatch" not in old
    assert ("      .pinned_memory(_r.toBool(4));\n"
            "  torch::utils::maybe_initialize_device(options);\n") in old
    assert ("  if (!at::impl::tensor_has_dispatch(self)) {\n"
            "    torch::utils::maybe_initialize_device(options);\n  }\n") in new


def test_a_function_initializes_the_device_unguarded_in_every_release():
    text = f"- func: zz_full(int[] size, *, {OPTIONS}) -> Tensor\n"
    for release in (R212, R213):
        made = method_text([text], release, method=False, module="torch")
        assert "tensor_has_dispatch" not in made
        assert "  torch::utils::maybe_initialize_device(options);\n" in made
