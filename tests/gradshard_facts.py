"""gradshard's parse results in the same JSON shape as torchgen_oracle.py's facts."""

from __future__ import annotations

from pathlib import Path

from gradshard.pipeline.spec import ParsedSpec, decode_spec, parse_spec
from gradshard.service.spec_location import locate_spec


def parse_spec_dir(spec_dir: str | Path) -> ParsedSpec:
    return parse_spec(decode_spec(locate_spec(str(spec_dir)).read_all()))


def native_facts(f) -> dict:
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


def saved_facts(saved) -> list:
    return [[s.name, str(s.ctype), s.expr] for s in saved]


def info_facts(info) -> dict:
    return {
        "name": info.name,
        "func": str(info.func.func),
        "op": info.op,
        "derivatives": [{
            "formula": d.formula,
            "original_formula": d.original_formula,
            "var_names": list(d.var_names),
            "saved_inputs": saved_facts(d.saved_inputs),
            "saved_outputs": saved_facts(d.saved_outputs),
            "named_gradients": list(d.named_gradients),
        } for d in info.derivatives],
        "forward_derivatives": [{
            "formula": d.formula,
            "var_names": list(d.var_names),
            "var_types": [str(t) for t in d.var_types],
            "required_inputs_fw_grad": sorted(d.required_inputs_fw_grad or ()),
            "required_inputs_primal": sorted(d.required_inputs_primal or ()),
        } for d in info.forward_derivatives],
        "all_saved_inputs": saved_facts(info.all_saved_inputs),
        "all_saved_outputs": saved_facts(info.all_saved_outputs),
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


def facts(spec: ParsedSpec) -> dict:
    return {
        "native_functions": [native_facts(f) for f in spec.native_functions],
        "infos": [{"schema": str(e.schema),
                   "keys": {k.dispatch_key: info_facts(k.info) for k in e.infos}}
                  for e in spec.infos],
    }
