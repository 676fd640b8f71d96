"""Plain-JSON descriptions of parse records, for `show --json` and for comparing with torchgen.

The shapes match tests/torchgen_oracle.py's facts field for field, so the differential test
compares exactly what users see.
"""

from __future__ import annotations

from gradshard.pipeline.match.match_infos import FunctionMatch
from gradshard.pipeline.parse.derivatives import DerivativeEntry
from gradshard.pipeline.parse.differentiability import (DifferentiabilityInfo, EntryInfos,
                                                        ForwardDerivative, SavedAttribute)
from gradshard.pipeline.parse.native import NativeFunction

__all__ = ["describe_entry", "describe_info", "describe_infos", "describe_match",
           "describe_native"]


def describe_native(f: NativeFunction) -> dict:
    return {
        "name": str(f.func.name),
        "schema": str(f.func),
        "kind": f.func.kind().value,
        "signature": str(f.func.signature(strip_default=True)),
        "namespace": f.namespace,
        "variants": list(f.variants),
        "python_module": f.python_module,
        "category_override": f.category_override,
        "tags": list(f.tags),
        "manual_cpp_binding": f.manual_cpp_binding,
        "structured": f.structured,
        "structured_delegate": str(f.structured_delegate) if f.structured_delegate else None,
        "is_abstract": f.is_abstract,
        "has_composite_implicit_autograd_kernel": f.has_composite_implicit_autograd_kernel,
        "has_composite_explicit_autograd_kernel": f.has_composite_explicit_autograd_kernel,
        "autogen": [str(a) for a in f.autogen],
        "is_view_op": f.is_view_op,
        "part_of_structured_group": f.part_of_structured_group,
    }


def describe_saved(saved: tuple[SavedAttribute, ...]) -> list:
    return [[s.name, str(s.ctype), s.expr] for s in saved]


def describe_info(info: DifferentiabilityInfo) -> dict:
    return {
        "name": info.name,
        "func": str(info.func.func),
        "op": info.op,
        "derivatives": [{
            "formula": d.formula,
            "original_formula": d.original_formula,
            "var_names": list(d.var_names),
            "saved_inputs": describe_saved(d.saved_inputs),
            "saved_outputs": describe_saved(d.saved_outputs),
            "named_gradients": list(d.named_gradients),
        } for d in info.derivatives],
        "forward_derivatives": [{
            "formula": d.formula,
            "var_names": list(d.var_names),
            "var_types": [str(t) for t in d.var_types],
            "required_inputs_fw_grad": sorted(d.required_inputs_fw_grad or ()),
            "required_inputs_primal": sorted(d.required_inputs_primal or ()),
        } for d in info.forward_derivatives],
        "all_saved_inputs": describe_saved(info.all_saved_inputs),
        "all_saved_outputs": describe_saved(info.all_saved_outputs),
        "available_named_gradients": list(info.available_named_gradients),
        "used_named_gradients": list(info.used_named_gradients),
        "args_with_derivatives": [[a.name, a.type] for a in info.args_with_derivatives],
        "non_differentiable_arg_names": list(info.non_differentiable_arg_names),
        "output_differentiability": (None if info.output_differentiability is None
                                     else list(info.output_differentiability)),
        "output_differentiability_conditions": (
            None if info.output_differentiability_conditions is None
            else list(info.output_differentiability_conditions)),
    }


def describe_infos(entries: tuple[EntryInfos, ...]) -> list:
    return [{"schema": str(e.schema),
             "keys": {k.dispatch_key: describe_info(k.info) for k in e.infos}} for e in entries]


def describe_forward(d: ForwardDerivative) -> dict:
    return {
        "formula": d.formula,
        "var_names": list(d.var_names),
        "var_types": [str(t) for t in d.var_types],
        "required_inputs_fw_grad": sorted(d.required_inputs_fw_grad or ()),
        "required_inputs_primal": sorted(d.required_inputs_primal or ()),
        "required_original_self_value": d.required_original_self_value,
        "is_reusing_outplace_formula": d.is_reusing_outplace_formula,
    }


def describe_match(match: FunctionMatch) -> dict:
    entry = match.infos
    if entry is None:
        return {"name": match.function, "schema": None}
    return {
        "name": match.function,
        "schema": str(entry.schema),
        "ops": {k.dispatch_key: k.info.op for k in entry.infos},
        "exact": match.exact,
        "forwards": {k.dispatch_key: [describe_forward(d) for d in k.forward_derivatives]
                     for k in match.forwards},
    }


def describe_entry(entry: DerivativeEntry) -> dict:
    return {
        "name": entry.name,
        "output_differentiability": (None if entry.output_differentiability is None
                                     else list(entry.output_differentiability)),
        "dispatch": {d.key: {f.names: f.formula for f in d.formulas} for d in entry.dispatch},
    }
