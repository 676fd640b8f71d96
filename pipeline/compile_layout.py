"""Compile layout: the generated C++ cut into translation units that each compile in seconds.

Functions.cpp holds every node, so one edited formula recompiles all of it, and every unit
including Functions.h recompiles when one struct changes. Here each node's struct goes to its
own header (gradshard/nodes/<Node>.h) and its definitions to one of many Functions shards.
A node's shard is a hash of its name into a power-of-two number of shards: adding a node
changes only its own shard, and a spec that outgrows the shard count splits each shard in
two rather than reshuffling. A unit includes only the headers of its own nodes (Functions.h
itself is compiled as its prelude, without structs), so a changed saved variable recompiles
the units holding that node and nothing else.

python_functions_K.cpp keeps torchgen's five files (their entry points are what PyTorch links
against), each compiled with only its own nodes' headers. The binding files compile as they
are. The torchgen-compatible files are still what `gradshard build` writes to --out.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import xxhash

from .records import Record
from .render import TemplateSet, functions_file, jinja_module

NODE_HEADER_DIR = "include/gradshard/nodes"
GENERATED_DIR = "include/torch/csrc/autograd/generated"
PRELUDE_PATH = f"{GENERATED_DIR}/Functions.h"  # the struct-less Functions.h every unit sees
SOURCE_DIR = "src"

# Which precompiled header a unit starts from (see templates/compile_units.j2).
AUTOGRAD_PCH = "autograd"
PYTHON_PCH = "python"


@dataclass(frozen=True, slots=True)
class ShardSettings(Record):
    """How finely Functions.cpp is cut. A unit costs a fixed ~4 s with GCC and torch's
    headers plus ~0.12 s per node (measured on 2.13 at -O2; docs/architecture.md)."""

    nodes_per_shard: int = 24


@dataclass(frozen=True, slots=True)
class ShardSource(Record):
    """One Functions shard: its text and where each node's definitions start (1-based lines),
    which is how a compiler error is traced back to its node."""

    text: str
    node_lines: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class CompileUnit(Record):
    """One translation unit: its source (a path in the compile directory, or an --out file
    compiled as is), the precompiled header it starts from, the generated headers it includes
    (their texts are part of its object's key) and its nodes, with their first lines."""

    name: str
    source: str
    from_out: bool
    pch: str
    headers: tuple[str, ...]
    nodes: tuple[str, ...]
    node_lines: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class CompileLayout(Record):
    """Every file gradshard writes into the compile directory (path → text hash) and the
    units to compile."""

    files: tuple[tuple[str, str], ...]
    units: tuple[CompileUnit, ...]


def shard_count(items: int, per_shard: int) -> int:
    """The smallest power of two that keeps the average shard at most per_shard items."""
    count = 1
    while count * max(per_shard, 1) < items:
        count *= 2
    return count


def compile_shard(name: str, count: int) -> int:
    """A node's shard: stable under any edit that does not rename the node."""
    return xxhash.xxh3_64_intdigest(name.encode()) % count


def functions_shards(names: Sequence[str], settings: ShardSettings) -> list[list[int]]:
    """The nodes (positions, in Functions.cpp order) of each non-empty Functions shard."""
    count = shard_count(len(names), settings.nodes_per_shard)
    shards: list[list[int]] = [[] for _ in range(count)]
    for position, name in enumerate(names):
        shards[compile_shard(name, count)].append(position)
    return [members for members in shards if members]


def node_header_path(node: str) -> str:
    return f"{NODE_HEADER_DIR}/{node}.h"


def node_include(node: str) -> str:
    return node_header_path(node).removeprefix("include/")


def piece_lines(text: str, pieces: Sequence[str], skip: int = 0) -> tuple[int, ...]:
    """The 1-based line where each piece starts in text (pieces appear in order), found by
    each piece's first line; the search starts after the first `skip` lines."""
    lines: list[int] = []
    offset = 0
    for _ in range(skip):
        offset = text.index("\n", offset) + 1
    for piece in pieces:
        first = piece.split("\n", 1)[0]
        offset = text.index(first, offset)
        lines.append(text.count("\n", 0, offset) + 1)
        offset += len(first)
    return tuple(lines)


# ---------------------------------------------------------------------------------------------
# Texts (templates/compile_units.j2 and the spec's own Functions templates)


def node_header(node: str, declaration: str, templates: TemplateSet) -> str:
    return str(jinja_module(templates, "compile_units.j2").node_header(node, declaration))


def functions_prelude(spec_templates: TemplateSet, layout: str) -> str:
    """Functions.h without a single struct: what FunctionsManual.h and every unit include."""
    return functions_file("Functions.h", [], spec_templates, layout)


def functions_shard_source(nodes: Sequence[str], definitions: Sequence[str],
                           spec_templates: TemplateSet, templates: TemplateSet,
                           layout: str, index: int) -> ShardSource:
    """Functions.cpp with only these nodes' definitions, after their headers."""
    prefix = _unit_prefix(templates, f"Functions.cpp, shard {index}", nodes)
    body = functions_file("Functions.cpp", definitions, spec_templates, layout)
    text = prefix + body
    return ShardSource(text, piece_lines(text, definitions, skip=prefix.count("\n")))


def python_shard_source(nodes: Sequence[str], file_text: str, file_name: str,
                        templates: TemplateSet) -> str:
    """A python_functions file as generated, after the headers of the nodes it names."""
    return _unit_prefix(templates, file_name, nodes) + file_text


def pch_header(kind: str, templates: TemplateSet) -> str:
    return str(getattr(jinja_module(templates, "compile_units.j2"), f"{kind}_pch")())


def _unit_prefix(templates: TemplateSet, what: str, nodes: Sequence[str]) -> str:
    macros = jinja_module(templates, "compile_units.j2")
    return str(macros.unit_prefix(what, [node_include(n) for n in nodes]))
