"""Derivative entries → `DifferentiabilityInfo`s, with load_derivatives' exact semantics.

The work is split so that the expensive part is per entry (and so cacheable per entry):

1. `derivative_buckets`: each schema's function and the functions sharing its signature
   (load_derivatives.py: create_differentiability_info's lookups); an entry reads the bucket
   of the function its schema names (`bucket_infos`), or is told no function has it.
2. `derive_entry_infos`: one info per dispatch key, from the entry and those functions
   only. Op names are left unnumbered here.
3. `op_names`: one counter per op prefix across the whole file, in file order.
4. `view_copies`: `{view}_copy` functions reuse their view's infos
   (load_derivatives.py: add_view_copy_derivatives).
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Sequence

from gradshard.pipeline.cpp import (BOOL, INT64, LAYOUT, SCALAR_TYPE, STRING_VIEW, SYMINT,
                                    SYMINT_ARRAY_REF, TENSOR_GEOMETRY, TENSOR_OPTIONS,
                                    TYPE_AND_SIZE, CForm, CppBinding, CType, check_list_default,
                                    cpp_arguments, return_ctype, return_names, wrap)
from gradshard.pipeline.parse.derivatives import (DEFAULT_KEY, DerivativeEntry, DispatchFormulas,
                                                  Formula)
from gradshard.pipeline.parse.native import NativeFunction
from gradshard.pipeline.parse.views import ViewGroup, ViewOrder
from gradshard.pipeline.problems import Problem, RuleViolation, SpecFile, did_you_mean
from gradshard.pipeline.records import Record
from gradshard.pipeline.schema import FunctionSchema, SchemaKind, SchemaType, cpp_name

__all__ = ["Derivative", "DerivativeBuckets", "DifferentiabilityInfo", "EntryInfos",
           "ForwardDerivative", "IDENT_REGEX", "InfoSummary", "KeyedInfo", "OpNames",
           "REPLACEMENT_CALLEES", "SAVED_SUFFIXES", "SavedAttribute", "UNKNOWN_SCHEMA", "ViewCopies", "assign_op_names", "bucket_infos",
           "copy_entry", "derivative_buckets", "duplicate_entry", "formula_violation", "op_names",
           "op_prefix", "saved_variables", "summarize_infos", "unknown_schema", "uses_ident",
           "view_copies", "view_copy_infos", "view_ordered_buckets", "with_op_names"]

# Dispatch keys a derivatives.yaml entry may use besides Default (model.py: AUTOGRAD_KEYS).
AUTOGRAD_KEYS = ("AutogradNestedTensor",) + tuple("Autograd" + backend for backend in (
    "CPU", "CUDA", "HIP", "XLA", "MTIA", "MPS", "IPU", "XPU", "HPU", "VE", "Lazy", "Meta",
    "PrivateUse1", "PrivateUse2", "PrivateUse3"))

IDENT_REGEX = r"(^|\W){}($|\W)"  # utils.py: IDENT_REGEX
GRAD_INDEX_REGEX = r"(?:^|\W)grads\[(\d+)\]"


def uses_ident(text: str, name: str) -> bool:
    return re.search(IDENT_REGEX.format(name), text) is not None


# ---------------------------------------------------------------------------------------------
# Records


@dataclass(frozen=True, slots=True)
class SavedAttribute(Record):
    """A value the backward node stores: an input, an output, or a property of one."""

    name: str
    ctype: CType
    expr: str


@dataclass(frozen=True, slots=True)
class Derivative(Record):
    """A backward formula; `line_in_entry` is its line in its derivatives.yaml entry, so that
    later stages (matching, foreach synthesis) can blame the formula itself."""

    formula: str
    original_formula: str
    var_names: tuple[str, ...]
    saved_inputs: tuple[SavedAttribute, ...] = ()
    saved_outputs: tuple[SavedAttribute, ...] = ()
    named_gradients: tuple[str, ...] = ()
    line_in_entry: int = 0


@dataclass(frozen=True, slots=True)
class ForwardDerivative(Record):
    """A forward formula; `line_in_entry` as for `Derivative`."""

    formula: str
    var_names: tuple[str, ...]
    var_types: tuple[SchemaType, ...]
    required_inputs_fw_grad: tuple[str, ...] | None = None
    required_inputs_primal: tuple[str, ...] | None = None
    required_original_self_value: bool = False
    is_reusing_outplace_formula: bool = False
    line_in_entry: int = 0


@dataclass(frozen=True, slots=True)
class DifferentiabilityInfo(Record):
    """Everything the autograd codegen knows about one function's derivatives for one key."""

    name: str
    func: NativeFunction
    op: str | None
    derivatives: tuple[Derivative, ...]
    forward_derivatives: tuple[ForwardDerivative, ...]
    all_saved_inputs: tuple[SavedAttribute, ...]
    all_saved_outputs: tuple[SavedAttribute, ...]
    available_named_gradients: tuple[str, ...]
    used_named_gradients: tuple[str, ...]
    args_with_derivatives: tuple[CppBinding, ...]
    non_differentiable_arg_names: tuple[str, ...]
    output_differentiability: tuple[bool, ...] | None
    output_differentiability_conditions: tuple[str, ...] | None

    @property
    def has_derivatives(self) -> bool:
        return bool(self.args_with_derivatives)


@dataclass(frozen=True, slots=True)
class KeyedInfo(Record):
    dispatch_key: str
    info: DifferentiabilityInfo


@dataclass(frozen=True, slots=True)
class EntryInfos(Record):
    """The infos of one derivatives entry, keyed (as in torchgen) by the canonical schema.

    `entry_name` is the `name:` of the derivatives.yaml entry they came from;
    `op_prefixes` holds each key's op-name prefix (None where no backward node is made),
    which is all op numbering needs to know of the entry.
    """

    schema: FunctionSchema
    infos: tuple[KeyedInfo, ...]
    entry_name: str
    op_prefixes: tuple[str | None, ...] = ()

    def info_for(self, key: str) -> DifferentiabilityInfo | None:
        return next((k.info for k in self.infos if k.dispatch_key == key), None)

    @property
    def entry_label(self) -> str:
        """How problems name the derivatives.yaml entry (spec.py: entry_label of its text)."""
        return self.entry_name.split("(", 1)[0]


def formula_violation(rule: str, message: str, hint: str, entry: EntryInfos,
                      line_in_entry: int) -> RuleViolation:
    """A fault in one of the entry's formulas found by a later stage (matching, foreach
    synthesis): blamed on that formula, where the user's edit is; the message names the
    native function that exposed it."""
    return RuleViolation(rule, message, hint, line_in_entry=line_in_entry,
                         entry=entry.entry_label, file=SpecFile.DERIVATIVES)


@dataclass(frozen=True, slots=True)
class InfoSummary(Record):
    """What matching, op numbering and view copies read of one entry's infos: a formula edit
    changes none of it, so none of them runs again."""

    schema: str
    signature: str  # signature(strip_default=True), the match tables' key
    functional: bool
    has_default: bool
    has_infos: bool
    op_prefixes: tuple[str | None, ...]
    dispatch_keys: tuple[str, ...] = ()


def summarize_infos(entry: EntryInfos) -> InfoSummary:
    return InfoSummary(str(entry.schema), str(entry.schema.signature(strip_default=True)),
                       entry.schema.kind() is SchemaKind.FUNCTIONAL,
                       entry.info_for(DEFAULT_KEY) is not None, bool(entry.infos),
                       entry.op_prefixes, tuple(k.dispatch_key for k in entry.infos))


# ---------------------------------------------------------------------------------------------
# 1. Lookups


@dataclass(frozen=True, slots=True)
class DerivativeBuckets(Record):
    """load_derivatives' lookups, as positions in a function list: each schema text with its
    function and the bucket of functions sharing that function's signature (buckets hold
    positions in view-grouped order)."""

    schemas: tuple[tuple[str, int, int], ...]  # (schema text, position, bucket number)
    buckets: tuple[tuple[int, ...], ...]
    problems: tuple[Problem, ...] = ()  # a schema declared again (and view grouping's)


def view_ordered_buckets(functions: Sequence[NativeFunction], order: ViewOrder
                         ) -> DerivativeBuckets:
    """The buckets over load_derivatives' view-grouped order, with the problems of that
    grouping too (one record reports both)."""
    buckets = derivative_buckets(functions, order.ordered)
    return replace(buckets, problems=order.problems + buckets.problems)


def derivative_buckets(functions: Sequence[NativeFunction], ordered: Sequence[int]
                       ) -> DerivativeBuckets:
    """load_derivatives.py: load_derivatives' functions_by_signature / functions_by_schema;
    a schema text an earlier function already has is a problem (the first one is kept)."""
    bucket_of: dict[str, int] = {}
    buckets: list[list[int]] = []
    schemas: dict[str, tuple[str, int, int]] = {}
    problems = []
    for position in ordered:
        fn = functions[position]
        bucket = bucket_of.setdefault(str(fn.func.signature()), len(buckets))
        if bucket == len(buckets):
            buckets.append([])
        buckets[bucket].append(position)
        text = str(fn.func)
        if text in schemas:
            problems.append(Problem(SpecFile.NATIVE_FUNCTIONS, str(fn.func.name),
                                    "native.duplicate-schema",
                                    f"the schema {fn.func} is declared twice",
                                    "remove one of the entries"))
        else:
            schemas[text] = (text, position, bucket)
    return DerivativeBuckets(tuple(schemas.values()), tuple(tuple(b) for b in buckets),
                             tuple(problems))


UNKNOWN_SCHEMA = "derivatives.unknown-schema"


def bucket_infos(entry: DerivativeEntry, bucket: Sequence[NativeFunction]) -> EntryInfos:
    """The entry's infos from the signature bucket of the function it names
    (create_differentiability_info's lookups); the schema must be one of the bucket's (else
    the hint names only the bucket's: `unknown_schema` with every function names more)."""
    if not any(str(f.func) == entry.name for f in bucket):
        raise unknown_schema(entry, [known_function(f) for f in bucket])
    return derive_entry_infos(entry, bucket)


def known_function(fn: NativeFunction) -> tuple[str, str, str]:
    """What an unknown schema's hint reads of a function: its schema, name and C++ name."""
    return str(fn.func), str(fn.func.name), cpp_name(fn.func)


def unknown_schema(entry: DerivativeEntry, known: Sequence[tuple[str, str, str]]
                   ) -> RuleViolation:
    """An entry naming no function's schema; the hint names the schemas of its name, or the
    closest function name (`known`: every function, in view order, as `known_function`)."""
    defn_name = entry.defn_name
    candidates = [schema for schema, _, cpp in known if cpp == defn_name]
    hint = ("schemas with this name: " + "; ".join(dict.fromkeys(candidates)) if candidates
            else did_you_mean(entry.op_name, [name for _, name, _ in known])
            or "the schema must match a native_functions.yaml entry exactly")
    return RuleViolation(UNKNOWN_SCHEMA, f"no native function has the schema '{entry.name}'",
                         hint, line_in_entry=0)


# ---------------------------------------------------------------------------------------------
# 2. One entry


def derive_entry_infos(entry: DerivativeEntry, bucket: Sequence[NativeFunction]) -> EntryInfos:
    """All per-key infos of one entry; op names are numbered later by `op_names`."""
    defn_name = entry.defn_name
    canonical = canonical_function(bucket, defn_name)
    bindings = cpp_arguments(canonical.func, canonical.cpp_flags)
    for b in bindings:
        if b.argument is not None and b.name not in canonical.cpp_no_default_args:
            check_list_default(b.argument, canonical.func.has_symint())
    for reserved in ("grad_input_mask", "result"):
        if any(b.name == reserved for b in bindings):
            raise RuleViolation(
                "derivatives.reserved-argument",
                f"{defn_name} has an argument named '{reserved}', which the generated code "
                "uses itself", "rename the argument in native_functions.yaml", line_in_entry=0)
    keyed = []
    for formulas in entry.dispatch:
        if formulas.key != DEFAULT_KEY and formulas.key not in AUTOGRAD_KEYS:
            raise RuleViolation("derivatives.bad-dispatch-key",
                                f"invalid dispatch key '{formulas.key}'",
                                did_you_mean(formulas.key, AUTOGRAD_KEYS) or
                                f"use {DEFAULT_KEY} or one of {', '.join(AUTOGRAD_KEYS)}",
                                line_in_entry=formulas.line_in_entry)
        info = _KeyInfoBuilder(entry, canonical, bindings, formulas).build()
        keyed.append(KeyedInfo(formulas.key, info))
    prefixes = tuple(op_prefix(defn_name, k.dispatch_key) if k.info.has_derivatives else None
                     for k in keyed)
    return EntryInfos(canonical.func, tuple(keyed), entry.name, prefixes)


def canonical_function(bucket: Sequence[NativeFunction], defn_name: str) -> NativeFunction:
    """The bucket's function named like the entry, not out= nor `*functional*`; else the
    in-place one (load_derivatives.py: canonical_function)."""
    for fn in bucket:
        if (not fn.func.is_functional_fn() and not fn.func.is_out_fn()
                and str(fn.func.name.name) == defn_name):
            return fn
    if cpp_name(bucket[0].func) != defn_name + "_":
        raise RuleViolation("derivatives.no-canonical-function",
                            f"no function of this signature is named '{defn_name}' or "
                            f"'{defn_name}_' (found {cpp_name(bucket[0].func)})",
                            "the entry must name the functional or in-place variant",
                            line_in_entry=0)
    return bucket[0]


@dataclass
class _ClassifiedFormulas:
    """One dispatch key's formulas, sorted by what they define."""

    backward: list[Derivative] = field(default_factory=list)
    forward: list[tuple[Formula, ForwardDerivative]] = field(default_factory=list)
    non_differentiable: list[str] = field(default_factory=list)
    differentiable: set[str] = field(default_factory=set)


class _KeyInfoBuilder:
    """The info for one dispatch key of one entry (load_derivatives.py: set_up_derivatives)."""

    def __init__(self, entry: DerivativeEntry, canonical: NativeFunction,
                 bindings: tuple[CppBinding, ...], formulas: DispatchFormulas) -> None:
        self.entry = entry
        self.defn_name = entry.defn_name
        self.fn = canonical
        self.bindings = bindings
        self.formulas = formulas
        self.arg_names = [b.name for b in bindings]

    def build(self) -> DifferentiabilityInfo:
        available = self.available_named_gradients()
        formulas = self.classify(available)
        args_with_derivatives = tuple(b for b in self.bindings if b.name in formulas.differentiable)
        forwards = _ForwardPostprocessor(self, formulas.backward, args_with_derivatives).run(
            formulas.forward)
        check_grad_usage(self.defn_name, formulas.backward, self.formulas)
        derivatives = formulas.backward
        return DifferentiabilityInfo(
            name=self.defn_name, func=self.fn, op=None, derivatives=tuple(derivatives),
            forward_derivatives=tuple(forwards),
            all_saved_inputs=dedup_saved(s for d in derivatives for s in d.saved_inputs),
            all_saved_outputs=dedup_saved(s for d in derivatives for s in d.saved_outputs),
            available_named_gradients=available,
            used_named_gradients=tuple(sorted({g for d in derivatives for g in d.named_gradients})),
            args_with_derivatives=args_with_derivatives,
            non_differentiable_arg_names=tuple(formulas.non_differentiable),
            output_differentiability=self.entry.output_differentiability,
            output_differentiability_conditions=self.entry.output_differentiability_conditions)

    def classify(self, available: tuple[str, ...]) -> _ClassifiedFormulas:
        """Each formula, in sorted-key order, as backward, forward or non_differentiable
        (load_derivatives.py: set_up_derivatives' loop)."""
        result = _ClassifiedFormulas()
        outputs = {r.name for r in self.fn.func.returns}
        for formula in sorted(self.formulas.formulas, key=lambda f: f.names):
            names = formula.split_names()
            ambiguous = [n for n in names if n in self.arg_names and n in outputs]
            if ambiguous:
                raise RuleViolation("derivatives.ambiguous-name",
                                    f"'{ambiguous[0]}' is both an input and a named output of "
                                    f"{self.fn.func.name}", "rename the output in the schema",
                                    line_in_entry=formula.line_in_entry)
            if names[0] not in self.arg_names:
                result.forward.append((formula, self.forward_derivative(formula, names)))
            elif formula.formula.lower().strip() == "non_differentiable":
                result.non_differentiable.extend(names)
            else:
                self.check_inputs(formula, names)
                result.backward.append(self.derivative(formula, names, available))
                result.differentiable.update(names)
        overlap = result.differentiable.intersection(result.non_differentiable)
        if overlap:
            raise RuleViolation("derivatives.overlap",
                                f"{', '.join(sorted(overlap))} has both a formula and "
                                "non_differentiable", "keep one of them",
                                line_in_entry=self.formulas.line_in_entry)
        return result

    def available_named_gradients(self) -> tuple[str, ...]:
        returns = self.fn.func.returns
        flags = self.entry.output_differentiability or (True,) * len(returns)
        return tuple(f"grad_{r.name}" for r, differentiable in zip(returns, flags)
                     if differentiable and r.name is not None and r.type.is_tensor_like())

    def check_inputs(self, formula: Formula, names: tuple[str, ...]) -> None:
        for name in names:
            if name not in self.arg_names:
                raise RuleViolation("derivatives.unknown-input",
                                    f"'{name}' is not an argument of {self.fn.func.name}",
                                    did_you_mean(name, self.arg_names) or
                                    f"arguments: {', '.join(self.arg_names)}",
                                    line_in_entry=formula.line_in_entry)

    def derivative(self, formula: Formula, names: tuple[str, ...],
                   available: tuple[str, ...]) -> Derivative:
        """load_derivatives.py: create_derivative."""
        func = self.fn.func
        flags = self.fn.cpp_flags
        inputs = [(b.formula_name, b.ctype.without_const_ref()) for b in self.bindings]
        outputs = [("result" if n == "self" else n, return_ctype(r, flags).without_const_ref())
                   for n, r in zip(return_names(func), func.returns)]
        try:
            text, saved_inputs = saved_variables(formula.formula, inputs, names)
            text, saved_outputs = saved_variables(text, outputs, names)
        except RuleViolation as violation:
            raise violation.at(formula.line_in_entry) from None
        for i in used_gradient_indices(text):
            if i >= len(func.returns):
                raise RuleViolation("derivatives.grads-out-of-bounds",
                                    f"the formula uses grads[{i}] but {cpp_name(func)} has "
                                    f"{len(func.returns)} output(s)", "index grads from 0",
                                    line_in_entry=formula.line_in_entry)
        named = tuple(sorted(g for g in available if uses_ident(text, g)))
        return Derivative(text, formula.formula, names, saved_inputs, saved_outputs, named,
                          formula.line_in_entry)

    def forward_derivative(self, formula: Formula, names: tuple[str, ...]) -> ForwardDerivative:
        """load_derivatives.py: create_forward_derivative."""
        returns = self.fn.func.returns
        types = [r.type for r in returns if r.name in names]
        if not types and names == ("result",):
            if len(returns) != 1:
                raise self._forward_error(formula, f"'result' names the output, but "
                                          f"{self.fn.func.name} has {len(returns)} outputs",
                                          "use result0, result1, ... or the output names")
            types = [returns[0].type]
        elif not types:
            types = self._numbered_result_types(formula, names)
        if not types:
            outputs = [r.name for r in self.fn.func.returns if r.name]
            raise RuleViolation(
                "derivatives.unknown-formula-key", f"'{names[0]}' is neither an argument nor "
                f"an output of {self.fn.func.name}",
                did_you_mean(names[0], [*self.arg_names, *outputs, "result"]) or
                "backward formulas are keyed by argument names, forward ones by output names",
                line_in_entry=formula.line_in_entry)
        return ForwardDerivative(formula.formula, names, tuple(types),
                                 line_in_entry=formula.line_in_entry)

    def _numbered_result_types(self, formula: Formula, names: tuple[str, ...]) -> list[SchemaType]:
        returns = self.fn.func.returns
        types = []
        for name in names:
            m = re.fullmatch(r"result(\d+)", name)
            if m is None:
                continue
            if int(m.group(1)) >= len(returns):
                raise self._forward_error(formula, f"'{name}' names output {m.group(1)}, but "
                                          f"{self.fn.func.name} has {len(returns)} outputs")
            types.append(returns[int(m.group(1))].type)
        return types

    @staticmethod
    def _forward_error(formula: Formula, message: str, hint: str = "") -> RuleViolation:
        return RuleViolation("derivatives.forward-output", message, hint,
                             line_in_entry=formula.line_in_entry)


# ---------------------------------------------------------------------------------------------
# Saved variables


@dataclass(frozen=True, slots=True)
class _Replacement:
    """An expression the backward node evaluates once at save time instead of saving a tensor.

    `pattern` receives the argument name unescaped and is not left-anchored, as in
    load_derivatives.py: saved_variables' REPLACEMENTS; `anchor` is literal text the pattern
    needs, checked first because almost no formula contains it.
    """

    pattern: str
    anchor: str
    suffix: str
    ctype: CType
    expr: str | None = None
    result: str | None = None


_OPTIONAL_SYMINT_ARRAY = wrap(CForm.OPTIONAL, SYMINT_ARRAY_REF)
_REPLACEMENTS = (
    _Replacement(r"{}.sym_sizes\(\)", "sym_sizes()", "_sym_sizes", SYMINT_ARRAY_REF),
    _Replacement(r"{}->sym_sizes\(\)", "->sym_sizes()", "_sym_sizes_opt", _OPTIONAL_SYMINT_ARRAY,
                 expr="{0}.has_value() ? std::optional<c10::SymIntArrayRef>({0}->sym_sizes()) "
                      ": std::nullopt"),
    _Replacement(r"{}.sym_blocksize\(\)", "sym_blocksize()", "_self_sym_blocksize_opt",
                 _OPTIONAL_SYMINT_ARRAY, expr="at::sparse_csr::getSymIntBlockSize({0})"),
    _Replacement(r"{}.options\(\)", "options()", "_options", TENSOR_OPTIONS),
    _Replacement(r"zeros_like\({}\)", "zeros_like(", "_info", TYPE_AND_SIZE, expr="{0}",
                 result="{0}_info.zeros()"),
    _Replacement(r"{}.sym_size\((-?\w+)\)", "sym_size(", "_sym_argsize_", SYMINT),
    _Replacement(r"{}.numel\(\)", "numel()", "_numel", INT64),
    _Replacement(r"{}.sym_numel\(\)", "sym_numel()", "_sym_numel", SYMINT),
    _Replacement(r"to_args_sizes\({}\)", "to_args_sizes(", "_args_sizes",
                 wrap(CForm.VECTOR, wrap(CForm.VECTOR, INT64))),
    _Replacement(r"to_args_sizes_symint\({}\)", "to_args_sizes_symint(", "_args_sizes_symint",
                 wrap(CForm.VECTOR, wrap(CForm.VECTOR, SYMINT))),
    _Replacement(r"to_args_scalartypes\({}\)", "to_args_scalartypes(", "_args_scalartypes",
                 wrap(CForm.VECTOR, SCALAR_TYPE)),
    _Replacement(r"TensorGeometry\({}\)", "TensorGeometry(", "_geometry", TENSOR_GEOMETRY),
    _Replacement(r"{}.scalar_type\(\)", "scalar_type()", "_scalar_type", SCALAR_TYPE),
    _Replacement(r"{}.dim\(\)", "dim()", "_dim", INT64),
    _Replacement(r"{}.sym_strides\(\)", "sym_strides()", "_sym_strides", SYMINT_ARRAY_REF,
                 expr='strides_or_error({0}, "{0}")'),
    _Replacement(r"{}.layout\(\)", "layout()", "_layout", LAYOUT),
    _Replacement(r"{}.is_conj\(\)", "is_conj()", "_conjugate", BOOL),
)
_OPTIONAL_STRING_VIEW = wrap(CForm.OPTIONAL, STRING_VIEW)
# What the replacements make of an argument `x`: the saved values' names (`x_sym_sizes`; a
# suffix ending in `_` takes the dimension after it) and the functions their patterns call
# with it (`zeros_like(x)`): names a formula may use (pipeline/formulas/names.py)
SAVED_SUFFIXES = tuple(dict.fromkeys(r.suffix for r in _REPLACEMENTS))
REPLACEMENT_CALLEES = tuple(dict.fromkeys(
    name for r in _REPLACEMENTS for name in re.findall(r"([A-Za-z_]\w*)\\\(\{\}", r.pattern)))


class _SavedCollector:
    """The replacement callback for one (argument, replacement) pair: records what is saved."""

    def __init__(self, name: str, rule: _Replacement, saved: list[SavedAttribute]) -> None:
        self.name = name
        self.rule = rule
        self.saved = saved

    def __call__(self, m: re.Match[str]) -> str:
        rule, name = self.rule, self.name
        suffix = rule.suffix
        if m.groups():
            suffix += m.group(1).replace("-", "minus_")
        expr = rule.expr.format(name) if rule.expr is not None else m.group(0)
        self.saved.append(SavedAttribute(name + suffix, rule.ctype, expr))
        return rule.result.format(name) if rule.result is not None else name + suffix


def saved_variables(formula: str, values: Sequence[tuple[str, CType]],
                    var_names: tuple[str, ...]) -> tuple[str, tuple[SavedAttribute, ...]]:
    """The formula rewritten to use saved values, and the values to save, in order
    (load_derivatives.py: saved_variables)."""
    _reject_sizes_and_strides(formula)
    saved: list[SavedAttribute] = []
    for name, ctype in values:
        if name not in formula:
            continue
        for rule in _REPLACEMENTS:
            if rule.anchor not in formula:
                continue
            if rule.suffix == "_sym_strides" and var_names != (name,) and \
                    re.search(rule.pattern.format(name), formula):
                raise RuleViolation(
                    "derivatives.strides", f"{name}.sym_strides() is used in a formula for "
                    f"{', '.join(var_names)}", "sym_strides() is only supported in the formula "
                    "of that same tensor alone")
            formula = re.sub(rule.pattern.format(name), _SavedCollector(name, rule, saved), formula)
        if ctype == _OPTIONAL_STRING_VIEW:
            formula = re.sub(rf"\b{name}\b", f"{name}.has_value() ? std::optional<std::string_view>"
                             f"({name}.value()) : std::nullopt", formula)
        if uses_ident(formula, name):
            saved.append(SavedAttribute(name, ctype, name))
    return formula, tuple(saved)


def _reject_sizes_and_strides(formula: str) -> None:
    if ".sizes()" in formula or "->sizes()" in formula:
        raise RuleViolation("derivatives.sizes", ".sizes() is not supported in derivative formulas",
                            "use the SymInt version, .sym_sizes()")
    if re.search(r"\.size\([-]?\d+\)", formula) or re.search(r"->size\([-]?\d+\)", formula):
        raise RuleViolation("derivatives.sizes", ".size(int) is not supported in derivative formulas",
                            "use the SymInt version, .sym_size(int)")
    if ".strides()" in formula or "->strides()" in formula:
        raise RuleViolation("derivatives.strides", ".strides() is not supported in derivative "
                            "formulas", "use the SymInt version, .sym_strides()")


def dedup_saved(saved: object) -> tuple[SavedAttribute, ...]:
    """First occurrence of each name wins (load_derivatives.py: dedup_vars)."""
    seen: dict[str, SavedAttribute] = {}
    for s in saved:
        seen.setdefault(s.name, s)
    return tuple(seen.values())


def used_gradient_indices(formula: str) -> list[int]:
    return [int(i) for i in re.findall(GRAD_INDEX_REGEX, formula)]


# ---------------------------------------------------------------------------------------------
# Forward derivatives


class _ForwardPostprocessor:
    """Expands auto_element_wise / auto_linear and records which primals and tangents a
    forward formula needs (load_derivatives.py: postprocess_forward_derivatives)."""

    def __init__(self, builder: _KeyInfoBuilder, derivatives: list[Derivative],
                 args_with_derivatives: tuple[CppBinding, ...]) -> None:
        self.builder = builder
        self.fn = builder.fn
        self.defn_name = builder.defn_name
        self.derivatives = derivatives
        self.diff_args = args_with_derivatives

    def run(self, forward: list[tuple[Formula, ForwardDerivative]]) -> list[ForwardDerivative]:
        result = []
        for formula, fwd in forward:
            try:
                result.append(self.process(fwd, len(forward)))
            except RuleViolation as violation:
                raise violation.at(formula.line_in_entry) from None
        return result

    def process(self, fwd: ForwardDerivative, count: int) -> ForwardDerivative:
        text = fwd.formula
        tangents = self.required_inputs(text, "_t")
        if text == "auto_element_wise":
            text, tangents = self.element_wise(fwd, count)
        elif text == "auto_linear":
            text, tangents = self.linear(fwd, count)
        primals = self.required_inputs(text, "_p")
        return replace(fwd, formula=text, required_inputs_fw_grad=tangents,
                       required_inputs_primal=primals)

    def required_inputs(self, formula: str, suffix: str) -> tuple[str, ...]:
        foreach = self.fn.func.name.name.base.startswith("_foreach_")
        needed = set()
        for arg in self.diff_args:
            if arg.type in ("at::TensorList", "const at::ITensorListRef &") and not foreach:
                continue  # functions taking tensor lists handle their tangents themselves
            if uses_ident(formula, arg.name):
                raise RuleViolation(
                    "derivatives.forward-bare-name",
                    f"the forward formula uses '{arg.name}' itself, which is ambiguous",
                    f"use {arg.name}_p for the primal value or {arg.name}_t for the tangent")
            if uses_ident(formula, arg.name + suffix):
                needed.add(arg.name)
        return tuple(sorted(needed))

    def element_wise(self, fwd: ForwardDerivative, count: int) -> tuple[str, tuple[str, ...]]:
        if self.fn.func.kind() is SchemaKind.INPLACE:
            raise RuleViolation("derivatives.auto-element-wise",
                                f"auto_element_wise on the in-place {self.fn.func.name}",
                                "define it on the out-of-place variant")
        if len(self.diff_args) != 1 or count > 1 or len(fwd.var_names) > 1:
            raise RuleViolation("derivatives.auto-element-wise",
                                "auto_element_wise needs exactly one differentiable input and "
                                "one differentiable output",
                                "write the forward formula explicitly, e.g. 'result: self_t * other_p'")
        if len(self.derivatives) != 1:
            raise RuleViolation("derivatives.auto-element-wise",
                                "auto_element_wise reuses the backward formula, but the entry "
                                "defines none for its input",
                                "add the backward formula of the input, or write the forward one")
        name = self.diff_args[0].name
        text = re.sub(IDENT_REGEX.format("grad"), rf"\g<1>{name}_t.conj()\g<2>",
                      self.derivatives[0].original_formula)
        for arg in self.diff_args:
            text = re.sub(IDENT_REGEX.format(arg.name), rf"\g<1>{arg.name}_p\g<2>", text)
        return f"({text}).conj()", tuple(self.builder.arg_names)

    def linear(self, fwd: ForwardDerivative, count: int) -> tuple[str, tuple[str, ...]]:
        if count > 1 or len(fwd.var_names) > 1:
            raise RuleViolation("derivatives.auto-linear",
                                "auto_linear only works for functions with one differentiable output",
                                "write the forward formula of each output explicitly")
        diff_names = [a.name for a in self.diff_args]
        if not diff_names:
            raise RuleViolation("derivatives.auto-linear",
                                "auto_linear needs at least one differentiable input",
                                "add a backward formula for an input, or drop the forward formula")
        args = [n + "_t" if n in diff_names else n for n in self.builder.arg_names]
        name = self.defn_name + ("_symint" if self.fn.func.has_symint() else "")
        if "function" in self.fn.variants:
            return f"at::{name}({', '.join(args)})", tuple(diff_names)
        if "method" not in self.fn.variants:
            raise RuleViolation("derivatives.auto-linear",
                                f"auto_linear needs a function or method variant of {name}",
                                "auto_linear calls the function again; give it 'variants: function'")
        return f"{args[0]}.{name}({', '.join(args[1:])})", tuple(diff_names)


# ---------------------------------------------------------------------------------------------
# Gradient usage


def check_grad_usage(defn_name: str, derivatives: Sequence[Derivative],
                     formulas: DispatchFormulas) -> None:
    """Mistakes that compile but break double backward (load_derivatives.py: check_grad_usage)."""
    uses_grad = any(uses_ident(d.formula, "grad") for d in derivatives)
    grads_uses = sum(len(re.findall(IDENT_REGEX.format("grads"), d.formula)) for d in derivatives)
    indices = [i for d in derivatives for i in used_gradient_indices(d.formula)]
    uses_named = any(d.named_gradients for d in derivatives)
    line = formulas.line_in_entry
    if grads_uses < len(indices):
        raise RuleViolation("derivatives.grads-usage",
                            "grads[...] is used in a way the generator cannot count",
                            "refer to gradients as grads[0], grads[1], ... or grad",
                            line_in_entry=line)
    if uses_grad and grads_uses > 0:
        raise RuleViolation("derivatives.grads-usage",
                            f"the formulas of {defn_name} mix 'grad' and 'grads'",
                            "replace 'grad' with 'grads[0]'", line_in_entry=line)
    if grads_uses == len(indices) and set(indices) == {0}:
        raise RuleViolation("derivatives.grads-usage",
                            f"the formulas of {defn_name} only use grads[0]",
                            "if the first output is the only differentiable one, write 'grad'",
                            line_in_entry=line)
    if uses_named and (uses_grad or grads_uses > 0):
        raise RuleViolation("derivatives.grads-usage",
                            f"the formulas of {defn_name} mix grad_<output> with grad or grads[i]",
                            "use one way of naming gradients", line_in_entry=line)


# ---------------------------------------------------------------------------------------------
# 3. Op names


@functools.cache
def op_prefix(defn_name: str, dispatch_key: str) -> str:
    """`max_pool2d` → `MaxPool2DBackward` (+ key infix); load_derivatives.py: _create_op_prefix."""
    camel = "".join(part.title() for part in defn_name.split("_"))
    prefix = (camel + "Backward").replace("ForwardBackward", "Backward")
    return prefix if dispatch_key == DEFAULT_KEY else prefix + dispatch_key


def assign_op_names(prefixes: Sequence[tuple[str | None, ...]]) -> list[tuple[str | None, ...]]:
    """Each entry's op names from its op prefixes, one per dispatch key: one counter per
    prefix over the whole file, in file order, counting only infos that get a backward node."""
    counter: Counter[str] = Counter()
    names = []
    for entry_prefixes in prefixes:
        ops = []
        for prefix in entry_prefixes:
            if prefix is None:
                ops.append(None)
                continue
            ops.append(f"{prefix}{counter[prefix]}")
            counter[prefix] += 1
        names.append(tuple(ops))
    return names


@dataclass(frozen=True, slots=True)
class OpNames(Record):
    """Each entry's numbered op names (one per dispatch key, None where no node is made)."""

    names: tuple[tuple[str | None, ...], ...]


def op_names(summaries: Sequence[InfoSummary]) -> OpNames:
    """The file-wide numbering (of entries with distinct schemas: see duplicate_entries)."""
    return OpNames(tuple(assign_op_names([s.op_prefixes for s in summaries])))


def duplicate_entries(summaries: Sequence[InfoSummary]) -> tuple[tuple[int, int, str], ...]:
    """Entries for a schema an earlier entry has: (position, the first one's position, the
    function's name). torchgen keeps both; here the first one counts."""
    first: dict[str, int] = {}
    pairs = []
    for position, summary in enumerate(summaries):
        earlier = first.setdefault(summary.schema, position)
        if earlier != position:
            pairs.append((position, earlier, summary.schema.split("(", 1)[0]))
    return tuple(pairs)


def duplicate_entry(op_name: str, function: str, line: int, first_line: int) -> Problem:
    """A second entry for one function, at its own line."""
    return Problem(SpecFile.DERIVATIVES, op_name, "derivatives.duplicate",
                   f"a second entry for {function} (the first is at line {first_line}); "
                   "torchgen would silently keep both", "merge the two entries into one",
                   line=line)


def with_op_names(entry: EntryInfos, ops: tuple[str | None, ...]) -> EntryInfos:
    """The entry's infos carrying their numbered op names."""
    keyed = tuple(KeyedInfo(k.dispatch_key, replace(k.info, op=op))
                  for k, op in zip(entry.infos, ops))
    return replace(entry, infos=keyed)


# ---------------------------------------------------------------------------------------------
# 4. View copies


def view_copy_infos(entries: Sequence[EntryInfos], groups: Sequence[ViewGroup]) -> list[EntryInfos]:
    """Infos for `{view}_copy` functions whose view has a formula and who have none of their
    own, in the order of the view's entry (load_derivatives.py: add_view_copy_derivatives)."""
    pairs = [(str(g.view.func), None if g.view_copy is None else str(g.view_copy.func))
             for g in groups]
    plan = view_copy_plan([(str(e.schema), bool(e.infos)) for e in entries], pairs)
    return [copy_entry(entries[at], groups[group].view_copy) for at, group in plan]


@dataclass(frozen=True, slots=True)
class ViewCopies(Record):
    """The view-copy infos to make: (view's entry position, copy function position); and the
    entries for a schema an earlier entry has (`duplicate_entries`), to be left out first."""

    copies: tuple[tuple[int, int], ...]
    duplicates: tuple[tuple[int, int, str], ...] = ()


def view_copies(summaries: Sequence[InfoSummary], schemas: Sequence[str],
                groups: Sequence[tuple[int, int | None]]) -> ViewCopies:
    """view_copy_plan over summaries, with view groups as (view, copy) positions in the
    function list whose schema texts are `schemas`."""
    pairs = [(schemas[view], None if copy is None else schemas[copy]) for view, copy in groups]
    plan = view_copy_plan([(s.schema, s.has_infos) for s in summaries], pairs)
    return ViewCopies(tuple((at, groups[group][1]) for at, group in plan),  # type: ignore[misc]
                      duplicate_entries(summaries))


def view_copy_plan(entries: Sequence[tuple[str, bool]],
                   groups: Sequence[tuple[str, str | None]]) -> list[tuple[int, int]]:
    """(entry position, group position) of each copy to make, in entry order, from each
    entry's (schema, has infos) and each view group's (view schema, copy schema)."""
    position = {schema: i for i, (schema, _) in enumerate(entries)}
    found = []
    for number, (view, copy) in enumerate(groups):
        if copy is None or copy in position:
            continue
        # an entry's infos all share its canonical function, so the schema finds the view's entry
        at = position.get(view)
        if at is not None and entries[at][1]:
            found.append((at, number))
    return sorted(found, key=lambda f: f[0])


def copy_entry(entry: EntryInfos, copy: NativeFunction) -> EntryInfos:
    keyed = tuple(KeyedInfo(k.dispatch_key, view_copy_info(k.info, copy)) for k in entry.infos)
    return EntryInfos(copy.func, keyed, entry.entry_name, entry.op_prefixes)


def view_copy_info(info: DifferentiabilityInfo, copy: NativeFunction) -> DifferentiabilityInfo:
    """api/autograd.py: create_view_copy_from_view_derivative — the name gains `_copy.`"""
    base, *rest = info.name.split(".", 2)
    return replace(info, name=f"{base}_copy." + ".".join(rest), func=copy,
                   op=None if info.op is None else f"{info.op}_copy")
