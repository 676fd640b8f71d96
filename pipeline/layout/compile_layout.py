"""Compile layout: the generated C++ cut into translation units that each compile in seconds.

Functions.cpp holds every node, so one edited formula recompiles all of it, and every unit
including Functions.h recompiles when one struct changes. Here each node's struct goes to its
own header (gradshard/nodes/<Node>.h) and its code to two units: its formula
(apply_functional) to one of many small formula units, and its methods (apply and the
compiled-autograd ones) to one of a few larger Functions units. A formula edit, the common
one, recompiles one small unit; the methods change only with a node's saved variables. With GCC
and torch's headers every unit pays a fixed cost (about 1.6 s on FunctionsManual.h, 6 s for a
Python unit, at -O2 on 2.13) before its first node, which is why the two sizes differ
(benchmarks/README.md has the measurements, under bench_compile.py).

A node's unit is a hash of its name into 3·2^k units of each kind: adding a node changes only
its own units, and a spec that outgrows the count splits each unit in two rather than
reshuffling. A unit includes only the headers of its own nodes (Functions.h itself is
compiled as its prelude, without structs; formula units need no struct at all), so a changed
saved variable recompiles the units holding that node and nothing else. A cold build compiles
formula units a dozen at a time (`merged_groups`), which later edits splice into.

python_functions_K.cpp keeps torchgen's five files (their entry points are what PyTorch links
against), each compiled with only its own nodes' headers. A large binding file compiles as it
is; the small ones compile together in units about as large as the largest file. The
torchgen-compatible files are still what `gradshard build` writes to --out.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import xxhash

from gradshard.pipeline.records import Record
from gradshard.pipeline.render.nodes import BackwardNode
from gradshard.pipeline.render.templating import (TemplateSet, functions_file, jinja_module,
                                                  render_node_formula, render_node_methods)
from gradshard.pipeline.render.variable_type_files import (DispatchKeys, RenderedKernel,
                                                           registrations_by_key,
                                                           variable_type_head)

__all__ = ["AUTOGRAD_PCH", "CompileLayout", "CompileUnit", "GENERATED_DIR", "KERNEL_PRELUDE_PATH",
           "MERGED_KERNEL_PREFIX", "PCH_KINDS", "PRELUDE_PATH", "PYTHON_PCH", "SOURCE_DIR",
           "ShardSettings", "ShardSource", "VARIABLE_TYPE_PCH", "binding_unit_source",
           "binding_units", "codegen_unit_name", "definitions_shard_source",
           "estimated_seconds", "formula_shard_source", "forward_shard_source",
           "forward_unit_name", "function_op", "functions_prelude",
           "functions_shards", "kernel_op", "kernel_prelude", "kernel_shard_source",
           "kernel_unit_name", "merged_formula_source", "merged_groups", "merged_kernel_source",
           "methods_shard_source", "node_header", "node_header_path", "pch_header", "piece_lines",
           "python_shard_source", "qualified_kernel", "shard_count", "shard_name",
           "variable_factories_unit"]

NODE_HEADER_DIR = "include/gradshard/nodes"
GENERATED_DIR = "include/torch/csrc/autograd/generated"
PRELUDE_PATH = f"{GENERATED_DIR}/Functions.h"  # the struct-less Functions.h every unit sees
KERNEL_PRELUDE_PATH = "include/gradshard/variable_type_head.h"  # VariableType.cpp's head
SOURCE_DIR = "src"

# Which precompiled header a unit starts from (see templates/codegen/compile_units.j2).
AUTOGRAD_PCH = "autograd"
PYTHON_PCH = "python"
VARIABLE_TYPE_PCH = "variable_type"
PCH_KINDS = (AUTOGRAD_PCH, PYTHON_PCH, VARIABLE_TYPE_PCH)


@dataclass(frozen=True, slots=True)
class ShardSettings(Record):
    """How finely the generated C++ is cut: nodes per formula unit (what one formula edit
    recompiles), per Functions unit (what a saved-variable change recompiles besides), and
    the most text a unit of several binding files holds (about what the largest binding
    files hold, so packing never makes the slowest binding edit slower)."""

    formula_nodes: int = 32
    methods_nodes: int = 256
    binding_unit_bytes: int = 600_000
    formula_base: int = 3  # formula units come 3·2^k at a time: 24 for 2.13's ~750 nodes
    methods_base: int = 3  # and Functions units too: 3 for 2.13
    merged_formula_units: int = 12  # formula units one merged unit compiles (below 2: none)
    merged_kernel_ops: int = 256  # op units per merged unit (3·2^k merged): 12 for 2.13
    merged_kernel_base: int = 3  # (below 1: no merged units, each unit registers its kernels)
    # TraceType's and ADInplaceOrViewType's functions per unit, cut by a hash of the
    # function's name into 3·2^k units: 24 of ~130 for 2.13's 3086 traced functions (~9 s
    # each; 24 units from 1921 to 3840 of them, where 128 made 48: each unit also pays ~2.7 s
    # of headers), 6 of ~180 for its 1093 ADInplaceOrView ones (a third of the text per
    # kernel, more headers)
    codegen_kernels: tuple[tuple[str, int], ...] = (("ADInplaceOrViewType", 256),
                                                    ("TraceType", 160))
    codegen_base: int = 3

    def kernels_per_unit(self, stem: str) -> int:
        return dict(self.codegen_kernels).get(stem, 128)


@dataclass(frozen=True, slots=True)
class ShardSource(Record):
    """One Functions shard: its text and where each node's definitions start (1-based lines),
    which is how a compiler error is traced back to its node."""

    text: str
    node_lines: tuple[int, ...]
    nodes: tuple[str, ...] = ()  # VariableType units: the nodes whose structs they need
    kernels: tuple[str, ...] = ()  # and the kernels node_lines are of


@dataclass(frozen=True, slots=True)
class CompileUnit(Record):
    """One translation unit: its source (a path in the compile directory, or an --out file
    compiled as is), the precompiled header it starts from, the generated headers it includes
    (their texts are part of its object's key), its nodes with their first lines, and the
    bytes of generated code it compiles (what its compile time is estimated from). A merged
    unit names the units it compiles together as its parts."""

    name: str
    source: str
    from_out: bool
    pch: str
    headers: tuple[str, ...]
    nodes: tuple[str, ...]
    node_lines: tuple[int, ...]
    size: int
    parts: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class CompileLayout(Record):
    """Every file gradshard writes into the compile directory (path → text hash), the units
    to compile, and the merged units a build may compile instead of their parts (see
    `merged_groups`)."""

    files: tuple[tuple[str, str], ...]
    units: tuple[CompileUnit, ...]
    merged: tuple[CompileUnit, ...] = ()


# What a unit costs before its first line, by PCH, and per byte of code after it: g++ 12 at -O2
# on torch 2.13's headers (docs/architecture.md). Only the order of compiles depends on them.
UNIT_FLOOR_SECONDS = {AUTOGRAD_PCH: 1.8, PYTHON_PCH: 6.0, VARIABLE_TYPE_PCH: 2.7}
UNIT_SECONDS_PER_BYTE = {AUTOGRAD_PCH: 3e-5, PYTHON_PCH: 3e-5, VARIABLE_TYPE_PCH: 1e-4}


def estimated_seconds(unit: CompileUnit) -> float:
    return (UNIT_FLOOR_SECONDS.get(unit.pch, 0.0)
            + unit.size * UNIT_SECONDS_PER_BYTE.get(unit.pch, 3e-5))


def shard_count(items: int, per_shard: int, base: int = 1) -> int:
    """The smallest count base·2^k that keeps the average shard at most per_shard items.
    Counts of one base double as a spec grows, so each shard splits in two."""
    count = base
    while count * max(per_shard, 1) < items:
        count *= 2
    return count


def compile_shard(name: str, count: int) -> int:
    """A node's shard: stable under any edit that does not rename the node."""
    return xxhash.xxh3_64_intdigest(name.encode()) % count


def functions_shards(names: Sequence[str], per_shard: int,
                     base: int = 1) -> list[tuple[int, list[int]]]:
    """Each non-empty shard's number and nodes (positions, in Functions.cpp order)."""
    count = shard_count(len(names), per_shard, base)
    shards: list[list[int]] = [[] for _ in range(count)]
    for position, name in enumerate(names):
        shards[compile_shard(name, count)].append(position)
    return [(number, members) for number, members in enumerate(shards) if members]


def shard_name(prefix: str, number: int, count: int) -> str:
    """A shard's unit name, by its number among `count`: stable while the count is, even
    when another shard empties."""
    return f"{prefix}{number:0{len(str(count - 1))}d}"


def function_op(function: str) -> str:
    """A function's name without overload or in-place underscore: what one formula reaches
    together (erfinv, erfinv_, erfinv.out → erfinv; __iand__ stays)."""
    name = function.partition(".")[0]
    return name[:-1] if name.endswith("_") and not name.endswith("__") else name


def kernel_op(function: str) -> str:
    """What a function's kernels are compiled with: its op (`function_op`), so that the
    functional and in-place kernels one formula reaches share a unit; out= overloads (`out`,
    `*_out`), which no formula reaches, apart (erfinv.out → erfinv-out)."""
    overload = function.partition(".")[2]
    op = function_op(function)
    return f"{op}-out" if overload == "out" or overload.endswith("_out") else op


def codegen_unit_name(stem: str, number: int, count: int) -> str:
    """A TraceType or ADInplaceOrViewType unit (`TraceType_part-07`): the `-` keeps it apart
    from torchgen's files and from VariableType's op units."""
    return shard_name(f"{stem}_part-", number, count)


def variable_factories_unit(templates: TemplateSet) -> str:
    """A unit that includes variable_factories.h alone: the header's inline functions
    compile."""
    return str(jinja_module(templates, "compile_units.j2").variable_factories_unit())


def kernel_unit_name(op: str) -> str:
    return f"VariableType_{op}"


def kernel_namespace(op: str) -> str:
    """The namespace an op's kernels are defined in, inside torch::autograd::VariableType
    (op_erfinv, out_erfinv): a kernel's unqualified calls then never find another op's
    kernel, whatever unit it is compiled in (torchgen's see the kernels defined before them
    in their file, which differs by shard)."""
    name, _, out = op.partition("-")
    return f"out_{name}" if out else f"op_{name}"


def forward_namespace(op: str) -> str:
    """The namespace of an op's outlined forward formulas (fw_erfinv, fw_out_erfinv), beside
    its kernels' (no op's kernel namespace starts with fw_)."""
    return f"fw_{kernel_namespace(op).removeprefix('op_')}"


def forward_unit_name(op: str) -> str:
    return f"VariableTypeForward_{op}"


def qualified_kernel(op: str, wrapper: str) -> str:
    """A kernel's name inside torch::autograd::VariableType (what registrations reach it by)."""
    return f"{kernel_namespace(op)}::{wrapper}"


# Merged kernel units are named by number, with a `-` that no op's name holds.
MERGED_KERNEL_PREFIX = "VariableType_merged-"


def merged_groups(count: int, per_group: int) -> list[range]:
    """The formula units (positions) each merged unit compiles: consecutive runs of
    per_group. A build with no object of a merged unit's parts compiles the merged unit, one
    compile floor for many units (templates/codegen/compile_units.j2); its formulas are weak symbols,
    so after an edit the edited part's own object is linked over them
    (service/compile/ninja.py: splice_command) and a formula edit still compiles one small unit."""
    if per_group < 2 or count < 2:
        return []
    return [range(start, min(start + per_group, count)) for start in range(0, count, per_group)]


def binding_units(sizes: Sequence[tuple[str, int]], limit: int) -> list[tuple[str, ...]]:
    """The binding files (name, bytes) packed, in name order, into units of at most `limit`
    bytes; a larger file is a unit of its own. A Python unit pays ~6 s before its first line
    (templates/codegen/compile_units.j2), more than most small binding files cost themselves, so
    small files compile together. Files move between units only when sizes cross the limit.
    """
    units: list[list[str]] = []
    held = limit  # bytes in the last unit; a full one starts the first
    for name, size in sorted(sizes):
        if held + size > limit:
            units.append([])
            held = 0
        units[-1].append(name)
        held += size
    return [tuple(members) for members in units]


def node_header_path(node: str) -> str:
    return f"{NODE_HEADER_DIR}/{node}.h"


def node_include(node: str) -> str:
    return include_name(node_header_path(node))


def include_name(path: str) -> str:
    """How a unit includes a header of the compile directory's include/."""
    return path.removeprefix("include/")


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
# Texts (templates/codegen/compile_units.j2 and the spec's own Functions templates)


def node_header(node: str, declaration: str, templates: TemplateSet) -> str:
    return str(jinja_module(templates, "compile_units.j2").node_header(node, declaration))


def functions_prelude(spec_templates: TemplateSet, layout: str) -> str:
    """Functions.h without a single struct: what FunctionsManual.h and every unit include."""
    return functions_file("Functions.h", [], spec_templates, layout)


def formula_shard_source(nodes: Sequence[BackwardNode], templates: TemplateSet,
                         index: int) -> ShardSource:
    """These nodes' formulas: functions of the unpacked saved values, no struct needed."""
    formulas = [render_node_formula(n, templates) for n in nodes]
    macros = jinja_module(templates, "compile_units.j2")
    text = str(macros.formula_unit(f"formulas of Functions.cpp, unit {index}", formulas))
    return ShardSource(text, piece_lines(text, formulas))


def methods_shard_source(nodes: Sequence[BackwardNode], spec_templates: TemplateSet,
                         templates: TemplateSet, layout: str, index: int) -> ShardSource:
    """Functions.cpp with only these nodes' methods, after their headers."""
    methods = [render_node_methods(n, templates) for n in nodes]
    prefix = _unit_prefix(templates, f"Functions.cpp, unit {index}", [n.op for n in nodes])
    text = prefix + functions_file("Functions.cpp", methods, spec_templates, layout)
    return ShardSource(text, piece_lines(text, methods, skip=prefix.count("\n")))


def definitions_shard_source(nodes: Sequence[str], definitions: Sequence[str],
                             spec_templates: TemplateSet, templates: TemplateSet, layout: str,
                             index: int) -> ShardSource:
    """Functions.cpp with only these nodes' definitions, whole, after their headers: the host
    path's unit of nodes (the spec's generator writes a node's definition in one piece, so its
    formulas are not compiled apart from its methods)."""
    prefix = _unit_prefix(templates, f"Functions.cpp, unit {index}", nodes)
    text = prefix + functions_file("Functions.cpp", definitions, spec_templates, layout)
    return ShardSource(text, piece_lines(text, definitions, skip=prefix.count("\n")))


def python_shard_source(nodes: Sequence[str], file_text: str, file_name: str,
                        templates: TemplateSet) -> str:
    """A python_functions file as generated, after the headers of the nodes it names."""
    return _unit_prefix(templates, file_name, nodes) + file_text


def merged_formula_source(parts: Sequence[str], templates: TemplateSet) -> str:
    """Formula units compiled as one, each included from its source beside it."""
    macros = jinja_module(templates, "compile_units.j2")
    return str(macros.merged_formula_unit(list(parts)))


def binding_unit_source(members: Sequence[str], templates: TemplateSet) -> str:
    """A unit of several binding files, each included from its copy beside it. They can
    share a unit because they define no name twice: torchgen names a file's own definitions
    after its module (initFFTFunctions, fft_functions) or after an op (THPVariable_fft_fft),
    and an op belongs to one Python module (tests/test_compile_full.py compiles the real set).
    """
    macros = jinja_module(templates, "compile_units.j2")
    return str(macros.binding_unit(list(members)))


def kernel_prelude(spec_templates: TemplateSet, templates: TemplateSet) -> str:
    """VariableType.cpp's head as a header every kernel unit includes (once in a merged one)."""
    macros = jinja_module(templates, "compile_units.j2")
    return str(macros.kernel_prelude(variable_type_head(spec_templates)))


def kernel_shard_source(kernels: Sequence[RenderedKernel], keys: DispatchKeys,
                        templates: TemplateSet, op: str, registers: bool) -> ShardSource:
    """An op's kernels, after VariableType.cpp's head and the headers of the nodes they create;
    their registrations too unless a merged unit holds them (`registers`). Their outlined
    forward formulas are declared before them and called where torchgen's kernels compute
    them (`forward_shard_source` defines them)."""
    nodes = tuple(dict.fromkeys(k.node for k in kernels if k.node))
    defined = [k for k in kernels if k.definition]
    macros = jinja_module(templates, "compile_units.j2")
    forward_ns = forward_namespace(op)
    definitions = [_calling_definition(k, forward_ns, macros) for k in defined]
    text = str(macros.kernel_unit(
        f"the kernels of {op} in VariableType.cpp", include_name(KERNEL_PRELUDE_PATH),
        [node_include(n) for n in nodes], kernel_namespace(op), definitions,
        [qualified_kernel(op, k.wrapper) for k in defined] if registers else [],
        registrations_by_key(kernels, keys) if registers else [], forward_ns,
        [f for k in defined for f in k.forward]))
    return ShardSource(text, piece_lines(text, definitions), nodes,
                       tuple(k.wrapper for k in defined))


def _calling_definition(kernel: RenderedKernel, namespace: str, macros) -> str:
    """The kernel's definition with each outlined formula's assignment a call of its function
    (an assignment found other than once stays as it is: the function is then unused)."""
    text = kernel.definition
    for function in kernel.forward:
        assignment = f"{function.target} = {function.formula};"
        if text.count(assignment) == 1:
            text = text.replace(assignment, str(macros.forward_call(namespace, function)))
    return text


def forward_shard_source(kernels: Sequence[RenderedKernel], templates: TemplateSet,
                         op: str) -> ShardSource:
    """An op's outlined forward formulas (pipeline/render/forward_outline.py), each traced back to
    its kernel on a compile error."""
    owners = [(k.wrapper, f) for k in kernels for f in k.forward]
    macros = jinja_module(templates, "compile_units.j2")
    functions = [str(macros.forward_function(f)) for _, f in owners]
    text = str(macros.forward_unit(f"the forward formulas of {op}'s kernels",
                                   forward_namespace(op), functions))
    return ShardSource(text, piece_lines(text, functions), (), tuple(w for w, _ in owners))


def merged_kernel_source(parts: Sequence[str], kernels: Sequence[RenderedKernel],
                         defined: Sequence[str], keys: DispatchKeys,
                         templates: TemplateSet) -> str:
    """Kernel units compiled as one, with every registration of their kernels (`defined`:
    their kernels as namespace::wrapper, which the registrations name by wrapper)."""
    macros = jinja_module(templates, "compile_units.j2")
    return str(macros.merged_kernel_unit(list(parts), list(defined),
                                         registrations_by_key(kernels, keys)))


def pch_header(kind: str, templates: TemplateSet) -> str:
    return str(getattr(jinja_module(templates, "compile_units.j2"), f"{kind}_pch")())


def _unit_prefix(templates: TemplateSet, what: str, nodes: Sequence[str]) -> str:
    macros = jinja_module(templates, "compile_units.j2")
    return str(macros.unit_prefix(what, [node_include(n) for n in nodes]))
