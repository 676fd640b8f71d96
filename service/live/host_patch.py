"""A `gradshard try` patch on the host path: for a generator gradshard does not reproduce,
the nodes and kernels are the spec's own generator's, its item values
(service/host/item_values.py) found by their subject and part, asked of its worker and read
through service/host/generation.py:

- a node's four pieces: gen_autograd_functions.process_function's values with the templates
  FUNCTION_DECLARATION, FUNCTION_DEFINITION, PY_FUNCTION_DEFINITION and
  PY_FUNCTION_PROPS_AND_GETTERS (the last two only for the nodes python_functions binds);
- an op's kernels: gen_variable_type_func's value, per dispatch key its definition and
  registration (`type_derived_method_definitions_<key>`, `wrapper_registrations_<key>`), with
  the node and derivatives entry of that key's info.

The patch is then assembled as on the ported path (patch_sources.py): the same units, the
spec's own templates for their frames. Ops are those named, else those whose items' values
differ from a generation of the installed torch's spec by the same generator (one worker
generates both: the second is mostly served from its memo).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Sequence

from gradshard.cache.graph.manifest import HostIndex
from gradshard.cache.store.database import Store
from gradshard.cache.version import code_version
from gradshard.pipeline.layout.compile_layout import function_op
from gradshard.pipeline.layout.host_values import kernel_signature
from gradshard.pipeline.records import canonical_json, content_hash
from gradshard.pipeline.render.variable_type_files import DispatchKeys, RenderedKernel
from gradshard.service.files.inputs import read_inputs
from gradshard.service.files.spec_location import SpecLocation
from gradshard.service.generator.check import DEFAULT_TIMEOUT, spec_hash
from gradshard.service.generator.identity import GeneratorIdentity
from gradshard.service.host.generation import (Generating, begin_generation, function_kernels,
                                               host_index, host_worker, put_host_index,
                                               read_record, read_values, start_worker)
from gradshard.service.host.item_values import (HostItems, ValueSource, item_value, items_of,
                                                recorded_items)
from gradshard.service.live.patch_sources import PatchNode

if TYPE_CHECKING:
    from gradshard.service.open_cache import OpenCache

__all__ = ["HostGeneration", "HostPatchParts", "PATCH_HEADERS", "begin_host_items",
           "changed_bindings", "changed_functions", "generation_key", "host_items", "host_parts",
           "latest_key", "op_code", "op_functions", "op_nodes", "recorded_index",
           "schema_changed"]

GENERATION_TASK = "host generation"  # the tasks row naming a recorded generation's index
PATCH_HEADERS = ("VariableType.h", "python_functions.h")  # the generated files a patch reads


def host_items(session: OpenCache, identity: GeneratorIdentity, location: SpecLocation,
               recorded: HostIndex | None = None, prime: HostIndex | None = None) -> HostItems:
    """The spec's generation by the session's worker for its generator (begin_host_items,
    then its `items`, with nothing to do meanwhile), or `recorded`, the one read back from the
    store (the installed spec's, which does not change)."""
    store = session.open()
    if recorded is not None and recorded.generator == identity.hash:
        return recorded_items(recorded, ValueSource(None, store))
    return begin_host_items(session, identity, location, prime).items()


def begin_host_items(session: OpenCache, identity: GeneratorIdentity, location: SpecLocation,
                     prime: HostIndex | None = None) -> HostGeneration:
    """The spec's generation asked of the session's worker for its generator, to be recorded
    in the store under the spec's inputs (a task row: `generation_key`). A fresh worker starts
    from this spec's recorded generation, else from the last one of the spec in this place
    (before the edit being tried: most items are the same), else from `prime`'s values. The
    caller works while the worker generates, then reads the items (HostGeneration.items)."""
    store = session.open()
    key, latest = generation_key(identity, location), latest_key(identity, location)
    own = recorded_index(store, key)
    worker, starting = start_worker(session, identity, DEFAULT_TIMEOUT)
    if worker.generations == 0:
        prime = own or recorded_index(store, latest) or prime
    generating = begin_generation(session, worker, starting, identity, location, prime,
                                  PATCH_HEADERS)
    return HostGeneration(session, identity, location, generating, own)


@dataclass
class HostGeneration:
    """A generation for `try` under way (begin_host_items)."""

    session: OpenCache
    identity: GeneratorIdentity
    location: SpecLocation
    generating: Generating
    own: HostIndex | None  # the spec's generation recorded before, if any

    def items(self) -> HostItems:
        """The generation's items, its index recorded in the store when it is new."""
        run, session, identity = self.generating.run(), self.session, self.identity
        store = session.open()
        index = host_index(identity.hash, run.output, {})
        if store is not None and index != self.own:
            name = put_host_index(store, index, run.output)
            for key in (generation_key(identity, self.location),
                        latest_key(identity, self.location)):
                store.put_task(key, GENERATION_TASK, name, 0.0, code_version())
            store.flush(0)  # no build: gc may sweep it, and a later `try` generates again
        return items_of(run.output.files, run.output.used, run.output.subjects,
                        ValueSource(host_worker(session, identity, DEFAULT_TIMEOUT), store))

    def abandon(self) -> None:
        self.generating.abandon()


def generation_key(identity: GeneratorIdentity, location: SpecLocation) -> str:
    """A generation's task key: the generator and every input of the spec it reads."""
    return content_hash(canonical_json([GENERATION_TASK, identity.hash,
                                        spec_hash(read_inputs(location).fingerprint())]))


def latest_key(identity: GeneratorIdentity, location: SpecLocation) -> str:
    """The task key naming the last generation of the spec at this place by this generator,
    whatever its inputs were (rewritten by each generation)."""
    return content_hash(canonical_json([GENERATION_TASK, identity.hash, "latest",
                                        str(location.root.resolve()), location.layout]))


def recorded_index(store: Store | None, key: str) -> HostIndex | None:
    """The HostIndex of the generation recorded under `key`, if the store still holds it."""
    output = store.memo([key]).get(key) if store is not None else None
    return read_record(store, output, HostIndex) if output is not None else None



@dataclass(frozen=True)
class HostPatchParts:
    """What the patch of some ops is made of: their kernels and nodes as PatchSources takes
    them, the dispatch keys, and which entry each node and kernel came from."""

    kernels: tuple[tuple[str, RenderedKernel], ...]  # (function, one of its kernels)
    nodes: tuple[PatchNode, ...]
    keys: DispatchKeys

    def kernels_of(self, function: str) -> list[RenderedKernel]:
        return [kernel for name, kernel in self.kernels if name == function]


def op_nodes(items: HostItems, functions: Sequence[str]) -> tuple[str, ...]:
    """The nodes the functions' kernels create, that the generation defines."""
    found = (node for f in functions for node, _ in items.kernel_nodes.get(f, {}).values())
    return tuple(dict.fromkeys(n for n in found if n in items.nodes))


def op_functions(items: HostItems, op: str) -> tuple[str, ...]:
    return tuple(f for f in items.kernels if function_op(f) == op)


def op_code(items: HostItems, functions: Sequence[str], nodes: Sequence[str]) -> str:
    """The hash of the op's kernels' and nodes' values: what a warm checker compares."""
    return content_hash(canonical_json([[(f, items.kernels[f][1]) for f in functions],
                                        [(n, sorted(v for _, v in items.nodes[n].values()))
                                         for n in nodes]]))


def changed_functions(current: HostItems, baseline: HostItems) -> set[str]:
    """The functions whose kernels, or a node they create, differ from the baseline's."""
    changed_nodes = {n for n, pieces in current.nodes.items()
                     if pieces_hashes(pieces) != pieces_hashes(baseline.nodes.get(n, {}))}
    return {f for f, (_, digest) in current.kernels.items()
            if baseline.kernels.get(f, ("", ""))[1] != digest
            or any(node in changed_nodes for node, _ in current.kernel_nodes[f].values())}


def pieces_hashes(pieces: dict[str, tuple[str, str]]) -> dict[str, str]:
    return {piece: digest for piece, (_, digest) in pieces.items()}


def schema_changed(current: HostItems, baseline: HostItems, functions: set[str]) -> set[str]:
    """The ops of `functions` some kernel of which has another signature than the
    baseline's: a patch registers kernels over torch's, which keep their schemas."""
    both = sorted(f for f in functions if f in baseline.kernels)
    keys = [items.kernels[f][0] for f in both for items in (current, baseline)]
    values = {**read_values(current, keys), **read_values(baseline, keys)}
    moved = set()
    for f in both:
        mine, theirs = (sorted(kernel_signature(k.definition)
                               for k in function_kernels(items, f, values))
                        for items in (current, baseline))
        if mine != theirs:
            moved.add(function_op(f))
    return moved


def changed_bindings(current: HostItems, baseline: HostItems) -> list[str]:
    names = set(current.bindings) | set(baseline.bindings)
    return sorted(n for n in names if current.bindings.get(n) != baseline.bindings.get(n))


def host_parts(items: HostItems, functions: Sequence[str],
               node_names: Sequence[str]) -> HostPatchParts:
    """The kernels of `functions` and the nodes named, from the worker's values."""
    keys = [items.kernels[f][0] for f in functions]
    keys += [key for n in node_names for key, _ in items.nodes[n].values()]
    values = read_values(items, keys)
    kernels = [(f, k) for f in functions for k in function_kernels(items, f, values)]
    nodes = [_node(n, items.nodes[n], values) for n in node_names]
    used = sorted({k.key for _, k in kernels})
    return HostPatchParts(tuple(kernels), tuple(nodes), DispatchKeys(tuple(used)))



def _node(name: str, pieces: dict[str, tuple[str, str]], values: dict[str, str]) -> PatchNode:
    texts = {piece: item_value(values, key) for piece, (key, _) in pieces.items()}
    return PatchNode(name, texts.get("declaration", ""), texts.get("definition", ""),
                     texts.get("python_class", ""), texts.get("python_properties", ""),
                     python="python_class" in texts)

