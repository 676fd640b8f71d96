"""`gradshard show NAME`: what gradshard knows of a native function, a derivatives entry or a
backward node.

NAME is an operator name (`mul.Tensor`), a base name (`mul` or `mul_`: every overload and
variant of the base, functional, in-place and out alike), a full schema, or a backward node
(`MulBackward0`). Native functions show their schema, kind, signature,
source and the derivative infos they use; derivatives entries show, per dispatch key, the
node, formulas before and after saved-value substitution, saved inputs and outputs with C++
types, differentiable arguments and named gradients, plus the functions the entry serves and
the foreach ops synthesized from it.
"""

from __future__ import annotations

from dataclasses import dataclass

from gradshard.cache.errors import UsageError
from gradshard.cache.graph.spec_records import SpecRecords
from gradshard.pipeline.parse.derivatives import DerivativeEntry
from gradshard.pipeline.parse.differentiability import EntryInfos
from gradshard.pipeline.parse.native import NativeFunction
from gradshard.pipeline.parse.source import Entry
from gradshard.pipeline.problems import RuleViolation, SpecFile, did_you_mean
from gradshard.pipeline.schema import BaseOperatorName
from gradshard.service.files.spec_location import SpecLocation
from gradshard.service.query.describe import (describe_entry, describe_info, describe_match,
                                              describe_native)

__all__ = ["show_json", "show_text"]


@dataclass(frozen=True)
class ShowMatches:
    natives: list[NativeFunction]
    entries: list[tuple[Entry, DerivativeEntry]]
    nodes: list[tuple[str, EntryInfos]]  # (dispatch key, infos holding the node)


def find_matches(spec: SpecRecords, name: str) -> ShowMatches:
    family = _family_named(name)
    pairs = list(zip(spec.entries[SpecFile.DERIVATIVES], spec.derivative_entries))
    if family is None:  # an operator name with its overload, or a whole schema: that one
        natives = [f for f in spec.native_functions if name in (str(f.func.name), str(f.func))]
        entries = [(e, d) for e, d in pairs if name in (d.op_name, d.name)]
    else:
        natives = [f for f in spec.native_functions if _family_of(f.func.name.name) == family]
        entries = [(e, d) for e, d in pairs if _family_named(d.defn_name) == family]
    every = spec.infos + spec.foreach
    nodes = [(k.dispatch_key, e) for e in every for k in e.infos if k.info.op == name]
    if not natives and not entries and not nodes:
        known = {str(f.func.name) for f in spec.native_functions}
        known |= {str(f.func.name.name) for f in spec.native_functions}
        known |= {k.info.op for e in every for k in e.infos if k.info.op}
        raise UsageError(f"no native function, derivatives entry or backward node is named '{name}'",
                         did_you_mean(name, known) or
                         "give an operator name such as 'mul.Tensor', a base name such as 'mul', "
                         "or a node such as 'MulBackward0'")
    return ShowMatches(natives, entries, nodes)


# A base name's family: every operator whose name differs from it only in the overload, the
# in-place `_` or the `_functional` suffix (`sin`, `sin_`, `sin.out`; `__and__`, `__iand__`).
# Keyed by the name without those, so that `sin` and `sin_` name the same family: until
# issue 47 a base name that was itself an operator (`sin`) showed that one alone, while one
# that was not (`mul`) showed its overloads but not its in-place ones.
Family = tuple[str, bool]  # (base, dunder)


def _family_of(name: BaseOperatorName) -> Family:
    return name.base, name.dunder


def _family_named(name: str) -> Family | None:
    """The family a NAME without overload names (None: an overload or a schema is given, or
    the text is no operator name)."""
    if "." in name or "(" in name:
        return None
    try:
        return _family_of(BaseOperatorName.parse(name))
    except RuleViolation:  # not an operator name (`foo_out`, `__ifoo__`): no family
        return None


def show_json(result: SpecRecords, location: SpecLocation, name: str) -> dict:
    matches = find_matches(result, name)
    lines = result.entry_lines()
    return {
        "native_functions": [_native_json(result, fn, lines, location) for fn in matches.natives],
        "derivatives": [_entry_json(result, entry, derivative, location)
                        for entry, derivative in matches.entries],
        "backward_nodes": [_node_json(result, key, infos, lines, location)
                           for key, infos in matches.nodes],
    }


def _native_json(result: SpecRecords, fn: NativeFunction, lines: dict,
                 location: SpecLocation) -> dict:
    described = describe_native(fn)
    described["source"] = {"file": str(location.path_of(SpecFile.NATIVE_FUNCTIONS)),
                           "line": lines.get((SpecFile.NATIVE_FUNCTIONS, str(fn.func.name)))}
    described["generated_from"] = str(fn.generated_from) if fn.generated_from else None
    match = next(m for m in result.matches if m.function == str(fn.func.name))
    described["derivatives"] = describe_match(match)
    if match.infos is not None:
        described["derivatives"]["entry"] = match.infos.entry_name
    return described


def _entry_json(result: SpecRecords, entry: Entry, derivative: DerivativeEntry,
                location: SpecLocation) -> dict:
    described = describe_entry(derivative)
    described["source"] = {"file": str(location.path_of(SpecFile.DERIVATIVES)), "line": entry.line}
    own = [e for e in result.infos if e.entry_name == derivative.name]
    described["infos"] = [{"schema": str(e.schema),
                           "keys": {k.dispatch_key: describe_info(k.info) for k in e.infos}}
                          for e in own]
    synthesized = {str(e.schema) for e in result.foreach}
    described["serves"] = [m.function for m in result.matches
                           if m.infos is not None and m.infos.entry_name == derivative.name
                           and str(m.infos.schema) not in synthesized]
    described["foreach_synthesized"] = [
        {"function": str(e.schema.name), "node": e.infos[0].info.op}
        for e in result.foreach if e.entry_name == derivative.name]
    return described


def _node_json(result: SpecRecords, key: str, infos: EntryInfos, lines: dict,
               location: SpecLocation) -> dict:
    info = infos.info_for(key)
    entry_op = infos.entry_name.split("(", 1)[0]
    return {
        "node": info.op,
        "dispatch_key": key,
        "entry": infos.entry_name,
        "source": {"file": str(location.path_of(SpecFile.DERIVATIVES)),
                   "line": lines.get((SpecFile.DERIVATIVES, entry_op))},
        "synthesized_foreach": infos.infos[0].info.name.startswith("_foreach_") and
                               str(infos.schema) not in {str(e.schema) for e in result.infos},
        "used_by": [m.function for m in result.matches
                    if m.infos is not None and any(k.info.op == info.op for k in m.infos.infos)],
        "info": describe_info(info),
    }


# ---------------------------------------------------------------------------------------------
# Text


def show_text(result: SpecRecords, location: SpecLocation, name: str) -> str:
    data = show_json(result, location, name)
    blocks = [_overview(name, data)] if len(data["native_functions"]) > 1 else []
    blocks += [_native_text(n) for n in data["native_functions"]]
    blocks += [_entry_text(e) for e in data["derivatives"]]
    blocks += [_node_text(n) for n in data["backward_nodes"]]
    return "\n\n".join(blocks)


def _overview(name: str, data: dict) -> str:
    """A base name's overloads and variants at a glance, before each is shown."""
    natives = [f"{n['name']} ({n['kind']})" for n in data["native_functions"]]
    entries = [e["name"].split("(", 1)[0] for e in data["derivatives"]]
    return (f"{name}: {len(natives)} native functions: {', '.join(natives)}\n"
            f"  derivatives entries: {', '.join(entries) or '-'}")


def _native_text(n: dict) -> str:
    source = f"{n['source']['file']}:{n['source']['line']}"
    if n["generated_from"]:
        source += f" (generated by torchgen from {n['generated_from']})"
    rows = [("schema", n["schema"]), ("kind", n["kind"]), ("signature", n["signature"]),
            ("source", source), ("variants", ", ".join(n["variants"])),
            ("tags", ", ".join(n["tags"]) or "-")]
    optional = [("python_module", n["python_module"]), ("category_override", n["category_override"]),
                ("structured_delegate", n["structured_delegate"]),
                ("autogen", ", ".join(n["autogen"]) or None)]
    rows += [(k, v) for k, v in optional if v]
    if n["structured"]:
        rows.append(("structured", "yes"))
    derivatives = n["derivatives"]
    if derivatives["schema"] is None:
        rows.append(("derivatives", "none (not differentiable through autograd codegen)"))
    else:
        how = "exact entry" if derivatives["exact"] else "reused"
        nodes = ", ".join(f"[{k}] {op or '(no backward node)'}" for k, op in derivatives["ops"].items())
        rows.append(("derivatives", f"{nodes} ({how}; entry {derivatives['entry'].split('(')[0]})"))
    return f"native function {n['name']}\n" + _rows(rows)


def _entry_text(e: dict) -> str:
    rows = [("name", e["name"]), ("source", f"{e['source']['file']}:{e['source']['line']}"),
            ("serves", ", ".join(e["serves"]) or "-")]
    if e["foreach_synthesized"]:
        rows.append(("foreach", ", ".join(f"{f['function']} ({f['node']})"
                                          for f in e["foreach_synthesized"])))
    parts = [f"derivatives entry {e['name'].split('(', 1)[0]}\n" + _rows(rows)]
    for keyed in e["infos"]:
        for key, info in keyed["keys"].items():
            parts.append(_info_text(key, info, keyed["schema"]))
    return "\n".join(parts)


def _node_text(n: dict) -> str:
    origin = "synthesized for a foreach op from entry" if n["synthesized_foreach"] else "from entry"
    head = (f"backward node {n['node']}\n" + _rows([
        ("origin", f"{origin} {n['entry'].split('(', 1)[0]}"),
        ("source", f"{n['source']['file']}:{n['source']['line']}"),
        ("used by", ", ".join(n["used_by"]) or "-")]))
    return head + "\n" + _info_text(n["dispatch_key"], n["info"], n["info"]["func"])


def _info_text(key: str, info: dict, schema: str) -> str:
    op = info["op"] or "(no backward node: no differentiable inputs)"
    out = [f"  [{key}] {op}", f"    function: {schema}"]
    for d in info["derivatives"]:
        out.append(f"    {', '.join(d['var_names'])}: {d['original_formula']}")
        if d["formula"] != d["original_formula"]:
            out.append(f"      -> {d['formula']}")
    out += _saved_rows("saved inputs", info["all_saved_inputs"])
    out += _saved_rows("saved outputs", info["all_saved_outputs"])
    args = ", ".join(f"{n} ({t})" for n, t in info["args_with_derivatives"]) or "-"
    out.append(f"    differentiable args: {args}")
    if info["non_differentiable_arg_names"]:
        out.append(f"    non-differentiable: {', '.join(info['non_differentiable_arg_names'])}")
    if info["available_named_gradients"]:
        out.append(f"    named gradients: {', '.join(info['available_named_gradients'])} "
                   f"(used: {', '.join(info['used_named_gradients']) or '-'})")
    if info["output_differentiability"] is not None:
        flags = ", ".join(map(str, info["output_differentiability"]))
        conditions = info["output_differentiability_conditions"]
        out.append(f"    output differentiability: [{flags}]"
                   + (f" if {conditions[0]}" if conditions else ""))
    for f in info["forward_derivatives"]:
        out.append(f"    forward {', '.join(f['var_names'])}: {f['formula']}")
    return "\n".join(out)


def _saved_rows(label: str, saved: list) -> list[str]:
    if not saved:
        return [f"    {label}: -"]
    return [f"    {label}:"] + [f"      {name}: {ctype} = {expr}" for name, ctype, expr in saved]


def _rows(rows: list[tuple[str, object]]) -> str:
    width = max(len(k) for k, _ in rows)
    return "\n".join(f"  {k + ':':<{width + 1}} {v}" for k, v in rows)
