"""What hovering over a spec entry shows, in Markdown, from the build's own records (the
session's cache): for a derivatives.yaml entry, its op's schema, the backward nodes it makes
(and the foreach ops' synthesized from it), their saved values, and the C++ of each node's
formula as the build writes it in Functions.cpp; for a native_functions.yaml entry, its
variants and whether (and through which entry) it has a derivative."""

from __future__ import annotations

from gradshard.cache.graph.spec_records import SpecRecords
from gradshard.pipeline.parse.derivatives import DerivativeEntry
from gradshard.pipeline.parse.differentiability import EntryInfos
from gradshard.pipeline.problems import SpecFile
from gradshard.pipeline.records import Text
from gradshard.service.editor.analysis import Analysis
from gradshard.service.editor.places import EntryAt

__all__ = ["hover_markdown", "node_formula_code"]

# The C++ shown of one node: its formula's function, at most this many lines
_CODE_LINES = 60


def hover_markdown(analysis: Analysis, entry: EntryAt) -> str | None:
    """The hover of an entry of an accepted spec; None for an entry the spec does not have."""
    records = analysis.records()
    if entry.file is SpecFile.DERIVATIVES:
        return _derivatives_hover(analysis, records, entry)
    if entry.file is SpecFile.NATIVE_FUNCTIONS:
        return _native_hover(records, entry)
    return None


def _entry_named(records: SpecRecords, entry: EntryAt) -> DerivativeEntry | None:
    found = [d for d in records.derivative_entries if d.name == entry.name]
    found = found or [d for d in records.derivative_entries if d.op_name == entry.operator]
    return found[0] if found else None


def _derivatives_hover(analysis: Analysis, records: SpecRecords, entry: EntryAt) -> str | None:
    derivative = _entry_named(records, entry)
    if derivative is None:
        return None
    own = [e for e in records.infos if e.entry_name == derivative.name]
    synthesized = [e for e in records.foreach if e.entry_name == derivative.name]
    parts = [f"**{derivative.op_name}** · derivatives.yaml entry\n\n```\n{derivative.name}\n```"]
    for infos in own + synthesized:
        parts += [_node_part(analysis, infos, key.dispatch_key, infos in synthesized)
                  for key in infos.infos]
    if not own and not synthesized:
        parts.append("no backward node: the entry matches no native function")
    return "\n\n".join(p for p in parts if p)


def _node_part(analysis: Analysis, infos: EntryInfos, key: str, synthesized: bool) -> str:
    info = infos.info_for(key)
    assert info is not None
    origin = f" (synthesized for `{info.name}`)" if synthesized else ""
    if not info.op:
        return f"[{key}] no backward node: no differentiable inputs{origin}"
    saved = [f"`{s.name}`: `{s.ctype}`" for s in info.all_saved_inputs + info.all_saved_outputs]
    rows = [f"**{info.op}** [{key}]{origin}",
            f"- saved: {', '.join(saved) if saved else 'nothing'}",
            f"- differentiable: {', '.join(a.name for a in info.args_with_derivatives) or '-'}"]
    code = node_formula_code(analysis, info.op)
    if code:
        rows.append(f"\n```cpp\n{code}\n```")
        if not analysis.identity.known:
            rows.append(f"as gradshard renders it: the spec's {analysis.identity.describe()}; "
                        "a build on the host path writes that generator's own text")
    return "\n".join(rows)


def node_formula_code(analysis: Analysis, node: str) -> str:
    """The C++ of a node's formula as Functions.cpp holds it (its `_apply_functional`), read
    from the build's cached rendering; "" when the build has no such node."""
    run = analysis.run
    assert run is not None
    pieces = dict(run.index.nodes).get(node)
    if pieces is None:
        return ""
    engine = run.engine
    texts = engine.records(list(engine.items(engine.ref_collection(pieces, Text))))
    return _first_function(texts[1].text)


def _first_function(definition: str) -> str:
    """The definition's first function: up to its closing brace at column 0."""
    lines = definition.split("\n")
    end = next((n for n, line in enumerate(lines) if line == "}"), len(lines) - 1)
    shown = lines[:end + 1]
    if len(shown) > _CODE_LINES:
        shown = shown[:_CODE_LINES] + ["// …"]
    return "\n".join(shown)


def _native_hover(records: SpecRecords, entry: EntryAt) -> str | None:
    functions = [f for f in records.native_functions if str(f.func.name) == entry.operator]
    if not functions:
        return None
    function = functions[0]
    match = next((m for m in records.matches if m.function == entry.operator), None)
    rows = [f"**{entry.operator}** · native function\n\n```\n{function.func}\n```",
            f"- variants: {', '.join(function.variants) or '-'}"]
    if match is None or match.infos is None:
        rows.append("- derivative: none (not differentiable through autograd codegen)")
    else:
        nodes = ", ".join(f"`{k.info.op}` [{k.dispatch_key}]" if k.info.op
                          else f"no node [{k.dispatch_key}]" for k in match.infos.infos)
        how = "its own entry" if match.exact else "reused"
        rows.append(f"- derivative: entry `{match.infos.entry_label}` ({how}): {nodes}")
    return "\n".join(rows)
