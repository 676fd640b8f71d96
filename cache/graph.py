"""The build graph: the pipeline's stages wired as engine tasks, in four groups.

    build ─┬─ native side      native_functions.yaml, tags.yaml
           ├─ autograd side    derivatives.yaml + native side: parse, match, foreach
           ├─ autograd files   autograd side + templates: nodes, render, assemble
           └─ python bindings  native side + deprecated.yaml + templates: bind, render, assemble

A group whose inputs are unchanged is answered by its index without looking inside, so an
edited formula never visits the native side or the bindings. Inside a group, every unit
(entry, function, info, node, binding, file) is its own task over exactly the records it
reads; small summary records route inputs to them (which bucket an entry reads, which
entry a function matches), so an edit that leaves a summary unchanged stops there.

The straight composition in pipeline/codegen.py computes the same files; the tests hold
the two to each other and to torchgen.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from gradshard.pipeline.differentiability import EntryInfos, InfoSummary
from gradshard.pipeline.errors import InternalError, RuleViolation, SpecFile
from gradshard.pipeline.matching import FOREACH as FOREACH_STEP
from gradshard.pipeline.matching import FunctionSummary, MatchStep
from gradshard.pipeline.native import NativeFunction
from gradshard.pipeline.nodes import BackwardNode
from gradshard.pipeline.records import Record, Text
from gradshard.pipeline.render import TemplateSet, python_function_shards
from gradshard.pipeline.source import split_entries
from gradshard.pipeline.spec import SpecTexts, entry_label
from gradshard.pipeline.tags import Tag, TagNames

from . import tasks as t
from .engine import Engine, Group, Value


@dataclass(frozen=True)
class BuildInputs:
    """Everything a build reads: the spec's texts and templates, and gradshard's templates."""

    texts: SpecTexts
    spec_templates: TemplateSet
    templates: TemplateSet
    layout: str


@dataclass(frozen=True, slots=True)
class FunctionNames(Record):
    """The operator names of the native functions, in list order (how tasks are named)."""

    names: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class NativeSide(Record):
    functions: str  # collection of NativeFunction: the YAML ones, then the generated ones
    names: str  # FunctionNames
    summaries: str  # collection of FunctionSummary
    tag_names: str  # TagNames
    view_order: str  # ViewOrder
    buckets: str  # DerivativeBuckets


@dataclass(frozen=True, slots=True)
class AutogradSide(Record):
    loaded: str  # collection of EntryInfos as loaded: numbered entries, then view copies
    foreach: str  # collection of EntryInfos matching adds: the synthesized foreach ones


@dataclass(frozen=True, slots=True)
class Outputs(Record):
    """A group's files (name → text hash) and units (node or binding → hash of its code);
    for nodes, each one's python_functions shard key (its info name)."""

    files: tuple[tuple[str, str], ...]
    units: tuple[tuple[str, str], ...]
    keys: tuple[str, ...] = ()
    records: str = ""  # the collection of BackwardNode records, in units' order
    python_nodes: int = 0  # how many of the nodes, from the first, have a Python class


@dataclass(frozen=True, slots=True)
class BuildIndex(Record):
    """What a build produced: every file, and the generated code of every node and binding
    (by hash), which is what `affected` compares."""

    files: tuple[tuple[str, str], ...]
    nodes: tuple[tuple[str, str], ...]
    bindings: tuple[tuple[str, str], ...]
    node_keys: tuple[str, ...]  # each node's python_functions shard key, as in nodes
    node_records: str  # the collection of the nodes' BackwardNode records, as in nodes
    python_nodes: int  # how many of nodes, from the first, python_functions* bind


def build(engine: Engine, inputs: BuildInputs) -> tuple[str, BuildIndex]:
    """Run (or reuse) the whole build: the index's hash and the index. Raises SpecError or
    RuleViolation on a bad spec."""
    texts = inputs.texts
    values = [engine.text(texts.native_functions), engine.text(texts.tags),
              engine.text(texts.derivatives), engine.text(texts.deprecated),
              engine.literal(inputs.spec_templates), engine.literal(inputs.templates),
              engine.text(inputs.layout)]
    index = engine.group(BUILD, values, "build")
    return index.hash, engine.records([index])[0]


# ---------------------------------------------------------------------------------------------
# The whole build


def whole_build(engine: Engine, natives: Value, tags: Value, derivatives: Value,
                deprecated: Value, spec_templates: Value, templates: Value,
                layout: Value) -> BuildIndex:
    native = engine.records([engine.group(NATIVE_SIDE, [natives, tags], "native side")])[0]
    functions = engine.ref_collection(native.functions, NativeFunction)
    names = engine.ref(native.names, FunctionNames)
    autograd = engine.records([engine.group(
        AUTOGRAD_SIDE, [derivatives, functions, names,
                        engine.ref_collection(native.summaries, FunctionSummary),
                        engine.ref(native.view_order, t.ViewOrder),
                        engine.ref(native.buckets, t.DerivativeBuckets)], "autograd side")])[0]
    infos = [engine.ref_collection(h, EntryInfos) for h in (autograd.loaded, autograd.foreach)]
    autograd_out, python_out = engine.records([
        engine.group(AUTOGRAD_FILES, [*infos, templates, spec_templates, layout],
                     "autograd files"),
        engine.group(PYTHON_BINDINGS, [functions, names, deprecated,
                                       engine.ref(native.tag_names, TagNames), templates,
                                       spec_templates, layout], "python bindings")])
    return BuildIndex(tuple(sorted(autograd_out.files + python_out.files)), autograd_out.units,
                      python_out.units, autograd_out.keys, autograd_out.records,
                      autograd_out.python_nodes)


def _entries(engine: Engine, file: SpecFile, text: Value) -> list[tuple[Value, str]]:
    """The file's entries as text values, each with its label (the ident of its tasks)."""
    source = engine.records([text])[0].text
    return [(engine.text(e.text), entry_label(e)) for e in split_entries(file, source)]


def _pick(values: Sequence[Value], positions: Sequence[int]) -> list[Value]:
    return [values[p] for p in positions]


# ---------------------------------------------------------------------------------------------
# Native side


def native_side(engine: Engine, natives: Value, tags: Value) -> NativeSide:
    tag_entries = _entries(engine, SpecFile.TAGS, tags)
    tag_values = engine.map(t.PARSE_TAG, [((v,), label) for v, label in tag_entries])
    tag_names = engine.run(t.TAG_NAMES, [engine.collection(tag_values, Tag)], "tags")
    entries = _entries(engine, SpecFile.NATIVE_FUNCTIONS, natives)
    labels = [label for _, label in entries]
    parsed = engine.map(t.PARSE_NATIVE, [((v, tag_names), label) for v, label in entries])
    yaml_functions = engine.collection(parsed, NativeFunction)
    engine.run(t.CHECK_NATIVES, [yaml_functions], "native functions")
    groups = engine.records([engine.run(t.SIGNATURE_GROUPS, [yaml_functions],
                                        "native functions")])[0].groups
    made = engine.map(t.GENERATE, [((engine.collection(_pick(parsed, g), NativeFunction),),
                                    labels[g[0]]) for g in groups])
    functions, idents = list(parsed), list(labels)
    for group, generated in zip(groups, engine.items_of(made)):
        functions.extend(generated)
        idents.extend(f"{labels[group[0]]} (generated {k})" for k in range(len(generated)))
    function_list = engine.collection(functions, NativeFunction, persist=True)
    summaries = engine.map(t.FUNCTION_SUMMARY, [((f,), i) for f, i in zip(functions, idents)])
    names = FunctionNames(tuple(s.name for s in engine.records(summaries)))
    order = engine.run(t.VIEW_ORDER, [function_list], "native functions")
    buckets = engine.run(t.BUCKETS, [function_list, order], "native functions")
    return NativeSide(function_list.hash, engine.literal(names, persist=True).hash,
                      engine.collection(summaries, FunctionSummary, persist=True).hash,
                      tag_names.hash, order.hash, buckets.hash)


# ---------------------------------------------------------------------------------------------
# Autograd side: derivatives entries → numbered infos → matches and foreach infos


def autograd_side(engine: Engine, derivatives: Value, functions: Value, names: Value,
                  summaries: Value, order: Value, buckets: Value) -> AutogradSide:
    function_items = engine.items(functions)
    function_names = engine.records([names])[0].names
    entries = _entries(engine, SpecFile.DERIVATIVES, derivatives)
    labels = [label for _, label in entries]
    parsed = engine.map(t.PARSE_DERIVATIVE, [((v,), label) for v, label in entries])
    infos = engine.map(t.ENTRY_INFOS, _bucket_calls(engine, parsed, labels, function_items,
                                                    function_names, buckets))
    info_summaries = engine.map(t.INFO_SUMMARY, [((i,), label) for i, label in zip(infos, labels)])
    summary_list = engine.collection(info_summaries, InfoSummary)
    op_names = engine.items(engine.run(t.OP_NAMES, [summary_list], "derivatives"))
    numbered = engine.map(t.NUMBERED_INFOS, [((i, ops), label)
                                             for i, ops, label in zip(infos, op_names, labels)])
    copies = engine.records([engine.run(t.VIEW_COPIES, [summary_list, summaries, order],
                                        "derivatives")])[0].copies
    copied = engine.map(t.VIEW_COPY, [((numbered[at], function_items[copy]), function_names[copy])
                                      for at, copy in copies])
    copy_summaries = engine.map(t.INFO_SUMMARY, [((c,), function_names[copy])
                                                 for c, (_, copy) in zip(copied, copies)])
    step_values = engine.items(engine.run(t.MATCH_PLAN, [summaries, engine.collection(
        info_summaries + copy_summaries, InfoSummary)], "functions"))
    steps = list(zip(step_values, engine.records(step_values)))
    loaded = numbered + copied
    synthesized = _synthesize(engine, steps, function_items, function_names, loaded)
    every = loaded + list(synthesized.values())
    engine.map(t.MATCH_FUNCTION, [
        ((function_items[s.function], v, synthesized[k] if s.how == FOREACH_STEP else every[s.entry]),
         function_names[s.function]) for k, (v, s) in enumerate(steps)])
    return AutogradSide(engine.collection(loaded, EntryInfos, persist=True).hash,
                        engine.collection(list(synthesized.values()), EntryInfos,
                                          persist=True).hash)


def _bucket_calls(engine: Engine, parsed: list[Value], labels: list[str],
                  functions: tuple[Value, ...], names: Sequence[str], buckets: Value) -> list:
    """Each entry with the signature bucket of the function it names (load_derivatives.py:
    create_differentiability_info's lookups). An entry is routed by its label, the operator
    name read from its text; ENTRY_INFOS checks that its schema is that function's."""
    lookup = engine.records([buckets])[0]
    by_name = {names[position]: bucket for _, position, bucket in lookup.schemas}
    calls = []
    for entry, label in zip(parsed, labels):
        bucket = by_name.get(label)
        if bucket is None:  # a name the label cannot read (folded, escaped…): parse it
            bucket = by_name.get(engine.records([entry])[0].op_name)
        if bucket is None:
            raise RuleViolation("derivatives.unknown-schema",
                                f"no native function is named '{label}'", "")
        members = engine.collection(_pick(functions, lookup.buckets[bucket]), NativeFunction)
        calls.append(((entry, members), label))
    return calls


def _synthesize(engine: Engine, steps: list[tuple[Value, MatchStep]],
                functions: tuple[Value, ...], names: Sequence[str],
                loaded: list[Value]) -> dict[int, Value]:
    """The foreach infos, by step number, in plan order (they follow the loaded infos)."""
    chosen = [(k, v, s) for k, (v, s) in enumerate(steps) if s.how == FOREACH_STEP]
    if any(s.entry >= len(loaded) for _, _, s in chosen):
        raise InternalError("a foreach op's reference is itself synthesized")
    made = engine.map(t.FOREACH, [((functions[s.function], loaded[s.entry], v), names[s.function])
                                  for _, v, s in chosen])
    return {k: value for (k, _, _), value in zip(chosen, made)}


# ---------------------------------------------------------------------------------------------
# Autograd files: nodes → rendered pieces → Functions.h/.cpp, python_functions*


def autograd_files(engine: Engine, loaded: Value, foreach: Value, templates: Value,
                   spec_templates: Value, layout: Value) -> Outputs:
    """Functions.* hold the nodes of every info; python_functions* bind those of the infos
    as loaded, which come first (generate_code.py runs gen_autograd_python, and so
    gen_autograd_functions_python, before gen_autograd's matching adds the foreach infos)."""
    loaded_entries = engine.items(loaded)
    entries = loaded_entries + engine.items(foreach)
    names = engine.records(engine.map(t.NODE_NAMES, [((e,), f"infos {k}")
                                                     for k, e in enumerate(entries)]))
    with_nodes = [(e, n) for e, n in zip(entries, names) if n.ops]
    node_lists = engine.map(t.NODES, [((e, ), n.ops[0]) for e, n in with_nodes])
    nodes = [node for items in engine.items_of(node_lists) for node in items]
    ops = [op for _, n in with_nodes for op in n.ops]
    keys = [key for _, n in with_nodes for key in n.names]
    if len(nodes) != len(ops):
        raise InternalError("node names and nodes disagree")
    rendered = engine.map(t.RENDER_NODE, [((n, templates), op) for n, op in zip(nodes, ops)])
    pieces = engine.items_of(rendered)
    sources = engine.records([spec_templates])[0]
    files = {}
    for index, name in enumerate(("Functions.h", "Functions.cpp")):
        files[name] = engine.run(t.FUNCTIONS_FILE, [
            engine.collection([p[index] for p in pieces], Text),
            engine.text(sources.text(name)), layout, engine.text(name)], name)
    bound = sum(len(n.ops) for n in names[:len(loaded_entries)])
    files.update(_python_functions(engine, pieces[:bound], keys[:bound], sources, templates,
                                   layout))
    return Outputs(tuple(sorted((n, v.hash) for n, v in files.items())),
                   tuple((op, r.hash) for op, r in zip(ops, rendered)), tuple(keys),
                   engine.collection(nodes, BackwardNode, persist=True).hash, bound)


def _python_functions(engine: Engine, pieces: Sequence[tuple[Value, ...]], keys: Sequence[str],
                      sources: TemplateSet, templates: Value, layout: Value) -> dict[str, Value]:
    """python_functions.h, and each shard of the nodes given (their pieces and shard keys)."""
    files = {"python_functions.h": engine.run(t.PYTHON_FUNCTIONS_HEADER, [
        engine.text(sources.text("python_functions.h")), templates, layout], "python_functions.h")}
    shard_template = engine.text(sources.text("python_functions.cpp"))
    for shard_id, members in python_function_shards(keys).items():
        name = f"python_functions{shard_id}.cpp"
        files[name] = engine.run(t.PYTHON_FUNCTIONS_SHARD, [
            engine.collection([pieces[i][2] for i in members], Text),
            engine.collection([pieces[i][3] for i in members], Text),
            shard_template, layout, engine.text(shard_id)], name)
    return files


# ---------------------------------------------------------------------------------------------
# Python bindings (cache/bindings_group.py; its modules load only when the group runs)


def python_bindings(engine: Engine, *inputs: Value) -> Outputs:
    from .bindings_group import python_bindings as body

    return body(engine, *inputs)


NATIVE_SIDE = Group("group.native_side", "parse", native_side, NativeSide,
                    ("native_functions.yaml", "tags.yaml"))
AUTOGRAD_SIDE = Group("group.autograd_side", "parse", autograd_side, AutogradSide,
                      ("derivatives.yaml", "functions", "names", "summaries", "view order",
                       "buckets"))
AUTOGRAD_FILES = Group("group.autograd_files", "render", autograd_files, Outputs,
                       ("loaded infos", "foreach infos", "templates", "spec templates",
                        "layout"))
PYTHON_BINDINGS = Group("group.python_bindings", "bindings", python_bindings, Outputs,
                        ("functions", "names", "deprecated.yaml", "tags", "templates",
                         "spec templates", "layout"))
BUILD = Group("group.build", "parse", whole_build, BuildIndex,
              ("native_functions.yaml", "tags.yaml", "derivatives.yaml", "deprecated.yaml",
               "spec templates", "templates", "layout"))
