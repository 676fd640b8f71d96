"""The compile layout as engine tasks: from a build's index (its node pieces and files) to the
sources, headers and units of the compile directory (pipeline/layout/compile_layout.py).

One task per node header, per formula unit, per Functions unit, per VariableType unit and per
python_functions file, so an edited formula re-renders one formula unit and a changed struct
one header; every other text is reused and, unchanged, is not rewritten on disk (so ninja sees
nothing to do for it).
"""

from __future__ import annotations

from dataclasses import dataclass

from gradshard.cache.engine.core import Engine
from gradshard.cache.engine.jobs import group_of, task_of
from gradshard.cache.engine.values import Value
from gradshard.cache.graph.group_records import AutogradSide, BuildIndex, NativeSide
from gradshard.cache.graph.kernel_family import (FAMILIES, KernelFamily, family_of_file,
                                                 kernel_unit_fields)
from gradshard.cache.graph.tasks import single_template
from gradshard.pipeline.layout.compile_layout import (AUTOGRAD_PCH, GENERATED_DIR,
                                                      KERNEL_PRELUDE_PATH, MERGED_KERNEL_PREFIX,
                                                      PCH_KINDS, PRELUDE_PATH, PYTHON_PCH,
                                                      SOURCE_DIR, VARIABLE_TYPE_PCH, CompileLayout,
                                                      CompileUnit, ShardSettings, ShardSource,
                                                      binding_unit_source, binding_units,
                                                      codegen_unit_name, formula_shard_source,
                                                      forward_shard_source, forward_unit_name,
                                                      functions_prelude, functions_shards,
                                                      kernel_op, kernel_prelude,
                                                      kernel_shard_source, kernel_unit_name,
                                                      merged_formula_source, merged_groups,
                                                      merged_kernel_source, methods_shard_source,
                                                      node_header, node_header_path, pch_header,
                                                      python_shard_source, qualified_kernel,
                                                      shard_count, shard_name,
                                                      variable_factories_unit)
from gradshard.pipeline.layout.functional_inverses import functional_inverses_header
from gradshard.pipeline.parse.native import NativeFunction
from gradshard.pipeline.parse.views import ViewOrder, view_grouping
from gradshard.pipeline.records import Record, Text
from gradshard.pipeline.render.nodes import BackwardNode
from gradshard.pipeline.render.templating import TemplateSet, python_function_shards
from gradshard.pipeline.render.variable_type_files import DispatchKeys, RenderedKernel

__all__ = ["COMPILE_LAYOUT", "COPIED_HEADERS", "FACTORIES_UNIT", "INVERSES_PATH", "NODE_HEADER",
           "NodeList", "PCH_HEADER", "PRELUDE", "PYTHON_SHARD", "binding_file_units",
           "op_kernel_units", "shard_units"]


@dataclass(frozen=True, slots=True)
class NodeList(Record):
    names: tuple[str, ...]


# The binding files of --out, compiled as they are (alone or several to a unit): every .cpp
# but what the shards replace and the Everything files (torchgen writes those for tools,
# PyTorch does not compile them).
def is_binding_file(name: str) -> bool:
    return (name.endswith(".cpp") and "/" not in name and not name.endswith("Everything.cpp")
            and name != "Functions.cpp" and not name.startswith(NOT_BINDINGS))


# The files the compile cuts or compiles otherwise (VariableType's, the kernel families', the
# view functions') and what starts with them.
NOT_BINDINGS = ("python_functions", "VariableType", "TraceType", "ADInplaceOrViewType",
                "ViewFuncs")

# Generated headers the units include by their torch path (a copy in the compile directory
# shadows the installed one); Functions.h is its struct-less prelude.
COPIED_HEADERS = ("python_functions.h", "python_return_types.h", "VariableType.h", "ViewFuncs.h",
                  "variable_factories.h")
# gen.py writes it with the ATen files, which the wheel does not ship: ADInplaceOrViewType
# includes it (pipeline/layout/functional_inverses.py)
INVERSES_PATH = "include/ATen/FunctionalInverses.h"
VIEW_FUNCS_HEADER = f"{GENERATED_DIR}/ViewFuncs.h"


def make_node_header(name: Text, declaration: Text, templates: TemplateSet) -> Text:
    return Text(node_header(name.text, declaration.text, templates))


def make_prelude(template: Text, layout: Text) -> Text:
    return Text(functions_prelude(single_template("Functions.h", template), layout.text))


def make_formula_shard(nodes: tuple[BackwardNode, ...], templates: TemplateSet,
                       index: Text) -> ShardSource:
    return formula_shard_source(nodes, templates, int(index.text))


def make_methods_shard(nodes: tuple[BackwardNode, ...], template: Text, templates: TemplateSet,
                       layout: Text, index: Text) -> ShardSource:
    return methods_shard_source(nodes, single_template("Functions.cpp", template), templates,
                                layout.text, int(index.text))


def make_python_shard(nodes: NodeList, file_text: Text, file_name: Text,
                      templates: TemplateSet) -> Text:
    return Text(python_shard_source(nodes.names, file_text.text, file_name.text, templates))


def make_binding_unit(members: NodeList, templates: TemplateSet) -> Text:
    return Text(binding_unit_source(members.names, templates))


def make_merged_formula_unit(parts: NodeList, templates: TemplateSet) -> Text:
    return Text(merged_formula_source(parts.names, templates))


def make_kernel_prelude(template: Text, templates: TemplateSet) -> Text:
    return Text(kernel_prelude(single_template("VariableType.cpp", template), templates))


def make_kernel_shard(kernels: tuple[RenderedKernel, ...], keys: DispatchKeys,
                      templates: TemplateSet, op: Text, registers: Text) -> ShardSource:
    return kernel_shard_source(kernels, keys, templates, op.text, bool(registers.text))


def make_forward_shard(kernels: tuple[RenderedKernel, ...], templates: TemplateSet,
                       op: Text) -> ShardSource:
    return forward_shard_source(kernels, templates, op.text)


def make_merged_kernel_unit(parts: NodeList, kernels: tuple[RenderedKernel, ...],
                            defined: NodeList, keys: DispatchKeys,
                            templates: TemplateSet) -> Text:
    return Text(merged_kernel_source(parts.names, kernels, defined.names, keys, templates))


def make_pch_header(kind: Text, templates: TemplateSet) -> Text:
    return Text(pch_header(kind.text, templates))


def make_functional_inverses(functions: tuple[NativeFunction, ...], order: ViewOrder,
                             templates: TemplateSet) -> Text:
    return Text(functional_inverses_header(view_grouping(functions, order), templates))


def make_variable_factories_unit(templates: TemplateSet) -> Text:
    return Text(variable_factories_unit(templates))


NODE_HEADER = task_of("compile.node_header", "layout", make_node_header, labels={"name": "node"})
PRELUDE = task_of("compile.prelude", "layout", make_prelude)
FORMULA_SHARD = task_of("compile.formula_shard", "layout", make_formula_shard,
                        labels={"index": "shard"})
METHODS_SHARD = task_of("compile.methods_shard", "layout", make_methods_shard,
                        labels={"index": "shard"})
PYTHON_SHARD = task_of("compile.python_shard", "layout", make_python_shard,
                       labels={"file_text": "file", "file_name": "name"})
BINDING_UNIT = task_of("compile.binding_unit", "layout", make_binding_unit)
MERGED_FORMULA_UNIT = task_of("compile.merged_formula_unit", "layout", make_merged_formula_unit)
KERNEL_PRELUDE = task_of("compile.kernel_prelude", "layout", make_kernel_prelude)
KERNEL_SHARD = task_of("compile.kernel_shard", "layout", make_kernel_shard,
                       labels={"keys": "dispatch keys"})
FORWARD_SHARD = task_of("compile.forward_shard", "layout", make_forward_shard)
MERGED_KERNEL_UNIT = task_of("compile.merged_kernel_unit", "layout", make_merged_kernel_unit,
                             labels={"keys": "dispatch keys"})
PCH_HEADER = task_of("compile.pch_header", "layout", make_pch_header)
FUNCTIONAL_INVERSES = task_of("compile.functional_inverses", "layout", make_functional_inverses,
                              labels={"order": "view order"})
FACTORIES_UNIT = task_of("compile.variable_factories_unit", "layout", make_variable_factories_unit)


def compile_layout(engine: Engine, index: Value, spec_templates: Value, templates: Value,
                   layout: Value, settings: Value) -> CompileLayout:
    built: BuildIndex = engine.record(index)
    names = [name for name, _ in built.nodes]
    pieces = [engine.items(engine.ref_collection(h, Text)) for _, h in built.nodes]
    sources = engine.record(spec_templates)
    files: dict[str, Value] = {}
    headers = engine.map(NODE_HEADER, [((engine.text(n), p[0], templates), n)
                                       for n, p in zip(names, pieces)])
    files.update((node_header_path(n), h) for n, h in zip(names, headers))
    files[PRELUDE_PATH] = engine.run(PRELUDE, [engine.text(sources.text("Functions.h")), layout],
                                "Functions.h")
    out_files = dict(built.files)
    for name in COPIED_HEADERS:
        files[f"{GENERATED_DIR}/{name}"] = engine.ref(out_files[name], Text)
    for kind in PCH_KINDS:
        files[f"pch/{kind}.h"] = engine.run(PCH_HEADER, [engine.text(kind), templates], kind)
    nodes = engine.items(engine.ref_collection(built.node_records, BackwardNode))
    shards: ShardSettings = engine.record(settings)
    units = _formula_units(engine, names, nodes, templates, shards, files)
    merged = _merged_formula_units(engine, units, templates, shards.merged_formula_units, files)
    units += _methods_units(engine, names, nodes, engine.text(sources.text("Functions.cpp")),
                            templates, layout, shards, files)
    kernel_units, merged_kernels = _kernel_units(
        engine, built, engine.text(sources.text("VariableType.cpp")), templates, shards, files)
    units += kernel_units
    merged += merged_kernels
    units += _python_units(engine, names, built, templates, files)
    units += binding_file_units(engine, out_files, templates, shards.binding_unit_bytes, files)
    units += _codegen_units(engine, built, sources, templates, layout, shards, files)
    return CompileLayout(tuple(sorted((path, v.hash) for path, v in files.items())),
                         tuple(units), tuple(merged))


def _formula_units(engine: Engine, names: list[str], nodes: tuple[Value, ...],
                   templates: Value, settings: ShardSettings,
                   files: dict[str, Value]) -> list[CompileUnit]:
    shards = [m for _, m in functions_shards(names, settings.formula_nodes,
                                             settings.formula_base)]
    made = engine.map(FORMULA_SHARD, [
        ((engine.collection([nodes[i] for i in members], BackwardNode), templates,
          engine.text(str(k))), f"formulas {k}") for k, members in enumerate(shards)])
    return shard_units(engine, "Functions_formulas_", names, shards, made, files,
                       with_headers=False)


def _merged_formula_units(engine: Engine, formula_units: list[CompileUnit], templates: Value,
                          per_group: int, files: dict[str, Value]) -> list[CompileUnit]:
    """src/<first>-<last>.cpp: runs of formula units compiled as one, each included from its
    own source."""
    merged = []
    for group in merged_groups(len(formula_units), per_group):
        parts = [formula_units[k] for k in group]
        name = merged_name(parts)
        source = engine.run(MERGED_FORMULA_UNIT, [
            engine.literal(NodeList(tuple(p.name for p in parts))), templates], name)
        merged.append(merged_unit(name, parts, source, files))
    return merged


def merged_name(parts: list[CompileUnit]) -> str:
    return f"{parts[0].name}-{parts[-1].name.rsplit('_', 1)[1]}"


def merged_unit(name: str, parts: list[CompileUnit], source: Value,
                files: dict[str, Value]) -> CompileUnit:
    """A merged unit of these parts, its text `source`: its headers are theirs and their
    sources, so its object's key covers every text it includes."""
    path = f"{SOURCE_DIR}/{name}.cpp"
    files[path] = source
    headers = tuple(dict.fromkeys(h for p in parts for h in (*p.headers, p.source)))
    return CompileUnit(name, path, False, parts[0].pch, headers, (), (),
                       sum(p.size for p in parts), tuple(p.name for p in parts))


def _methods_units(engine: Engine, names: list[str], nodes: tuple[Value, ...], template: Value,
                   templates: Value, layout: Value, settings: ShardSettings,
                   files: dict[str, Value]) -> list[CompileUnit]:
    shards = [m for _, m in functions_shards(names, settings.methods_nodes,
                                             settings.methods_base)]
    made = engine.map(METHODS_SHARD, [
        ((engine.collection([nodes[i] for i in members], BackwardNode), template, templates,
          layout, engine.text(str(k))), f"methods {k}") for k, members in enumerate(shards)])
    return shard_units(engine, "Functions_", names, shards, made, files)


def shard_units(engine: Engine, prefix: str, names: list[str], shards: list[list[int]],
                made: list[Value], files: dict[str, Value],
                with_headers: bool = True) -> list[CompileUnit]:
    """The units of shard sources, written as src/<prefix>NN.cpp, numbered among the
    non-empty shards (including the headers of their nodes, unless formulas)."""
    units = []
    for k, (members, shard) in enumerate(zip(shards, engine.records(made))):
        name = shard_name(prefix, k, len(shards))
        source = f"{SOURCE_DIR}/{name}.cpp"
        files[source] = engine.literal(Text(shard.text), persist=True)
        unit_nodes = tuple(names[i] for i in members)
        headers = [node_header_path(n) for n in unit_nodes] if with_headers else []
        units.append(CompileUnit(name, source, False, AUTOGRAD_PCH, (PRELUDE_PATH, *headers),
                                 unit_nodes, shard.node_lines, len(shard.text)))
    return units


def _kernel_units(engine: Engine, built: BuildIndex, template: Value, templates: Value,
                  settings: ShardSettings, files: dict[str, Value]
                  ) -> tuple[list[CompileUnit], list[CompileUnit]]:
    """VariableType's kernels, a unit per op (src/VariableType_<op>.cpp) with the headers of
    the nodes its kernels create, the op's outlined forward formulas in a unit of their own
    (src/VariableTypeForward_<op>.cpp), and units merged by a hash of the op's name
    (src/VariableType_merged-NN.cpp, both kinds of unit of their ops, which register their
    kernels; without merged units each kernel unit registers its own). The ops of each
    merged unit are a group of their own (`group.compile_kernels`): an edit reaching one op
    runs one group's tasks, not the ~3300 of every op."""
    of_op: dict[str, list[Value]] = {}
    for unit, code in built.kernels:
        of_op.setdefault(kernel_op(kernel_unit_fields(unit)[1]), []).append(
            engine.ref(code, RenderedKernel))
    autograd = engine.record(engine.ref(built.autograd, AutogradSide))
    keys = engine.ref(autograd.dispatch_keys, DispatchKeys)
    return op_kernel_units(engine, of_op, keys, template, templates, settings, files)


def op_kernel_units(engine: Engine, of_op: dict[str, list[Value]], keys: Value, template: Value,
                    templates: Value, settings: ShardSettings, files: dict[str, Value]
                    ) -> tuple[list[CompileUnit], list[CompileUnit]]:
    """The kernel, forward and merged units of each op's kernels (`of_op`: RenderedKernel
    values), VariableType.cpp's head (`template`) their prelude."""
    ops = sorted(of_op)
    files[KERNEL_PRELUDE_PATH] = engine.run(KERNEL_PRELUDE, [template, templates],
                                            "VariableType head")
    merging = settings.merged_kernel_base >= 1
    base = max(settings.merged_kernel_base, 1)  # unmerged: the same groups, no merged unit
    count = shard_count(len(ops), settings.merged_kernel_ops, base)
    groups = functions_shards(ops, settings.merged_kernel_ops, base)
    names = [shard_name(MERGED_KERNEL_PREFIX, number, count) for number, _ in groups]
    made = engine.records([engine.group(KERNEL_GROUP, KERNEL_GROUP.bind(
        ops=engine.literal(OpKernels(tuple(ops[i] for i in members),
                                     tuple(len(of_op[ops[i]]) for i in members))),
        kernels=engine.collection([v for i in members for v in of_op[ops[i]]], RenderedKernel),
        keys=keys, templates=templates, merged_name=engine.text(name if merging else "")), name)
        for (_, members), name in zip(groups, names)])
    position = {op: k for k, op in enumerate(ops)}
    # as without groups: every kernel unit in op order, then every forward unit
    ordered = sorted((u for group in made for u in group.units),
                     key=lambda u: (u.forward, position[u.op]))
    for group in made:
        files.update((path, engine.ref(digest, Text)) for path, digest in group.files)
    return [u.unit for u in ordered], [m for group in made for m in group.merged]


@dataclass(frozen=True, slots=True)
class OpKernels(Record):
    """The ops of one group of kernel units, and how many kernels each has (the group's
    kernel collection holds them in this order)."""

    ops: tuple[str, ...]
    counts: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class OpUnit(Record):
    """A kernel or forward unit with its op (units are put in op order across groups)."""

    op: str
    forward: bool
    unit: CompileUnit


@dataclass(frozen=True, slots=True)
class KernelUnits(Record):
    """What one group of ops adds to the layout: their kernel and forward units, the merged
    unit of them (none when units are not merged), and the files these compile."""

    units: tuple[OpUnit, ...]
    merged: tuple[CompileUnit, ...]
    files: tuple[tuple[str, str], ...]


def kernel_group(engine: Engine, ops: Value, kernels: Value, keys: Value, templates: Value,
                 merged_name: Value) -> KernelUnits:
    members: OpKernels = engine.record(ops)
    name = engine.record(merged_name).text
    items, start, inputs = engine.items(kernels), 0, []
    for op, count in zip(members.ops, members.counts):
        inputs.append((engine.collection(items[start:start + count], RenderedKernel),
                       engine.text(op)))
        start += count
    files: dict[str, Value] = {}
    registers = engine.text("" if name else "registers")
    shards = engine.records(engine.map(KERNEL_SHARD, [
        ((op_kernels, keys, templates, op_name, registers), f"kernels {op}")
        for op, (op_kernels, op_name) in zip(members.ops, inputs)]))
    units = [_kernel_unit(engine, op, shard, files) for op, shard in zip(members.ops, shards)]
    forwards = engine.records(engine.map(FORWARD_SHARD, [
        ((op_kernels, templates, op_name), f"forward formulas {op}")
        for op, (op_kernels, op_name) in zip(members.ops, inputs)]))
    forward_units = {op: _forward_unit(engine, op, shard, files)
                     for op, shard in zip(members.ops, forwards) if shard.kernels}
    merged = []
    if name:
        defined = tuple(qualified_kernel(op, wrapper) for op, shard in zip(members.ops, shards)
                        for wrapper in shard.kernels)
        parts = [unit for op, kernel_unit in zip(members.ops, units)
                 for unit in (kernel_unit, forward_units.get(op)) if unit is not None]
        source = engine.run(MERGED_KERNEL_UNIT, [
            engine.literal(NodeList(tuple(p.name for p in parts))), kernels,
            engine.literal(NodeList(defined)), keys, templates], name)
        merged.append(merged_unit(name, parts, source, files))
    return KernelUnits(
        tuple([*(OpUnit(op, False, u) for op, u in zip(members.ops, units)),
               *(OpUnit(op, True, u) for op, u in forward_units.items())]),
        tuple(merged), tuple(sorted((path, v.hash) for path, v in files.items())))


def _kernel_unit(engine: Engine, op: str, shard: ShardSource,
                 files: dict[str, Value]) -> CompileUnit:
    name = kernel_unit_name(op)
    source = f"{SOURCE_DIR}/{name}.cpp"
    files[source] = engine.literal(Text(shard.text), persist=True)
    headers = (PRELUDE_PATH, f"{GENERATED_DIR}/VariableType.h", KERNEL_PRELUDE_PATH,
               *(node_header_path(n) for n in shard.nodes))
    # its "nodes" are kernels: a compile error names the kernel, and its entry
    # (service/compile/driver.py: FailureSource)
    return CompileUnit(name, source, False, VARIABLE_TYPE_PCH, headers, shard.kernels,
                       shard.node_lines, len(shard.text))


def _forward_unit(engine: Engine, op: str, shard: ShardSource,
                  files: dict[str, Value]) -> CompileUnit:
    """An op's outlined forward formulas: FunctionsManual.h is all they include, so they
    start from the formula units' PCH."""
    name = forward_unit_name(op)
    source = f"{SOURCE_DIR}/{name}.cpp"
    files[source] = engine.literal(Text(shard.text), persist=True)
    return CompileUnit(name, source, False, AUTOGRAD_PCH, (PRELUDE_PATH,), shard.kernels,
                       shard.node_lines, len(shard.text))


def _python_units(engine: Engine, names: list[str], built: BuildIndex, templates: Value,
                  files: dict[str, Value]) -> list[CompileUnit]:
    out_files = dict(built.files)
    units = []
    # only the nodes with a Python class (the loaded infos', first in the list: cache/graph/build_graph.py)
    bound = built.node_keys[:built.python_nodes]
    for shard_id, members in python_function_shards(bound).items():
        if shard_id == "Everything":
            continue
        file_name = f"python_functions{shard_id}.cpp"
        nodes = tuple(names[i] for i in members)
        source = f"{SOURCE_DIR}/{file_name}"
        files[source] = engine.run(PYTHON_SHARD, [
            engine.literal(NodeList(nodes)), engine.ref(out_files[file_name], Text),
            engine.text(file_name), templates], file_name)
        size = len(engine.record(files[source]).text)
        units.append(CompileUnit(file_name.removesuffix(".cpp"), source, False, PYTHON_PCH,
                                 (PRELUDE_PATH, f"{GENERATED_DIR}/python_functions.h",
                                  *(node_header_path(n) for n in nodes)), nodes, (), size))
    return units


def binding_file_units(engine: Engine, out_files: dict[str, str], templates: Value, limit: int,
                       files: dict[str, Value]) -> list[CompileUnit]:
    """A binding file too large to share compiles from --out as it is; smaller ones share
    src/python_bindings_K.cpp, which includes their copies in src/bindings/."""
    names = sorted(n for n in out_files if is_binding_file(n))
    texts = engine.records([engine.ref(out_files[n], Text) for n in names])
    sizes = {n: len(t.text) for n, t in zip(names, texts)}
    headers = (PRELUDE_PATH, *(f"{GENERATED_DIR}/{h}" for h in COPIED_HEADERS))
    packs = binding_units(list(sizes.items()), limit)  # it orders them by name
    shared = [members for members in packs if len(members) > 1]
    alone = [members[0] for members in packs if len(members) == 1]
    units = [CompileUnit(n.removesuffix(".cpp"), n, True, PYTHON_PCH, headers, (), (), sizes[n])
             for n in alone]
    for k, members in enumerate(shared):
        copies = [f"{SOURCE_DIR}/bindings/{m}" for m in members]
        files.update((copy, engine.ref(out_files[m], Text)) for copy, m in zip(copies, members))
        name = f"python_bindings_{k}"
        source = f"{SOURCE_DIR}/{name}.cpp"
        files[source] = engine.run(BINDING_UNIT, [engine.literal(NodeList(members)), templates],
                                   name)
        units.append(CompileUnit(name, source, False, PYTHON_PCH, (*headers, *copies), (), (),
                                 sum(sizes[m] for m in members)))
    return units


def _codegen_units(engine: Engine, built: BuildIndex, sources: TemplateSet, templates: Value,
                   layout: Value, settings: ShardSettings, files: dict[str, Value]
                   ) -> list[CompileUnit]:
    """TraceType's and ADInplaceOrViewType's kernels in units cut by a hash of the function's
    name (src/<stem>_part-NN.cpp, each its family's spec template over its kernels: they
    register what they define), ViewFuncs.cpp as it is, and a unit including
    variable_factories.h; FunctionalInverses.h beside them."""
    native = engine.record(engine.ref(built.native, NativeSide))
    autograd = engine.record(engine.ref(built.autograd, AutogradSide))
    files[INVERSES_PATH] = engine.run(FUNCTIONAL_INVERSES, [
        engine.ref_collection(native.functions, NativeFunction),
        engine.ref(autograd.view_order, ViewOrder), templates], "FunctionalInverses.h")
    units = []
    for family in FAMILIES.values():
        fields = [(kernel_unit_fields(unit), code) for unit, code in built.family_kernels]
        owned = [(function, code) for (file, function), code in fields
                 if family_of_file(file) is family]
        units += _family_units(engine, family, owned, engine.text(sources.text(family.template)),
                               layout, settings, files)
    out_files = dict(built.files)
    units.append(CompileUnit("ViewFuncs", "ViewFuncs.cpp", True, VARIABLE_TYPE_PCH,
                             (VIEW_FUNCS_HEADER,), (), (), _size(engine, out_files["ViewFuncs.cpp"])))
    source = f"{SOURCE_DIR}/variable_factories.cpp"
    files[source] = engine.run(FACTORIES_UNIT, [templates], "variable_factories.h")
    units.append(CompileUnit("variable_factories", source, False, VARIABLE_TYPE_PCH,
                             (f"{GENERATED_DIR}/variable_factories.h",), (), (),
                             _size(engine, out_files["variable_factories.h"])))
    return units


def _family_units(engine: Engine, family: KernelFamily, owned: list[tuple[str, str]],
                  template: Value, layout: Value, settings: ShardSettings,
                  files: dict[str, Value]) -> list[CompileUnit]:
    """A family's units: its kernels (function, code) by the hash of their function's name."""
    per_unit = settings.kernels_per_unit(family.stem)
    groups = functions_shards([function for function, _ in owned], per_unit,
                              settings.codegen_base)
    count = shard_count(len(owned), per_unit, settings.codegen_base)
    headers = (VIEW_FUNCS_HEADER, INVERSES_PATH) if family.reads_match else ()
    units = []
    for number, members in groups:
        name = codegen_unit_name(family.stem, number, count)
        source = f"{SOURCE_DIR}/{name}.cpp"
        files[source] = engine.run(family.file, [
            engine.collection([engine.ref(owned[i][1], family.kernel.output) for i in members],
                              family.kernel.output), template, layout, engine.text(name)], name)
        units.append(CompileUnit(name, source, False, VARIABLE_TYPE_PCH, headers, (), (),
                                 _size(engine, files[source].hash)))
    return units


def _size(engine: Engine, text: str) -> int:
    return len(engine.record(engine.ref(text, Text)).text)


KERNEL_GROUP = group_of("group.compile_kernels", "layout", kernel_group,
                        labels={"keys": "dispatch keys", "merged_name": "merged unit"})
COMPILE_LAYOUT = group_of("group.compile_layout", "layout", compile_layout)
