"""A host generation's item values, read by what they are of: the nodes' pieces
(gen_autograd_functions.process_function's values, per template), each function's autograd
kernels (gen_variable_type_func's value) with the node and derivatives entry of each dispatch
key, and the Python bindings' values; where the values are (the worker's memo, else the
store's blobs: generation.py's `read_values` reads them). `try` (service/live/host_patch.py)
and a host build's compile (service/host/generation.py) read them. Records and pure
functions: nothing here enters another of gradshard's modules.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from gradshard.cache.errors import GeneratorFailed
from gradshard.cache.graph.manifest import HostIndex
from gradshard.cache.store.database import Store
from gradshard.service.host.client import HostWorker

__all__ = ["BINDINGS", "HostItems", "KERNELS", "NODES", "NODE_PIECES", "ValueSource",
           "item_value", "items_of", "node_entries", "recorded_items"]

KERNELS = "gen_variable_type.gen_variable_type_func"
NODES = "gen_autograd_functions.process_function"
BINDINGS = "gen_python_functions.method_impl"
# process_function's templates (gen_autograd_functions' constants) → PatchNode's field
NODE_PIECES = {"FUNCTION_DECLARATION": "declaration", "FUNCTION_DEFINITION": "definition",
               "PY_FUNCTION_DEFINITION": "python_class",
               "PY_FUNCTION_PROPS_AND_GETTERS": "python_properties"}
FOREACH = "Foreach"  # gen_foreach_derivativeinfo's node names: Foreach<node><overload>


@dataclass(frozen=True)
class HostItems:
    """One host generation, as a patch reads it: item keys and value hashes by what they are
    of, the generated files (none for a generation read back from the store) and where the
    values are (the worker's memo, else the store's blobs)."""

    files: dict[str, bytes]
    kernels: dict[str, tuple[str, str]]  # function (sin.out) → (item key, value hash)
    kernel_nodes: dict[str, dict[str, tuple[str, str]]]  # function → key → (node, entry)
    nodes: dict[str, dict[str, tuple[str, str]]]  # node → piece → (item key, value hash)
    bindings: dict[str, str]  # a Python binding's op name → its values' hashes
    source: ValueSource

    @property
    def hashes(self) -> dict[str, str]:
        found = {key: digest for key, digest in self.kernels.values()}
        found.update((key, digest) for pieces in self.nodes.values()
                     for key, digest in pieces.values())
        return found


@dataclass(frozen=True)
class ValueSource:
    """Where a generation's item values are read (generation.py: read_values): its worker's
    memo (when it made them), then the store's blobs, each checked against its hash."""

    worker: HostWorker | None
    store: Store | None


def recorded_items(index: HostIndex, source: ValueSource) -> HostItems:
    """A recorded generation's items (its HostIndex: no files), values read from `source`."""
    return items_of({}, dict(index.items), {k: (f, s, p) for k, f, s, p in index.subjects},
                    source)


def items_of(files: dict[str, bytes], used: dict[str, str],
           subjects: dict[str, tuple[str, str, str]], source: ValueSource) -> HostItems:
    kernels: dict[str, tuple[str, str]] = {}
    kernel_nodes: dict[str, dict[str, tuple[str, str]]] = {}
    nodes: dict[str, dict[str, tuple[str, str]]] = {}
    bindings: dict[str, list[str]] = {}
    for key, (function, subject, part) in subjects.items():
        digest = used.get(key)
        if digest is None or not subject:
            continue
        described = _part(part)
        if function == KERNELS:
            kernels[subject] = (key, digest)
            kernel_nodes[subject] = {k: (v[0], v[1]) for k, v in
                                     described.get("nodes", {}).items()}
        elif function == NODES and described.get("template") in NODE_PIECES:
            nodes.setdefault(subject, {})[NODE_PIECES[described["template"]]] = (key, digest)
        elif function == BINDINGS:
            bindings.setdefault(subject, []).append(digest)
    return HostItems(files, kernels, kernel_nodes, nodes,
                     {op: "+".join(sorted(v)) for op, v in bindings.items()}, source)


def _part(part: str) -> dict:
    try:
        described = json.loads(part) if part else {}
    except ValueError:
        return {}
    return described if isinstance(described, dict) else {}


def item_value(values: dict[str, str], key: str):
    text = values.get(key)
    if text is None:
        raise GeneratorFailed(f"the generator's worker no longer holds item {key}",
                              hint="run `gradshard try` again")
    return json.loads(text)


def node_entries(items: HostItems, lines: dict[str, int]) -> dict[str, str]:
    """Each node's derivatives entry (`lines`: the entries there are): its info's schema name
    where derivatives.yaml has that entry; else, for a node torchgen made for a foreach op
    from another op's entry (api/autograd.py: gen_foreach_derivativeinfo names it "Foreach",
    the reference op's node and the overload), the entry of the longest node its name goes
    on with."""
    direct = {node: entry for keys in items.kernel_nodes.values()
              for node, entry in keys.values() if node}
    placed = {node: entry for node, entry in direct.items() if entry in lines}
    for node in direct:
        if node in placed or not node.startswith(FOREACH):
            continue
        rest = node[len(FOREACH):]
        reference = max((n for n in placed if rest.startswith(n)), key=len, default="")
        if reference:
            placed[node] = placed[reference]
    return placed
