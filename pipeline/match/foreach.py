"""Foreach synthesis: derivative infos for `_foreach_*` ops from their per-tensor reference op.

An out-of-place foreach op without its own derivatives.yaml entry borrows the formulas of the
op it applies per tensor (`_foreach_add.List` → `add.Tensor`): gradients and results are
indexed per tensor, saved arguments become whole lists, and the node is named
`Foreach{ref op}{overload}` (api/autograd.py: gen_foreach_derivativeinfo). In-place foreach
ops use the reference infos unchanged.

The rewriting is plain substring replacement, exactly as torchgen does it; that is why some
foreach ops (`_foreach_div.List`…) are spelled out in derivatives.yaml instead.
"""

from __future__ import annotations

from gradshard.pipeline.cpp import TENSOR_LIST, CppBinding, argument_ctype
from gradshard.pipeline.parse.derivatives import DEFAULT_KEY
from gradshard.pipeline.parse.differentiability import (Derivative, DifferentiabilityInfo,
                                                        EntryInfos, ForwardDerivative, KeyedInfo,
                                                        SavedAttribute, formula_violation)
from gradshard.pipeline.parse.native import NativeFunction
from gradshard.pipeline.problems import RuleViolation
from gradshard.pipeline.schema import TENSOR, Argument, FunctionSchema, SchemaKind, TypeForm

__all__ = ["borrowed_infos", "is_foreach", "is_reference_for", "reference_without_default",
           "searches_non_functional", "synthesized_infos"]

# Foreach ops whose reference is an in-place op (api/autograd.py: _foreach_with_inplace_ref).
INPLACE_REFERENCE = frozenset({"_foreach_zero_"})
# Foreach ops whose plain Tensor argument broadcasts (_foreach_with_tensor_overload).
TENSOR_OVERLOADS = frozenset({"_foreach_add.Tensor", "_foreach_mul.Tensor", "_foreach_div.Tensor"})
# Foreach ops without the reference's alpha argument (_skip_argument_len_check).
ARGUMENT_COUNT_UNCHECKED = frozenset({
    "_foreach_add.Scalar", "_foreach_add_.Scalar", "_foreach_add.ScalarList",
    "_foreach_add_.ScalarList", "_foreach_sub.Scalar", "_foreach_sub_.Scalar",
    "_foreach_sub.ScalarList", "_foreach_sub_.ScalarList",
})


def is_foreach(fn: NativeFunction) -> bool:
    return fn.func.name.name.base.startswith("_foreach_")


def is_reference_for(func: FunctionSchema, reference: FunctionSchema) -> bool:
    """Whether `reference` (a signature) is the per-tensor op of the foreach schema `func`
    (api/autograd.py: is_reference_for_foreach)."""
    name = str(func.name)
    if func.name.name.base.split("_foreach_")[-1] != reference.name.name.base:
        return False
    if reference.name.name.inplace and name not in INPLACE_REFERENCE:
        return False
    mine, theirs = func.arguments.non_out, reference.arguments.non_out
    if name not in ARGUMENT_COUNT_UNCHECKED and len(mine) != len(theirs):
        return False
    return all(ref.type in (arg.type, arg.type.elem) for arg, ref in zip(mine, theirs))


def searches_non_functional(func: FunctionSchema) -> bool:
    """`_foreach_zero_` may borrow from an in-place reference (find_info's second table)."""
    return func.kind() is SchemaKind.INPLACE and str(func.name) in INPLACE_REFERENCE


def reference_without_default(func: FunctionSchema, reference: str) -> RuleViolation:
    return RuleViolation(
        "foreach.reference-without-default",
        f"{func.name} would borrow the formulas of {reference}, whose entry has no Default "
        "dispatch key", f"add a Default formula set to {reference}'s entry")


def borrowed_infos(reference: EntryInfos) -> EntryInfos:
    """An in-place foreach op uses its reference's Default info as it is."""
    info = reference.info_for(DEFAULT_KEY)
    assert info is not None  # the match plan only borrows from entries with a Default key
    return EntryInfos(info.func.func, (KeyedInfo(DEFAULT_KEY, info),), reference.entry_name)


def synthesized_infos(fn: NativeFunction, signature: FunctionSchema,
                      reference: EntryInfos) -> EntryInfos:
    """The infos of an out-of-place foreach op, rewritten from its reference's Default info
    (api/autograd.py: gen_foreach_derivativeinfo)."""
    info = reference.info_for(DEFAULT_KEY)
    assert info is not None
    synthesized = _ForeachSynthesis(fn, signature, reference, info).info()
    return EntryInfos(fn.func, (KeyedInfo(DEFAULT_KEY, synthesized),), reference.entry_name,
                      (None,))


class _ForeachSynthesis:
    def __init__(self, fn: NativeFunction, signature: FunctionSchema, entry: EntryInfos,
                 reference: DifferentiabilityInfo) -> None:
        self.fn = fn
        self.entry = entry  # the reference's derivatives.yaml entry, blamed for its formulas
        self.reference = reference
        mine = fn.func.arguments.non_out
        self.renamed = {ref.name: arg.name for arg, ref in zip(mine, signature.arguments.non_out)}
        self.argument = {arg.name: arg for arg in mine}

    def info(self) -> DifferentiabilityInfo:
        fn, reference = self.fn, self.reference
        derivatives = tuple(self.derivative(d) for d in reference.derivatives)
        var_names = {n for d in derivatives for n in d.var_names}
        flags = fn.cpp_flags
        args = tuple(CppBinding(a.name, argument_ctype(a.type, mutable=a.is_write, flags=flags,
                                                       symint=False), a, a.name)
                     for a in fn.func.arguments.non_out if a.name in var_names)
        return DifferentiabilityInfo(
            name=fn.func.name.name.base, func=fn,
            op=f"Foreach{reference.op}{fn.func.name.overload}", derivatives=derivatives,
            forward_derivatives=tuple(self.forward(f) for f in reference.forward_derivatives),
            all_saved_inputs=_unique(s for d in derivatives for s in d.saved_inputs),
            all_saved_outputs=_unique(s for d in derivatives for s in d.saved_outputs),
            available_named_gradients=(), used_named_gradients=(),
            args_with_derivatives=args, non_differentiable_arg_names=(),
            output_differentiability=None, output_differentiability_conditions=None)

    def derivative(self, derivative: Derivative) -> Derivative:
        formula = derivative.formula.replace("grad", "grads[i]").replace("result", "result[i]")
        saved_inputs = []
        for saved in derivative.saved_inputs:
            formula, attribute = self.saved_input(formula, saved, derivative.line_in_entry)
            saved_inputs.append(attribute)
        saved_outputs = tuple(self.saved_output(s, derivative.line_in_entry)
                              for s in derivative.saved_outputs)
        var_names = tuple(self.renamed[n] for n in derivative.var_names)
        return Derivative(formula, derivative.formula, var_names, tuple(saved_inputs),
                          saved_outputs, line_in_entry=derivative.line_in_entry)

    def saved_input(self, formula: str, saved: SavedAttribute,
                    line_in_entry: int) -> tuple[str, SavedAttribute]:
        """The reference's saved value becomes the whole foreach argument, indexed per tensor
        (gen_foreach_derivativeinfo's map_refarg2foreacharg lookup, a KeyError there)."""
        referenced = saved.expr.split(".")[0]
        if referenced not in self.renamed:
            raise formula_violation(
                "foreach.unmappable-saved-value",
                f"{self.fn.func.name} cannot reuse the saved value '{saved.expr}' of "
                f"{self.reference.func.func.name}'s formula",
                f"{self.fn.func.name} reuses this formula per tensor and can only map saved "
                "values of the form 'argument' or 'argument.method()'; change the formula, or "
                f"give {self.fn.func.name} its own entry",
                self.entry, line_in_entry)
        name = self.renamed[referenced]
        argument = self.argument[name]
        indexed = name + "[i]" if argument.type.form is TypeForm.LIST else name
        formula = formula.replace(saved.name, saved.expr.replace(referenced, indexed))
        ctype = argument_ctype(argument.type, mutable=argument.is_write, flags=self.fn.cpp_flags,
                               symint=False)
        return formula, SavedAttribute(name, ctype.without_const_ref(), name)

    def saved_output(self, saved: SavedAttribute, line_in_entry: int) -> SavedAttribute:
        if saved.name != "result":
            raise formula_violation(
                "foreach.unmappable-saved-value",
                f"{self.fn.func.name} cannot reuse the saved output '{saved.name}' of "
                f"{self.reference.func.func.name}'s formula; only 'result' maps to the "
                "foreach results",
                f"change the formula, or give {self.fn.func.name} its own entry",
                self.entry, line_in_entry)
        return SavedAttribute("result", TENSOR_LIST, "result")

    def forward(self, forward: ForwardDerivative) -> ForwardDerivative:
        formula = forward.formula.replace("result", "result[i]")
        names, types = list(forward.var_names), list(forward.var_types)
        tangents = list(forward.required_inputs_fw_grad or ())
        primals = list(forward.required_inputs_primal or ())
        for arg, ref in zip(self.fn.func.arguments.non_out,
                            self.reference.func.func.arguments.non_out):
            formula = self.forward_formula(formula, arg, ref)
            for i, name in enumerate(names):
                if name == ref.name:
                    names[i], types[i] = arg.name, arg.type
            tangents = [arg.name if n == ref.name else n for n in tangents]
            primals = [arg.name if n == ref.name else n for n in primals]
        return ForwardDerivative(formula, tuple(names), tuple(types), tuple(tangents),
                                 tuple(primals), forward.required_original_self_value,
                                 forward.is_reusing_outplace_formula, forward.line_in_entry)

    def forward_formula(self, formula: str, arg: Argument, ref: Argument) -> str:
        if arg.type.form is TypeForm.LIST and not arg.type.is_tensor_like():
            return formula.replace(ref.name, arg.name + "[i]")
        if arg.type.is_tensor_like():
            if arg.type.form is not TypeForm.LIST and not (
                    arg.type == TENSOR and str(self.fn.func.name) in TENSOR_OVERLOADS):
                raise RuleViolation(
                    "foreach.tensor-argument",
                    f"{self.fn.func.name} takes '{arg.name}' as {arg.type}, which its "
                    "reference's forward formula cannot be applied to",
                    "foreach tensor arguments must be lists (Tensor[])")
            for suffix in ("_p", "_t"):
                if ref.name + suffix in formula:
                    formula = formula.replace(ref.name + suffix, arg.name + suffix)
            return formula
        return formula.replace(ref.name, arg.name) if arg.name != ref.name else formula


def _unique(saved: object) -> tuple[SavedAttribute, ...]:
    """torchgen keeps these in a set; its renderers sort by name, so any order will do —
    sorting keeps records canonical."""
    return tuple(sorted(set(saved), key=lambda s: (s.name, str(s.ctype), s.expr)))
