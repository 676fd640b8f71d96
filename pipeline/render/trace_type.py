"""TraceType: each native function's tracer kernel, and the TraceType_0..9 / Everything files.

Every native function but the hand-written ones (MANUAL_TRACER) gets a kernel that records
the call in the JIT trace when it is traceable and redispatches below the tracer
(PA/gen_trace_type.py). `trace_kernel` turns one function into a `TraceKernel` holding the
decisions (names, inputs, outputs, call); `templates/codegen/trace_type.j2` prints it; the spec's
TraceType.cpp is filled per shard, by root name, in native_functions.yaml order with the
generated functions last (gen_trace_type: write_sharded over the unsorted native functions).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from gradshard.pipeline.cpp import return_names, return_value_form, returns_type, tie_return_values
from gradshard.pipeline.parse.native import NativeFunction
from gradshard.pipeline.records import Record
from gradshard.pipeline.releases import Release
from gradshard.pipeline.render.code_template import BlockLines, block_lines
from gradshard.pipeline.render.kernel_lists import (DONT_RECORD_TRACE, MANUAL_TRACER, RENAME_TRACE,
                                                    RENAME_TRACE_ADD_ARGS)
from gradshard.pipeline.render.templating import (TemplateSet, expand_spec_template,
                                                  generated_comment, jinja_module,
                                                  sharded_positions)
from gradshard.pipeline.render.variable_type import Formal, type_wrapper_name
from gradshard.pipeline.render.view_funcs import binding_types, unambiguous_name
from gradshard.pipeline.schema import FunctionSchema, SchemaKind, cpp_name

__all__ = ["RenderedTrace", "TraceKernel", "is_trace_item", "render_trace", "trace_kernel",
           "trace_shards", "trace_type_file"]

UNTRACEABLE_ARGUMENT_TYPES = ("Storage", "Type")  # gen_trace_type.py: should_trace


@dataclass(frozen=True, slots=True)
class TraceKernel(Record):
    """One function's tracer kernel.

    `op_names` is the op the trace records: one name, or (out-of-place, in-place) for an op
    whose trace depends on `force_outplace`. `out_inputs` are the out= arguments the trace
    records when not forced out of place (`out_fn` says the function has any);
    `outplace_outputs` the outputs recorded when forced, when they differ from `outputs`."""

    op_name: str
    wrapper: str
    root_name: str
    return_type: str
    formals: tuple[Formal, ...]
    unambiguous_name: str
    traced: bool = False
    op_names: tuple[str, ...] = ()
    inputs: tuple[str, ...] = ()
    out_fn: bool = False
    out_inputs: tuple[str, ...] = ()
    factory: bool = False
    adds_options: bool = False
    guarded: str = ""  # the name ensureUniqueIfOutOfPlaced reports ("" for none)
    guarded_input: str = ""
    outputs: tuple[str, ...] = ()
    outplace_outputs: tuple[str, ...] = ()
    ties: tuple[str, ...] = ()
    return_value: str = ""  # "", single, forward_as_tuple, make_tuple (as VariableKernel's)
    return_names: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class RenderedTrace(Record):
    """One kernel's pieces of a TraceType file, and its name (what `affected` reports)."""

    wrapper: str
    ops_header: str
    definition: str  # its lines, right-stripped, each followed by "\n" (code_template.block_lines)
    registration: str


# ---------------------------------------------------------------------------------------------
# Which functions, and what each kernel holds


def is_trace_item(fn: NativeFunction) -> bool:
    """gen_trace_type: every function but the hand-written ones, by C++ name."""
    return cpp_name(fn.func) not in MANUAL_TRACER


def trace_kernel(fn: NativeFunction) -> TraceKernel:
    """gen_trace_type_func: the kernel's signature, call and (if traceable) trace records."""
    if not is_trace_item(fn):
        raise ValueError(f"{fn.func.name} has a hand-written tracer kernel (MANUAL_TRACER)")
    func = fn.func
    fields: dict = dict(
        op_name=str(func.name), wrapper=type_wrapper_name(func), root_name=func.name.name.base,
        return_type=returns_type(func, fn.cpp_flags), formals=binding_types(fn),
        unambiguous_name=unambiguous_name(func), ties=_ties(func),
        return_value=return_value_form(func), return_names=return_names(func))
    if should_trace(func):
        fields.update(_trace_fields(fn))
    return TraceKernel(**fields)


def should_trace(func: FunctionSchema) -> bool:
    """gen_trace_type.py: should_trace — no Storage/Type argument, a tensor return, and not
    one of the ops traced through what they are made of."""
    if any(str(a.type) in UNTRACEABLE_ARGUMENT_TYPES for a in func.schema_order_arguments()):
        return False
    if not any(r.type.is_tensor_like() for r in func.returns):
        return False
    return func.name.name.base not in DONT_RECORD_TRACE


def _trace_fields(fn: NativeFunction) -> dict:
    """format_prerecord_trace and format_postrecord_trace's decisions."""
    func = fn.func
    arguments = func.arguments
    # in-place and out= ops (dunders aside) are traced as either form (old codegen's rule)
    inplace_like = func.kind() in (SchemaKind.INPLACE, SchemaKind.OUT) and \
        not func.name.name.dunder
    outputs = return_names(func)
    outplace_outputs = tuple(a.name for a in arguments.out) if func.is_out_fn() else outputs
    return dict(
        traced=True, op_names=_trace_op_names(func),
        inputs=tuple(a.name for a in arguments.non_out), out_fn=func.is_out_fn(),
        out_inputs=tuple(a.name for a in arguments.out),
        factory=func.is_out_fn() and _is_factory(fn),
        adds_options=inplace_like and func.name.name.base in RENAME_TRACE_ADD_ARGS,
        guarded=cpp_name(func) if inplace_like else "",
        guarded_input=(arguments.out[0].name if arguments.out else "self") if inplace_like
        else "",
        outputs=outputs, outplace_outputs=outplace_outputs if outplace_outputs != outputs else ())


def _trace_op_names(func: FunctionSchema) -> tuple[str, ...]:
    """format_trace_op_name: functional, out= and dunder ops record their name (an out= op
    the name it shares with its in-place form); the others both forms, renamed alike."""
    name = func.name.name
    if func.kind() in (SchemaKind.FUNCTIONAL, SchemaKind.OUT) or name.dunder:
        return (_renamed(str(name)),)
    return (_renamed(name.base), _renamed(cpp_name(func)))


def _renamed(name: str) -> str:
    return RENAME_TRACE.get(name, name)


def _is_factory(fn: NativeFunction) -> bool:
    """format_trace_inputs' is_factory_method: an out= op recording its out's options when
    traced out of place; every `normal` is one (the old codegen decided per base name)."""
    func = fn.func
    tensor_return = any(r.type.is_tensor_like() for r in func.returns)
    return fn.category_override == "factory" or (tensor_return and
                                                 not func.arguments.has_tensor_arg()) \
        or func.name.name.base == "normal"


def _ties(func: FunctionSchema) -> tuple[str, ...]:
    """emit_trace_body's assign_return_values: functional and mutable ops tie their returns
    (tie_return_values)."""
    if func.kind() not in (SchemaKind.FUNCTIONAL, SchemaKind.MUTABLE) or not func.returns:
        return ()
    return tie_return_values(func)


# ---------------------------------------------------------------------------------------------
# Text


def render_trace(kernel: TraceKernel, templates: TemplateSet) -> RenderedTrace:
    """gen_trace_type_func: the ops header, METHOD_DEFINITION and WRAPPER_REGISTRATION."""
    macros = jinja_module(templates, "trace_type.j2")
    return RenderedTrace(kernel.wrapper, str(macros.ops_header(kernel)),
                         block_lines(str(macros.definition(kernel))),
                         str(macros.registration(kernel)))


def trace_type_file(spec_templates: TemplateSet, rendered: Sequence[RenderedTrace], layout: str,
                    shard_id: str) -> str:
    """One of TraceType_0..9.cpp or TraceTypeEverything.cpp from the spec's TraceType.cpp
    (FileManager.write_sharded); an ops header per kernel, duplicates kept."""
    return expand_spec_template(spec_templates, "TraceType.cpp", {
        "generated_comment": generated_comment(layout, "TraceType.cpp"),
        "shard_id": shard_id,
        "ops_headers": [r.ops_header for r in rendered],
        # each definition is in block form (render_trace): a file of 3000 is joined as is
        "trace_method_definitions": [BlockLines(r.definition) for r in rendered],
        "trace_wrapper_registrations": [r.registration for r in rendered]})


def trace_shards(root_names: Sequence[str], release: Release) -> dict[str, list[int]]:
    """The kernels (positions) of each TraceType file, sharded by root name, in as many
    files as the release writes."""
    return sharded_positions(root_names, release.trace_type_shards)
