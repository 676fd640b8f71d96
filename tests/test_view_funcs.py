"""ViewFuncs.h and ViewFuncs.cpp (pipeline/render/view_funcs.py): the ViewFunc structs of hand-built
views (names, constructor and state, the SymInt and tensor accessors, list views), which
functions get one, the faults torchgen stops at, both files from one environment, and the
time of the whole packaged spec's. Byte identity with torchgen 2.13, on the packaged spec and
on edits aimed at ViewFuncs (inplace-and-view-ops-added, view-made-composite in
support/spec_edits.py): test_differential_render.py and test_incremental.py."""

from __future__ import annotations

import time

import pytest

from gradshard.pipeline.parse.native import NativeFunction
from gradshard.pipeline.problems import RuleViolation
from gradshard.pipeline.releases import DEFAULT_RELEASE, release_named
from gradshard.pipeline.render.templating import TemplateSet
from gradshard.pipeline.render.view_funcs import (RenderedViewFunc, ViewFunc, render_view_func,
                                                  view_func, view_func_name, view_funcs_files)
from gradshard.pipeline.schema import FunctionSchema
from gradshard.service.files.inputs import gradshard_templates

RELEASE = release_named(DEFAULT_RELEASE)

VIEW_FUNCS_FILES = ["ViewFuncs.h", "ViewFuncs.cpp"]
METHODS = """  virtual std::vector<c10::SymInt> get_symints() const override;
  virtual size_t num_symints() const override;
  virtual std::vector<at::Tensor> get_tensors() const override;
  virtual size_t num_tensors() const override;
  virtual at::Tensor operator()(const at::Tensor&) const override;
  virtual std::unique_ptr<ViewFunc> clone_and_set(
      std::optional<std::vector<c10::SymInt>> = ::std::nullopt,
      std::optional<std::vector<at::Tensor>> = ::std::nullopt) const override;

protected:
  virtual void set_symints(std::vector<c10::SymInt>) override;
  virtual void set_tensors(std::vector<at::Tensor>) override;

private:
"""


def function(schema: str, **fields) -> NativeFunction:
    """A view with a backend kernel (abstract): it gets derived kernels without formulas."""
    return NativeFunction(FunctionSchema.parse(schema), is_abstract=True, **fields)


def struct(schema: str, **fields) -> ViewFunc:
    (found,) = view_func(function(schema, **fields), None)
    return found


def rendered(schema: str) -> RenderedViewFunc:
    return render_view_func(struct(schema), gradshard_templates())


# ---------------------------------------------------------------------------------------------
# One struct


@pytest.mark.parametrize("schema, name, macro", [
    ("slice.Tensor(Tensor(a) self, int dim=0, SymInt? start=None, SymInt? end=None, "
     "SymInt step=1) -> Tensor(a)", "SliceTensorViewFunc", "SLICE_TENSOR_VIEW_FUNC"),
    ("_nested_view_from_buffer(Tensor(a) self, Tensor nested_size, Tensor nested_strides, "
     "Tensor offsets) -> Tensor(a)", "_NestedViewFromBufferViewFunc",
     "_NESTED_VIEW_FROM_BUFFER_VIEW_FUNC"),
    ("t(Tensor(a) self) -> Tensor(a)", "TViewFunc", "T_VIEW_FUNC"),
    ("view.dtype(Tensor(a) self, ScalarType dtype) -> Tensor(a)", "ViewDtypeViewFunc",
     "VIEW_DTYPE_VIEW_FUNC"),
])
def test_the_struct_is_named_after_the_op_and_its_overload(schema, name, macro):
    made = struct(schema)
    assert (made.name, made.macro) == (name, macro)
    assert view_func_name(FunctionSchema.parse(schema)) == name


def test_a_view_without_arguments_has_no_state_and_counts_nothing():
    made = rendered("_conj(Tensor(a) self) -> Tensor(a)")
    assert made.header == "#include <ATen/ops/_conj_ops.h>"
    assert made.declaration == (
        "#define _CONJ_VIEW_FUNC_AVAILABLE\n"
        "struct _ConjViewFunc : public torch::autograd::ViewFunc {\n"
        "  _ConjViewFunc()\n"
        "  {}\n"
        "  virtual ~_ConjViewFunc() override = default;\n" + METHODS +
        "\n"  # no state: the placeholder's line stays, empty
        "};\n\n")
    assert made.definition.startswith(
        "std::vector<c10::SymInt> _ConjViewFunc::get_symints() const {\n"
        "  ::std::vector<c10::SymInt> symints;\n"
        "  return symints;\n"
        "}\n\n"
        "size_t _ConjViewFunc::num_symints() const {\n"
        "  return static_cast<size_t>(0);\n"
        "}\n\n"
        "void _ConjViewFunc::set_symints(std::vector<c10::SymInt> symints) {\n"
        "  TORCH_INTERNAL_ASSERT(symints.size() == num_symints());\n"
        "\n"
        "}\n\n")
    assert made.definition.endswith(
        "at::Tensor _ConjViewFunc::operator()(const at::Tensor& input_base) const {\n"
        "  return at::_ops::_conj::call(input_base);\n"
        "}\n\n"
        "std::unique_ptr<ViewFunc> _ConjViewFunc::clone_and_set(\n"
        "    std::optional<std::vector<c10::SymInt>> symints,\n"
        "    std::optional<std::vector<at::Tensor>> tensors) const {\n"
        "  auto output = std::make_unique<_ConjViewFunc>();\n"
        "  if (symints.has_value()) {\n"
        "    output->set_symints(std::move(*(symints)));\n"
        "  }\n"
        "  if (tensors.has_value()) {\n"
        "    output->set_tensors(std::move(*(tensors)));\n"
        "  }\n"
        "  return output;\n"
        "}\n\n")


def test_array_refs_are_held_as_vectors_and_copied_in():
    made = rendered("as_strided(Tensor(a) self, SymInt[] size, SymInt[] stride, "
                    "SymInt? storage_offset=None) -> Tensor(a)")
    assert ("  AsStridedViewFunc(c10::SymIntArrayRef size, c10::SymIntArrayRef stride, "
            "::std::optional<c10::SymInt> storage_offset) : size(size.vec()), "
            "stride(stride.vec()), storage_offset(storage_offset)\n  {}\n") in made.declaration
    assert made.declaration.endswith(
        "private:\n  ::std::vector<c10::SymInt> size;\n  ::std::vector<c10::SymInt> stride;\n"
        "  ::std::optional<c10::SymInt> storage_offset;\n};\n\n")
    assert ("  symints.reserve(size.size() + stride.size() + "
            "(storage_offset.has_value() ? 1 : 0));\n"
            "  symints.insert(symints.end(), size.begin(), size.end());\n"
            "  symints.insert(symints.end(), stride.begin(), stride.end());\n"
            "  if(storage_offset.has_value()) symints.insert(symints.end(), *(storage_offset));\n"
            "  return symints;\n") in made.definition
    assert ("  auto i = 0;\n"
            "  std::copy(symints.begin() + i, symints.begin() + i + size.size(), size.begin());\n"
            "  i += size.size();\n"
            "  std::copy(symints.begin() + i, symints.begin() + i + stride.size(), "
            "stride.begin());\n"
            "  i += stride.size();\n"
            "  if(storage_offset.has_value()) storage_offset = symints[i];\n"
            "}\n") in made.definition
    assert "int[] size" not in made.declaration


def test_int_lists_are_held_as_int_vectors_and_tensors_are_exposed():
    made = rendered("view.zz(Tensor(a) self, int[] dims, Tensor other, Tensor? maybe=None) -> "
                    "Tensor(a)")
    assert ": dims(dims.vec()), other(other), maybe(maybe)" in made.declaration
    assert "  ::std::vector<int64_t> dims;\n  at::Tensor other;\n" \
           "  ::std::optional<at::Tensor> maybe;\n" in made.declaration
    assert ("  tensors.reserve(1 + (maybe.has_value() ? 1 : 0));\n"
            "  tensors.push_back(other);\n"
            "  if(maybe.has_value()) tensors.insert(tensors.end(), *(maybe));\n") in \
        made.definition
    assert ("  auto i = 0;\n  other = tensors[i];\n  i += 1;\n"
            "  if(maybe.has_value()) maybe = tensors[i];\n}\n") in made.definition
    # int[] is no SymInt: nothing to expose
    assert "return static_cast<size_t>(0);\n}\n\nvoid ViewZzViewFunc::set_symints" in \
        made.definition


def test_a_list_view_holds_the_index_of_the_output_it_replays():
    made = rendered("unbind.int(Tensor(a -> *) self, int dim=0) -> Tensor(a)[]")
    assert ("  UnbindIntViewFunc(int64_t dim, int64_t view_idx) : dim(dim), "
            "view_idx(view_idx)\n") in made.declaration
    assert "  int64_t dim;\n  int64_t view_idx;\n};\n" in made.declaration
    assert "return at::_ops::unbind_int::call(input_base, dim)[view_idx];" in made.definition
    assert "std::make_unique<UnbindIntViewFunc>(dim, view_idx);" in made.definition


def test_which_functions_get_a_struct():
    def has_struct(schema: str, **fields) -> bool:
        return bool(view_func(NativeFunction(FunctionSchema.parse(schema), **fields), None))
    assert has_struct("narrow(Tensor(a) self, int dim, SymInt start, SymInt length) -> Tensor(a)",
                      is_abstract=True)  # RETURNS_VIEWS_OF_INPUT
    assert not has_struct("transpose_(Tensor(a!) self, int dim0, int dim1) -> Tensor(a!)",
                          is_abstract=True, tags=("inplace_view",))  # in place
    assert not has_struct("view_copy.out(Tensor self, SymInt[] size, *, Tensor(a!) out) -> "
                          "Tensor(a!)", is_abstract=True)  # not a view by name
    assert not has_struct("diagonal(Tensor(a) self, int offset=0, int dim1=0, int dim2=1) -> "
                          "Tensor(a)")  # composite without formulas: no derived kernel
    assert not has_struct("zz(Tensor(a) self) -> Tensor(a)", is_abstract=True)  # no view name
    assert not has_struct("_sparse_coo_tensor_with_dims_and_tensors(int sparse_dim, "
                          "int dense_dim, SymInt[] size, Tensor indices, Tensor values) -> "
                          "Tensor", is_abstract=True)  # the list's key lacks the `_`


def test_a_view_taking_what_no_struct_can_hold_is_refused():
    for schema in ("view.gs(Tensor(a) self, Tensor[] others) -> Tensor(a)",
                   "view.gs(Tensor(a) self, Tensor(b!) other) -> Tensor(a)"):
        with pytest.raises(RuleViolation) as caught:
            struct(schema)
        assert caught.value.rule == "view_funcs.argument-type"


def test_a_view_returning_two_values_is_refused():
    with pytest.raises(RuleViolation) as caught:
        struct("chunk.two(Tensor(a -> *) self) -> (Tensor(a) a, Tensor(a) b)")
    assert caught.value.rule == "view_funcs.returns"


def test_structs_are_records_that_round_trip():
    made = struct("unbind.int(Tensor(a -> *) self, int dim=0) -> Tensor(a)[]")
    assert ViewFunc.from_json(made.to_json()) == made


# ---------------------------------------------------------------------------------------------
# Files

TOY_H = "// ${generated_comment}\n$ops_headers\nnamespace {\n\n${view_func_declarations}\n\n}\n"
TOY_CPP = "// ${generated_comment}\n\n${view_func_definitions}\n// end\n"


def test_both_files_come_from_one_environment_keeping_duplicate_headers():
    pieces = [RenderedViewFunc("a", "#include <ATen/ops/a_ops.h>", "struct A {  \n};\n\n",
                               "void A::f() {\n}\n\n"),
              RenderedViewFunc("a.b", "#include <ATen/ops/a_ops.h>", "struct B {\n};\n\n",
                               "void B::f() {\n}\n\n")]
    files = view_funcs_files(TemplateSet((("ViewFuncs.h", TOY_H), ("ViewFuncs.cpp", TOY_CPP))),
                             pieces, "checkout")
    assert files == {
        "ViewFuncs.h": "// @generated from ../tools/autograd/templates/ViewFuncs.h\n"
                       "#include <ATen/ops/a_ops.h>\n#include <ATen/ops/a_ops.h>\n"
                       "namespace {\n\nstruct A {\n};\n\nstruct B {\n};\n\n}\n",
        "ViewFuncs.cpp": "// @generated from ../tools/autograd/templates/ViewFuncs.cpp\n\n"
                         "void A::f() {\n}\n\nvoid B::f() {\n}\n// end\n"}


# ---------------------------------------------------------------------------------------------
# The packaged spec


def test_the_whole_spec_is_quick(packaged_codegen_inputs):
    inputs = packaged_codegen_inputs
    start = time.perf_counter()
    structs = [s for fn, match in inputs.items for s in view_func(fn, match)]
    files = view_funcs_files(inputs.spec_templates,
                             [render_view_func(s, inputs.templates) for s in structs],
                             inputs.layout)
    assert time.perf_counter() - start < 2.0
    assert sorted(files) == sorted(VIEW_FUNCS_FILES)
