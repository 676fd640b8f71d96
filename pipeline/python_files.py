"""The files of gen_python_functions: Python bindings of every ATen op, by module.

gen_python_functions.py: gen binds the functions that should get a binding (generated ones
only when they are view copies; none on the skip lists), as Tensor methods and as functions
of torch, torch.nn, torch.fft, torch.linalg, torch.nested, torch.sparse and torch.special.
torch's bindings are sharded in three by name; the others are one file each, names sorted.
python_return_types.{cpp,h} hold the named-tuple return types and python_enum_tag.cpp the
Tag enum.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Sequence

from .deprecated import DeprecatedSignature
from .errors import Problem, RuleViolation, SpecFile
from .native import NativeFunction
from .python_binding import Binding, binding
from .python_signature import (PyPair, deprecated_pairs, pairs_by_name, python_pair,
                               structseq_fieldnames)
from .records import Record
from .render import TemplateSet, expand_spec_template, generated_comment, jinja_module, shard_of
from .schema import cpp_name

# Functions bound by hand or not at all (gen_python_functions.py: _SKIP_PYTHON_BINDINGS),
# matched against the whole C++ name (with `_out`); one alternation matches any of them.
_SKIP_PATTERNS = (
    "alias", "contiguous", "dim", "get_device", "is_contiguous", "is_cuda", "is_sparse",
    "is_sparse_csr", "numel", "size", "storage_offset", "stride", "sym_is_contiguous",
    "sym_size", "sym_stride", "sym_storage_offset", "sym_numel", ".*_backward",
    ".*_backward_(out|input|weight|bias)", ".*_forward", ".*_forward_out", ".*_jvp",
    "_unsafe_view", "tensor", "_?sparse_(coo|compressed|csr|csc|bsr|bsc)_tensor.*", "_range.*",
    "_sparse_add_out", "_sparse_div.*", "_sparse_mul.*", "_sparse_sub.*",
    "_sparse_dense_add_out", "index", "index_out", "unique_dim_consecutive", "_cumsum.*",
    "_cumprod.*", "_sum.*", "_prod.*", "_th_.*", "_thnn_.*", "range.*", "_solve.*",
    "_inverse.*", "_cholesky.*", "_triangular_solve.*", "_qr.*", "_svd.*", "slice", "item",
    "_local_scalar_dense", "to", "_to_copy", "_to_copy_out", "_reshape_copy",
    "_reshape_copy_out", "copy_sparse_to_sparse_", "copy_", "_foreach_copy", "numpy_T",
    "matrix_H", "mT", "mH", "nonzero(_(out|numpy))?", "set_data", ".*_overrideable", "data",
    "is_leaf", "output_nr", "_version", "requires_grad_", "retains_grad", "set_", "_fw_primal",
    "fake_quantize_per_tensor_affine_cachemask", "fake_quantize_per_channel_affine_cachemask",
    "_new_zeros_with_same_feature_meta", "_has_same_storage_numel", "_reshape_alias",
    "replace_", "copy", "fill.Tensor", "fill.Scalar", "lift.*", "normal_functional", "nbytes",
    "itemsize", "_batch_norm_with_update", "_batch_norm_with_update_out",
    "_batch_norm_no_update",
)
SKIP_PYTHON_BINDINGS = re.compile("^(?:" + "|".join(f"(?:{p})" for p in _SKIP_PATTERNS) + ")$")
# The Scalar overloads of the arithmetic ops are reached through their Tensor overloads
# (gen_python_functions.py: SKIP_PYTHON_BINDINGS_SIGNATURES): op name, the arguments after
# `other`.
_SKIPPED_SCALAR_OVERLOADS = (("add", ", Scalar alpha=1"), ("sub", ", Scalar alpha=1"),
                             ("mul", ""), ("div", ""))
SKIP_PYTHON_BINDINGS_SIGNATURES = frozenset(
    schema
    for op, rest in _SKIPPED_SCALAR_OVERLOADS
    for schema in (f"{op}.Scalar(Tensor self, Scalar other{rest}) -> Tensor",
                   f"{op}_.Scalar(Tensor(a!) self, Scalar other{rest}) -> Tensor(a!)"))

# The template every binding file comes from, with the module its functions live in.
TORCH_SHARDS = 3
MODULE_FILES = (("python_nn_functions.cpp", "nn", "torch.nn"),
                ("python_fft_functions.cpp", "fft", "torch.fft"),
                ("python_linalg_functions.cpp", "linalg", "torch.linalg"),
                ("python_nested_functions.cpp", "nested", "torch.nested"),
                ("python_sparse_functions.cpp", "sparse", "torch.sparse"),
                ("python_special_functions.cpp", "special", "torch.special"))
PYTHON_TEMPLATES = ("python_variable_methods.cpp", "python_torch_functions.cpp",
                    "python_return_types.cpp", "python_return_types.h", "python_enum_tag.cpp") + \
    tuple(f for f, _, _ in MODULE_FILES)


def should_bind(fn: NativeFunction) -> bool:
    """gen_python_functions.py: should_generate_py_binding."""
    if "generated" in fn.tags and "view_copy" not in fn.tags:
        return False
    if SKIP_PYTHON_BINDINGS.match(cpp_name(fn.func)):
        return False
    return str(fn.func) not in SKIP_PYTHON_BINDINGS_SIGNATURES


@dataclass(frozen=True, slots=True)
class BindingGroup(Record):
    """All pairs of one op name bound into one file, with what that file needs of them."""

    name: str
    pairs: tuple[PyPair, ...]


def group_by_name(pairs: Sequence[PyPair], keep: Callable[[NativeFunction], bool]
                  ) -> list[BindingGroup]:
    """Pairs grouped by operator name, in first-appearance order (group_filter_overloads)."""
    groups: dict[str, list[PyPair]] = {}
    for pair in pairs:
        if keep(pair.function):
            groups.setdefault(str(pair.function.func.name.name), []).append(pair)
    return [BindingGroup(name, tuple(members)) for name, members in groups.items()]


@dataclass(frozen=True, slots=True)
class RenderedBinding(Record):
    name: str
    shard_key: str
    method: str
    method_def: str
    forward_declarations: tuple[str, ...]
    ops_header: str


def render_binding(b: Binding, templates: TemplateSet) -> RenderedBinding:
    macros = jinja_module(templates, "python_binding.j2")
    forwards = () if b.method else (str(macros.forward_declaration(b)),)
    return RenderedBinding(b.name, b.base, str(macros.method_impl(b)),
                           str(macros.method_def(b)), forwards, str(macros.ops_header(b)))


@dataclass(frozen=True)
class PythonBindings:
    """Everything the Python binding files are made from."""

    methods: tuple[Binding, ...]
    torch: tuple[Binding, ...]
    modules: dict[str, tuple[Binding, ...]]
    return_types: tuple[tuple[StructseqTypeFields, ...], ...]
    tags: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class StructseqTypeFields(Record):
    typename: str
    function: str
    fields: tuple[str, ...]


def python_bindings(functions: Sequence[NativeFunction], deprecated: Sequence[DeprecatedSignature],
                    tags: Sequence[str]) -> tuple[PythonBindings, list[Problem]]:
    """Binding data for every file (gen_python_functions.py: gen), and every problem found."""
    problems: list[Problem] = []
    bound = [f for f in functions if should_bind(f)]
    method_pairs = _pairs(bound, deprecated, True, problems)
    function_pairs = _pairs(bound, deprecated, False, problems)
    methods = _bindings(group_by_name(method_pairs, _is_method), None, True, True, problems)
    torch = _bindings(group_by_name(function_pairs, _is_torch_function), "torch", False, False,
                      problems)
    modules = {file: _bindings(group_by_name(function_pairs, _InModule(module)), qualified,
                               False, True, problems)
               for file, module, qualified in MODULE_FILES}
    returns = []
    for group in _sorted(group_by_name(function_pairs, _any)):
        try:
            returns.append(_structseq_types(group))
        except RuleViolation as violation:
            problems.append(violation.to_problem(SpecFile.NATIVE_FUNCTIONS, group.name))
    return PythonBindings(methods, torch, modules, tuple(returns), tuple(sorted(tags))), problems


def _pairs(functions: Sequence[NativeFunction], deprecated: Sequence[DeprecatedSignature],
           method: bool, problems: list[Problem]) -> list[PyPair]:
    """Every function's pair, then the deprecated pairs (load_signatures); a function or
    deprecated entry that fails is reported (once, for the method pass) and left out."""
    pairs = []
    for fn in functions:
        try:
            pairs.append(python_pair(fn, method))
        except RuleViolation as violation:
            if not method:
                problems.append(violation.to_problem(SpecFile.NATIVE_FUNCTIONS, str(fn.func.name)))
    by_name = pairs_by_name(pairs)
    for entry in deprecated:
        try:
            pairs.extend(deprecated_pairs(entry, by_name, method))
        except RuleViolation as violation:
            if not method:
                problems.append(violation.to_problem(SpecFile.DEPRECATED, str(entry.schema)))
    return pairs


def _is_method(fn: NativeFunction) -> bool:
    return fn.python_module is None and "method" in fn.variants


def _is_torch_function(fn: NativeFunction) -> bool:
    return fn.python_module is None and "function" in fn.variants


def _any(fn: NativeFunction) -> bool:
    return True


class _InModule:
    def __init__(self, module: str) -> None:
        self.module = module

    def __call__(self, fn: NativeFunction) -> bool:
        return fn.python_module == self.module


def _sorted(groups: list[BindingGroup]) -> list[BindingGroup]:
    return sorted(groups, key=lambda g: g.name)


def _bindings(groups: list[BindingGroup], module: str | None, method: bool, ordered: bool,
              problems: list[Problem]) -> tuple[Binding, ...]:
    result = []
    for group in _sorted(groups) if ordered else groups:
        try:
            result.append(binding(group.name, group.pairs, module, method))
        except RuleViolation as violation:
            culprit = str(group.pairs[0].function.func.name)
            problems.append(violation.to_problem(SpecFile.NATIVE_FUNCTIONS, culprit))
    return tuple(result)


def _structseq_types(group: BindingGroup) -> tuple[StructseqTypeFields, ...]:
    """The distinct named-tuple types of one name's functions (python_return_types.cpp)."""
    seen: set[str] = set()
    types = []
    for pair in group.pairs:
        func = pair.function.func
        fields = structseq_fieldnames(func)
        if not fields:
            continue
        key = "_".join([cpp_name(func)] + fields)
        if key in seen:
            continue
        seen.add(key)
        typename = f"{cpp_name(func)}NamedTuple{'' if not types else len(types)}"
        types.append(StructseqTypeFields(typename, cpp_name(func), tuple(fields)))
    return tuple(types)


# ---------------------------------------------------------------------------------------------
# Files


def python_binding_files(bindings: PythonBindings, templates: TemplateSet,
                         spec_templates: TemplateSet, layout: str) -> dict[str, str]:
    files = {"python_variable_methods.cpp": _binding_file(
        "python_variable_methods.cpp", [render_binding(b, templates) for b in bindings.methods],
        spec_templates, layout)}
    for file, _, _ in MODULE_FILES:
        files[file] = _binding_file(file, [render_binding(b, templates)
                                           for b in bindings.modules[file]], spec_templates, layout)
    files.update(_torch_files([render_binding(b, templates) for b in bindings.torch],
                              spec_templates, layout))
    files.update(_return_type_files(bindings, templates, spec_templates, layout))
    return files


def _binding_env(rendered: Sequence[RenderedBinding]) -> dict[str, list[str]]:
    return {"ops_headers": [r.ops_header for r in rendered],
            "py_forwards": [f for r in rendered for f in r.forward_declarations],
            "py_methods": [r.method for r in rendered],
            "py_method_defs": [r.method_def for r in rendered]}


def _binding_file(name: str, rendered: Sequence[RenderedBinding], spec_templates: TemplateSet,
                  layout: str) -> str:
    env: dict = {"generated_comment": generated_comment(layout, name)}
    env.update(_binding_env(rendered))
    return expand_spec_template(spec_templates, name, env)


def _torch_files(rendered: Sequence[RenderedBinding], spec_templates: TemplateSet,
                 layout: str) -> dict[str, str]:
    """python_torch_functions_{0,1,2}.cpp and Everything, sharded by base name."""
    shards: dict[str, list[RenderedBinding]] = {"Everything": list(rendered)}
    for i in range(TORCH_SHARDS):
        shards[f"_{i}"] = []
    for r in rendered:
        shards[f"_{shard_of(r.shard_key, TORCH_SHARDS)}"].append(r)
    files = {}
    for shard_id, members in shards.items():
        env: dict = {"generated_comment": generated_comment(layout, "python_torch_functions.cpp"),
                     "shard_id": shard_id}
        env.update(_binding_env(members))
        files[f"python_torch_functions{shard_id}.cpp"] = expand_spec_template(
            spec_templates, "python_torch_functions.cpp", env)
    return files


def _return_type_files(bindings: PythonBindings, templates: TemplateSet,
                       spec_templates: TemplateSet, layout: str) -> dict[str, str]:
    macros = jinja_module(templates, "python_return_types.j2")
    groups = bindings.return_types
    definitions = ["\n".join(str(macros.structseq_definition(t)) for t in g) for g in groups]
    registrations = ["\n".join(str(macros.structseq_registration(t)) for t in g) for g in groups]
    declarations = ["\n".join(str(macros.structseq_declaration(t)) for t in g) for g in groups]
    return {
        "python_return_types.cpp": expand_spec_template(spec_templates, "python_return_types.cpp", {
            "generated_comment": generated_comment(layout, "python_return_types.cpp"),
            "py_return_types": definitions, "py_return_types_registrations": registrations}),
        "python_return_types.h": expand_spec_template(spec_templates, "python_return_types.h", {
            "generated_comment": generated_comment(layout, "python_return_types.h"),
            "py_return_types_declarations": declarations}),
        "python_enum_tag.cpp": expand_spec_template(spec_templates, "python_enum_tag.cpp", {
            "generated_comment": generated_comment(layout, "python_enum_tag.cpp"),
            "enum_of_valid_tags": str(macros.tag_values(list(bindings.tags)))}),
    }
