"""VariableType: each native function's autograd kernels, as records the templates print.

A function gets kernels when it uses derived dispatch (it is abstract, or one of its infos
has derivatives) and is not written by hand (PA/gen_inplace_or_view_type.py: use_derived).
`variable_kernels` turns one function and its match into a `VariableKernel` per dispatch key
of its infos (or one Default kernel, or one fallback registration), following
PA/gen_variable_type.py: gen_variable_type_func and emit_body. Every C++ spelling is in
`templates/codegen/variable_type.j2`; this module decides what each kernel holds and checks the
rules PyTorch's build enforces while it generates them (§2.10 of the behaviour notes).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Sequence

from gradshard.pipeline.cpp import (CppFlags, argument_ctype, return_ctype, return_names,
                                    return_value_form, returns_type, tie_return_values)
from gradshard.pipeline.match.match_infos import FunctionMatch
from gradshard.pipeline.parse.derivatives import DEFAULT_KEY
from gradshard.pipeline.parse.differentiability import (Derivative, DifferentiabilityInfo,
                                                        EntryInfos, ForwardDerivative,
                                                        SavedAttribute, formula_violation,
                                                        uses_ident)
from gradshard.pipeline.parse.native import NativeFunction
from gradshard.pipeline.problems import RuleViolation
from gradshard.pipeline.records import Record
from gradshard.pipeline.releases import Release
from gradshard.pipeline.render.kernel_lists import (ALL_VIEW_FUNCTIONS,
                                                    DONT_ENFORCE_SAME_TENSOR_IMPL_OR_STORAGE,
                                                    DONT_ENFORCE_STORAGE_IMPL_USE_COUNT,
                                                    DONT_ENFORCE_TENSOR_IMPL_USE_COUNT,
                                                    DONT_REQUIRE_DERIVATIVE,
                                                    FOREACH_WITH_DIFFERENT_ARITY,
                                                    FOREACH_WITHOUT_INFO,
                                                    GRADIENT_IMPLEMENTED_FOR_COMPLEX,
                                                    MANUAL_AUTOGRAD, RESET_GRAD_ACCUMULATOR,
                                                    view_info)
from gradshard.pipeline.schema import (Argument, FunctionSchema, SchemaKind, SchemaType, TypeForm,
                                       cpp_name)

__all__ = ["Formal", "ForwardFormula", "TangentInput", "VariableKernel", "differentiable_outputs",
           "type_wrapper_name", "uses_derived", "variable_kernels"]

TENSOR_LIST_LIKE = ("at::TensorList", "const c10::List<::std::optional<at::Tensor>> &",
                    "const at::ITensorListRef &")


# ---------------------------------------------------------------------------------------------
# Records


@dataclass(frozen=True, slots=True)
class Formal(Record):
    type: str
    name: str


@dataclass(frozen=True, slots=True)
class Binding(Record):
    """A kernel parameter and the value the call passes: `x_` when unpacked, `x` otherwise;
    `checks` says which NDEBUG storage/impl checks it gets ("" none, "tensor", "list",
    "optional_list")."""

    name: str
    value: str
    position: int
    unpacked: bool
    by_ref: bool
    checks: str


@dataclass(frozen=True, slots=True)
class Tangent(Record):
    """A differentiable input in a forward-grad test: `isFwGradDefined(name)`, the list form,
    or the element form `isFwGradDefined(name[i])`."""

    name: str
    is_list: bool = False
    element: bool = False


@dataclass(frozen=True, slots=True)
class ForwardFlag(Record):
    """`_any_has_forward_grad_<outputs>`: one bool, or a vector per list element (foreach)."""

    name: str
    tangents: tuple[Tangent, ...]
    condition: str | None = None  # output_differentiability's
    per_element: bool = False
    size_checks: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class SavedValue(Record):
    """`grad_fn-><member> = <how>(<value>)`, under `guard` when it has one; `original` names
    the optional that holds self before an in-place call (saved instead of self)."""

    member: str
    how: str  # variable, inplace_result, list, vec, string, optional_string, expr
    value: str
    flag: bool = False
    guard: str | None = None
    original: str | None = None
    original_of: str | None = None


@dataclass(frozen=True, slots=True)
class NdebugCheck(Record):
    kind: str  # tensor, list, optional_list, alias, storage_use_count, impl_use_count
    name: str
    other: str = ""


@dataclass(frozen=True, slots=True)
class TangentInput(Record):
    """What a forward formula unpacks for one input: its tangent (with zeros of which kind)
    and/or its primal; `source` is the C++ value (`x`, `x[i]`, `original_selfs[i]`)."""

    name: str
    source: str
    tangent: bool
    primal: bool
    zeros: str  # zeros_symint or _efficientzerotensor_symint
    wraps_number: bool


@dataclass(frozen=True, slots=True)
class ForwardSetter(Record):
    kind: str  # tensor, foreach, multi, list
    output: str
    index: int = 0
    group: str = ""
    inplace: bool = False


@dataclass(frozen=True, slots=True)
class ForwardFormula(Record):
    outputs: str  # the outputs' names joined by `_`
    grad_type: str  # tensor, tuple, vector
    arity: int
    condition: str
    inputs: tuple[TangentInput, ...]
    clone_self_tangent: bool
    formula: str
    per_element: bool = False
    element_condition: str = ""


@dataclass(frozen=True, slots=True)
class GradFnSetup(Record):
    """How the kernel makes its node(s): one `grad_fn`, a vector of them (in-place foreach),
    or, for out= functions, none (both sides must not require grad)."""

    op: str
    ctor: str
    next_edges: tuple[str, ...]
    check_no_requires_grad: tuple[str, ...] = ()
    saved: tuple[SavedValue, ...] = ()
    list_sizes: tuple[str, ...] = ()
    per_element: bool = False
    element_requires_grad: tuple[str, ...] = ()
    out_inputs: tuple[str, ...] = ()
    out_outputs: tuple[str, ...] = ()
    out_function: bool = False


@dataclass(frozen=True, slots=True)
class VariableKernel(Record):
    """One function's kernel for one dispatch key (or its fallback registration)."""

    op_name: str
    wrapper: str
    key: str
    entry: str = ""  # the derivatives entry its infos come from (its label), if any
    fallback: bool = False
    return_type: str = ""
    formals: tuple[Formal, ...] = ()
    bindings: tuple[Binding, ...] = ()
    requires_derivative: bool = False
    requires_grad_args: tuple[str, ...] = ()
    requires_grad_condition: str | None = None
    forward_flags: tuple[ForwardFlag, ...] = ()
    check_inplace: tuple[str, ...] = ()
    inplace: bool = False
    per_element: bool = False
    original_self_flags: tuple[str, ...] = ()
    setup: GradFnSetup | None = None
    api_name: str = ""
    below_autograd: bool = False
    call_shape: str = ""  # value, jvp, statement
    jvp_tangents: tuple[Tangent, ...] = ()
    jvp_return_type: str = ""
    jvp_args: tuple[str, ...] = ()
    cpp_name: str = ""
    overload: str = ""
    ties: tuple[str, ...] = ()
    tie_types: tuple[str, ...] = ()  # the ties' C++ types (pipeline/render/forward_outline.py)
    moves_result: bool = False
    ndebug_before: tuple[NdebugCheck, ...] = ()
    ndebug_after: tuple[NdebugCheck, ...] = ()
    history: str = ""  # set, rebase
    history_outputs: tuple[str, ...] = ()
    complex_checks: tuple[str, ...] = ()
    base_name: str = ""
    forbid_forward: str = ""  # out, not_implemented
    forbid_tangents: tuple[Tangent, ...] = ()
    forward_formulas: tuple[ForwardFormula, ...] = ()
    forward_setters: tuple[ForwardSetter, ...] = ()
    saved_outputs: tuple[SavedValue, ...] = ()
    resets_grad_accumulator: bool = False
    return_value: str = ""
    return_names: tuple[str, ...] = ()
    # the release's node pointer (Release.shared_ptr_nodes) and creation hooks (2.14)
    shared_ptr_nodes: bool = False
    creation_hooks: bool = False


# ---------------------------------------------------------------------------------------------
# Which functions get kernels


def type_wrapper_name(schema: FunctionSchema, key: str = DEFAULT_KEY) -> str:
    """gen_trace_type.py: type_wrapper_name."""
    name = cpp_name(schema)
    if schema.name.overload:
        name += "_" + schema.name.overload
    return name if key == DEFAULT_KEY else f"{name}_{key}"


def has_derivatives(match: FunctionMatch | None) -> bool:
    return match is not None and match.infos is not None and \
        any(k.info.has_derivatives for k in match.infos.infos)


def uses_derived(fn: NativeFunction, match: FunctionMatch | None) -> bool:
    """gen_inplace_or_view_type.py: use_derived (api/autograd.py: dispatch_strategy)."""
    return cpp_name(fn.func) not in MANUAL_AUTOGRAD and (fn.is_abstract or has_derivatives(match))


def variable_kernels(fn: NativeFunction, match: FunctionMatch | None, release: Release
                     ) -> tuple[VariableKernel, ...]:
    """The function's kernels, one per key of its infos (gen_variable_type_func), after the
    build's checks of the function; none when it does not use derived dispatch."""
    if not uses_derived(fn, match):
        return ()
    _check_function(fn, match)
    infos = match.infos if match is not None and match.infos is not None and match.infos.infos \
        else None
    if infos is None:
        if _takes_fallback(fn):
            return (VariableKernel(str(fn.func.name), type_wrapper_name(fn.func), DEFAULT_KEY,
                                   fallback=True),)
        return (_KernelBuilder(fn, None, (), DEFAULT_KEY, release).kernel(),)
    assert match is not None
    forwards = {k.dispatch_key: k.forward_derivatives for k in match.forwards}
    return tuple(_KernelBuilder(fn, infos, forwards.get(k.dispatch_key, ()), k.dispatch_key,
                                release).kernel() for k in infos.infos)


def _check_function(fn: NativeFunction, match: FunctionMatch | None) -> None:
    """gen_variable_type_func's checks, for a function that gets kernels (so not one of
    the hand-written ones)."""
    if fn.manual_kernel_registration:
        raise RuleViolation(
            "variable_type.manual-kernel-registration",
            f"{fn.func.name} has manual_kernel_registration: True, but it is not a kernel "
            "written by hand",
            "only options, data, set_data, is_leaf, output_nr, _version, retain_grad, _backward "
            "and requires_grad_ have manual_kernel_registration: True "
            "(gen_variable_type.py: MANUAL_BACKEND)")
    if has_derivatives(match) and not fn.is_abstract:
        violation = RuleViolation(
            "variable_type.formula-needs-dispatch",
            f"there is a formula for {cpp_name(fn.func)} (or its functional variant) in derivatives.yaml, "
            "but it has no dispatch section",
            "add a dispatch section with explicit backends (CPU/CUDA) or "
            "CompositeExplicitAutograd to its native_functions.yaml entry")
        raise _blamed(violation, match)


def _blamed(violation: RuleViolation, match: FunctionMatch | None, line: int = 0) -> RuleViolation:
    """A violation blamed on the derivatives entry the function's infos come from."""
    if match is None or match.infos is None:
        return violation
    return formula_violation(violation.rule, violation.message, violation.hint, match.infos,
                             line)


def _takes_fallback(fn: NativeFunction) -> bool:
    """Registration of the boxed NotImplemented kernel only (gen_variable_type_func's first
    branch): no info, and none of the lists that keep a generated kernel."""
    wrapper = type_wrapper_name(fn.func)
    return (str(fn.func.name.name) not in RESET_GRAD_ACCUMULATOR
            and fn.func.name.name.base not in DONT_REQUIRE_DERIVATIVE
            and bool(_tensor_outputs(fn.func))
            and cpp_name(fn.func) not in DONT_ENFORCE_SAME_TENSOR_IMPL_OR_STORAGE
            and wrapper not in DONT_ENFORCE_STORAGE_IMPL_USE_COUNT
            and wrapper not in DONT_ENFORCE_TENSOR_IMPL_USE_COUNT)


# ---------------------------------------------------------------------------------------------
# Inputs and outputs


@dataclass(frozen=True, slots=True)
class _Input:
    name: str
    type: SchemaType

    @property
    def is_list(self) -> bool:
        return self.type.is_tensor_like() and self.type.list_type() is not None


@dataclass(frozen=True, slots=True)
class _Output:
    name: str
    type: SchemaType
    cpp_type: str


def _tensor_outputs(schema: FunctionSchema) -> list[_Output]:
    return [o for o in _outputs(schema) if o.type.is_tensor_like()]


def _outputs(schema: FunctionSchema) -> list[_Output]:
    flags = CppFlags()
    return [_Output(n, r.type, str(return_ctype(r, flags)))
            for n, r in zip(return_names(schema), schema.returns)]


def differentiable_outputs(schema: FunctionSchema, info: DifferentiabilityInfo | None
                           ) -> list[_Output]:
    """api/autograd.py: gen_differentiable_outputs."""
    outputs = _outputs(schema)
    wanted = info.output_differentiability if info is not None else None
    if wanted is not None:
        if len(wanted) != len(outputs):
            raise RuleViolation(
                "variable_type.output-differentiability-length",
                f"output_differentiability has {len(wanted)} entries, but {schema.name} has "
                f"{len(outputs)} outputs",
                "give one True/False per output of the function")
        if False in wanted and schema.kind() is SchemaKind.INPLACE:
            raise RuleViolation(
                "variable_type.inplace-not-differentiable",
                f"output_differentiability is False for the in-place {schema.name} "
                "(its version counter would not be updated)",
                "in-place functions keep their output differentiable")
        return [o for o, keep in zip(outputs, wanted) if keep]
    candidates = [o for o in outputs if o.type.is_tensor_like()
                  and (info is None or o.name not in info.non_differentiable_arg_names)]
    if info is not None and any(uses_ident(d.formula, "grad") for d in info.derivatives):
        return candidates[:1]
    return candidates


# ---------------------------------------------------------------------------------------------
# One kernel


class _KernelBuilder:
    """emit_body for one function and key: the decisions, in the order they are printed."""

    def __init__(self, fn: NativeFunction, infos: EntryInfos | None,
                 forwards: Sequence[ForwardDerivative], key: str, release: Release) -> None:
        self.fn, self.func, self.key, self.release = fn, fn.func, key, release
        self.entry = infos
        self.info = infos.info_for(key) if infos is not None else None
        self.forwards = tuple(forwards)
        self.name = cpp_name(fn.func)
        self.kind = fn.func.kind()
        self.inplace = self.kind is SchemaKind.INPLACE
        self.out_fn = self.kind is SchemaKind.OUT
        self.base = fn.func.name.name.base
        self.foreach = self.name.startswith("_foreach")
        self.inplace_foreach = self.foreach and self.inplace
        self.to_ref: dict[str, Argument] = {}    # foreach argument name → reference argument
        self.from_ref: dict[str, Argument] = {}  # reference argument name → foreach argument
        if self.inplace_foreach:
            self._map_foreach_arguments()

    # -- violations are blamed on the entry the infos come from

    def _violation(self, rule: str, message: str, hint: str, line: int = 0) -> RuleViolation:
        if self.entry is None:
            return RuleViolation(rule, message, hint)
        return formula_violation(rule, message, hint, self.entry, line)

    def _map_foreach_arguments(self) -> None:
        """emit_body's inplace_foreacharg2refarg: the reference's arguments by position."""
        pair = (self.base, self.func.name.overload)
        if self.info is None:
            if pair not in FOREACH_WITHOUT_INFO:
                raise RuleViolation(
                    "variable_type.foreach-without-info",
                    f"the in-place foreach op {self.func.name} has no derivative formulas "
                    "and no reference op to borrow them from",
                    "add a derivatives.yaml entry for it or for its per-tensor reference op")
            return
        mine, theirs = self.func.arguments.non_out, self.info.func.func.arguments.non_out
        if len(mine) != len(theirs) and pair not in FOREACH_WITH_DIFFERENT_ARITY:
            raise self._violation(
                "variable_type.foreach-arity",
                f"{self.func.name} has {len(mine)} arguments but its reference "
                f"{self.info.func.func.name} has {len(theirs)}",
                "an in-place foreach op takes its reference's arguments, lists for tensors")
        for arg, ref in zip(mine, theirs):
            element = arg.type.elem if arg.type.form is TypeForm.LIST else arg.type
            if element != ref.type:
                raise self._violation(
                    "variable_type.foreach-argument-type",
                    f"argument {arg.name} of {self.func.name} is {arg.type}, but "
                    f"{ref.name} of its reference {self.info.func.func.name} is {ref.type}",
                    "each foreach argument is a list of (or the same type as) the reference's")
            self.to_ref[arg.name] = ref
            self.from_ref[ref.name] = arg

    # -- the pieces

    def differentiable_inputs(self) -> list[_Input]:
        found = []
        for arg in self.func.arguments.non_out:
            name, type_ = arg.name, arg.type
            if arg.name in self.to_ref:
                name, type_ = self.to_ref[arg.name].name, self.to_ref[arg.name].type
            if type_.is_tensor_like() and (self.info is None
                                           or name not in self.info.non_differentiable_arg_names):
                found.append(_Input(name, type_))
        return found

    def args_with_derivatives(self, inputs: list[_Input]) -> list[_Input]:
        if self.info is None or not self.info.has_derivatives:
            return inputs
        names = {n for d in self.info.derivatives for n in d.var_names}
        found = [i for i in inputs if i.name in names]
        if len(found) != len(names):
            missing = sorted(names - {i.name for i in found})
            line = next((d.line_in_entry for d in self.info.derivatives
                         if set(d.var_names) & set(missing)), 0)
            raise self._violation(
                "variable_type.missing-arguments",
                f"Missing arguments for derivatives: {', '.join(missing)} in {self.info.name} "
                "(a formula is given for an argument that is not a differentiable input)",
                "formulas may only be given for Tensor arguments that are differentiable",
                line)
        return found

    def kernel(self) -> VariableKernel:
        inputs = self.differentiable_inputs()
        with_derivatives = self.args_with_derivatives(inputs)
        try:
            outputs = differentiable_outputs(self.func, self.info)
        except RuleViolation as violation:
            raise self._violation(violation.rule, violation.message, violation.hint) from None
        undifferentiable = self.base in DONT_REQUIRE_DERIVATIVE or self.name in DONT_REQUIRE_DERIVATIVE
        requires = not undifferentiable and bool(inputs) and (bool(outputs) or self.inplace_foreach)
        self._check_requires(requires, outputs)
        modifies = self.kind in (SchemaKind.INPLACE, SchemaKind.OUT)
        returns_void = not self.func.returns
        jvp = requires and not self.forwards and not modifies and not returns_void
        bindings = self.bindings()
        fields: dict = dict(
            op_name=str(self.func.name), wrapper=type_wrapper_name(self.func, self.key),
            key=self.key, entry=self.entry.entry_label if self.entry is not None else "",
            return_type=returns_type(self.func, self.fn.cpp_flags),
            formals=self.formals(), bindings=bindings, requires_derivative=requires,
            inplace=self.inplace, per_element=self.inplace_foreach,
            api_name=_api_name(self.func), cpp_name=self.name,
            overload=self.func.name.overload, base_name=self.base,
            below_autograd=view_info(self.base) is not None or modifies,
            return_names=return_names(self.func),
            shared_ptr_nodes=self.release.shared_ptr_nodes,
            creation_hooks=requires and self.release.node_creation_hooks)
        if requires:
            fields.update(self.derivative_fields(inputs, with_derivatives, outputs))
        fields.update(self.call_fields(modifies, returns_void, jvp, inputs, requires))
        fields.update(self.ndebug_fields(bindings))
        if requires:
            fields.update(history=self.history(modifies), history_outputs=tuple(
                o.name for o in outputs) if not self.inplace_foreach else ("self",),
                complex_checks=self.complex_checks(outputs))
        fields.update(self.after_call_fields(requires, jvp, inputs, outputs))
        if not returns_void:
            fields.update(return_value=return_value_form(self.func))
        return VariableKernel(**fields)

    def after_call_fields(self, requires: bool, jvp: bool, inputs: list[_Input],
                          outputs: list[_Output]) -> dict:
        """Forward AD (formulas, or the check that forbids it), saved outputs and the grad
        accumulator's reset: what the kernel does after the call besides the history."""
        fields: dict = {}
        if self.out_fn:
            fields.update(forbid_forward="out", forbid_tangents=self.all_tangents())
        elif requires and not jvp:
            if self.forwards:
                fields.update(self.forward_fields(inputs, outputs))
            else:
                fields.update(forbid_forward="not_implemented",
                              forbid_tangents=self.all_tangents())
        if requires and not self.out_fn and self.info is not None and self.info.has_derivatives:
            fields.update(saved_outputs=self.saved_values(self.info.all_saved_outputs, True,
                                                          None))
        if str(self.func.name.name) in RESET_GRAD_ACCUMULATOR:
            if not self.inplace:
                raise RuleViolation(
                    "variable_type.reset-grad-accumulator",
                    f"{self.func.name.name} resets the grad accumulator but is not in-place",
                    "only in-place functions (set_, resize_) may reset it")
            fields.update(resets_grad_accumulator=True)
        return fields

    def _check_requires(self, requires: bool, outputs: list[_Output]) -> None:
        if self.info is not None and self.info.has_derivatives and not requires \
                and self.func.returns:
            raise self._violation(
                "variable_type.derivative-ignored",
                f"derivative ignored for {self.name}: it has formulas but no differentiable "
                "input or output",
                "remove the formulas, or make an input or an output differentiable")
        if requires and self.forwards and not self.inplace_foreach:
            count = sum(len(d.var_names) for d in self.forwards)
            if count != len(outputs):
                raise self._violation(
                    "variable_type.forward-count",
                    f"{self.name} has forward formulas for {count} outputs but "
                    f"{len(outputs)} differentiable outputs",
                    "give a forward formula for every differentiable output (or none: then "
                    "inputs must not have tangents)", self.forwards[0].line_in_entry)

    def formals(self) -> tuple[Formal, ...]:
        flags = self.fn.cpp_flags
        return tuple(Formal(str(argument_ctype(a.type, mutable=a.is_write, flags=flags,
                                               symint=True)), a.name)
                     for a in self.func.schema_order_arguments())

    def bindings(self) -> tuple[Binding, ...]:
        """unpack_args: Tensor and Tensor[] arguments are unpacked; nullable ones pass raw."""
        flags = self.fn.cpp_flags
        found = []
        for position, arg in enumerate(self.func.schema_order_arguments()):
            ctype = str(argument_ctype(arg.type, mutable=arg.is_write, flags=flags,
                                       symint=True).without_const_ref())
            unpacked = arg.type.is_tensor_like() and not arg.type.is_nullable()
            checks = {"at::Tensor": "tensor", "at::TensorList": "list",
                      "at::ITensorListRef": "list",
                      "c10::List<::std::optional<at::Tensor>>": "optional_list"}.get(ctype, "")
            found.append(Binding(arg.name, arg.name + "_" if unpacked else arg.name, position,
                                 unpacked, unpacked and arg.type.list_type() is None, checks))
        return tuple(found)

    # -- derivative setup

    def derivative_fields(self, inputs: list[_Input], with_derivatives: list[_Input],
                          outputs: list[_Output]) -> dict:
        condition = self._condition()
        names = [a.name for a in with_derivatives]
        if self.inplace_foreach and self.info is not None:
            names = [self.from_ref[n].name if n in self.from_ref else n for n in names]
        original = ()
        if self.inplace:
            original = tuple(_flag_name(d.var_names) for d in self.forwards
                             if d.required_original_self_value)
        return dict(
            requires_grad_args=tuple(names), requires_grad_condition=condition,
            forward_flags=self.forward_flags(inputs, condition),
            check_inplace=tuple(o.name for o in outputs) if self.inplace else (),
            original_self_flags=original,
            setup=self.setup(inputs, with_derivatives, outputs))

    def _condition(self) -> str | None:
        """The output_differentiability condition (parsing allows one, for one output)."""
        conditions = self.info.output_differentiability_conditions if self.info else None
        return conditions[0] if conditions else None

    def forward_flags(self, inputs: list[_Input], condition: str | None
                      ) -> tuple[ForwardFlag, ...]:
        if not self.foreach:
            return tuple(ForwardFlag(_flag_name(d.var_names), self._tangents_for(d, inputs),
                                     condition) for d in self.forwards)
        return tuple(self._foreach_flag(d, inputs) for d in self.forwards)

    def _tangents_for(self, derivative: ForwardDerivative, inputs: list[_Input]
                      ) -> tuple[Tangent, ...]:
        required = derivative.required_inputs_fw_grad
        if not required:
            if not (len(inputs) == 1 and inputs[0].is_list):
                raise self._violation(
                    "variable_type.forward-without-tangent",
                    f'No differentiable input to "{self.name}" is a differentiable Tensor, '
                    "though a forward formula is given (it uses no input tangent)",
                    "only functions taking a single TensorList may have such a formula",
                    derivative.line_in_entry)
            return ()
        return tuple(Tangent(i.name, i.is_list) for i in inputs if i.name in required)

    def _foreach_flag(self, derivative: ForwardDerivative, inputs: list[_Input]) -> ForwardFlag:
        checks, tangents = [], []
        for inp in inputs:
            if derivative.required_inputs_fw_grad is None \
                    or inp.name not in derivative.required_inputs_fw_grad:
                continue
            arg = self.from_ref[inp.name] if self.inplace else None
            name = arg.name if arg is not None else inp.name
            type_ = arg.type if arg is not None else inp.type
            is_list = type_.is_tensor_like() and type_.list_type() is not None
            if is_list and name != "self":
                checks.append(name)
            tangents.append(Tangent(name, False, is_list))
        return ForwardFlag(_flag_name(derivative.var_names), tuple(tangents), None, True,
                           tuple(checks))

    def setup(self, inputs: list[_Input], with_derivatives: list[_Input],
              outputs: list[_Output]) -> GradFnSetup:
        if self.out_fn:
            return GradFnSetup("Node", "", (), out_function=True,
                               out_inputs=tuple(i.name for i in inputs),
                               out_outputs=tuple(o.name for o in outputs))
        derived = self.info is not None and self.info.has_derivatives
        op = self.info.op if derived else "NotImplemented"
        ctor = "" if derived else f'"{self.name}"'
        edges = [a.name for a in with_derivatives]
        if self.inplace_foreach:
            edges = [self._element(n) for n in edges]
        unchecked = [i.name for i in inputs if i not in with_derivatives and i.name != "output"
                     and not (self.info and i.name in self.info.non_differentiable_arg_names)]
        saved: tuple[SavedValue, ...] = ()
        sizes: tuple[str, ...] = ()
        if derived:
            guard = _Guards(self, with_derivatives)
            saved = self.saved_values(self.info.all_saved_inputs, False, guard)
            if not self.inplace_foreach:
                sizes = tuple(a.name for a in with_derivatives if a.is_list)
        return GradFnSetup(op or "", ctor, tuple(edges), tuple(unchecked), saved, sizes,
                           self.inplace_foreach)

    def _element(self, ref_name: str) -> str:
        """An in-place foreach op's per-element value for a reference argument; without a
        reference, only `self` is indexed."""
        if self.info is None:
            return ref_name + "[i]" if ref_name == "self" else ref_name
        arg = self.from_ref.get(ref_name)
        if arg is None:
            return ref_name
        return arg.name + ("[i]" if arg.type.form is TypeForm.LIST else "")

    def saved_values(self, saved: Sequence[SavedAttribute], is_output: bool,
                     guards: _Guards | None) -> tuple[SavedValue, ...]:
        """save_variables: members in name order, each wrapped by its C++ type."""
        return tuple(self._saved_value(s, is_output, guards)
                     for s in sorted(saved, key=_saved_sort_key))

    def _saved_value(self, saved: SavedAttribute, is_output: bool, guards: _Guards | None
                     ) -> SavedValue:
        name, expr, ctype = saved.name, saved.expr, str(saved.ctype)
        foreach_arg, source, element = None, name, name
        if self.inplace_foreach and self.info is not None:
            source = name.split("_scalar_type")[0]
            foreach_arg = self.from_ref.get(source)
            if foreach_arg is not None:
                element = foreach_arg.name + ("[i]" if foreach_arg.type.form is TypeForm.LIST
                                              else "")
                expr = expr.replace(source, element)
        guard = guards.guard_for(saved) if guards is not None else None
        if ctype in ("at::Tensor", "::std::optional<at::Tensor>",
                     "::std::optional<at::Tensor> &") or (is_output and ctype == "at::Scalar"):
            return self._saved_variable(name, is_output, guard, foreach_arg, source, element)
        if ctype in ("at::TensorList", "c10::List<::std::optional<at::Tensor>>",
                     "at::ITensorListRef", "::std::vector<at::Tensor>"):
            if ctype == "::std::vector<at::Tensor>" and not (self.foreach and is_output):
                raise RuleViolation("variable_type.saved-vector",
                                    f"{self.name} saves the tensor vector {name}",
                                    "only foreach outputs are saved as vectors of tensors")
            return SavedValue(name + "_", "list", name, self.foreach and is_output, guard)
        how = {"at::IntArrayRef": "vec", "c10::SymIntArrayRef": "vec",
               "at::ArrayRef<at::Scalar>": "vec", "c10::string_view": "string",
               "::std::optional<c10::string_view>": "optional_string"}.get(ctype, "expr")
        return SavedValue(name, how, expr, False, guard)

    def _saved_variable(self, name: str, is_output: bool, guard: str | None,
                        foreach_arg: Argument | None, source: str, element: str) -> SavedValue:
        value, original, original_of = name, None, None
        if name == "self" and self.inplace:
            original = "original_selfs[i]" if self.inplace_foreach else "original_self"
            original_of = "self[i]" if self.inplace_foreach else "self"
            value = f"{original}.value()"
        if self.inplace and is_output:
            if name != "result":
                raise RuleViolation("variable_type.inplace-output",
                                    f"the in-place {self.name} saves the output {name}",
                                    "in-place functions save their output as result")
            listed = self.inplace_foreach or (foreach_arg is not None and
                                              foreach_arg.type.form is TypeForm.LIST)
            return SavedValue(name + "_", "inplace_result", "self[i]" if listed else "self",
                              True, guard)
        if foreach_arg is not None and original is None:
            value = value.replace(source, element)
        return SavedValue(name + "_", "variable", value, is_output, guard, original, original_of)

    # -- the call

    def call_fields(self, modifies: bool, returns_void: bool, jvp: bool,
                    inputs: list[_Input], requires: bool) -> dict:
        if modifies or returns_void:
            return dict(call_shape="statement")
        fields: dict = dict(call_shape="jvp" if jvp else "value",
                            ties=tie_return_values(self.func), tie_types=tuple(
                                str(return_ctype(r, self.fn.cpp_flags).without_const_ref())
                                for r in self.func.returns),
                            moves_result=any(r.type.is_tensor_like() for r in self.func.returns))
        if jvp:
            types = [str(return_ctype(r, CppFlags())) for r in self.func.returns]
            fields.update(jvp_tangents=self.all_tangents(),
                          jvp_return_type=types[0] if len(types) == 1
                          else f"std::tuple<{', '.join(types)}>",
                          jvp_args=tuple(a.name for a in self.func.schema_order_arguments()))
        return fields

    def all_tangents(self) -> tuple[Tangent, ...]:
        """Every differentiable input and output argument (get_any_has_fw_grad_cond(None))."""
        found = []
        for arg in self.func.arguments.non_out + self.func.arguments.out:
            if not arg.type.is_tensor_like() or (self.info is not None and
                                                 arg.name in self.info.non_differentiable_arg_names):
                continue
            found.append(Tangent(arg.name, arg.type.list_type() is not None))
        return tuple(found)

    def ndebug_fields(self, bindings: tuple[Binding, ...]) -> dict:
        """check_tensorimpl_and_storage: inputs keep their impl and storage; fresh outputs
        are not shared; a view shares its base's storage."""
        if self.name in DONT_ENFORCE_SAME_TENSOR_IMPL_OR_STORAGE:
            return {}
        before = tuple(NdebugCheck(b.checks, b.value) for b in bindings if b.checks)
        after = list(before)
        if self.kind not in (SchemaKind.INPLACE, SchemaKind.OUT):
            after.extend(self._output_checks())
        if not before:
            return {}
        return dict(ndebug_before=before, ndebug_after=tuple(after))

    def _output_checks(self) -> list[NdebugCheck]:
        aliased = ALL_VIEW_FUNCTIONS.get(self.base)
        wrapper = type_wrapper_name(self.func)
        found = []
        for i, (ret, name) in enumerate(zip(self.func.returns, return_names(self.func))):
            ctype = str(return_ctype(ret, CppFlags()).without_const_ref())
            if ctype in ("c10::List<::std::optional<at::Tensor>>", "at::TensorList"):
                raise RuleViolation("variable_type.return-use-count",
                                    f"{self.func.name} returns {ctype}",
                                    "return Tensor[] (a vector of tensors) instead")
            if ctype != "at::Tensor":
                continue
            if aliased is not None:
                if i != 0:
                    raise RuleViolation(
                        "variable_type.view-outputs",
                        f"the view function {self.base} returns a tensor at position {i}",
                        "view functions that are not CompositeImplicitAutograd return one tensor")
                found.append(NdebugCheck("alias", aliased + "_", name))
            elif wrapper not in DONT_ENFORCE_STORAGE_IMPL_USE_COUNT:
                found.append(NdebugCheck("storage_use_count", name, wrapper))
            if wrapper not in DONT_ENFORCE_TENSOR_IMPL_USE_COUNT:
                found.append(NdebugCheck("impl_use_count", name, wrapper))
        return found

    def history(self, modifies: bool) -> str:
        return "rebase" if modifies and view_info(self.base) is None else "set"

    def complex_checks(self, outputs: list[_Output]) -> tuple[str, ...]:
        if self.release.has_complex_gradient(self.base, GRADIENT_IMPLEMENTED_FOR_COMPLEX):
            return ()
        return tuple(o.name for o in outputs
                     if o.cpp_type == "at::Tensor" or o.cpp_type in TENSOR_LIST_LIKE)

    # -- forward AD

    def forward_fields(self, inputs: list[_Input], outputs: list[_Output]) -> dict:
        formulas, setters = [], []
        for derivative in self.forwards:
            formula, made = self._forward_formula(derivative, inputs)
            formulas.append(formula)
            setters.extend(made)
        return dict(forward_formulas=tuple(formulas), forward_setters=tuple(setters))

    def _forward_formula(self, derivative: ForwardDerivative, inputs: list[_Input]
                         ) -> tuple[ForwardFormula, list[ForwardSetter]]:
        res = derivative.var_names
        if self.func.name.name.inplace:
            if len(res) != 1:
                raise self._violation("variable_type.inplace-forward-outputs",
                                      f"the in-place {self.name} has a forward formula for "
                                      f"{len(res)} outputs", "in-place functions have one output",
                                      derivative.line_in_entry)
            res = ("self",)
        unpacked, zeros = self._tangent_inputs(derivative, inputs)
        clone = False
        if derivative.required_original_self_value:
            source = "original_selfs[i]" if self.inplace_foreach else "original_self"
            unpacked.append(TangentInput("original_self", source, True, True, zeros, False))
        elif self.inplace and derivative.is_reusing_outplace_formula:
            clone = True
        grad_type, setters, defined = self._forward_output(derivative, res)
        condition = _flag_name(derivative.var_names)
        if defined is not None and not self.foreach:
            condition += f" && ({defined}.defined())"
        formula = derivative.formula
        if self.foreach:
            formula = self._foreach_formula(formula)
        return ForwardFormula("_".join(res), grad_type, len(derivative.var_types), condition,
                              tuple(unpacked), clone, formula, self.foreach,
                              " || ".join(_flag_name(d.var_names) + "[i]"
                                          for d in self.forwards)), setters

    def _tangent_inputs(self, derivative: ForwardDerivative, inputs: list[_Input]
                        ) -> tuple[list[TangentInput], str]:
        unpacked, zeros = [], "_efficientzerotensor_symint"
        required = derivative.required_inputs_fw_grad or ()
        primals = derivative.required_inputs_primal or ()
        for inp in inputs:
            arg = self.from_ref.get(inp.name) if self.inplace_foreach else None
            type_ = arg.type if (arg is not None and self.inplace) else inp.type
            listed = self.foreach and type_.is_tensor_like() and type_.list_type() is not None
            source = (arg.name if arg is not None else inp.name) + ("[i]" if listed else "")
            zeros = "zeros_symint" if self.inplace and inp.name == "self" \
                else "_efficientzerotensor_symint"
            tangent, primal = inp.name in required, inp.name in primals
            if tangent or primal:
                unpacked.append(TangentInput(inp.name, source, tangent, primal, zeros,
                                             zeros == "_efficientzerotensor_symint"))
        return unpacked, zeros

    def _forward_output(self, derivative: ForwardDerivative, res: tuple[str, ...]
                        ) -> tuple[str, list[ForwardSetter], str | None]:
        types = derivative.var_types
        if all(t.form is TypeForm.BASE and t.is_tensor_like() for t in types):
            if len(types) == 1:
                if self.foreach:
                    expected = "self" if self.inplace else "result"
                    if res[0] != expected:
                        raise self._violation("variable_type.foreach-forward-output",
                                              f"the foreach {self.name}'s forward formula is "
                                              f"for {res[0]}", f"write it for {expected}",
                                              derivative.line_in_entry)
                    return "tensor", [ForwardSetter("foreach", res[0], inplace=self.inplace)], \
                        derivative.var_names[0]
                return "tensor", [ForwardSetter("tensor", res[0], inplace=self.inplace)], \
                    derivative.var_names[0]
            group = "_".join(res)
            return "tuple", [ForwardSetter("multi", r, i, group) for i, r in enumerate(res)], None
        if types[0].form is TypeForm.LIST and types[0].is_tensor_like():
            if len(types) != 1:
                raise self._violation("variable_type.forward-list-outputs",
                                      f"{self.name} returns a list and has a forward formula "
                                      f"for {len(types)} outputs",
                                      "a function returning a list has one forward formula",
                                      derivative.line_in_entry)
            if self.foreach:
                return "tensor", [ForwardSetter("foreach", res[0], inplace=self.inplace)], None
            return "vector", [ForwardSetter("list", res[0], inplace=self.inplace)], None
        raise self._violation("variable_type.forward-output-type",
                              f"{self.name} has a forward formula for an output of type "
                              f"{types[0]}", "forward formulas are for Tensor or Tensor[] outputs",
                              derivative.line_in_entry)

    def _foreach_formula(self, formula: str) -> str:
        """Textual rewriting, exactly as torchgen: the reference's scalar arguments become
        the foreach op's (in place), `result` becomes `result[i]` (out of place)."""
        if self.inplace:
            for arg in self.func.arguments.non_out:
                ref = self.to_ref.get(arg.name)
                if ref is None or arg.type.is_tensor_like():
                    continue
                pattern = arg.name + ("[i]" if arg.type.form is TypeForm.LIST else "")
                formula = formula.replace(ref.name, pattern)
            return formula
        if "result" in formula and "result[i]" not in formula:
            return formula.replace("result", "result[i]")
        return formula


class _Guards:
    """emit_save_inputs' guard_for: a saved input used by one derivative of several is saved
    only when that derivative's input needs a gradient."""

    def __init__(self, kernel: _KernelBuilder, with_derivatives: list[_Input]) -> None:
        assert kernel.info is not None
        self.kernel, self.info = kernel, kernel.info
        self.positions = {a.name: k for k, a in reversed(list(enumerate(with_derivatives)))}
        self.off = (any(a.is_list for a in with_derivatives) and not kernel.inplace_foreach) \
            or "backward" in self.info.name or len(with_derivatives) <= 1

    def guard_for(self, saved: SavedAttribute) -> str | None:
        if self.off or str(saved.ctype) != "at::Tensor":
            return None
        used_in = [d for d in self.info.derivatives if saved in d.saved_inputs]
        if len(used_in) != 1:
            return None
        derivative = used_in[0]
        if len(derivative.var_names) != 1:
            return self._wrap_opt_if_condition(derivative, saved.name)
        return f"grad_fn->should_compute_output({self.positions[derivative.var_names[0]]})"


    def _wrap_opt_if_condition(self, derivative: Derivative, name: str) -> str | None:
        """The condition of `wrap_opt_if(<name>, <condition>)` up to the first `)`, with the
        grad_input_mask rewritten. torchgen cuts it one character after the comma (its slice
        counts a regex backslash), so a condition written without a space loses its first
        character too; reproduced."""
        formula = derivative.formula
        start = formula.find(f"wrap_opt_if({name}")
        if start == -1:
            return None
        m = re.match(rf"wrap_opt_if\({name},(.*?)\)", formula[start:])
        if m is None:
            raise self.kernel._violation(
                "variable_type.wrap-opt-if",
                f"the formula saving {name} has 'wrap_opt_if({name}' that is not a call "
                f"wrap_opt_if({name}, <condition>)",
                f"write wrap_opt_if({name}, <condition>) (the guard is read up to the first ')')",
                derivative.line_in_entry)
        condition = m.group(0)[len(name) + 14:-1].strip()
        return re.sub(r"grad_input_mask\[(\d+)\]", r"grad_fn->should_compute_output(\1)",
                      condition)


def _saved_sort_key(saved: SavedAttribute) -> str:
    # torchgen sorts by str(nctype.name); the SpecialArgName prints its enum member
    if saved.name == "possibly_redundant_memory_format":
        return "SpecialArgName.possibly_redundant_memory_format"
    return saved.name


def _flag_name(var_names: Sequence[str]) -> str:
    return "_any_has_forward_grad_" + "_".join(var_names)


def _api_name(schema: FunctionSchema) -> str:
    """api/cpp.py: name(faithful_name_for_out_overloads=True, symint_overload=has_symint())."""
    name = str(schema.name.name) + ("_symint" if schema.has_symint() else "")
    return name + "_outf" if schema.is_out_fn() else name
