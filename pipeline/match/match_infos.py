"""Match stage: which derivative infos each native function uses.

api/autograd.py: match_differentiability_info visits the native functions sorted by C++
name and, for each, finds (1) infos for its exact schema, (2) the infos of its functional
variant by signature (`mul_` and `mul.out` use `mul`'s), (3) for a generated functional
variant, the infos of the mutable op it came from, or (4) for an out-of-place `_foreach_*`
op, infos synthesized from its reference op (pipeline/match/foreach.py). Synthesized infos join
the infos list, so they are rendered into Functions.* and python_functions* as well.

In-place functions get their forward formulas rewritten to update the tangent in place.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Sequence

from gradshard.pipeline.match.foreach import (borrowed_infos, is_foreach, is_reference_for,
                                              reference_without_default, searches_non_functional)
from gradshard.pipeline.parse.differentiability import (IDENT_REGEX, DifferentiabilityInfo,
                                                        EntryInfos, ForwardDerivative, InfoSummary,
                                                        formula_violation, uses_ident)
from gradshard.pipeline.parse.native import NativeFunction
from gradshard.pipeline.problems import Problem, RuleViolation, SpecFile
from gradshard.pipeline.records import Record
from gradshard.pipeline.schema import FunctionSchema, OperatorName, SchemaKind, cpp_name

__all__ = ["FOREACH", "FunctionMatch", "FunctionSummary", "KernelPlan", "MatchStep",
           "cpp_name_order", "kernel_plan", "match_function", "match_plan",
           "merge_formula_faults", "summarize_function"]


@dataclass(frozen=True, slots=True)
class KeyedForwards(Record):
    dispatch_key: str
    forward_derivatives: tuple[ForwardDerivative, ...]


@dataclass(frozen=True, slots=True)
class FunctionMatch(Record):
    """The infos one native function uses (None when it is not differentiable)."""

    function: str
    infos: EntryInfos | None = None
    exact: bool = False
    forwards: tuple[KeyedForwards, ...] = ()


# How a function finds its infos (the branches of api/autograd.py: find_info).
EXACT = "exact"                      # an entry for its own schema
FUNCTIONAL = "functional"            # its functional variant's entry, by signature
MUTABLE = "mutable"                  # a generated functional op: its mutable op's entry
FOREACH = "foreach"                  # synthesized from its per-tensor reference
FOREACH_INPLACE = "foreach-inplace"  # an in-place foreach op: its reference's info as it is
NO_DEFAULT = "no-default"            # a foreach op whose reference has no Default formulas


@dataclass(frozen=True, slots=True)
class FunctionSummary(Record):
    """What the match plan reads of a native function (a formula edit changes none of it)."""

    name: str
    schema: str
    signature: str  # signature(strip_default=True)
    cpp_name: str
    kind: str
    generated: bool
    foreach: bool
    origin: str = ""  # a generated function's: the name of the function it comes from
    abstract: bool = False  # whether it gets an autograd kernel even without formulas
    # its root name (`__ilshift__.Scalar` → `lshift`; gen_trace_type.py: root_name): the shard
    # key of TraceType and ADInplaceOrViewType, and whether it is a view (view_info)
    root: str = ""


def summarize_function(fn: NativeFunction) -> FunctionSummary:
    return FunctionSummary(str(fn.func.name), str(fn.func),
                           str(fn.func.signature(strip_default=True)), cpp_name(fn.func),
                           fn.func.kind().value, "generated" in fn.tags, is_foreach(fn),
                           "" if fn.generated_from is None else str(fn.generated_from),
                           fn.is_abstract, fn.func.name.name.base)


@dataclass(frozen=True, slots=True)
class MatchStep(Record):
    """One function that finds infos: how, and the entry it uses or borrows from (a position
    in the infos list, where synthesized entries follow the loaded ones in plan order)."""

    function: int
    how: str
    entry: int
    reference_signature: str = ""  # FOREACH: the reference's signature


@dataclass(frozen=True, slots=True)
class MatchPlan(Record):
    """Every function (positions) in C++-name order, and the steps of those that find infos."""

    order: tuple[int, ...]
    steps: tuple[MatchStep, ...]


class _PlanTables:
    """match_differentiability_info's lookups over the info summaries: by exact schema, and by
    `signature(strip_default=True)` for functional and other schemas (a later entry wins a
    shared signature but keeps the first one's position); synthesized foreach infos join
    them as they are made."""

    def __init__(self, infos: Sequence[InfoSummary]) -> None:
        self.by_schema = {s.schema: i for i, s in enumerate(infos)}
        self.functional: dict[str, tuple[str, int]] = {}
        self.non_functional: dict[str, tuple[str, int]] = {}
        self.has_default = [s.has_default for s in infos]
        self.names = [s.schema.split("(", 1)[0] for s in infos]
        self._schemas: dict[str, FunctionSchema] = {}
        self._bases: dict[str, str] = {}
        for i, summary in enumerate(infos):
            table = self.functional if summary.functional else self.non_functional
            table[summary.signature] = (summary.signature, i)

    def add_synthesized(self, schema: str) -> int:
        # torchgen keys synthesized foreach infos by the full schema, not a signature
        entry = len(self.has_default)
        self.has_default.append(True)
        self.names.append(schema.split("(", 1)[0])
        self.by_schema[schema] = entry
        self.functional[schema] = (schema, entry)
        return entry

    def step(self, position: int, fn: FunctionSummary) -> MatchStep | None:
        """find_info for one function."""
        if fn.generated and fn.kind == SchemaKind.OUT.value:
            return None
        exact = self.by_schema.get(fn.schema)
        if exact is not None:
            return MatchStep(position, EXACT, exact)
        if fn.signature in self.functional and not fn.foreach:
            return MatchStep(position, FUNCTIONAL, self.functional[fn.signature][1])
        if fn.generated and fn.signature in self.non_functional:
            return MatchStep(position, MUTABLE, self.non_functional[fn.signature][1])
        if fn.foreach:
            return self.foreach_step(position, fn)
        return None

    def foreach_step(self, position: int, fn: FunctionSummary) -> MatchStep | None:
        """The first functional signature that is the foreach op's reference
        (gen_foreach_derivativeinfo's search)."""
        func = self.parse(fn.schema)
        tables = [self.functional]
        if searches_non_functional(func):
            tables.append(self.non_functional)
        base = func.name.name.base.split("_foreach_")[-1]
        for table in tables:
            for signature, entry in table.values():
                if self.base_name(signature) != base \
                        or not is_reference_for(func, self.parse(signature)):
                    continue
                if not self.has_default[entry]:
                    return MatchStep(position, NO_DEFAULT, entry)
                if func.kind() is SchemaKind.INPLACE:
                    return MatchStep(position, FOREACH_INPLACE, entry)
                return MatchStep(position, FOREACH, entry, signature)
        return None

    def base_name(self, schema: str) -> str:
        """The operator's base name, read without parsing the whole schema."""
        if schema not in self._bases:
            self._bases[schema] = OperatorName.parse(schema.split("(", 1)[0]).name.base
        return self._bases[schema]

    def parse(self, schema: str) -> FunctionSchema:
        if schema not in self._schemas:
            self._schemas[schema] = FunctionSchema.parse(schema)
        return self._schemas[schema]


def match_plan(functions: Sequence[FunctionSummary], infos: Sequence[InfoSummary]) -> MatchPlan:
    """Which entry each function uses, visiting functions stably sorted by C++ name
    (gen_autograd.py); a function whose search fails finds nothing (its match says why)."""
    order = cpp_name_order(functions)
    tables = _PlanTables(infos)
    steps: list[MatchStep] = []
    for position in order:
        fn = functions[position]
        step = tables.step(position, fn)
        if step is None:
            continue
        if step.how == FOREACH:
            tables.add_synthesized(fn.schema)
        steps.append(step)
    return MatchPlan(tuple(order), tuple(steps))


def cpp_name_order(functions: Sequence[FunctionSummary]) -> list[int]:
    """The functions' positions, stably sorted by C++ name: the order matching visits them."""
    return sorted(range(len(functions)), key=lambda i: functions[i].cpp_name)


@dataclass(frozen=True, slots=True)
class KernelPlan(Record):
    """The functions that get autograd kernels, in C++-name order (the files' order): each
    one's position in the function list, name, C++ name and root name. A function gets
    kernels when the match plan gave it a match or it is abstract
    (gen_inplace_or_view_type.py: use_derived's list, gen_variable_type's sorted one)."""

    positions: tuple[int, ...] = ()
    names: tuple[str, ...] = ()
    cpp_names: tuple[str, ...] = ()
    roots: tuple[str, ...] = ()


def kernel_plan(functions: Sequence[FunctionSummary], matched: frozenset[int]) -> KernelPlan:
    kept = [p for p in cpp_name_order(functions) if p in matched or functions[p].abstract]
    return KernelPlan(tuple(kept), tuple(functions[p].name for p in kept),
                      tuple(functions[p].cpp_name for p in kept),
                      tuple(functions[p].root for p in kept))


def merge_formula_faults(found: Sequence[tuple[Problem, str]]) -> list[Problem]:
    """The problems of matching functions (each with the function found to have it), in
    plan order. A problem blamed on a derivatives.yaml formula is reported once however
    many functions reuse that formula (add_.Tensor and _foreach_add_.List both borrow
    add.Tensor's), naming every function it breaks."""
    others = [problem for problem, _ in found if problem.file is not SpecFile.DERIVATIVES]
    first: dict[tuple, Problem] = {}
    functions: dict[tuple, list[str]] = {}
    for problem, function in found:
        if problem.file is SpecFile.DERIVATIVES:
            place = (problem.entry, problem.line_in_entry, problem.rule)
            first.setdefault(place, problem)
            functions.setdefault(place, []).append(function)
    return others + [_also_for(problem, functions[place][1:]) for place, problem in first.items()]


def _also_for(problem: Problem, others: list[str]) -> Problem:
    if not others:
        return problem
    return replace(problem, message=f"{problem.message} (also for {', '.join(others)})")


def match_function(fn: NativeFunction, step: MatchStep, found: EntryInfos) -> FunctionMatch:
    """One function's match from the entry its plan step names (the synthesized one for
    FOREACH), with find_info's checks and the in-place forward formulas."""
    if step.how == NO_DEFAULT:
        raise reference_without_default(fn.func, str(found.schema.name))
    if step.how == MUTABLE:
        _check_reusable_for_functional(fn, found)
    if step.how == FOREACH_INPLACE:
        found = borrowed_infos(found)
    # torchgen reports a synthesized info as an exact match (find_info returns is_generated)
    return _function_match(fn, found, step.how in (EXACT, FOREACH))


def _check_reusable_for_functional(fn: NativeFunction, mutable: EntryInfos) -> None:
    saves_self = any("self" in s.name for k in mutable.infos for s in k.info.all_saved_inputs)
    if saves_self:
        raise RuleViolation(
            "match.mutable-formula-saves-self",
            f"the generated functional variant {fn.func.name} would reuse the formula of "
            f"{mutable.schema.name}, which saves a value derived from self",
            f"write a derivatives.yaml entry for {fn.func.name} itself")


def _function_match(fn: NativeFunction, found: EntryInfos | None, exact: bool) -> FunctionMatch:
    if found is None or not found.infos:
        return FunctionMatch(str(fn.func.name))
    inplace = fn.func.kind() is SchemaKind.INPLACE
    if inplace:
        _check_inplace_strides(fn, found)
    forwards = tuple(KeyedForwards(k.dispatch_key, _forwards_for(fn, k.info, found, exact, inplace))
                     for k in found.infos)
    return FunctionMatch(str(fn.func.name), found, exact, forwards)


def _check_inplace_strides(fn: NativeFunction, found: EntryInfos) -> None:
    """api/autograd.py: match_differentiability_info's '.strides()' check, blamed on the
    formula."""
    for k in found.infos:
        for derivative in k.info.derivatives:
            if "self" in derivative.var_names and any(
                    "strides_or_error" in s.expr for s in derivative.saved_inputs):
                raise formula_violation(
                    "match.inplace-strides",
                    f"the self formula used by the in-place {fn.func.name} calls .sym_strides()",
                    "in-place functions cannot save strides of self; write a formula "
                    "without them", found, derivative.line_in_entry)


def _forwards_for(fn: NativeFunction, info: DifferentiabilityInfo, found: EntryInfos,
                  exact: bool, inplace: bool) -> tuple[ForwardDerivative, ...]:
    if not info.forward_derivatives or not inplace:
        return info.forward_derivatives
    if len(info.forward_derivatives) != 1:
        raise RuleViolation("match.inplace-forward",
                            f"the in-place {fn.func.name} has "
                            f"{len(info.forward_derivatives)} forward formulas",
                            "an in-place function has one output, so one forward formula")
    return (inplace_forward(fn, info, found, exact),)


def inplace_forward(fn: NativeFunction, info: DifferentiabilityInfo, found: EntryInfos,
                    exact: bool) -> ForwardDerivative:
    """The forward formula of an in-place function: `result` is self, and a reused
    out-of-place formula reads the original self and writes the tangent in place
    (api/autograd.py: match_differentiability_info's in-place handling). `found` is the
    entry the formula comes from, blamed when the formula reads self_p."""
    forward = info.forward_derivatives[0]
    formula = forward.formula
    if uses_ident(formula, "self_p"):
        if exact:
            raise formula_violation(
                "match.inplace-uses-self",
                f"the forward formula of the in-place {fn.func.name} uses self_p, the value "
                "being overwritten",
                "use 'result' (the new value) or 'original_self_p' (self before the call) in "
                "in-place formulas", found, forward.line_in_entry)
        formula = _rename_ident(formula, "self_p", "original_self_p")
        formula = _rename_ident(formula, "self_t", "original_self_t")
    formula = _rename_ident(formula, "result", "self_p")
    primals = forward.required_inputs_primal
    if uses_ident(formula, "self_p"):
        primals = (primals or ()) + ("self",)
    if not exact:
        formula = _tangent_updated_in_place(formula, info.name)
    original = uses_ident(formula, "original_self_p") or uses_ident(formula, "original_self_t")
    return ForwardDerivative(formula, ("self",), forward.var_types,
                             forward.required_inputs_fw_grad, primals, original, not exact,
                             forward.line_in_entry)


def _rename_ident(formula: str, old: str, new: str) -> str:
    return re.sub(IDENT_REGEX.format(old), rf"\g<1>{new}\g<2>", formula)


def _tangent_updated_in_place(formula: str, op_name: str) -> str:
    """`self_t.op(args)` becomes `self_t_raw.op_(args)`; anything else is copied in place."""
    m = re.fullmatch(r"self_t.([\w]*)\((.*)\)", formula)
    if m and _single_call(m.group(2)) and m.group(1) == op_name:
        return f"self_t_raw.defined() ? self_t_raw.{m.group(1)}_({m.group(2)}) : {formula}"
    return f"self_t_raw.defined() ? self_t_raw.copy_({formula}) : {formula}"


def _single_call(between_parens: str) -> bool:
    """True when the text never closes the call it starts in (no `) + self_t.g(`)."""
    level = 1
    for ch in between_parens:
        if ch == ")":
            level -= 1
            if level == 0:
                return False
        elif ch == "(":
            level += 1
    return True
