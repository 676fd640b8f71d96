"""The compile layout of a host-path build: the generated C++ cut into units from the spec's own
generator's item values, as the ported layout cuts gradshard's records (layout_group.py), so a
formula's edit recompiles a unit of nodes and its op's kernel units, not a torchgen shard.

What the generator's items give, and where it goes:

- a node's declaration (process_function with FUNCTION_DECLARATION) → its header,
  include/gradshard/nodes/<Node>.h, after the struct-less Functions.h prelude (the spec's
  template, as on the ported path);
- a node's definition (FUNCTION_DEFINITION) → src/Functions_NN.cpp, the spec's Functions.cpp
  over the definitions of the nodes hashed into unit NN (3·2^k units of at most
  `formula_nodes`): a definition is one piece there, so its formula compiles with its
  methods;
- a function's kernels (gen_variable_type_func's value: per dispatch key a definition and a
  registration) → the ported path's kernel, merged-kernel units (layout_group.py:
  op_kernel_units), one per op;
- python_functions_K.cpp, the binding files, ViewFuncs.cpp, TraceType_K.cpp and
  ADInplaceOrViewType_K.cpp compile as the generator wrote them (python_functions after the
  headers of the nodes it names; the small binding files several to a unit), and
  ATen/FunctionalInverses.h (which the wheel lacks) is the spec's torchgen's own
  (service/host/aten_headers.py).

Every input is a hash: an item value's (JSON text, decoded by the task that reads it), an --out
file's text or a record the session made, so an unchanged layout is one lookup and an edit
runs the tasks whose inputs it changed.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from gradshard.cache.engine.core import Engine
from gradshard.cache.engine.jobs import group_of, task_of
from gradshard.cache.engine.values import Value
from gradshard.cache.graph.layout_group import (
    COPIED_HEADERS,
    FACTORIES_UNIT,
    INVERSES_PATH,
    NODE_HEADER,
    PCH_HEADER,
    PRELUDE,
    PYTHON_SHARD,
    NodeList,
    binding_file_units,
    op_kernel_units,
    shard_units,
)
from gradshard.cache.graph.tasks import single_template
from gradshard.pipeline.layout.compile_layout import (
    GENERATED_DIR,
    PCH_KINDS,
    PRELUDE_PATH,
    PYTHON_PCH,
    SOURCE_DIR,
    VARIABLE_TYPE_PCH,
    CompileLayout,
    CompileUnit,
    ShardSettings,
    ShardSource,
    definitions_shard_source,
    functions_shards,
    kernel_op,
    node_header_path,
)
from gradshard.pipeline.layout.host_values import rendered_kernels
from gradshard.pipeline.records import Record, Text
from gradshard.pipeline.render.templating import TemplateSet
from gradshard.pipeline.render.variable_type_files import DispatchKeys, RenderedKernel

__all__ = ["AS_IS_FILES", "HOST_COMPILE_LAYOUT", "HostLayoutIndex", "kernels_of_value",
           "python_files"]

# the generator's files compiled as it wrote them (besides the binding files)
AS_IS_FILES = re.compile(r"(TraceType|ADInplaceOrViewType)_\d+\.cpp|ViewFuncs\.cpp")
PYTHON_FUNCTIONS_FILE = re.compile(r"python_functions_\d+\.cpp")


@dataclass(frozen=True, slots=True)
class HostLayoutIndex(Record):
    """What a host build's layout is cut from: each node (by name) with the hashes of
    its declaration's and definition's item values; each function with its kernels' item value
    and the node and entry of each dispatch key (JSON: item_values.py's kernel_nodes); the
    files --out holds (name → text hash); the nodes each python_functions file names; and the
    text hash of FunctionalInverses.h."""

    nodes: tuple[tuple[str, str, str], ...]
    kernels: tuple[tuple[str, str, str], ...]
    files: tuple[tuple[str, str], ...]
    python_nodes: tuple[tuple[str, tuple[str, ...]], ...]
    inverses: str


def kernels_of_value(value: Text, nodes: Text) -> tuple[RenderedKernel, ...]:
    """gen_variable_type_func's value (JSON) as one RenderedKernel per dispatch key, with the
    node and entry `nodes` (JSON: key → [node, entry]) gives that key."""
    placed = {key: (node, entry) for key, (node, entry) in json.loads(nodes.text).items()}
    return tuple(rendered_kernels(json.loads(value.text), placed))


def make_node_definitions(nodes: NodeList, definitions: tuple[Text, ...], template: Text,
                          templates: TemplateSet, layout: Text, index: Text) -> ShardSource:
    return definitions_shard_source(nodes.names, [json.loads(d.text) for d in definitions],
                                    single_template("Functions.cpp", template), templates,
                                    layout.text, int(index.text))


def make_declaration(value: Text) -> Text:
    return Text(json.loads(value.text))


def make_dispatch_keys(kernels: tuple[RenderedKernel, ...]) -> DispatchKeys:
    """The dispatch keys the kernels register at (their registrations' order in a unit)."""
    return DispatchKeys(tuple(sorted({k.key for k in kernels})))


FUNCTION_KERNELS = task_of("host.function_kernels", "layout", kernels_of_value)
DECLARATION = task_of("host.declaration", "layout", make_declaration)
NODE_DEFINITIONS = task_of("host.node_definitions", "layout", make_node_definitions,
                           labels={"index": "shard"})
DISPATCH_KEYS = task_of("host.dispatch_keys", "layout", make_dispatch_keys)


def host_compile_layout(engine: Engine, index: Value, spec_templates: Value, templates: Value,
                        layout: Value, settings: Value) -> CompileLayout:
    built: HostLayoutIndex = engine.record(index)
    sources: TemplateSet = engine.record(spec_templates)
    shards: ShardSettings = engine.record(settings)
    out_files = dict(built.files)
    files: dict[str, Value] = {}
    names = [name for name, _, _ in built.nodes]
    declarations = engine.map(DECLARATION, [((engine.ref(d, Text),), f"declaration of {n}")
                                            for n, d, _ in built.nodes])
    headers = engine.map(NODE_HEADER, [((engine.text(n), d, templates), n)
                                       for n, d in zip(names, declarations)])
    files.update((node_header_path(n), h) for n, h in zip(names, headers))
    files[PRELUDE_PATH] = engine.run(PRELUDE, [engine.text(sources.text("Functions.h")), layout],
                                     "Functions.h")
    files.update((f"{GENERATED_DIR}/{name}", engine.ref(out_files[name], Text))
                 for name in COPIED_HEADERS if name in out_files)
    files[INVERSES_PATH] = engine.ref(built.inverses, Text)
    for kind in PCH_KINDS:
        files[f"pch/{kind}.h"] = engine.run(PCH_HEADER, [engine.text(kind), templates], kind)
    units = _node_units(engine, built, names, engine.text(sources.text("Functions.cpp")),
                        templates, layout, shards, files)
    kernel_units, merged = _kernel_units(engine, built,
                                         engine.text(sources.text("VariableType.cpp")),
                                         templates, shards, files)
    units += kernel_units
    units += _python_units(engine, built, out_files, templates, files)
    units += binding_file_units(engine, out_files, templates, shards.binding_unit_bytes, files)
    units += _as_is_units(engine, out_files, files)
    source = f"{SOURCE_DIR}/variable_factories.cpp"
    files[source] = engine.run(FACTORIES_UNIT, [templates], "variable_factories.h")
    units.append(CompileUnit("variable_factories", source, False, VARIABLE_TYPE_PCH,
                             (f"{GENERATED_DIR}/variable_factories.h",), (), (),
                             _size(engine, out_files.get("variable_factories.h", ""))))
    return CompileLayout(tuple(sorted((path, v.hash) for path, v in files.items())),
                         tuple(units), tuple(merged))


def _node_units(engine: Engine, built: HostLayoutIndex, names: list[str], template: Value,
                templates: Value, layout: Value, shards: ShardSettings,
                files: dict[str, Value]) -> list[CompileUnit]:
    """src/Functions_NN.cpp: the nodes (`names`: built.nodes') hashed into unit NN, whole."""
    groups = [members for _, members in functions_shards(names, shards.formula_nodes,
                                                         shards.formula_base)]
    made = engine.map(NODE_DEFINITIONS, [
        ((engine.literal(NodeList(tuple(names[i] for i in members))),
          engine.collection([engine.ref(built.nodes[i][2], Text) for i in members], Text),
          template, templates, layout, engine.text(str(k))), f"nodes {k}")
        for k, members in enumerate(groups)])
    return shard_units(engine, "Functions_", names, groups, made, files)


def _kernel_units(engine: Engine, built: HostLayoutIndex, template: Value, templates: Value,
                  shards: ShardSettings, files: dict[str, Value]
                  ) -> tuple[list[CompileUnit], list[CompileUnit]]:
    made = engine.map(FUNCTION_KERNELS, [
        ((engine.ref(value, Text), engine.text(nodes)), f"kernels of {function}")
        for function, value, nodes in built.kernels])
    of_op: dict[str, list[Value]] = {}
    for (function, _, _), kernels in zip(built.kernels, engine.items_of(made)):
        of_op.setdefault(kernel_op(function), []).extend(kernels)
    every = engine.collection([k for op in sorted(of_op) for k in of_op[op]], RenderedKernel)
    keys = engine.run(DISPATCH_KEYS, [every], "dispatch keys")
    return op_kernel_units(engine, of_op, keys, template, templates, shards, files)


def _python_units(engine: Engine, built: HostLayoutIndex, out_files: dict[str, str],
                  templates: Value, files: dict[str, Value]) -> list[CompileUnit]:
    """Each python_functions file as the generator wrote it, after the headers of its nodes."""
    units = []
    for file_name, nodes in built.python_nodes:
        source = f"{SOURCE_DIR}/{file_name}"
        files[source] = engine.run(PYTHON_SHARD, [
            engine.literal(NodeList(nodes)), engine.ref(out_files[file_name], Text),
            engine.text(file_name), templates], file_name)
        units.append(CompileUnit(file_name.removesuffix(".cpp"), source, False, PYTHON_PCH,
                                 (PRELUDE_PATH, f"{GENERATED_DIR}/python_functions.h",
                                  *(node_header_path(n) for n in nodes)), nodes, (),
                                 _size(engine, files[source].hash)))
    return units


def _as_is_units(engine: Engine, out_files: dict[str, str],
                 files: dict[str, Value]) -> list[CompileUnit]:
    """TraceType's, ADInplaceOrViewType's and ViewFuncs' files, compiled from --out as the
    generator wrote them, with every generated header's copy (and FunctionalInverses.h)."""
    headers = tuple(sorted(p for p in files if p.startswith(f"{GENERATED_DIR}/")))
    return [CompileUnit(name.removesuffix(".cpp"), name, True, VARIABLE_TYPE_PCH,
                        (*headers, INVERSES_PATH), (), (), _size(engine, out_files[name]))
            for name in sorted(out_files) if AS_IS_FILES.fullmatch(name)]


def _size(engine: Engine, text: str) -> int:
    return len(engine.record(engine.ref(text, Text)).text) if text else 0


def python_files(names: list[str]) -> list[str]:
    return sorted(n for n in names if PYTHON_FUNCTIONS_FILE.fullmatch(n))


HOST_COMPILE_LAYOUT = group_of("group.host_compile_layout", "layout", host_compile_layout)
