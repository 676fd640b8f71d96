"""annotated_fn_args.py (pipeline/render/annotated_args.py): the namespaces each function is listed
in, its arguments without defaults, the line's text (a Python literal), the order of the
file. Byte identity with torchgen 2.13, on the real spec and on an edit aimed at it
(annotated-module-and-overload in support/spec_edits.py): test_differential_render.py and
test_incremental.py."""

from __future__ import annotations

import ast

from gradshard.pipeline.parse.native import NativeFunction
from gradshard.pipeline.parse.source import split_entries
from gradshard.pipeline.parse.spec import parse_native_entry
from gradshard.pipeline.problems import SpecFile
from gradshard.pipeline.releases import DEFAULT_RELEASE, release_named
from gradshard.pipeline.render.annotated_args import (RenderedAnnotatedArgs,
                                                      annotated_fn_args_file, annotated_function,
                                                      annotated_lines, namespaces_of,
                                                      render_annotated_args)
from gradshard.pipeline.render.templating import TemplateSet
from gradshard.service.files.inputs import gradshard_templates

RELEASE = release_named(DEFAULT_RELEASE)

TAGS = frozenset({"generated", "view_copy", "core", "pointwise"})
TORCH, TENSOR = "torch._C._VariableFunctions", "torch.Tensor"


def native(yaml_text: str) -> NativeFunction:
    (entry,) = split_entries(SpecFile.NATIVE_FUNCTIONS, yaml_text)
    return parse_native_entry(entry, TAGS, RELEASE)


def rendered(yaml_text: str) -> RenderedAnnotatedArgs:
    return render_annotated_args(annotated_function(native(yaml_text)), gradshard_templates())


def listed_args(line: str) -> list[dict]:
    """The value of a line of the dict, read back as Python reads the file."""
    return ast.literal_eval(line.split(": ", 1)[1].removesuffix(","))


# ---------------------------------------------------------------------------------------------
# Namespaces


def test_a_function_and_method_is_in_torch_and_tensor():
    fn = native("- func: zz(Tensor self) -> Tensor\n  variants: function, method\n")
    assert namespaces_of(fn) == (TORCH, TENSOR)


def test_a_module_function_is_only_in_its_module():
    for module in ("nn", "linalg", "special", "fft"):
        fn = native(f"- func: zz(Tensor self) -> Tensor\n  python_module: {module}\n")
        assert namespaces_of(fn) == (f"torch._C._{module}",)


def test_nested_and_sparse_functions_are_listed_nowhere():
    for module in ("nested", "sparse"):
        assert namespaces_of(native(f"- func: zz(Tensor self) -> Tensor\n  python_module: {module}\n")) == ()


def test_functions_without_a_binding_are_listed_nowhere():
    skipped = ["- func: zz_backward(Tensor self) -> Tensor\n",  # a _SKIP_PYTHON_BINDINGS name
               "- func: zz(Tensor self) -> Tensor\n  tags: generated\n",
               "- func: mul.Scalar(Tensor self, Scalar other) -> Tensor\n"]  # a skipped signature
    for text in skipped:
        entry = annotated_function(native(text))
        assert (entry.namespaces, entry.args) == ((), ())
    assert namespaces_of(native("- func: zz_copy(Tensor self) -> Tensor\n  tags: [generated, view_copy]\n")) == (TORCH,)


# ---------------------------------------------------------------------------------------------
# Arguments and lines


def test_only_arguments_without_defaults_are_listed_outs_never():
    entry = annotated_function(native(
        "- func: zz.out(Tensor self, int[2] pads, SymInt[]? sizes, bool[3] mask, int k=1, *, "
        "Tensor weight, float eps=0.5, Tensor(a!) out) -> Tensor(a!)\n"))
    assert [(a.name, a.simple_type, a.kwarg_only, a.size) for a in entry.args] == [
        ("self", "Tensor", False, 0), ("pads", "IntArrayRef", False, 2),
        ("sizes", "SymIntArrayRef?", False, 0), ("mask", "::std::array<bool,3>", False, 0),
        ("weight", "Tensor", True, 0)]


def test_the_excluded_functions_list_no_keyword_arguments():
    for name in ("diagonal", "round_", "round", "scatter_"):
        schema = (f"{name}.zz(Tensor(a!) self, *, int k) -> Tensor(a!)" if name.endswith("_")
                  else f"{name}.zz(Tensor self, *, int k) -> Tensor")
        entry = annotated_function(native(f"- func: {schema}\n  variants: method\n"))
        assert [a.name for a in entry.args] == ["self"], name
    entry = annotated_function(native("- func: roundz(Tensor self, *, int k) -> Tensor\n"))
    assert [a.name for a in entry.args] == ["self", "k"]


def test_the_line_is_the_repr_of_the_dicts():
    (line,) = rendered("- func: zz.x(Tensor self, int[2] pads, *, Tensor? w) -> Tensor\n").lines
    assert line == (TORCH, "    torch._C._VariableFunctions.zz: [{'is_kwarg_only': 'False', "
                           "'name': 'self', 'simple_type': 'Tensor'}, {'is_kwarg_only': 'False', "
                           "'name': 'pads', 'simple_type': 'IntArrayRef', 'size': 2}, "
                           "{'is_kwarg_only': 'True', 'name': 'w', 'simple_type': 'Tensor?'}],")


def test_an_inplace_method_without_arguments_is_an_empty_list():
    (line,) = rendered("- func: zz_(Tensor(a!) self, int k=0) -> Tensor(a!)\n  variants: method\n").lines
    assert line == (TENSOR, "    torch.Tensor.zz_: [{'is_kwarg_only': 'False', 'name': 'self', "
                            "'simple_type': 'Tensor'}],")


def test_unusual_strings_are_printed_as_repr_prints_them():
    (line,) = rendered("- func: zz(Tensor it's, int[] x) -> Tensor\n").lines
    assert listed_args(line[1])[0]["name"] == "it's"
    assert "\"it's\"" in line[1]


# ---------------------------------------------------------------------------------------------
# The file


def test_lines_go_by_namespace_then_by_first_appearance_of_the_name():
    fns = ["- func: b(Tensor self) -> Tensor\n  variants: function, method\n",
           "- func: a(Tensor self) -> Tensor\n  variants: method\n",
           "- func: b.x(Tensor self, int k) -> Tensor\n",
           "- func: a.x(Tensor self, int k) -> Tensor\n  variants: function, method\n",
           "- func: c(Tensor self) -> Tensor\n  python_module: nn\n"]
    lines = annotated_lines([rendered(text) for text in fns])
    assert [(line.split(":")[0].strip(), len(listed_args(line))) for line in lines] == [
        ("torch._C._VariableFunctions.b", 1), ("torch._C._VariableFunctions.b", 2),
        ("torch._C._VariableFunctions.a", 2), ("torch._C._nn.c", 1),
        ("torch.Tensor.b", 1), ("torch.Tensor.a", 1), ("torch.Tensor.a", 2)]


def test_the_file_from_the_spec_template():
    spec = TemplateSet((("annotated_fn_args.py.in", "x = {\n${annotated_args}\n}\n"),))
    text = annotated_fn_args_file(spec, [rendered("- func: zz(Tensor self) -> Tensor\n")])
    assert text == ("x = {\n    torch._C._VariableFunctions.zz: [{'is_kwarg_only': 'False', "
                    "'name': 'self', 'simple_type': 'Tensor'}],\n}\n")
    assert annotated_fn_args_file(spec, []) == "x = {\n\n}\n"
