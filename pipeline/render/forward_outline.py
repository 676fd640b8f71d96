"""Forward formulas compiled out of their kernels, for the compile layout only.

A kernel unit includes VariableType.cpp's whole head; compiling it costs ~3 s before its first
kernel (GCC instantiates the headers' pending templates in every unit, PCH or not), and its
kernels' inline code ~2 s more. An edited forward formula would pay all of it. So in the
compile layout each forward formula whose every name is known is a function of its own, in a
forward unit that needs only FunctionsManual.h (pipeline/layout/compile_layout.py:
forward_shard_source), and the kernel calls it: a forward-formula edit recompiles that small
unit, not the kernels. VariableType's files print the formula inline, as torchgen does.

A formula is outlined when each name it uses that the kernel defines is one of the values
below, whose C++ types are known: the kernel's parameters (as declared), its outputs (as the
call returned them), the tangents and primals the formula unpacked (at::Tensor), all by
reference, and, per element of a foreach op, `i`. A formula naming any other local of the kernel stays inline.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gradshard.pipeline.records import Record
from gradshard.pipeline.render.variable_type import Formal, ForwardFormula, VariableKernel

__all__ = ["ForwardFunction", "formula_names", "outline_forward"]

# the kernel's unpacked tangents and primals are non-const locals, which a formula may pass
# where at::Tensor & is taken (`at::_index_put_impl_(self_t, …)`): so are the parameters
_TENSOR = "at::Tensor &"
# A string or character literal (its names are no names), then an identifier with what
# precedes it: a member (`.x`, `->x`) or qualified name (`::x`) is no local.
_LITERAL = re.compile(r'"(?:[^"\\\n]|\\.)*"|\'(?:[^\'\\\n]|\\.)*\'')
_NAME = re.compile(r"(\.|->|::)?\s*\b([A-Za-z_]\w*)")
# Locals of every kernel (templates/codegen/variable_type.j2) a formula cannot be given: the unpacked
# arguments (`self_`) and the kernel's own. (`_trilinear(…)` is at::_trilinear: no local.)
_KERNEL_LOCALS = frozenset({"ks", "grad_fn", "grad_fns", "original_self", "original_selfs",
                            "_tmp"})
_KERNEL_LOCAL_PATTERN = re.compile(r"_any_.*|.*_|.*_new_fw_grad_opts?|.*__(storage|impl)_saved")


@dataclass(frozen=True, slots=True)
class ForwardFunction(Record):
    """One forward formula as a function (`name`, in the op's forward namespace) of the
    values it uses. Where torchgen's kernel assigns `target = <formula>;`, the compile
    layout's passes `target` to the function, which makes the same assignment to it under
    the name `slot` (the kernel's own, which no formula may use)."""

    name: str
    grad_type: str  # as ForwardFormula's: tensor, tuple, vector
    arity: int
    params: tuple[Formal, ...]
    formula: str
    target: str
    slot: str


def outline_forward(kernel: VariableKernel) -> tuple[ForwardFunction, ...]:
    """The kernel's forward formulas that can be compiled out of it, in its order."""
    found = []
    for number, formula in enumerate(kernel.forward_formulas):
        params = formula_params(kernel, formula)
        if params is None:
            continue
        slot = f"{formula.outputs}_new_fw_grad_opt"  # a name no outlined formula uses
        target = slot + ("s[i]" if formula.per_element else "")
        found.append(ForwardFunction(f"{kernel.wrapper}_forward_{number}", formula.grad_type,
                                     formula.arity, params, formula.formula, target, slot))
    return tuple(found)


def formula_params(kernel: VariableKernel, formula: ForwardFormula) -> tuple[Formal, ...] | None:
    """The values the formula uses, in the kernel's order (parameters, outputs, unpacked
    values), not the formula's: an edit using the same values leaves the kernel's call as it
    is. None when the formula names a local of the kernel whose type is not known here."""
    known = _known_values(kernel, formula)
    used = set()
    for name in formula_names(formula.formula):
        if name in known:
            used.add(name)
        elif name in _KERNEL_LOCALS or _KERNEL_LOCAL_PATTERN.fullmatch(name):
            return None
    return tuple(Formal(type_, name) for name, type_ in known.items() if name in used)


def formula_names(formula: str) -> list[str]:
    """The unqualified names a C++ expression uses (not members, not qualified names)."""
    text = _LITERAL.sub(" ", formula)
    return [m[2] for m in _NAME.finditer(text) if not m[1]]


def _known_values(kernel: VariableKernel, formula: ForwardFormula) -> dict[str, str]:
    """Each value the formula may use and its parameter type; inner scopes last, as the
    kernel's own locals hide its parameters."""
    known = {f.name: f.type for f in kernel.formals}
    known.update((name, f"{type_} &") for name, type_ in zip(kernel.ties, kernel.tie_types))
    for value in formula.inputs:
        if value.tangent:
            known.update((value.name + suffix, _TENSOR) for suffix in ("_t_raw", "_tensor", "_t"))
        if value.primal:
            known[value.name + "_p"] = _TENSOR
    if formula.per_element:
        known["i"] = "size_t"  # c10::irange over a vector's size()
    return known
