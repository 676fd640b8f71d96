"""ViewFuncs.h/.cpp: one `ViewFunc` struct per out-of-place view op, which replays the view on
another base (PA/gen_view_funcs.py).

A view op gets a struct when it uses derived dispatch (so ADInplaceOrView makes it a view)
and neither modifies its arguments nor writes an out= result. `view_func` turns one function
and its match into a `ViewFunc` record: the struct's constructor, its state (the op's
arguments but self, held by value), the SymInts and tensors it exposes, and the call it
replays. `templates/codegen/view_funcs.j2` prints it; both files are the spec's templates expanded
with every struct in C++-name order (one environment for both, as gen_view_funcs writes them).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from gradshard.pipeline.cpp import CForm, CppFlags, CType, argument_ctype, base, wrap
from gradshard.pipeline.match.match_infos import FunctionMatch
from gradshard.pipeline.parse.native import NativeFunction
from gradshard.pipeline.problems import RuleViolation
from gradshard.pipeline.records import Record
from gradshard.pipeline.render.kernel_lists import view_info
from gradshard.pipeline.render.templating import (TemplateSet, expand_spec_template,
                                                  generated_comment, jinja_module)
from gradshard.pipeline.render.variable_type import Formal, uses_derived
from gradshard.pipeline.schema import Argument, FunctionSchema, SchemaKind, SchemaType, TypeForm

__all__ = ["RenderedViewFunc", "VIEW_FUNCS_FILES", "VIEW_FUNC_NAMESPACE", "ViewFunc",
           "binding_types", "modifies_arguments", "ops_header", "render_view_func",
           "unambiguous_name", "view_func", "view_func_name", "view_funcs_files"]

VIEW_FUNC_NAMESPACE = "torch::autograd::generated::"
VIEW_FUNCS_FILES = ("ViewFuncs.h", "ViewFuncs.cpp")
VIEW_IDX = Formal("int64_t", "view_idx")  # multi-output views: which output a struct replays
# gen_view_funcs types the held arguments outside any function's context: no CppFlags apply
_NO_CONTEXT = CppFlags()


# ---------------------------------------------------------------------------------------------
# Records


@dataclass(frozen=True, slots=True)
class StateItem(Record):
    """A member the struct exposes as SymInts or tensors: a list, an optional or one value
    (generate_state_getter_setter's three shapes)."""

    name: str
    shape: str  # list, optional, single


@dataclass(frozen=True, slots=True)
class Initializer(Record):
    member: str
    expr: str


@dataclass(frozen=True, slots=True)
class ViewFunc(Record):
    """One view op's struct (gen_view_funcs.py: process_function's fields)."""

    op_name: str
    root_name: str
    name: str  # the struct's name, e.g. SliceTensorViewFunc
    macro: str  # e.g. SLICE_TENSOR_VIEW_FUNC (followed by _AVAILABLE)
    constructor_args: tuple[Formal, ...]
    initializers: tuple[Initializer, ...]
    state: tuple[Formal, ...]
    clone_args: tuple[str, ...]
    symints: tuple[StateItem, ...]
    tensors: tuple[StateItem, ...]
    unambiguous_name: str
    call_args: tuple[str, ...]  # after input_base
    multi_output: bool


@dataclass(frozen=True, slots=True)
class RenderedViewFunc(Record):
    """One struct's pieces of ViewFuncs.h (its include and declaration) and .cpp."""

    op_name: str
    header: str
    declaration: str
    definition: str


# ---------------------------------------------------------------------------------------------
# Names shared with ADInplaceOrViewType


def unambiguous_name(schema: FunctionSchema) -> str:
    """model.py: OperatorName.unambiguous_name (`add__Tensor`, `mul_out`)."""
    name = schema.name
    return f"{name.name}_{name.overload}" if name.overload else str(name.name)


def view_func_name(schema: FunctionSchema) -> str:
    """gen_view_funcs.py: view_func_name (camel case): each `_`-separated part title-cased,
    a private op's leading `_` kept."""
    snake = _snake_view_func_name(schema)
    camel = "".join(part.title() for part in snake.split("_"))
    return "_" + camel if snake.startswith("_") else camel


def _snake_view_func_name(schema: FunctionSchema) -> str:
    return f"{unambiguous_name(schema).replace('.', '_')}_view_func"


def modifies_arguments(schema: FunctionSchema) -> bool:
    """gen_inplace_or_view_type.py: modifies_arguments."""
    return schema.kind() in (SchemaKind.INPLACE, SchemaKind.OUT)


def binding_types(fn: NativeFunction) -> tuple[Formal, ...]:
    """Every argument in schema order with its C++ API type, defaults dropped
    (gen_inplace_or_view_type.py: extract_bindings)."""
    return tuple(Formal(str(argument_ctype(a.type, mutable=a.is_write, flags=fn.cpp_flags,
                                           symint=True)), a.name)
                 for a in fn.func.schema_order_arguments())


def ops_header(root_name: str) -> str:
    return f"#include <ATen/ops/{root_name}_ops.h>"


# ---------------------------------------------------------------------------------------------
# One struct


def gets_view_func(fn: NativeFunction, match: FunctionMatch | None) -> bool:
    """gen_view_funcs: out-of-place views among the functions with derived kernels."""
    return (uses_derived(fn, match) and view_info(fn.func.name.name.base) is not None
            and not modifies_arguments(fn.func))


def view_func(fn: NativeFunction, match: FunctionMatch | None) -> tuple[ViewFunc, ...]:
    """The function's struct, or none (gen_view_funcs.py: process_function)."""
    if not gets_view_func(fn, match):
        return ()
    _check_arguments(fn)
    schema = fn.func
    others = [b for b in binding_types(fn) if b.name != "self"]
    # process_function pairs the non-self bindings with the arguments after the first one
    held = schema.schema_order_arguments()[1:]
    state = [Formal(str(_value_ctype(a).without_const_ref()), a.name) for a in held]
    initializers = [Initializer(b.name, _initializer(a, others)) for b, a in zip(others, held)]
    constructor_args, clone_args = list(others), [b.name for b in others]
    multi_output = _returns_tensor_list(schema)
    if multi_output:
        constructor_args.append(VIEW_IDX)
        clone_args.append(VIEW_IDX.name)
        state.append(VIEW_IDX)
        initializers.append(Initializer(VIEW_IDX.name, VIEW_IDX.name))
    types = {a.name: a.type for a in schema.schema_order_arguments()}
    return (ViewFunc(
        op_name=str(schema.name), root_name=schema.name.name.base, name=view_func_name(schema),
        macro=_snake_view_func_name(schema).upper(), constructor_args=tuple(constructor_args),
        initializers=tuple(initializers), state=tuple(state), clone_args=tuple(clone_args),
        symints=tuple(_state_item(b.name, types[b.name]) for b in others
                      if types[b.name].is_symint_like()),
        tensors=tuple(_state_item(b.name, types[b.name]) for b in others
                      if types[b.name].is_tensor_like()),
        unambiguous_name=unambiguous_name(schema), call_args=tuple(b.name for b in others),
        multi_output=multi_output),)


def _check_arguments(fn: NativeFunction) -> None:
    """gen_view_funcs types the arguments outside any function's context, where a mutable
    tensor or a Tensor[] has no C++ type (local.py asserts): torchgen stops there."""
    for arg in fn.func.schema_order_arguments():
        tensor_list = arg.type.form is TypeForm.LIST and str(arg.type.elem) == "Tensor"
        if arg.type.is_tensor_like() and (arg.is_write or tensor_list):
            raise RuleViolation(
                "view_funcs.argument-type",
                f"the view {fn.func.name} takes {arg.type} {arg.name}"
                f"{' (mutable)' if arg.is_write else ''}, which a ViewFunc cannot hold",
                "a view op takes its tensors as plain 'Tensor' / 'Tensor?' arguments")


def _value_ctype(arg: Argument) -> CType:
    """The owning C++ type a struct holds an argument by (api/dispatcher.py: argument with
    remove_non_owning_ref_types): int[] and SymInt[] become vectors."""
    if arg.type.form is TypeForm.LIST and str(arg.type.elem) in ("int", "SymInt"):
        return wrap(CForm.VECTOR, base("int64_t" if str(arg.type.elem) == "int" else "c10::SymInt"))
    return argument_ctype(arg.type, mutable=arg.is_write, flags=_NO_CONTEXT, symint=True)


def _initializer(arg: Argument, bindings: Sequence[Formal]) -> str:
    """api/translate.py with allow_expensive_conversions: the member's value from the
    constructor argument of its name, an ArrayRef copied into its vector."""
    found = next((b for b in bindings if b.name == arg.name), None)
    if found is None:
        raise RuleViolation("view_funcs.argument-order",
                            f"the view's argument {arg.name} is not among its arguments after "
                            "self", "a view op takes self first")
    if _value_ctype(arg).form is CForm.VECTOR:
        return f"{found.name}.vec()"
    return found.name


def _state_item(name: str, type_: SchemaType) -> StateItem:
    if type_.list_type() is not None:
        return StateItem(name, "list")
    return StateItem(name, "optional" if type_.form is TypeForm.OPTIONAL else "single")


def _returns_tensor_list(schema: FunctionSchema) -> bool:
    """gen_view_funcs.py: returns_multi_tensor (a view returns exactly one value)."""
    if len(schema.returns) != 1:
        raise RuleViolation("view_funcs.returns",
                            f"the view {schema.name} returns {len(schema.returns)} values",
                            "a view op returns one Tensor or one Tensor[]")
    only = schema.returns[0].type
    return only.list_type() is not None and only.is_tensor_like()


# ---------------------------------------------------------------------------------------------
# Render and files


def render_view_func(func: ViewFunc, templates: TemplateSet) -> RenderedViewFunc:
    """FUNCTION_DECLARATION and FUNCTION_DEFINITION of one struct."""
    macros = jinja_module(templates, "view_funcs.j2")
    return RenderedViewFunc(func.op_name, ops_header(func.root_name),
                            str(macros.declaration(func)), str(macros.definition(func)))


def view_funcs_files(spec_templates: TemplateSet, rendered: Sequence[RenderedViewFunc],
                     layout: str) -> dict[str, str]:
    """ViewFuncs.h and ViewFuncs.cpp, each with every struct (gen_view_funcs.py:
    gen_view_funcs' one environment for both)."""
    return {name: expand_spec_template(spec_templates, name, {
        "generated_comment": generated_comment(layout, name),
        "view_func_declarations": [r.declaration for r in rendered],
        "view_func_definitions": [r.definition for r in rendered],
        "ops_headers": [r.header for r in rendered],
    }) for name in VIEW_FUNCS_FILES}
