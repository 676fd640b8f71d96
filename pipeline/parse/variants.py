"""The out= and functional variants torchgen adds to native_functions.yaml's functions.

native_function_generation.py: add_generated_native_functions groups functions by
`signature()` and fills a missing out= variant (when `autogen` asks for one) and a missing
functional variant (when an out= variant exists). The new functions come after all YAML
functions, group by group in first-appearance order, out= before functional.
"""

from __future__ import annotations

import string
from dataclasses import dataclass, replace
from typing import Sequence

from gradshard.pipeline.parse.native import COMPOSITE_EXPLICIT, Kernel, NativeFunction
from gradshard.pipeline.problems import Problem, RuleViolation, SpecFile
from gradshard.pipeline.records import Record
from gradshard.pipeline.schema import (TENSOR, Annotation, Argument, BaseOperatorName,
                                       FunctionSchema, OperatorName, Return, SchemaKind,
                                       check_schema_invariants)

__all__ = ["SignatureGroups", "generate_for_members", "generated_functions", "group_by_signature",
           "signature_groups"]

# Out-only groups torchgen tolerates (native_function_generation.py).
OUT_ONLY_ALLOWED = frozenset({"adaptive_avg_pool3d_backward.grad_input",
                              "_slow_conv2d_backward.grad_input"})
MUTABLE_WITHOUT_OUT_ALLOWED = frozenset({"_cummax_helper", "_cummin_helper"})
FUNCTIONAL_WITHOUT_OUT_ALLOWED = frozenset({
    "_assert_async", "_assert_async.msg", "_assert_tensor_metadata", "_cslt_sparse_mm_search",
    "_assert_scalar", "_dimI", "_dimV", "_has_same_storage_numel", "_linalg_check_errors",
    "_local_scalar_dense", "_nested_tensor_from_mask_left_aligned", "_nnz",
    "_use_cudnn_ctc_loss", "_use_cudnn_ctc_loss.Tensor", "_use_miopen_ctc_loss",
    "_use_miopen_ctc_loss.Tensor", "_validate_compressed_sparse_indices", "allclose",
    "dense_dim", "equal", "is_coalesced", "is_pinned", "is_same_size", "is_set_to",
    "q_per_channel_axis", "q_scale", "q_zero_point", "qscheme", "record_stream", "sparse_dim",
    "sym_constrain_range", "sym_constrain_range_for_size", "_nested_tensor_storage_offsets",
    "_chunk_grad_outputs_efficient_attention", "_fused_sdp_choice", "_print", "_sink_tokens",
    "_nested_get_ragged_idx",
})
INPLACE_NOT_GROUPED = frozenset({"polygamma_"})
INHERITED_TAGS = frozenset({"nondeterministic_seeded", "view_copy", "pt2_compliant_tag"})


@dataclass(frozen=True, slots=True)
class SignatureGroup(Record):
    """The functions sharing one `signature()`, at most one per schema kind."""

    signature: str
    members: tuple[NativeFunction, ...]

    def of_kind(self, kind: SchemaKind) -> NativeFunction | None:
        return next((f for f in self.members if f.func.kind() is kind), None)


@dataclass(frozen=True, slots=True)
class SignatureGroups(Record):
    """The groups as positions in the function list, in first-appearance order, and the
    functions left out of them (a second function of one kind in a group)."""

    groups: tuple[tuple[int, ...], ...]
    problems: tuple[Problem, ...] = ()


def signature_groups(functions: Sequence[NativeFunction]) -> SignatureGroups:
    """Functions grouped by signature in first-appearance order (pre_group_native_functions);
    a second function of one kind in a group is a problem and left out."""
    groups: dict[str, list[int]] = {}
    problems = []
    for position, fn in enumerate(functions):
        members = groups.setdefault(str(fn.func.signature()), [])
        clash = next((functions[m] for m in members
                      if functions[m].func.kind() is fn.func.kind()), None)
        if clash is not None:
            problems.append(Problem(
                SpecFile.NATIVE_FUNCTIONS, str(fn.func.name), "native.duplicate-signature",
                f"{fn.func.name} and {clash.func.name} are both {fn.func.kind().value} variants "
                f"of the same signature '{fn.func.signature()}'",
                "two overloads of one kind must differ in their argument types"))
            continue
        members.append(position)
    return SignatureGroups(tuple(tuple(m) for m in groups.values()), tuple(problems))


def group_by_signature(functions: list[NativeFunction]) -> tuple[list[SignatureGroup], list[Problem]]:
    positions = signature_groups(functions)
    return [signature_group(tuple(functions[p] for p in members))
            for members in positions.groups], list(positions.problems)


def signature_group(members: tuple[NativeFunction, ...]) -> SignatureGroup:
    return SignatureGroup(str(members[0].func.signature()), members)


def generated_functions(groups: list[SignatureGroup]) -> tuple[list[NativeFunction], list[Problem]]:
    """The synthesized functions, in torchgen's order, plus any group that breaks the rules."""
    generated: list[NativeFunction] = []
    problems: list[Problem] = []
    for group in groups:
        try:
            generated.extend(generate_for_members(group.members))
        except RuleViolation as violation:
            problems.append(violation.to_problem(SpecFile.NATIVE_FUNCTIONS, ""))
    return generated, problems


def generate_for_members(members: tuple[NativeFunction, ...]) -> tuple[NativeFunction, ...]:
    """The functions one signature group (its members) lacks; a group that breaks the rules
    is blamed on its first member."""
    try:
        return tuple(generate_for_group(signature_group(members)))
    except RuleViolation as violation:
        violation.entry = violation.entry or str(members[0].func.name)
        violation.file = violation.file or SpecFile.NATIVE_FUNCTIONS
        raise


def generate_for_group(group: SignatureGroup) -> list[NativeFunction]:
    """The out= and functional variants one signature group lacks (add_generated_native_functions)."""
    members = group.members
    kinds = {f.func.kind() for f in members}
    if not kinds & {SchemaKind.MUTABLE, SchemaKind.INPLACE, SchemaKind.OUT, SchemaKind.FUNCTIONAL}:
        return []  # e.g. a lone scratch schema: torchgen generates nothing for it
    if _skips_generation(group):
        return []
    out = group.of_kind(SchemaKind.OUT)
    if out is not None and len(members) == 1:
        if str(out.func.name) not in OUT_ONLY_ALLOWED:
            raise RuleViolation("native.lonely-out",
                                f"out= function {out.func.name} has no functional variant",
                                "add the functional (and in-place) variant next to it")
        return []
    inplace = group.of_kind(SchemaKind.INPLACE)
    if inplace is not None and str(inplace.func.name) in INPLACE_NOT_GROUPED:
        return []
    source = (group.of_kind(SchemaKind.MUTABLE) or inplace or out
              or group.of_kind(SchemaKind.FUNCTIONAL))
    valid = (source.func.kind() is SchemaKind.INPLACE
             or any(r.type.is_tensor_like() for r in source.func.returns))
    wants_out = any("out" in str(name) for name in source.autogen)
    make_out = out is None and valid and wants_out
    if out is None and not valid and str(source.func.name) not in (
            MUTABLE_WITHOUT_OUT_ALLOWED | FUNCTIONAL_WITHOUT_OUT_ALLOWED):
        raise RuleViolation("native.no-out-variant",
                            f"cannot generate an out= variant for {source.func}: it has no "
                            "tensor-like return", "add an out= variant, or return a tensor")
    new = []
    if make_out:
        new.append(_generated(source, _out_schema(source.func)))
    if SchemaKind.FUNCTIONAL not in kinds and (out is not None or make_out):
        new.append(_generated(source, _functional_schema(source.func)))
    return new


def _skips_generation(group: SignatureGroup) -> bool:
    members = group.members
    all_manual = all(f.manual_cpp_binding for f in members)
    has_view = any(f.is_view_op and str(f.func.name.name) != "set_" for f in members)
    all_implicit = all(f.has_composite_implicit_autograd_kernel for f in members)
    is_core = any("core" in f.tags for f in members)
    return all_manual or has_view or (all_implicit and not is_core)


def _out_overload(overload: str) -> str:
    return f"{overload}_out" if overload else "out"


def _out_schema(func: FunctionSchema) -> FunctionSchema:
    kind = func.kind()
    if kind is SchemaKind.INPLACE:
        # native_function_generation.py: self_to_out_signature
        me = func.arguments.self_arg
        arguments = replace(func.arguments, self_arg=replace(me, annotation=None),
                            out=(Argument("out", me.type, None, me.annotation),))
        name = func.name.without_inplace().with_overload(_out_overload(func.name.overload))
        return FunctionSchema(name, arguments, func.returns)
    returns, outs = _out_arguments(func)
    if kind is SchemaKind.MUTABLE:
        # native_function_generation.py: mutable_to_out_signature
        name = func.name.without_inplace().with_overload(_out_overload(func.name.overload))
        return FunctionSchema(name, replace(func.arguments, out=outs), returns)
    # native_function_generation.py: functional_to_out_signature
    name = func.name.with_overload(_out_overload(func.name.overload))
    return FunctionSchema(name, replace(func.arguments.signature(), out=outs), returns)


def _out_arguments(func: FunctionSchema) -> tuple[tuple[Return, ...], tuple[Argument, ...]]:
    """One out argument per tensor-like return (generate_out_args_from_schema)."""
    if any(r.is_write for r in func.returns):
        raise RuleViolation("native.no-out-variant",
                            f"cannot generate an out= variant of {func}: it returns a mutated "
                            "argument", "return new values only, or write the out= variant")
    if not any(r.type.is_tensor_like() for r in func.returns):
        raise RuleViolation("native.no-out-variant",
                            f"cannot generate an out= variant of {func}: no tensor-like return",
                            "add an out= variant by hand, or remove it from autogen")
    used = {alias for a in func.arguments.all if a.annotation for alias in a.annotation.alias_set}
    letters = [c for c in string.ascii_lowercase if c not in used]
    plain_tensors = all(r.type == TENSOR for r in func.returns)
    returns: list[Return] = []
    outs: list[Argument] = []
    for i, r in enumerate(func.returns):
        if not r.type.is_tensor_like():
            returns.append(r)
            continue
        out = Argument("out" if len(func.returns) == 1 else f"out{i}", r.type, None,
                       Annotation((letters[i],), is_write=True))
        outs.append(out)
        if plain_tensors:
            returns.append(Return(out.type, None, out.annotation))
    return tuple(returns), tuple(outs)


def _functional_schema(func: FunctionSchema) -> FunctionSchema:
    name = OperatorName(BaseOperatorName(func.name.name.base, dunder=func.name.name.dunder,
                                         functional_overload=func.kind() is SchemaKind.MUTABLE),
                        func.name.overload)
    return func.signature(keep_return_names=True).with_name(name)


def _generated(source: NativeFunction, func: FunctionSchema) -> NativeFunction:
    """A synthesized function (native_function_generation.py: generate_function)."""
    check_schema_invariants(func)
    if func.kind() is SchemaKind.OUT:
        kernel = (f"{func.name.name}_{func.name.overload}" if func.name.overload
                  else str(func.name.name))
    else:
        kernel = str(func.name.name)
    if source.func.has_symint():
        kernel += "_symint"
    tags = {"generated"} | (set(source.tags) & INHERITED_TAGS)
    if func.is_out_fn():
        tags.add("out")
    if func.name.name.inplace:
        tags.add("inplace")
    return NativeFunction(
        func=func, namespace=source.namespace, variants=("function",), tags=tuple(sorted(tags)),
        dispatch=(Kernel(COMPOSITE_EXPLICIT, kernel),), is_abstract=source.is_abstract,
        use_const_ref_for_mutable_tensors=source.use_const_ref_for_mutable_tensors,
        device_guard=False, device_check="NoCheck", generated_from=source.func.name)
