"""annotated_fn_args.py (pipeline/annotated_args.py): the namespaces each function is listed
in, its arguments without defaults, the line's text (a Python literal), the order of the
file, and the whole file byte for byte against torchgen 2.13 on the real spec and on an
edited copy (a python_module change, new overloads, a sized list argument)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from gradshard.pipeline.annotated_args import (RenderedAnnotatedArgs, annotated_fn_args_file,
                                               annotated_function, annotated_lines,
                                               namespaces_of, render_annotated_args)
from gradshard.pipeline.errors import SpecFile
from gradshard.pipeline.native import NativeFunction
from gradshard.pipeline.render import TemplateSet
from gradshard.pipeline.source import split_entries
from gradshard.pipeline.spec import parse_native_entry
from gradshard.service.codegen import gradshard_templates
from support.graph_run import spec_records
from support.oracle import run_oracle
from support.spec_edits import Edit, apply_edits
from support.specs import NATIVE, TEMPLATES, stage_packaged_spec

TAGS = frozenset({"generated", "view_copy", "core", "pointwise"})
TORCH, TENSOR = "torch._C._VariableFunctions", "torch.Tensor"
ANNOTATED = Path("torch/testing/_internal/generated/annotated_fn_args.py")


def native(yaml_text: str) -> NativeFunction:
    (entry,) = split_entries(SpecFile.NATIVE_FUNCTIONS, yaml_text)
    return parse_native_entry(entry, TAGS)


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


# ---------------------------------------------------------------------------------------------
# Against torchgen


def our_file(spec_dir: Path) -> str:
    ours = gradshard_templates()
    templates = spec_dir / TEMPLATES
    spec_templates = TemplateSet(tuple((p.name, p.read_text()) for p in sorted(templates.iterdir())
                                       if p.is_file()))
    return annotated_fn_args_file(spec_templates, [
        render_annotated_args(annotated_function(fn), ours)
        for fn in spec_records(spec_dir).native_functions])


DIAGONAL = ("- func: diagonal(Tensor(a) self, int offset=0, int dim1=0, int dim2=1) -> Tensor(a)\n"
            "  variants: function, method\n")
# diagonal moves to torch.linalg (function only); new overloads: add's at the end of the
# file (grouped with add's first appearance), a special function with a keyword-only
# argument without a default and a sized list; the template's own text is edited too.
ANNOTATED_EDITS = [
    Edit(NATIVE, DIAGONAL, DIAGONAL.replace("  variants: function, method\n",
                                            "  python_module: linalg\n  variants: function\n")),
    Edit(NATIVE, "", (
        "\n- func: add.zz(Tensor self, int[2] pads, *, Tensor weight, SymInt[]? sizes) -> Tensor\n"
        "  variants: function, method\n"
        "  dispatch:\n    CompositeExplicitAutograd: add_zz\n"
        "\n- func: special_zz(Tensor self, SymInt[2] window, *, Tensor other, "
        "int k=2) -> Tensor\n"
        "  python_module: special\n"
        "  dispatch:\n    CompositeExplicitAutograd: special_zz\n")),
    Edit(f"{TEMPLATES}/annotated_fn_args.py.in", "annotated_args = {\n",
         "# edited\nannotated_args = {\n"),
]


@pytest.fixture(scope="module", params=["packaged", "edited"])
def both_files(request, tmp_path_factory) -> tuple[str, str]:
    root = tmp_path_factory.mktemp(request.param)
    pythonpath, spec_dir = stage_packaged_spec(root / "stage")
    if request.param == "edited":
        apply_edits(spec_dir, ANNOTATED_EDITS)
    run_oracle("tree", spec_dir, str(root / "out"), pythonpath=pythonpath)
    return request.param, our_file(spec_dir), (root / "out" / ANNOTATED).read_text()


@pytest.mark.slow
def test_annotated_fn_args_is_byte_identical(both_files):
    _, ours, theirs = both_files
    assert ours == theirs


@pytest.mark.slow
def test_the_edits_reach_the_file(both_files):
    name, ours, _ = both_files
    lines = ours.splitlines()
    if name == "packaged":
        assert len([line for line in lines if line.startswith("    torch.")]) == 2764
        assert "    torch.Tensor.diagonal: " in ours
        return
    assert "# edited\n" in ours
    assert "    torch._C._linalg.diagonal: " in ours and "    torch.Tensor.diagonal: " not in ours
    adds = [i for i, line in enumerate(lines) if line.startswith("    torch._C._VariableFunctions.add:")]
    assert adds == list(range(adds[0], adds[0] + len(adds)))  # add.zz joined add's group
    assert "'name': 'weight', 'simple_type': 'Tensor'}, {'is_kwarg_only': 'True', 'name': " \
           "'sizes', 'simple_type': 'SymIntArrayRef?'}]," in lines[adds[-1]]
    assert "'name': 'window', 'simple_type': 'SymIntArrayRef', 'size': 2}" in ours
