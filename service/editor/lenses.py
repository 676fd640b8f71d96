"""An entry's footprint, as its code lens says it: "N nodes · M kernels · K files · T tests".

- The footprint of an entry as it is: what an edit of its formulas reaches at most, read from
  the build's index: the backward nodes it makes (its own and the foreach ops' synthesized
  from it), the autograd kernels that create them or carry its formulas, and the files that
  hold either (Functions.h/.cpp, the python_functions shard of each bound node, each
  kernel's VariableType shard, and each family's Everything file).
- The reach of an edit in the buffer: what `gradshard affected` says of saving it, the spec on
  disk against it with only this entry's text from the buffer (its comparison:
  service/query/affected.py), so that each edited entry says what its own edit changes.

The tests part is `affected --tests`' (service/gradient_tests/query.py) over the same ops;
it needs the `try` extra, and says so without it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from gradshard.cache.graph.kernel_family import kernel_unit_fields
from gradshard.pipeline.layout.compile_layout import function_op
from gradshard.pipeline.parse.source import split_entries
from gradshard.pipeline.problems import SpecError, SpecFile
from gradshard.pipeline.render.templating import python_function_shards
from gradshard.pipeline.render.variable_type_files import RenderedKernel
from gradshard.service.editor.analysis import Analysis
from gradshard.service.editor.buffers import SpecBuffers
from gradshard.service.graph_run import built_spec, new_engine
from gradshard.service.open_cache import OpenCache
from gradshard.service.query.affected import Affected, OpChange, changed_ops, compare

__all__ = ["Footprint", "edit_reach", "edited_entries", "footprints"]

_SHARD = re.compile(r"^(?P<family>.+)_\d+\.cpp$")


@dataclass(frozen=True)
class Footprint:
    """What an entry's edit reaches: node names, kernels (`<file> <function>`), files, and
    the ops whose tests reach them (for the tests part); `edited`: an edit in the buffer's
    reach, else the entry's whole footprint."""

    nodes: tuple[str, ...]
    kernels: tuple[str, ...]
    files: tuple[str, ...]
    ops: tuple[OpChange, ...]
    edited: bool = False

    def counts(self) -> dict[str, int]:
        return {"nodes": len(self.nodes), "kernels": len(self.kernels),
                "files": len(self.files)}


def footprints(analysis: Analysis) -> dict[str, Footprint]:
    """Each derivatives entry's footprint (by its entry label, the op name of `name:`) in the
    accepted spec's build."""
    run = analysis.run
    assert run is not None
    records = analysis.records()
    index, engine = run.index, run.engine
    nodes_of: dict[str, list[str]] = {}
    for infos in records.infos + records.foreach:
        nodes_of.setdefault(infos.entry_label, []).extend(
            k.info.op for k in infos.infos if k.info.op)
    kernels = engine.records([engine.ref(code, RenderedKernel) for _, code in index.kernels])
    files = set(dict(index.files))
    shard_of = _python_shards(index.node_keys[:index.python_nodes],
                              [n for n, _ in index.nodes[:index.python_nodes]])
    found = {}
    for label, nodes in nodes_of.items():
        wanted = set(nodes)
        units = [unit for (unit, _), kernel in zip(index.kernels, kernels)
                 if kernel.node in wanted or kernel.entry == label]
        found[label] = _footprint(tuple(dict.fromkeys(nodes)), units, shard_of, files)
    return found


def _python_shards(keys: tuple[str, ...], nodes: list[str]) -> dict[str, list[str]]:
    """Each bound node's python_functions files (its shard, and Everything)."""
    found: dict[str, list[str]] = {}
    for shard, positions in python_function_shards(keys).items():
        for position in positions:
            found.setdefault(nodes[position], []).append(f"python_functions{shard}.cpp")
    return found


def _footprint(nodes: tuple[str, ...], units: list[str], shard_of: dict[str, list[str]],
               files: set[str]) -> Footprint:
    kernel_files = [kernel_unit_fields(unit) for unit in units]
    touched = (["Functions.h", "Functions.cpp"] if nodes else []) + \
        [file for n in nodes for file in shard_of.get(n, ())] + \
        [file for file, _ in kernel_files]
    everything = [f"{m['family']}Everything.cpp" for f in touched if (m := _SHARD.match(f))]
    reached = tuple(sorted({f for f in touched + everything if f in files}))
    ops: dict[str, tuple[list[str], list[str]]] = {}
    for _, function in kernel_files:
        ops.setdefault(function_op(function), ([], []))[1].append(function)
    return Footprint(nodes, tuple(f"{file} {function}" for file, function in kernel_files),
                     reached, tuple(OpChange(op, bool(nodes), bool(functions), nodes,
                                             tuple(functions))
                                    for op, (_, functions) in sorted(ops.items())))


def edited_entries(buffers: SpecBuffers, disk_text: str) -> dict[str, str]:
    """The derivatives entries whose buffer text differs from the file on disk: label →
    the disk's text with only that entry's text from the buffer. Entries new in the buffer,
    and a buffer or file that does not split into entries, give none."""
    text = buffers.text_of(SpecFile.DERIVATIVES)
    if text is None:
        return {}
    try:
        now = _entries_by_label(text)
        before = _entries_by_label(disk_text)
    except SpecError:
        return {}
    return {label: disk_text.replace(before[label], entry, 1)
            for label, entry in now.items() if label in before and before[label] != entry}


def _entries_by_label(text: str) -> dict[str, str]:
    from gradshard.pipeline.parse.spec import entry_label

    found: dict[str, str] = {}
    for entry in split_entries(SpecFile.DERIVATIVES, text):
        found.setdefault(entry_label(entry), entry.text)
    return found


def edit_reach(buffers: SpecBuffers, session: OpenCache, edited_text: str,
               release: str) -> Footprint:
    """What saving one entry's edit changes: the spec on disk against the spec with
    `edited_text` as its derivatives.yaml, compared as `gradshard affected` compares."""
    disk = replace(buffers, texts=())
    raw = disk.inputs()
    baseline = built_spec(raw, session.open(), session.memory, release=release)
    edited = replace(raw, yaml={**raw.yaml,
                                SpecFile.DERIVATIVES: edited_text.encode("utf-8")})
    current = built_spec(edited, session.open(), session.memory, release=release)
    engine = new_engine(session.open(), session.memory)
    result: Affected = compare(baseline, current, "the spec on disk", engine)
    return Footprint(tuple(result.nodes), tuple(f"{k.file} {k.name}" for k in result.kernels),
                     tuple(result.files), changed_ops(baseline, current, engine), edited=True)
