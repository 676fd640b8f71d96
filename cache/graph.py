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

from gradshard.pipeline.deprecated import DeprecatedSignature
from gradshard.pipeline.differentiability import EntryInfos, InfoSummary, OpNames
from gradshard.pipeline.errors import InternalError, RuleViolation, SpecFile
from gradshard.pipeline.matching import FOREACH as FOREACH_STEP
from gradshard.pipeline.matching import FunctionSummary
from gradshard.pipeline.native import NativeFunction
from gradshard.pipeline.python_files import (METHODS_FILE, MODULE_FILES, TORCH_FILE,
                                             TORCH_SHARD_IDS, BindingKey, BindingPlan,
                                             RenderedBinding, StructseqTypes, torch_file_name,
                                             torch_shard_of)
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
    infos: str  # collection of EntryInfos: numbered entries, view copies, synthesized foreach


@dataclass(frozen=True, slots=True)
class Outputs(Record):
    """A group's files (name → text hash) and units (node or binding → hash of its code)."""

    files: tuple[tuple[str, str], ...]
    units: tuple[tuple[str, str], ...]


@dataclass(frozen=True, slots=True)
class BuildIndex(Record):
    """What a build produced: every file, and the generated code of every node and binding
    (by hash), which is what `affected` compares."""

    files: tuple[tuple[str, str], ...]
    nodes: tuple[tuple[str, str], ...]
    bindings: tuple[tuple[str, str], ...]


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
    infos = engine.ref_collection(autograd.infos, EntryInfos)
    autograd_out, python_out = engine.records([
        engine.group(AUTOGRAD_FILES, [infos, templates, spec_templates, layout],
                     "autograd files"),
        engine.group(PYTHON_BINDINGS, [functions, names, deprecated,
                                       engine.ref(native.tag_names, TagNames), templates,
                                       spec_templates, layout], "python bindings")])
    return BuildIndex(tuple(sorted(autograd_out.files + python_out.files)), autograd_out.units,
                      python_out.units)


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
                                                    buckets))
    info_summaries = engine.map(t.INFO_SUMMARY, [((i,), label) for i, label in zip(infos, labels)])
    summary_list = engine.collection(info_summaries, InfoSummary)
    op_names = engine.records([engine.run(t.OP_NAMES, [summary_list], "derivatives")])[0]
    numbered = engine.map(t.NUMBERED_INFOS, [
        ((i, engine.literal(OpNames((ops,)))), label)
        for i, ops, label in zip(infos, op_names.names, labels)])
    copies = engine.records([engine.run(t.VIEW_COPIES, [summary_list, summaries, order],
                                        "derivatives")])[0].copies
    copied = engine.map(t.VIEW_COPY, [((numbered[at], function_items[copy]), function_names[copy])
                                      for at, copy in copies])
    copy_summaries = engine.map(t.INFO_SUMMARY, [((c,), function_names[copy])
                                                 for c, (_, copy) in zip(copied, copies)])
    plan = engine.records([engine.run(t.MATCH_PLAN, [summaries, engine.collection(
        info_summaries + copy_summaries, InfoSummary)], "functions")])[0]
    loaded = numbered + copied
    synthesized = _synthesize(engine, plan, function_items, function_names, loaded)
    every = loaded + list(synthesized.values())
    engine.map(t.MATCH_FUNCTION, [
        ((function_items[s.function], engine.literal(s),
          synthesized[k] if s.how == FOREACH_STEP else every[s.entry]), function_names[s.function])
        for k, s in enumerate(plan.steps)])
    return AutogradSide(engine.collection(every, EntryInfos, persist=True).hash)


def _bucket_calls(engine: Engine, parsed: list[Value], labels: list[str],
                  functions: tuple[Value, ...], buckets: Value) -> list:
    """Each entry with the signature bucket of the function its schema names
    (load_derivatives.py: create_differentiability_info's lookups)."""
    lookup = engine.records([buckets])[0]
    by_schema = {text: bucket for text, _, bucket in lookup.schemas}
    names = engine.records(engine.map(t.DERIVATIVE_NAME, [((p,), label)
                                                          for p, label in zip(parsed, labels)]))
    calls = []
    for entry, name, label in zip(parsed, names, labels):
        bucket = by_schema.get(name.text)
        if bucket is None:
            raise RuleViolation("derivatives.unknown-schema",
                                f"no native function has the schema '{name.text}'", "")
        members = engine.collection(_pick(functions, lookup.buckets[bucket]), NativeFunction)
        calls.append(((entry, members), label))
    return calls


def _synthesize(engine: Engine, plan: t.MatchPlan, functions: tuple[Value, ...],
                names: Sequence[str], loaded: list[Value]) -> dict[int, Value]:
    """The foreach infos, by step number, in plan order (they follow the loaded infos)."""
    steps = [(k, s) for k, s in enumerate(plan.steps) if s.how == FOREACH_STEP]
    if any(s.entry >= len(loaded) for _, s in steps):
        raise InternalError("a foreach op's reference is itself synthesized")
    made = engine.map(t.FOREACH, [((functions[s.function], loaded[s.entry], engine.literal(s)),
                                   names[s.function]) for _, s in steps])
    return {k: v for (k, _), v in zip(steps, made)}


# ---------------------------------------------------------------------------------------------
# Autograd files: nodes → rendered pieces → Functions.h/.cpp, python_functions*


def autograd_files(engine: Engine, infos: Value, templates: Value, spec_templates: Value,
                   layout: Value) -> Outputs:
    entries = engine.items(infos)
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
    files["python_functions.h"] = engine.run(t.PYTHON_FUNCTIONS_HEADER, [
        engine.text(sources.text("python_functions.h")), templates, layout], "python_functions.h")
    shard_template = engine.text(sources.text("python_functions.cpp"))
    for shard_id, members in python_function_shards(keys).items():
        name = f"python_functions{shard_id}.cpp"
        files[name] = engine.run(t.PYTHON_FUNCTIONS_SHARD, [
            engine.collection([pieces[i][2] for i in members], Text),
            engine.collection([pieces[i][3] for i in members], Text),
            shard_template, layout, engine.text(shard_id)], name)
    return Outputs(tuple(sorted((n, v.hash) for n, v in files.items())),
                   tuple((op, r.hash) for op, r in zip(ops, rendered)))


# ---------------------------------------------------------------------------------------------
# Python bindings: keys → plan → one binding per name and file → rendered → files


def python_bindings(engine: Engine, functions: Value, names: Value, deprecated: Value,
                    tag_names: Value, templates: Value, spec_templates: Value,
                    layout: Value) -> Outputs:
    items = engine.items(functions)
    function_names = engine.records([names])[0].names
    entries = _entries(engine, SpecFile.DEPRECATED, deprecated)
    signatures = engine.map(t.PARSE_DEPRECATED, [((v,), label) for v, label in entries])
    keys = engine.map(t.BINDING_KEY, [((f,), n) for f, n in zip(items, function_names)])
    plan: BindingPlan = engine.records([engine.run(t.BINDING_PLAN, [
        engine.collection(keys, BindingKey), engine.collection(signatures, DeprecatedSignature)],
        "bindings")])[0]
    engine.map(t.CHECK_DEPRECATED, [
        ((signatures[k], engine.collection(_pick(items, calls), NativeFunction)), entries[k][1])
        for k, calls in enumerate(plan.deprecated)])
    made = engine.map(t.BIND, [
        ((engine.literal(p.target), engine.collection(_pick(items, p.functions), NativeFunction),
          engine.collection(_pick(signatures, p.deprecated), DeprecatedSignature)),
         p.target.python_name) for p in plan.bindings])
    rendered = engine.map(t.RENDER_BINDING, [((b, templates), p.target.python_name)
                                             for b, p in zip(made, plan.bindings)])
    sources = engine.records([spec_templates])[0]
    files = _binding_files(engine, plan, rendered, sources, layout)
    files.update(_return_type_files(engine, plan, items, tag_names, templates, sources, layout))
    return Outputs(tuple(sorted((n, v.hash) for n, v in files.items())),
                   tuple((p.target.python_name, r.hash) for p, r in zip(plan.bindings, rendered)))


def _binding_files(engine: Engine, plan: BindingPlan, rendered: list[Value],
                   sources: TemplateSet, layout: Value) -> dict[str, Value]:
    by_file: dict[str, list[Value]] = {}
    torch: dict[str, list[Value]] = {shard: [] for shard in TORCH_SHARD_IDS}
    for planned, value in zip(plan.bindings, rendered):
        by_file.setdefault(planned.target.file, []).append(value)
        if planned.target.file == TORCH_FILE:
            torch[torch_shard_of(planned.target.shard_key)].append(value)
            torch["Everything"].append(value)
    files = {}
    for name in (METHODS_FILE, *(f for f, _, _ in MODULE_FILES)):
        files[name] = engine.run(t.BINDING_FILE, [
            engine.collection(by_file.get(name, []), RenderedBinding),
            engine.text(sources.text(name)), layout, engine.text(name)], name)
    template = engine.text(sources.text(TORCH_FILE))
    for shard_id, members in torch.items():
        name = torch_file_name(shard_id)
        files[name] = engine.run(t.TORCH_FILE, [engine.collection(members, RenderedBinding),
                                                template, layout, engine.text(shard_id)], name)
    return files


def _return_type_files(engine: Engine, plan: BindingPlan, functions: tuple[Value, ...],
                       tag_names: Value, templates: Value, sources: TemplateSet,
                       layout: Value) -> dict[str, Value]:
    named = [(name, members) for name, has_names, members in plan.names if has_names]
    computed = iter(engine.map(t.RETURN_TYPES, [
        ((engine.collection(_pick(functions, members), NativeFunction),), name)
        for name, members in named]))
    none = engine.literal(StructseqTypes(()))
    types = engine.collection([next(computed) if has_names else none
                               for _, has_names, _ in plan.names], StructseqTypes)
    files = {}
    for name, task in (("python_return_types.cpp", t.RETURN_TYPES_FILE),
                       ("python_return_types.h", t.RETURN_TYPES_HEADER)):
        files[name] = engine.run(task, [types, templates, engine.text(sources.text(name)),
                                        layout], name)
    files["python_enum_tag.cpp"] = engine.run(t.ENUM_TAG_FILE, [
        tag_names, templates, engine.text(sources.text("python_enum_tag.cpp")), layout],
        "python_enum_tag.cpp")
    return files


NATIVE_SIDE = Group("group.native_side", "parse", native_side, NativeSide,
                    ("native_functions.yaml", "tags.yaml"))
AUTOGRAD_SIDE = Group("group.autograd_side", "parse", autograd_side, AutogradSide,
                      ("derivatives.yaml", "functions", "names", "summaries", "view order",
                       "buckets"))
AUTOGRAD_FILES = Group("group.autograd_files", "render", autograd_files, Outputs,
                       ("infos", "templates", "spec templates", "layout"))
PYTHON_BINDINGS = Group("group.python_bindings", "bindings", python_bindings, Outputs,
                        ("functions", "names", "deprecated.yaml", "tags", "templates",
                         "spec templates", "layout"))
BUILD = Group("group.build", "parse", whole_build, BuildIndex,
              ("native_functions.yaml", "tags.yaml", "derivatives.yaml", "deprecated.yaml",
               "spec templates", "templates", "layout"))
