"""What a build knows of its spec, read from the indexes of its groups: the records `check`
counts and `show` explains (service/query/analysis.py, service/query/show.py). Nothing runs
again: every record is an output the build's tasks gave, loaded by its hash."""

from __future__ import annotations

from dataclasses import dataclass

from gradshard.cache.engine.core import Engine
from gradshard.cache.graph.group_records import AutogradSide, BuildIndex, NativeSide, Outputs
from gradshard.pipeline.match.match_infos import FunctionMatch, FunctionSummary, cpp_name_order
from gradshard.pipeline.parse.deprecated import DeprecatedSignature
from gradshard.pipeline.parse.derivatives import DerivativeEntry
from gradshard.pipeline.parse.differentiability import EntryInfos
from gradshard.pipeline.parse.native import NativeFunction
from gradshard.pipeline.parse.source import Entry
from gradshard.pipeline.parse.spec import SpecTexts, entry_lines, generated_origins, split_spec
from gradshard.pipeline.parse.tags import Tag
from gradshard.pipeline.parse.views import ViewGrouping, ViewOrder, view_grouping
from gradshard.pipeline.problems import SpecFile
from gradshard.pipeline.render.nodes import BackwardNode

__all__ = ["SpecRecords", "side_records", "spec_counts", "spec_records"]


@dataclass(frozen=True)
class SpecRecords:
    """A spec as its build saw it: the entries of every file, what they parsed into, the
    infos (as loaded, then those matching synthesized for foreach ops), every function's
    match in C++-name order, and the backward nodes."""

    entries: dict[SpecFile, tuple[Entry, ...]]
    tags: tuple[Tag, ...]
    native_functions: tuple[NativeFunction, ...]
    view_order: ViewOrder
    deprecated: tuple[DeprecatedSignature, ...]
    derivative_entries: tuple[DerivativeEntry, ...]
    infos: tuple[EntryInfos, ...]
    foreach: tuple[EntryInfos, ...]
    matches: tuple[FunctionMatch, ...]
    nodes: tuple[BackwardNode, ...]

    def entry_lines(self) -> dict[tuple[SpecFile, str], int]:
        """Where each named entry starts (a generated function: where its source does)."""
        return entry_lines(self.entries, generated_origins(self.native_functions))

    @property
    def view_grouping(self) -> ViewGrouping:
        return view_grouping(self.native_functions, self.view_order)


def spec_records(engine: Engine, index: BuildIndex, texts: SpecTexts) -> SpecRecords:
    """The records of a build of `texts` (its index, on the engine that ran or reused it)."""
    native, autograd, python = engine.records([engine.ref(index.native, NativeSide),
                                               engine.ref(index.autograd, AutogradSide),
                                               engine.ref(index.python, Outputs)])
    return side_records(engine, native, autograd, texts,
                        _listed(engine, python.records, DeprecatedSignature),
                        _listed(engine, index.node_records, BackwardNode))


def side_records(engine: Engine, native: NativeSide, autograd: AutogradSide, texts: SpecTexts,
                 deprecated: tuple[DeprecatedSignature, ...] = (),
                 nodes: tuple[BackwardNode, ...] = ()) -> SpecRecords:
    """The records of the native and autograd sides (cache/graph/build_graph.py: spec_sides), with the
    bindings' deprecated signatures and the nodes when the build went that far."""
    summaries = _listed(engine, native.summaries, FunctionSummary)
    found = {m.function: m for m in _listed(engine, autograd.matches, FunctionMatch)}
    matches = tuple(found.get(summaries[p].name) or FunctionMatch(summaries[p].name)
                    for p in cpp_name_order(summaries))
    return SpecRecords(
        split_spec(texts), _listed(engine, native.tags, Tag),
        _listed(engine, native.functions, NativeFunction),
        engine.record(engine.ref(autograd.view_order, ViewOrder)), deprecated,
        _listed(engine, autograd.entries, DerivativeEntry),
        _listed(engine, autograd.loaded, EntryInfos), _listed(engine, autograd.foreach, EntryInfos),
        matches, nodes)


def spec_counts(engine: Engine, index: BuildIndex) -> dict[str, int]:
    """What `check` says of a built spec, read from the indexes: collections are counted by
    their members' hashes (none of their records is read), the generated functions and the
    infos by the sides' own counts."""
    native, autograd, python = engine.records([engine.ref(index.native, NativeSide),
                                               engine.ref(index.autograd, AutogradSide),
                                               engine.ref(index.python, Outputs)])

    def size(name: str, kind: type) -> int:
        return len(engine.items(engine.ref_collection(name, kind))) if name else 0

    return {
        "native_functions": size(native.functions, NativeFunction),
        "generated_functions": native.generated,
        "tags": size(native.tags, Tag),
        "deprecated_signatures": size(python.records, DeprecatedSignature),
        "derivatives_entries": size(autograd.entries, DerivativeEntry),
        "info_schemas": size(autograd.loaded, EntryInfos),
        "infos": autograd.keyed_infos,
        "infos_with_derivatives": autograd.infos_with_nodes,
        "matched_functions": autograd.matched_functions,
        "foreach_synthesized": size(autograd.foreach, EntryInfos),
        "backward_nodes": len(index.nodes),
    }


def _listed(engine: Engine, name: str, kind: type) -> tuple:
    """The records of a collection an index names."""
    return tuple(engine.records(list(engine.items(engine.ref_collection(name, kind)))))
