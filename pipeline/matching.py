"""Match stage: which derivative infos each native function uses.

api/autograd.py: match_differentiability_info visits the native functions sorted by C++
name and, for each, finds (1) infos for its exact schema, (2) the infos of its functional
variant by signature (`mul_` and `mul.out` use `mul`'s), (3) for a generated functional
variant, the infos of the mutable op it came from, or (4) for an out-of-place `_foreach_*`
op, infos synthesized from its reference op (pipeline/foreach.py). Synthesized infos join
the infos list, so they are rendered into Functions.* and python_functions* as well.

In-place functions get their forward formulas rewritten to update the tangent in place.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Sequence

from .differentiability import (IDENT_REGEX, DifferentiabilityInfo, EntryInfos,
                                ForwardDerivative, uses_ident)
from .errors import Problem, RuleViolation, SpecFile
from .foreach import ForeachReferences, is_foreach, synthesize_foreach_infos
from .native import NativeFunction
from .records import Record
from .schema import FunctionSchema, SchemaKind, cpp_name


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


@dataclass(frozen=True, slots=True)
class MatchResult(Record):
    """Every function's match (in C++-name order) and all infos to render, foreach included."""

    matches: tuple[FunctionMatch, ...]
    infos: tuple[EntryInfos, ...]


class MatchTables:
    """The lookups match_differentiability_info builds from the infos: by exact schema, and
    by `signature(strip_default=True)` for functional and for other schemas (a later entry
    wins a shared signature but keeps the first one's position)."""

    def __init__(self, infos: Sequence[EntryInfos]) -> None:
        self.by_schema: dict[str, EntryInfos] = {str(e.schema): e for e in infos}
        self.functional: dict[str, tuple[FunctionSchema, EntryInfos]] = {}
        self.non_functional: dict[str, tuple[FunctionSchema, EntryInfos]] = {}
        for entry in infos:
            signature = entry.schema.signature(strip_default=True)
            table = (self.functional if entry.schema.kind() is SchemaKind.FUNCTIONAL
                     else self.non_functional)
            table[str(signature)] = (signature, entry)

    def add_synthesized(self, entry: EntryInfos) -> None:
        # torchgen keys synthesized foreach infos by the full schema, not a signature
        self.by_schema[str(entry.schema)] = entry
        self.functional[str(entry.schema)] = (entry.schema, entry)


def sorted_for_matching(functions: Sequence[NativeFunction]) -> list[NativeFunction]:
    """gen_autograd.py: native functions stably sorted by C++ name (`add_`, `add_out`…)."""
    return sorted(functions, key=lambda f: cpp_name(f.func))


def match_infos(functions: Sequence[NativeFunction],
                infos: Sequence[EntryInfos]) -> tuple[MatchResult, list[Problem]]:
    """Match every function (already in C++-name order) to its infos."""
    tables = MatchTables(infos)
    references = ForeachReferences(tables.functional, tables.non_functional)
    all_infos = list(infos)
    matches: list[FunctionMatch] = []
    problems: list[Problem] = []
    for fn in functions:
        try:
            found, exact, synthesized = find_infos(fn, tables, references)
            if synthesized:
                tables.add_synthesized(found)
                all_infos.append(found)
            matches.append(_function_match(fn, found, exact))
        except RuleViolation as violation:
            problems.append(violation.to_problem(SpecFile.NATIVE_FUNCTIONS, str(fn.func.name)))
            matches.append(FunctionMatch(str(fn.func.name)))
    return MatchResult(tuple(matches), tuple(all_infos)), problems


def find_infos(fn: NativeFunction, tables: MatchTables, references: ForeachReferences
               ) -> tuple[EntryInfos | None, bool, bool]:
    """(infos, exact match?, synthesized now?) for one function (find_info)."""
    if "generated" in fn.tags and fn.func.kind() is SchemaKind.OUT:
        return None, False, False
    exact = tables.by_schema.get(str(fn.func))
    if exact is not None:
        return exact, True, False
    signature = str(fn.func.signature(strip_default=True))
    if signature in tables.functional and not is_foreach(fn):
        return tables.functional[signature][1], False, False
    if "generated" in fn.tags and signature in tables.non_functional:
        mutable = tables.non_functional[signature][1]
        _check_reusable_for_functional(fn, mutable)
        return mutable, False, False
    if is_foreach(fn):
        return synthesize_foreach_infos(fn, references)
    return None, False, False


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
    forwards = tuple(KeyedForwards(k.dispatch_key, _forwards_for(fn, k.info, exact, inplace))
                     for k in found.infos)
    return FunctionMatch(str(fn.func.name), found, exact, forwards)


def _check_inplace_strides(fn: NativeFunction, found: EntryInfos) -> None:
    for k in found.infos:
        for derivative in k.info.derivatives:
            if "self" in derivative.var_names and any(
                    "strides_or_error" in s.expr for s in derivative.saved_inputs):
                raise RuleViolation(
                    "match.inplace-strides",
                    f"the self formula used by the in-place {fn.func.name} calls .sym_strides()",
                    "in-place functions cannot save strides of self; write a formula "
                    "without them")


def _forwards_for(fn: NativeFunction, info: DifferentiabilityInfo, exact: bool,
                  inplace: bool) -> tuple[ForwardDerivative, ...]:
    if not info.forward_derivatives or not inplace:
        return info.forward_derivatives
    if len(info.forward_derivatives) != 1:
        raise RuleViolation("match.inplace-forward",
                            f"the in-place {fn.func.name} has "
                            f"{len(info.forward_derivatives)} forward formulas",
                            "an in-place function has one output, so one forward formula")
    return (inplace_forward(fn, info, exact),)


def inplace_forward(fn: NativeFunction, info: DifferentiabilityInfo,
                    exact: bool) -> ForwardDerivative:
    """The forward formula of an in-place function: `result` is self, and a reused
    out-of-place formula reads the original self and writes the tangent in place
    (api/autograd.py: match_differentiability_info's in-place handling)."""
    forward = info.forward_derivatives[0]
    formula = forward.formula
    if uses_ident(formula, "self_p"):
        if exact:
            raise RuleViolation(
                "match.inplace-uses-self",
                f"the forward formula of {fn.func.name} uses self_p, the value being overwritten",
                "use 'result' (the new value) or 'original_self_p' in in-place formulas")
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
                             forward.required_inputs_fw_grad, primals, original, not exact)


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
