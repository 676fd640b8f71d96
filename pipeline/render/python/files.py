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
from typing import Sequence

from gradshard.pipeline.parse.deprecated import DeprecatedSignature
from gradshard.pipeline.parse.native import NativeFunction
from gradshard.pipeline.problems import Problem, RuleViolation, SpecError, SpecFile
from gradshard.pipeline.records import Record
from gradshard.pipeline.releases import Release
from gradshard.pipeline.render.python.bindings import Binding, binding
from gradshard.pipeline.render.python.signatures import (PyPair, deprecated_pairs, pairs_by_name,
                                                         python_pair, structseq_fieldnames)
from gradshard.pipeline.render.template_names import MODULE_FILES
from gradshard.pipeline.render.templating import (TemplateSet, expand_spec_template,
                                                  generated_comment, jinja_module, shard_of)
from gradshard.pipeline.schema import cpp_name

__all__ = ["BindingKey", "BindingPlan", "METHODS_FILE", "RenderedBinding",
           "SKIP_PYTHON_BINDINGS_SIGNATURES", "StructseqTypes", "TORCH_FILE", "TORCH_SHARD_IDS",
           "bind", "binding_file", "binding_key", "binding_plan", "check_deprecated",
           "enum_tag_file", "one_per_fault", "render_binding", "return_types_file",
           "return_types_header", "should_bind", "structseq_types", "torch_file",
           "torch_file_name", "torch_shard_of"]

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

TORCH_SHARDS = 3  # gen_python_functions.py: create_python_bindings_sharded


def should_bind(fn: NativeFunction) -> bool:
    """gen_python_functions.py: should_generate_py_binding."""
    if "generated" in fn.tags and "view_copy" not in fn.tags:
        return False
    if SKIP_PYTHON_BINDINGS.match(cpp_name(fn.func)):
        return False
    return str(fn.func) not in SKIP_PYTHON_BINDINGS_SIGNATURES


# ---------------------------------------------------------------------------------------------
# Routing: which bindings exist, and which functions each one reads


@dataclass(frozen=True, slots=True)
class BindingKey(Record):
    """What routes one function's bindings (a formula or a default changes none of it)."""

    name: str  # str(func.name.name): the binding it belongs to
    base: str  # the base name: torch's shard key
    bound: bool
    module: str | None
    method: bool
    function: bool
    named_returns: bool


def binding_key(fn: NativeFunction) -> BindingKey:
    name = fn.func.name.name
    return BindingKey(str(name), name.base, should_bind(fn), fn.python_module,
                      "method" in fn.variants, "function" in fn.variants,
                      any(r.name for r in fn.func.returns))


@dataclass(frozen=True, slots=True)
class BindingTarget(Record):
    """One binding: the file it goes into, its Python module and op name."""

    file: str  # the spec template: python_variable_methods.cpp, python_torch_functions.cpp…
    module: str | None  # None for Tensor methods, else "torch", "torch.nn"…
    method: bool
    name: str
    shard_key: str

    @property
    def python_name(self) -> str:
        """How Python users know it: Tensor.add, torch.add, torch._C._nn.linear…"""
        if self.method:
            return f"Tensor.{self.name}"
        if self.module == "torch":
            return f"torch.{self.name}"
        return f"torch._C._{self.module.removeprefix('torch.')}.{self.name}"

    def keeps(self, fn: NativeFunction) -> bool:
        """Whether a function of this name is bound in this file (gen_python_functions.py:
        is_py_variable_method / is_py_torch_function / is_py_<module>_function)."""
        if self.method:
            return fn.python_module is None and "method" in fn.variants
        if self.module == "torch":
            return fn.python_module is None and "function" in fn.variants
        return fn.python_module == _MODULE_OF_FILE[self.file]


@dataclass(frozen=True, slots=True)
class PlannedBinding(Record):
    target: BindingTarget
    functions: tuple[int, ...]  # every bound function of the name (positions), in spec order
    deprecated: tuple[int, ...]  # the deprecated signatures calling the name


@dataclass(frozen=True, slots=True)
class BindingPlan(Record):
    """Every binding, file by file in each file's order; every bound name (sorted) with its
    functions, for python_return_types; each deprecated signature with the functions it may
    call."""

    bindings: tuple[PlannedBinding, ...]
    names: tuple[tuple[str, bool, tuple[int, ...]], ...]  # (name, has named returns, functions)
    deprecated: tuple[tuple[int, ...], ...]


_MODULE_OF_FILE = {file: module for file, module, _ in MODULE_FILES}
METHODS_FILE = "python_variable_methods.cpp"
TORCH_FILE = "python_torch_functions.cpp"


def binding_plan(keys: Sequence[BindingKey], deprecated: Sequence[DeprecatedSignature]
                 ) -> BindingPlan:
    """gen_python_functions.py: gen's grouping (group_filter_overloads per file): methods and
    module functions sorted by name, torch functions in first-appearance order."""
    by_name: dict[str, list[int]] = {}
    for position, key in enumerate(keys):
        if key.bound:
            by_name.setdefault(key.name, []).append(position)
    calls: dict[str, list[int]] = {}
    for position, signature in enumerate(deprecated):
        calls.setdefault(signature.aten_name, []).append(position)
    bindings = [*_file_bindings(keys, by_name, calls, METHODS_FILE, None, True, True),
                *_file_bindings(keys, by_name, calls, TORCH_FILE, "torch", False, False)]
    for file, _, qualified in MODULE_FILES:
        bindings.extend(_file_bindings(keys, by_name, calls, file, qualified, False, True))
    names = tuple((name, any(keys[p].named_returns for p in members), tuple(members))
                  for name, members in sorted(by_name.items()))
    return BindingPlan(tuple(bindings), names,
                       tuple(tuple(by_name.get(d.aten_name, ())) for d in deprecated))


def _file_bindings(keys: Sequence[BindingKey], by_name: dict[str, list[int]],
                   calls: dict[str, list[int]], file: str, module: str | None, method: bool,
                   ordered: bool) -> list[PlannedBinding]:
    first_kept: dict[str, int] = {}
    for name, members in by_name.items():
        kept = [p for p in members if _kept(keys[p], file, module, method)]
        if kept:
            first_kept[name] = kept[0]
    names = sorted(first_kept) if ordered else sorted(first_kept, key=first_kept.__getitem__)
    return [PlannedBinding(BindingTarget(file, module, method, name,
                                         keys[by_name[name][0]].base),
                           tuple(by_name[name]), tuple(calls.get(name, ())))
            for name in names]


def _kept(key: BindingKey, file: str, module: str | None, method: bool) -> bool:
    if method:
        return key.module is None and key.method
    if module == "torch":
        return key.module is None and key.function
    return key.module == _MODULE_OF_FILE[file]


# ---------------------------------------------------------------------------------------------
# One binding


def target_pairs(target: BindingTarget, pairs: Sequence[PyPair],
                 deprecated: Sequence[PyPair]) -> list[PyPair]:
    """The pairs one binding is made of: its name's function pairs, then the deprecated
    signatures' pairs, each kept when its function is bound in the target's file."""
    return [p for p in (*pairs, *deprecated) if target.keeps(p.function)]


def bind(target: BindingTarget, functions: Sequence[NativeFunction],
         deprecated: Sequence[DeprecatedSignature], release: Release) -> Binding:
    """One binding from its name's functions and the deprecated signatures calling them
    (gen_python_functions.py: load_signatures, load_deprecated_signatures, method_impl).

    A function or deprecated signature that cannot be bound is left out of it. The faults
    of the name's functions are found by their function pass, so every binding of the name
    reports them (one_per_fault keeps one) and a method pass only leaves them out; a
    deprecated signature's faults are bindings.deprecated_check's (`check_deprecated`)."""
    problems: list[Problem] = []
    pairs = bound_pairs(functions, False, problems)
    if target.method:
        pairs = bound_pairs(functions, True, [])
    by_name = pairs_by_name(pairs)
    extra = [p for d in deprecated for p in _deprecated_pairs(d, by_name, target.method, [])]
    members = target_pairs(target, pairs, extra)
    made = None
    if members:
        try:
            made = binding(target.name, members, target.module, target.method, release)
        except RuleViolation as violation:
            culprit = str(members[0].function.func.name)
            problems.append(violation.to_problem(SpecFile.NATIVE_FUNCTIONS, culprit))
    if problems or made is None:
        raise SpecError(problems)
    return made


def bound_pairs(functions: Sequence[NativeFunction], method: bool,
                problems: list[Problem]) -> list[PyPair]:
    """One pass's pairs (gen_python_functions.py: load_signatures); a function that cannot be
    bound is left out, and its problem logged."""
    pairs = []
    for fn in functions:
        try:
            pairs.append(python_pair(fn, method))
        except RuleViolation as violation:
            problems.append(violation.to_problem(SpecFile.NATIVE_FUNCTIONS, str(fn.func.name)))
    return pairs


def one_per_fault(problems: list[Problem]) -> list[Problem]:
    """The first problem of each rule at each entry: a fault of one function breaks every
    binding it is part of (its Tensor method and its torch function), and each binding
    finds it, maybe wording it for its own parser signature."""
    first: dict[tuple, Problem] = {}
    for problem in problems:
        first.setdefault((problem.file, problem.entry, problem.line_in_entry, problem.rule),
                         problem)
    return list(first.values())


def check_deprecated(signature: DeprecatedSignature, functions: Sequence[NativeFunction]) -> None:
    """A deprecated signature must fit an overload of the function it calls (`functions`: the
    bound functions of that name), as their function pass finds them."""
    problems: list[Problem] = []
    _deprecated_pairs(signature, pairs_by_name(bound_pairs(functions, False, [])), False,
                      problems)
    if problems:
        raise SpecError(problems)


def _deprecated_pairs(signature: DeprecatedSignature, by_name: dict[str, list[PyPair]],
                      method: bool, problems: list[Problem]) -> list[PyPair]:
    try:
        return deprecated_pairs(signature, by_name, method)
    except RuleViolation as violation:
        problems.append(violation.to_problem(SpecFile.DEPRECATED, str(signature.schema)))
        return []


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


@dataclass(frozen=True, slots=True)
class StructseqTypeFields(Record):
    typename: str
    function: str
    fields: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class StructseqTypes(Record):
    """The distinct named-tuple return types of one op name."""

    types: tuple[StructseqTypeFields, ...]


def structseq_types(functions: Sequence[NativeFunction]) -> StructseqTypes:
    """python_return_types.cpp's types for one name (create_python_return_type_bindings)."""
    seen: set[str] = set()
    types: list[StructseqTypeFields] = []
    for fn in functions:
        fields = structseq_fieldnames(fn.func)
        if not fields:
            continue
        key = "_".join([cpp_name(fn.func)] + fields)
        if key in seen:
            continue
        seen.add(key)
        typename = f"{cpp_name(fn.func)}NamedTuple{'' if not types else len(types)}"
        types.append(StructseqTypeFields(typename, cpp_name(fn.func), tuple(fields)))
    return StructseqTypes(tuple(types))


# ---------------------------------------------------------------------------------------------
# Files


def _binding_env(rendered: Sequence[RenderedBinding]) -> dict[str, list[str]]:
    return {"ops_headers": [r.ops_header for r in rendered],
            "py_forwards": [f for r in rendered for f in r.forward_declarations],
            "py_methods": [r.method for r in rendered],
            "py_method_defs": [r.method_def for r in rendered]}


def binding_file(name: str, rendered: Sequence[RenderedBinding], spec_templates: TemplateSet,
                 layout: str) -> str:
    """python_variable_methods.cpp or a module's file (create_python_bindings)."""
    env: dict = {"generated_comment": generated_comment(layout, name)}
    env.update(_binding_env(rendered))
    return expand_spec_template(spec_templates, name, env)


TORCH_SHARD_IDS = tuple(f"_{i}" for i in range(TORCH_SHARDS)) + ("Everything",)


def torch_file_name(shard_id: str) -> str:
    return f"python_torch_functions{shard_id}.cpp"


def torch_shard_of(shard_key: str) -> str:
    """utils.py: FileManager.write_sharded, by the binding's base name."""
    return f"_{shard_of(shard_key, TORCH_SHARDS)}"


def torch_file(shard_id: str, rendered: Sequence[RenderedBinding], spec_templates: TemplateSet,
               layout: str) -> str:
    """python_torch_functions_{0,1,2}.cpp or Everything (create_python_bindings_sharded)."""
    env: dict = {"generated_comment": generated_comment(layout, TORCH_FILE),
                 "shard_id": shard_id}
    env.update(_binding_env(rendered))
    return expand_spec_template(spec_templates, TORCH_FILE, env)


def return_types_file(groups: Sequence[StructseqTypes], templates: TemplateSet,
                      spec_templates: TemplateSet, layout: str) -> str:
    macros = jinja_module(templates, "python_return_types.j2")
    return expand_spec_template(spec_templates, "python_return_types.cpp", {
        "generated_comment": generated_comment(layout, "python_return_types.cpp"),
        "py_return_types": ["\n".join(str(macros.structseq_definition(t)) for t in g.types)
                            for g in groups],
        "py_return_types_registrations": [
            "\n".join(str(macros.structseq_registration(t)) for t in g.types) for g in groups]})


def return_types_header(groups: Sequence[StructseqTypes], templates: TemplateSet,
                        spec_templates: TemplateSet, layout: str) -> str:
    macros = jinja_module(templates, "python_return_types.j2")
    return expand_spec_template(spec_templates, "python_return_types.h", {
        "generated_comment": generated_comment(layout, "python_return_types.h"),
        "py_return_types_declarations": [
            "\n".join(str(macros.structseq_declaration(t)) for t in g.types) for g in groups]})


def enum_tag_file(tags: Sequence[str], templates: TemplateSet, spec_templates: TemplateSet,
                  layout: str) -> str:
    macros = jinja_module(templates, "python_return_types.j2")
    return expand_spec_template(spec_templates, "python_enum_tag.cpp", {
        "generated_comment": generated_comment(layout, "python_enum_tag.cpp"),
        "enum_of_valid_tags": str(macros.tag_values(list(tags)))})
