"""Backward nodes: what the templates need to print one autograd Node, from its info alone.

A `BackwardNode` is derived from one DifferentiabilityInfo with derivatives, so it can be
rendered (and cached) per node. It classifies each saved value by how the node stores it
and how Python reads it back (PA/gen_autograd_functions.py: process_function's save_var);
the templates decide every C++ spelling.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from gradshard.pipeline.parse.differentiability import (DifferentiabilityInfo, EntryInfos,
                                                        SavedAttribute, uses_ident)
from gradshard.pipeline.problems import RuleViolation, SpecError, SpecFile
from gradshard.pipeline.records import Record
from gradshard.pipeline.releases import Release
# ops whose backward cannot be traced
from gradshard.pipeline.render.kernel_lists import VIEW_FUNCTIONS

__all__ = ["BackwardNode", "NodeNames", "entry_nodes", "node_names"]

# C++ argument types that bind a list of tensors (api/types/types.py: TENSOR_LIST_LIKE_CTYPES).
TENSOR_LIST_LIKE = frozenset({"at::TensorList", "const c10::List<::std::optional<at::Tensor>> &",
                              "const at::ITensorListRef &"})


class Storage(enum.Enum):
    """How a node member holds a saved value."""

    VARIABLE = "variable"                      # SavedVariable
    VARIABLE_LIST = "variable_list"            # std::vector<SavedVariable>, unpack_list
    OPTIONAL_VARIABLE_LIST = "optional_variable_list"  # ... unpack_opt_list
    INT_VECTOR = "int_vector"
    SYMINT_VECTOR = "symint_vector"
    OPTIONAL_INT_ARRAY = "optional_int_array"
    OPTIONAL_SYMINT_ARRAY = "optional_symint_array"
    OPTIONAL_DOUBLE_ARRAY = "optional_double_array"
    INT64 = "int64"
    SYMINT = "symint"
    STRING = "string"
    OPTIONAL_STRING = "optional_string"
    SCALAR_VECTOR = "scalar_vector"
    VALUE = "value"                            # any other owning type, stored as is


class Getter(enum.Enum):
    """Which Python getter body reads the member back (none: no getter at all)."""

    NONE = "none"
    VARIABLE = "variable"
    VARIABLE_LIST = "variable_list"
    INT_ARRAY = "int_array"
    SYMINT_ARRAY = "symint_array"
    OPTIONAL_INT_ARRAY = "optional_int_array"
    OPTIONAL_SYMINT_ARRAY = "optional_symint_array"
    OPTIONAL_DOUBLE_ARRAY = "optional_double_array"
    INT64 = "int64"
    SYMINT = "symint"
    STRING = "string"
    OPTIONAL_STRING = "optional_string"
    SCALAR_VECTOR = "scalar_vector"
    OPTIONAL_INT64 = "optional_int64"
    OPTIONAL_SYMINT = "optional_symint"
    DOUBLE = "double"
    OPTIONAL_DOUBLE = "optional_double"
    BOOL = "bool"
    SCALAR = "scalar"
    OPTIONAL_SCALAR = "optional_scalar"


# (saved C++ type) → (storage, getter); outputs of type at::Scalar are stored as variables.
_BY_TYPE = {
    "at::Tensor": (Storage.VARIABLE, Getter.VARIABLE),
    "::std::optional<at::Tensor>": (Storage.VARIABLE, Getter.VARIABLE),
    "at::TensorList": (Storage.VARIABLE_LIST, Getter.VARIABLE_LIST),
    "at::ITensorListRef": (Storage.VARIABLE_LIST, Getter.VARIABLE_LIST),
    "::std::vector<at::Tensor>": (Storage.VARIABLE_LIST, Getter.VARIABLE_LIST),
    "c10::List<::std::optional<at::Tensor>>": (Storage.OPTIONAL_VARIABLE_LIST, Getter.VARIABLE_LIST),
    "at::IntArrayRef": (Storage.INT_VECTOR, Getter.INT_ARRAY),
    "c10::SymIntArrayRef": (Storage.SYMINT_VECTOR, Getter.SYMINT_ARRAY),
    "at::OptionalIntArrayRef": (Storage.OPTIONAL_INT_ARRAY, Getter.OPTIONAL_INT_ARRAY),
    "::std::optional<at::IntArrayRef>": (Storage.OPTIONAL_INT_ARRAY, Getter.OPTIONAL_INT_ARRAY),
    "at::OptionalSymIntArrayRef": (Storage.OPTIONAL_SYMINT_ARRAY, Getter.OPTIONAL_SYMINT_ARRAY),
    "::std::optional<c10::SymIntArrayRef>": (Storage.OPTIONAL_SYMINT_ARRAY,
                                             Getter.OPTIONAL_SYMINT_ARRAY),
    "::std::optional<at::ArrayRef<double>>": (Storage.OPTIONAL_DOUBLE_ARRAY,
                                              Getter.OPTIONAL_DOUBLE_ARRAY),
    "int64_t": (Storage.INT64, Getter.INT64),
    "c10::SymInt": (Storage.SYMINT, Getter.SYMINT),
    "c10::string_view": (Storage.STRING, Getter.STRING),
    "::std::optional<c10::string_view>": (Storage.OPTIONAL_STRING, Getter.OPTIONAL_STRING),
    "at::ArrayRef<at::Scalar>": (Storage.SCALAR_VECTOR, Getter.SCALAR_VECTOR),
}
# Other owning types that have a Python getter (gen_autograd_functions.py: MISC_GETTER_DEFS).
_VALUE_GETTERS = {
    "::std::optional<int64_t>": Getter.OPTIONAL_INT64,
    "::std::optional<c10::SymInt>": Getter.OPTIONAL_SYMINT,
    "double": Getter.DOUBLE,
    "::std::optional<double>": Getter.OPTIONAL_DOUBLE,
    "bool": Getter.BOOL,
    "at::Scalar": Getter.SCALAR,
    "::std::optional<at::Scalar>": Getter.OPTIONAL_SCALAR,
}


@dataclass(frozen=True, slots=True)
class SavedSlot(Record):
    """One saved value as a node member."""

    name: str
    cpp_type: str
    storage: Storage
    getter: Getter
    is_output: bool


@dataclass(frozen=True, slots=True)
class InputSlot(Record):
    """A differentiable input; a tensor list also stores its length."""

    name: str
    is_list: bool


@dataclass(frozen=True, slots=True)
class DerivativeBlock(Record):
    """One formula of the backward body, computing the gradients of `var_names`."""

    var_names: tuple[str, ...]
    formula: str
    checks_any_grad_defined: bool = False


@dataclass(frozen=True, slots=True)
class BackwardNode(Record):
    op: str
    name: str
    superclass: str
    inputs: tuple[InputSlot, ...]
    saved: tuple[SavedSlot, ...]
    retain_variables: bool
    single_grad: bool
    named_gradients: tuple[tuple[str, int], ...]
    derivatives: tuple[DerivativeBlock, ...]
    foreach: bool
    # how a saved output names its node when unpacked: shared_from_this() (Release: 2.12)
    shared_from_this: bool = False

    @property
    def any_grad_defined(self) -> bool:
        return any(d.checks_any_grad_defined for d in self.derivatives)


def backward_node(info: DifferentiabilityInfo, release: Release) -> BackwardNode:
    """The node for an info with derivatives (gen_autograd_functions.py: process_function)."""
    inputs = tuple(InputSlot(a.name, a.type in TENSOR_LIST_LIKE) for a in info.args_with_derivatives)
    input_names = {slot.name for slot in inputs}
    saved = tuple(saved_slot(info, s, False) for s in _by_name(info.all_saved_inputs))
    saved += tuple(saved_slot(info, s, True) for s in _by_name(info.all_saved_outputs))
    single_grad = any(uses_ident(d.formula, "grad") for d in info.derivatives)
    named = () if single_grad else tuple(
        (g, info.available_named_gradients.index(g)) for g in sorted(info.used_named_gradients))
    blocks = tuple(_derivative_block(info, d.formula, d.var_names, input_names)
                   for d in info.derivatives)
    return BackwardNode(
        op=info.op, name=info.name,
        superclass="Node" if info.name in VIEW_FUNCTIONS else "TraceableFunction",
        inputs=inputs, saved=saved,
        retain_variables=any(uses_ident(d.formula, "retain_variables") for d in info.derivatives),
        single_grad=single_grad, named_gradients=named, derivatives=blocks,
        foreach=info.name.startswith("_foreach_"),
        shared_from_this=release.saved_outputs_shared_from_this)


@dataclass(frozen=True, slots=True)
class NodeNames(Record):
    """The nodes an entry's infos make: op names (MulBackward0) and info names (the
    python_functions shard key), in dispatch-key order."""

    ops: tuple[str, ...]
    names: tuple[str, ...]


def entry_nodes(entry: EntryInfos, release: Release) -> tuple[BackwardNode, ...]:
    """The nodes of an entry's infos with derivatives (get_infos_with_derivatives_list, in
    dispatch-key order); a node that cannot be built is a problem of the entry, one per info."""
    nodes, problems = [], []
    for info in with_derivatives(entry):
        try:
            nodes.append(backward_node(info, release))
        except RuleViolation as violation:
            problems.append(violation.to_problem(SpecFile.DERIVATIVES, entry.entry_label))
    if problems:
        raise SpecError(problems)
    return tuple(nodes)


def with_derivatives(entry: EntryInfos) -> list[DifferentiabilityInfo]:
    """The infos of an entry that get a backward node (get_infos_with_derivatives_list)."""
    return [k.info for k in entry.infos if k.info.has_derivatives]


def node_names(entry: EntryInfos) -> NodeNames:
    infos = with_derivatives(entry)
    return NodeNames(tuple(str(i.op) for i in infos), tuple(i.name for i in infos))


def _by_name(saved: tuple[SavedAttribute, ...]) -> list[SavedAttribute]:
    return sorted(saved, key=lambda s: s.name)


def saved_slot(info: DifferentiabilityInfo, saved: SavedAttribute, is_output: bool) -> SavedSlot:
    cpp_type = str(saved.ctype)
    if cpp_type == "at::Scalar" and is_output:
        return SavedSlot(saved.name, cpp_type, Storage.VARIABLE, Getter.VARIABLE, True)
    if cpp_type == "::std::vector<at::Tensor>" and not (
            info.func.func.name.name.base.startswith("_foreach") and is_output):
        raise RuleViolation("render.saved-tensor-vector",
                            f"{info.op} saves '{saved.name}' as std::vector<Tensor>, which only "
                            "the outputs of foreach functions may be",
                            "save the tensors as an input or output of the function instead")
    if cpp_type in _BY_TYPE:
        storage, getter = _BY_TYPE[cpp_type]
        return SavedSlot(saved.name, cpp_type, storage, getter, is_output)
    _check_owning(info, saved, cpp_type)
    return SavedSlot(saved.name, cpp_type, Storage.VALUE,
                     _VALUE_GETTERS.get(cpp_type, Getter.NONE), is_output)


def _check_owning(info: DifferentiabilityInfo, saved: SavedAttribute, cpp_type: str) -> None:
    lowered = cpp_type.lower()
    if "ref" in lowered or "view" in lowered or "*" in cpp_type or "&" in cpp_type:
        raise RuleViolation("render.non-owning-saved-value",
                            f"{info.op} would save '{saved.name}' as {cpp_type}, which looks like "
                            "a non-owning reference", "save a value the node can own, or extend "
                            "the storage rules for this type")


def _derivative_block(info: DifferentiabilityInfo, formula: str, var_names: tuple[str, ...],
                      inputs: set[str]) -> DerivativeBlock:
    for name in var_names:
        if name not in inputs:
            raise RuleViolation("render.unknown-input",
                                f"{info.op} has a formula for '{name}', which is not one of its "
                                "differentiable inputs", "check the formula's names")
    if len(var_names) != 1 or "not_implemented" in formula:
        return DerivativeBlock(var_names, formula)
    arg = next(a for a in info.args_with_derivatives if a.name == var_names[0])
    if arg.argument is not None and str(arg.argument.type) in ("Tensor", "Tensor?"):
        # a single plain tensor input supports undefined gradients
        return DerivativeBlock(var_names, f"any_grad_defined ? ({formula}) : Tensor()", True)
    return DerivativeBlock(var_names, formula)
