"""ADInplaceOrViewType: the kernels that bump the version counter of what an op modifies
and make a view op's output a view of its base (PA/gen_inplace_or_view_type.py).

The items are the functions with derived kernels (as VariableType's), in C++-name order;
`inplace_or_view_kernels` gives one function's kernel, or none: an op gets one when it is a
view (VIEW_FUNCTIONS / RETURNS_VIEWS_OF_INPUT by base name) or modifies its arguments and
returns something. A view's outputs come from its Default info (`differentiable_outputs`), so
a view's `output_differentiability` or `grad` use in derivatives.yaml reaches these files.
`templates/codegen/inplace_or_view.j2` prints a kernel; the files shard by root name, two of them and
Everything (write_sharded), from the spec's ADInplaceOrViewType.cpp.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Sequence

from gradshard.pipeline.cpp import return_names, return_value_form, returns_type, tie_return_values
from gradshard.pipeline.match.match_infos import FunctionMatch
from gradshard.pipeline.parse.derivatives import DEFAULT_KEY
from gradshard.pipeline.parse.differentiability import (DifferentiabilityInfo, KeyedInfo,
                                                        formula_violation)
from gradshard.pipeline.parse.native import NativeFunction
from gradshard.pipeline.problems import RuleViolation
from gradshard.pipeline.records import Record
from gradshard.pipeline.releases import Release
from gradshard.pipeline.render.kernel_lists import VIEW_FUNCTIONS_WITH_METADATA_CHANGE, view_info
from gradshard.pipeline.render.templating import (TemplateSet, expand_spec_template,
                                                  generated_comment, jinja_module,
                                                  sharded_positions)
from gradshard.pipeline.render.variable_type import (Formal, differentiable_outputs,
                                                     type_wrapper_name, uses_derived)
from gradshard.pipeline.render.view_funcs import (VIEW_FUNC_NAMESPACE, binding_types,
                                                  modifies_arguments, ops_header, unambiguous_name,
                                                  view_func_name)
from gradshard.pipeline.schema import FunctionSchema, cpp_name

__all__ = ["InplaceOrViewKernel", "RenderedInplaceOrView", "inplace_or_view_file",
           "inplace_or_view_kernels", "inplace_or_view_shards", "render_inplace_or_view",
           "view_side_match"]

NUM_INPLACE_OR_VIEW_SHARDS = 2  # gen_inplace_or_view_type.py: write_sharded(num_shards=2)
TEMPLATE = "ADInplaceOrViewType.cpp"
INVERSES_NAMESPACE = "at::functionalization::FunctionalInverses::"
# emit_view_func: the argument types a view's replay may close over (by value, or as a
# materialized copy)
KNOWN_VIEW_ARGUMENT_TYPES = ("int64_t", "::std::optional<int64_t>", "c10::SymInt",
                             "::std::optional<c10::SymInt>", "bool", "at::IntArrayRef",
                             "c10::SymIntArrayRef", "const at::Tensor &",
                             "const ::std::optional<at::Tensor> &")


# ---------------------------------------------------------------------------------------------
# Records


@dataclass(frozen=True, slots=True)
class Materialized(Record):
    """An argument the reverse view function closes over by a copy: `auto x_vec = x.vec();`
    (an ArrayRef) or `auto x_val = x.value_or(0);` (an int64_t?)."""

    name: str
    how: str  # vec, val


@dataclass(frozen=True, slots=True)
class ViewReplay(Record):
    """How the view is replayed when its base cannot as_strided (emit_view_func): its
    ViewFunc struct and the inverse the functionalization pass provides."""

    metadata_change: bool
    materialized: tuple[Materialized, ...]
    view_func: str
    view_func_args: tuple[str, ...]
    inverse: str
    inverse_args: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class ViewOutput(Record):
    """emit_view_body: how the op's result becomes a view of `base`: not differentiable
    ("none"), one tensor ("tensor") or each tensor of a list ("list")."""

    base: str
    kind: str
    replay: ViewReplay | None = None


@dataclass(frozen=True, slots=True)
class InplaceOrViewKernel(Record):
    """One function's ADInplaceOrView kernel: a redispatch that bumps the versions of what it
    modifies (`view` None), or a view's redispatch and its as_view."""

    op_name: str
    root_name: str
    wrapper: str
    return_type: str
    formals: tuple[Formal, ...]
    unambiguous_name: str
    arguments: tuple[str, ...]  # the redispatch's, after the key set
    view: ViewOutput | None = None
    increments: tuple[str, ...] = ()
    ties: tuple[str, ...] = ()
    return_value: str = ""  # "", single, forward_as_tuple, make_tuple
    return_names: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class RenderedInplaceOrView(Record):
    """One kernel's name (what `affected` reports), include, definition and registration."""

    wrapper: str
    header: str
    definition: str
    registration: str


# ---------------------------------------------------------------------------------------------
# One kernel


def has_inplace_or_view_kernel(schema: FunctionSchema) -> bool:
    """inplace_or_view_method_definition's test: a view, or an op that modifies its
    arguments and returns them (one returning nothing gets no kernel, pytorch#53796)."""
    return view_info(schema.name.name.base) is not None or \
        (modifies_arguments(schema) and bool(schema.returns))


def inplace_or_view_kernels(fn: NativeFunction, match: FunctionMatch | None
                            ) -> tuple[InplaceOrViewKernel, ...]:
    """The function's kernel, or none (gen_inplace_or_view_type_env)."""
    if not uses_derived(fn, match) or not has_inplace_or_view_kernel(fn.func):
        return ()
    schema = fn.func
    view = None if modifies_arguments(schema) else _view_output(fn, match)
    return (InplaceOrViewKernel(
        op_name=str(schema.name), root_name=schema.name.name.base,
        wrapper=type_wrapper_name(schema), return_type=returns_type(schema, fn.cpp_flags),
        formals=binding_types(fn), unambiguous_name=unambiguous_name(schema),
        arguments=tuple(a.name for a in schema.schema_order_arguments()), view=view,
        increments=return_names(schema) if view is None else (),
        ties=tie_return_values(schema) if view is not None else (),
        return_value=return_value_form(schema),
        return_names=return_names(schema)),)


def view_side_match(fn: NativeFunction, match: FunctionMatch) -> FunctionMatch:
    """What ADInplaceOrViewType and ViewFuncs read of a function's match, so that an edit
    they cannot see stops before their group: nothing of a function that gets neither a
    kernel nor a ViewFunc whatever its match (its name alone), a view's whole match (its
    Default info's differentiable outputs: emit_view_body), and of an op that modifies its
    arguments only what decides use_derived (which infos have derivatives: api/autograd.py,
    dispatch_strategy), its formulas, saved values and forward formulas left out."""
    if not has_inplace_or_view_kernel(fn.func):
        return FunctionMatch(match.function)
    if match.infos is None or view_info(fn.func.name.name.base) is not None:
        return match
    kept = tuple(KeyedInfo(k.dispatch_key, _derivative_arguments(k.info))
                 for k in match.infos.infos)
    return FunctionMatch(match.function, replace(match.infos, infos=kept, op_prefixes=()))


def _derivative_arguments(info: DifferentiabilityInfo) -> DifferentiabilityInfo:
    return replace(info, derivatives=(), forward_derivatives=(), all_saved_inputs=(),
                   all_saved_outputs=(), available_named_gradients=(), used_named_gradients=(),
                   output_differentiability=None, output_differentiability_conditions=None)


def _default_info(fn: NativeFunction, match: FunctionMatch | None
                  ) -> DifferentiabilityInfo | None:
    """api/autograd.py: gen_differentiable_outputs reads the Default info of a function
    that has infos (fn.info["Default"])."""
    if match is None or match.infos is None or not match.infos.infos:
        return None
    info = match.infos.info_for(DEFAULT_KEY)
    if info is None:
        raise formula_violation(
            "inplace_or_view.view-without-default",
            f"the view {fn.func.name} has formulas only for "
            f"{', '.join(k.dispatch_key for k in match.infos.infos)}: its ADInplaceOrView "
            "kernel reads the Default ones", "add formulas for the Default key", match.infos, 0)
    return info


def _view_output(fn: NativeFunction, match: FunctionMatch | None) -> ViewOutput:
    """emit_view_body: the view's differentiable outputs decide its as_view."""
    base = view_info(fn.func.name.name.base)
    assert base is not None  # has_inplace_or_view_kernel: a view when it modifies nothing
    info = _default_info(fn, match)
    try:
        outputs = differentiable_outputs(fn.func, info)
    except RuleViolation as violation:
        if match is None or match.infos is None:
            raise
        raise formula_violation(violation.rule, violation.message, violation.hint,
                                match.infos, 0) from None
    if not outputs:
        return ViewOutput(base, "none")
    if len(outputs) > 1:
        raise _blamed(match, "inplace_or_view.multiple-view-outputs",
                      f"the view {fn.func.name} has {len(outputs)} differentiable outputs",
                      "a view op has one differentiable output (mark the others False in "
                      "output_differentiability)")
    only = outputs[0].type
    if not only.is_tensor_like():
        raise _blamed(match, "inplace_or_view.view-output-type",
                      f"the view {fn.func.name}'s differentiable output is {only}",
                      "a view op's differentiable output is a Tensor or a Tensor[]")
    listed = only.list_type() is not None
    return ViewOutput(base, "list" if listed else "tensor", _replay(fn, listed))


def _blamed(match: FunctionMatch | None, rule: str, message: str, hint: str) -> RuleViolation:
    """A view's fault, blamed on the derivatives entry its outputs come from if it has one."""
    if match is None or match.infos is None:
        return RuleViolation(rule, message, hint)
    return formula_violation(rule, message, hint, match.infos, 0)


def _replay(fn: NativeFunction, listed: bool) -> ViewReplay:
    """emit_view_func: the ViewFunc's arguments (the op's but self, plus the output's index
    for a list) and the inverse's (self, the view, the mode, the index, then the op's
    arguments but the first, ArrayRefs and int64_t? materialized)."""
    bindings = binding_types(fn)
    updated: list[str] = []
    materialized: list[Materialized] = []
    for binding in bindings:
        if binding.name == "self":
            updated.append("input_base")
            continue
        if binding.type not in KNOWN_VIEW_ARGUMENT_TYPES:
            raise RuleViolation(
                "inplace_or_view.view-argument-type",
                f"the view {fn.func.name} takes {binding.type} {binding.name}, which its "
                "reverse view function cannot close over",
                f"view ops take only {', '.join(KNOWN_VIEW_ARGUMENT_TYPES)} besides self")
        how = {"at::IntArrayRef": "vec", "c10::SymIntArrayRef": "vec",
               "::std::optional<int64_t>": "val"}.get(binding.type)
        if how is not None:
            materialized.append(Materialized(binding.name, how))
        updated.append(f"{binding.name}_{how}" if how is not None else binding.name)
    index = ("view_idx",) if listed else ()
    return ViewReplay(
        metadata_change=cpp_name(fn.func) in VIEW_FUNCTIONS_WITH_METADATA_CHANGE,
        materialized=tuple(materialized),
        view_func=VIEW_FUNC_NAMESPACE + view_func_name(fn.func),
        view_func_args=tuple(b.name for b in bindings if b.name != "self") + index,
        inverse=f"{INVERSES_NAMESPACE}{unambiguous_name(fn.func)}_inverse",
        # the first argument is taken for self (input_base) wherever self is
        inverse_args=("self", "input_view",
                      "at::functionalization::InverseReturnMode::AlwaysView",
                      *index, *updated[1:]))


# ---------------------------------------------------------------------------------------------
# Render and files


def render_inplace_or_view(kernel: InplaceOrViewKernel, templates: TemplateSet
                           ) -> RenderedInplaceOrView:
    """METHOD_DEFINITION and WRAPPER_REGISTRATION of one kernel."""
    macros = jinja_module(templates, "inplace_or_view.j2")
    return RenderedInplaceOrView(kernel.wrapper, ops_header(kernel.root_name),
                                 str(macros.definition(kernel)), str(macros.registration(kernel)))


def inplace_or_view_shards(root_names: Sequence[str], release: Release) -> dict[str, list[int]]:
    """The items (positions) of each ADInplaceOrViewType file, sharded by root name (two
    files in every release). Items without a kernel add nothing to a file, so the kernels'
    root names shard them alike."""
    return sharded_positions(root_names, NUM_INPLACE_OR_VIEW_SHARDS)


def inplace_or_view_file(spec_templates: TemplateSet, rendered: Sequence[RenderedInplaceOrView],
                         layout: str, shard_id: str) -> str:
    """ADInplaceOrViewType<shard_id>.cpp: its kernels' includes, definitions and registrations
    (gen_inplace_or_view_type's write_sharded)."""
    return expand_spec_template(spec_templates, TEMPLATE, {
        "generated_comment": generated_comment(layout, TEMPLATE),
        "shard_id": shard_id,
        "ops_headers": [r.header for r in rendered],
        "inplace_or_view_method_definitions": [r.definition for r in rendered],
        "inplace_or_view_wrapper_registrations": [r.registration for r in rendered],
    })
