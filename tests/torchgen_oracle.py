#!/usr/bin/env python3
"""The test suite's torchgen harness: runs the installed torchgen 2.13 on a spec directory.

    python torchgen_oracle.py facts SPEC_DIR         # JSON facts of the parse stage on stdout
    python torchgen_oracle.py render SPEC_DIR OUT    # the files gradshard reproduces, into OUT
    python torchgen_oracle.py tree SPEC_DIR OUT      # generate_code's autograd part, under OUT
    python torchgen_oracle.py inverses SPEC_DIR OUT  # gen.py's FunctionalInverses.h, into OUT

It drives torchgen the way PyTorch's build does (load_derivatives, which parses the native
functions first; `render` in generate_code.py's order) and prints what gradshard must
reproduce. It runs in its own process because torchgen caches parse results in module globals
keyed by path.
"""

from __future__ import annotations

import json
import os
import sys


def spec_paths(spec: str) -> dict[str, str]:
    if os.path.exists(os.path.join(spec, "autograd", "derivatives.yaml")):
        native, autograd = os.path.join(spec, "ATen", "native"), os.path.join(spec, "autograd")
    elif os.path.exists(os.path.join(spec, "tools", "autograd", "derivatives.yaml")):
        native = os.path.join(spec, "aten", "src", "ATen", "native")
        autograd = os.path.join(spec, "tools", "autograd")
    else:
        raise SystemExit(f"torchgen_oracle: {spec} is neither a packaged spec nor a checkout")
    return {
        "native": os.path.join(native, "native_functions.yaml"),
        "tags": os.path.join(native, "tags.yaml"),
        "derivatives": os.path.join(autograd, "derivatives.yaml"),
        "deprecated": os.path.join(autograd, "deprecated.yaml"),
        "templates": os.path.join(autograd, "templates"),
    }


def native_facts(f) -> dict:
    return {
        "name": str(f.func.name),
        "schema": str(f.func),
        "kind": f.func.kind().name.lower(),
        "signature": str(f.func.signature(strip_default=True)),
        "namespace": f.namespace,
        "variants": sorted(v.name for v in f.variants),
        "python_module": f.python_module,
        "category_override": f.category_override,
        "tags": sorted(f.tags),
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
    return [[s.nctype.name if isinstance(s.nctype.name, str) else s.nctype.name.name,
             s.nctype.type.cpp_type(), s.expr] for s in saved]


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
            "named_gradients": sorted(d.named_gradients),
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
        "used_named_gradients": sorted(info.used_named_gradients),
        "args_with_derivatives": [[a.name, a.type] for a in info.args_with_derivatives],
        "non_differentiable_arg_names": list(info.non_differentiable_arg_names),
        "output_differentiability": (None if info.output_differentiability is None
                                     else list(info.output_differentiability)),
        "output_differentiability_conditions": (
            None if info.output_differentiability_conditions is None
            else list(info.output_differentiability_conditions)),
    }


def infos_facts(infos) -> list:
    return [{"schema": str(schema), "keys": {key: info_facts(info) for key, info in per_key.items()}}
            for schema, per_key in infos.items()]


def forward_facts(d) -> dict:
    return {
        "formula": d.formula,
        "var_names": list(d.var_names),
        "var_types": [str(t) for t in d.var_types],
        "required_inputs_fw_grad": sorted(d.required_inputs_fw_grad or ()),
        "required_inputs_primal": sorted(d.required_inputs_primal or ()),
        "required_original_self_value": d.required_original_self_value,
        "is_reusing_outplace_formula": d.is_reusing_outplace_formula,
    }


def match_facts(matched, infos) -> list:
    facts = []
    for m in matched:
        f = m.func
        if m.info is None:
            facts.append({"name": str(f.func.name), "schema": None})
            continue
        first = next(iter(m.info.values()))
        facts.append({
            "name": str(f.func.name),
            "schema": str(first.func.func),
            "ops": {key: info.op for key, info in m.info.items()},
            "exact": f.func in infos and not ("generated" in f.tags and f.func.kind().name == "out"),
            "forwards": {key: [forward_facts(d) for d in fws] for key, fws in m.fw_derivatives.items()},
        })
    return facts


def facts(spec: str) -> dict:
    from torchgen.api import cpp
    from torchgen.api.autograd import match_differentiability_info
    from torchgen.gen import parse_native_yaml
    from torchgen.packaged.autograd.load_derivatives import load_derivatives

    paths = spec_paths(spec)
    infos, _ = load_derivatives(paths["derivatives"], paths["native"], paths["tags"])
    natives = parse_native_yaml(paths["native"], paths["tags"]).native_functions
    loaded = infos_facts(infos)
    ordered = sorted(natives, key=lambda f: cpp.name(f.func))
    matched = match_differentiability_info(ordered, infos)
    return {
        "native_functions": [native_facts(f) for f in natives],
        "infos": loaded,
        "matches": match_facts(matched, infos),
        "matched_infos": infos_facts(infos),
    }


def render(spec: str, out: str) -> None:
    """Every file gradshard reproduces, in the order PyTorch's build makes them
    (tools/setup_helpers/generate_code.py runs gen_autograd_python before gen_autograd):
    python_functions* and gen_python_functions' files from the infos as loaded, then
    gen_autograd's part: matching (which adds the foreach infos to that same cached dict),
    VariableType*, then Functions.*. VariableType.cpp's first stage names the running
    script in its `@generated by` line; PyTorch's build runs generate_code.py, so the line
    is written as that one prints it."""
    from torchgen.api import cpp
    from torchgen.api.autograd import match_differentiability_info
    from torchgen.gen import parse_native_yaml
    from torchgen.packaged.autograd import gen_python_functions
    from torchgen.packaged.autograd.gen_autograd_functions import (gen_autograd_functions_lib,
                                                                   gen_autograd_functions_python)
    from torchgen.packaged.autograd.gen_variable_type import gen_variable_type
    from torchgen.packaged.autograd.load_derivatives import load_derivatives

    paths = spec_paths(spec)
    os.makedirs(out, exist_ok=True)
    infos, used_keys = load_derivatives(paths["derivatives"], paths["native"], paths["tags"])
    gen_autograd_functions_python(out, infos, paths["templates"])
    gen_python_functions.gen(out, paths["native"], paths["tags"], paths["deprecated"],
                             paths["templates"])
    natives = parse_native_yaml(paths["native"], paths["tags"]).native_functions
    matched = match_differentiability_info(sorted(natives, key=lambda f: cpp.name(f.func)), infos)
    gen_variable_type(out, paths["native"], paths["tags"], matched, paths["templates"], used_keys)
    gen_autograd_functions_lib(out, infos, paths["templates"])
    _as_built_by_pytorch(out)


def _as_built_by_pytorch(out: str) -> None:
    """The VariableType files name tools/setup_helpers/generate_code.py as their script;
    the first stage (templates/VariableType.cpp) is an intermediate, not an output."""
    import glob
    import shutil
    ours = "@" + "generated by " + os.path.basename(__file__) + " from"
    theirs = "@" + "generated by tools/setup_helpers/generate_code.py from"
    for path in glob.glob(os.path.join(out, "VariableType*.cpp")):
        with open(path, encoding="utf-8") as f:
            text = f.read()
        with open(path, "w", encoding="utf-8") as f:
            f.write(text.replace(ours, theirs, 1))
    shutil.rmtree(os.path.join(out, "templates"), ignore_errors=True)


GENERATED_DIR = os.path.join("torch", "csrc", "autograd", "generated")
PYTHON_GENERATED_DIR = os.path.join("torch", "testing", "_internal", "generated")


def tree(spec: str, out: str) -> None:
    """What tools/setup_helpers/generate_code.py writes for autograd under a checkout's root
    (no --subset, nop selector): gen_autograd_python, gen_autograd, then gen_annotated, into
    torch/csrc/autograd/generated and torch/testing/_internal/generated. The first stage
    (templates/VariableType.cpp) stays: generate_code leaves it in the tree."""
    from torchgen.packaged.autograd.gen_annotated_fn_args import gen_annotated
    from torchgen.packaged.autograd.gen_autograd import gen_autograd, gen_autograd_python
    from torchgen.selective_build.selector import SelectiveBuilder
    paths = spec_paths(spec)
    autograd_dir = os.path.dirname(paths["derivatives"])
    generated = os.path.join(out, GENERATED_DIR)
    python_generated = os.path.join(out, PYTHON_GENERATED_DIR)
    for directory in (generated, python_generated):
        os.makedirs(directory, exist_ok=True)
    gen_autograd_python(paths["native"], paths["tags"], generated, autograd_dir)
    gen_autograd(paths["native"], paths["tags"], generated, autograd_dir,
                 operator_selector=SelectiveBuilder.get_nop_selector())
    gen_annotated(paths["native"], paths["tags"], python_generated, autograd_dir)
    _name_generate_code(generated)


def _name_generate_code(out: str) -> None:
    """The VariableType files' `@generated by` line as generate_code.py prints it."""
    import glob
    ours = "@" + "generated by " + os.path.basename(__file__) + " from"
    theirs = "@" + "generated by tools/setup_helpers/generate_code.py from"
    for path in glob.glob(os.path.join(out, "VariableType*.cpp")) + \
            glob.glob(os.path.join(out, "templates", "VariableType.cpp")):
        with open(path, encoding="utf-8") as f:
            text = f.read()
        with open(path, "w", encoding="utf-8") as f:
            f.write(text.replace(ours, theirs, 1))


def inverses(spec: str, out: str) -> None:
    """FunctionalInverses.h as torchgen/gen.py writes it with the ATen files (its view groups,
    the spec's ATen/templates/FunctionalInverses.h, the nop selector)."""
    from torchgen.gen import get_grouped_by_view_native_functions, parse_native_yaml
    from torchgen.gen_functionalization_type import gen_functionalization_view_inverse_declaration
    from torchgen.model import NativeFunctionsViewGroup
    from torchgen.selective_build.selector import SelectiveBuilder
    from torchgen.utils import FileManager, mapMaybe
    paths = spec_paths(spec)
    natives = parse_native_yaml(paths["native"], paths["tags"]).native_functions
    groups = [g for g in get_grouped_by_view_native_functions(natives)
              if isinstance(g, NativeFunctionsViewGroup)]
    selector = SelectiveBuilder.get_nop_selector()
    templates = os.path.join(os.path.dirname(os.path.dirname(paths["native"])), "templates")
    manager = FileManager(install_dir=out, template_dir=templates, dry_run=False)
    manager.write("FunctionalInverses.h", lambda: {"view_inverse_declarations": list(mapMaybe(
        lambda g: gen_functionalization_view_inverse_declaration(selector, g), groups))})


def main() -> None:
    command, spec = sys.argv[1], sys.argv[2]
    if command == "facts":
        json.dump(facts(spec), sys.stdout)
    elif command == "render":
        render(spec, sys.argv[3])
    elif command == "tree":
        tree(spec, sys.argv[3])
    elif command == "inverses":
        inverses(spec, sys.argv[3])
    else:
        raise SystemExit(f"torchgen_oracle: unknown command {command}")


if __name__ == "__main__":
    main()
