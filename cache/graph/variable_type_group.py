"""The VariableType group: every function's autograd kernels, rendered, joined per file.

    the kernel plan (match.kernels: who gets kernels, in C++-name order):
    functions (C++-name order) ─► group.variable_type_file ×file (its functions, by C++ name):
        variable_type.kernels ×function (its match only) ─► render.kernel ×kernel
        ─► assemble.kernel_section ×section ─► assemble.variable_type (the first stage)
    every file's kernels, in C++-name order ─► assemble.kernel_section ×section
        ─► assemble.variable_type (Everything)
    spec VariableType.cpp + the dispatch keys ─► assemble.variable_type_template (first stage)
    spec VariableType.h ─► assemble.variable_type_h

A kernel reads its function and the match the plan gave it (pipeline/render/variable_type.py), so a
formula edit reruns the kernels of the functions using that entry, inside the group of their
file only (the other files' groups answer from their index); a kernel whose record is
unchanged (a backward formula saving the same values) is not rendered again, and a file whose
kernels' texts are unchanged is not assembled again; one that is joins again only the
section of the kernel that changed (~32 kernels), and reads the others' joins. Functions
without a match that are not abstract get no kernel and no task.
"""

from __future__ import annotations

from typing import NamedTuple, Sequence

import xxhash

from gradshard.cache.engine.core import Engine
from gradshard.cache.engine.jobs import group_of, task_of
from gradshard.cache.engine.values import Value
from gradshard.cache.graph.group_records import RENDER, FailureLog, Labels, Outputs
from gradshard.cache.graph.kernel_family import kernel_owners, units_in_order
from gradshard.cache.graph.tasks import NATIVE, single_template
from gradshard.pipeline.match.match_infos import FunctionMatch
from gradshard.pipeline.parse.native import NativeFunction
from gradshard.pipeline.problems import Failure
from gradshard.pipeline.records import Text
from gradshard.pipeline.releases import Release
from gradshard.pipeline.render.templating import TemplateSet
from gradshard.pipeline.render.variable_type import VariableKernel, variable_kernels
from gradshard.pipeline.render.variable_type_files import (DispatchKeys, KernelSection,
                                                           RenderedKernel, kernel_section,
                                                           kernel_shards, render_kernel,
                                                           variable_type_file,
                                                           variable_type_header,
                                                           variable_type_template)

__all__ = ["VARIABLE_TYPE", "kernel_functions"]


def kernels_of(function: NativeFunction, match: FunctionMatch, release: Release
               ) -> tuple[VariableKernel, ...]:
    return variable_kernels(function, match if match.infos is not None else None, release)


def render(kernel: VariableKernel, templates: TemplateSet) -> RenderedKernel:
    return render_kernel(kernel, templates)


def assemble_template(template: Text, keys: DispatchKeys) -> Text:
    return Text(variable_type_template(single_template("VariableType.cpp", template), keys))


def assemble_file(sections: tuple[KernelSection, ...], stage_one: Text, keys: DispatchKeys,
                  layout: Text, shard: Text) -> Text:
    return Text(variable_type_file(stage_one.text, shard.text, sections, keys, layout.text))


def assemble_header(template: Text, layout: Text) -> Text:
    return Text(variable_type_header(single_template("VariableType.h", template), layout.text))


KERNELS = task_of("variable_type.kernels", "render", kernels_of, blames=NATIVE)
RENDER_KERNEL = task_of("render.kernel", "render", render, forks=True)
TEMPLATE = task_of("assemble.variable_type_template", "assemble", assemble_template,
                   labels={"keys": "dispatch keys"})
SECTION = task_of("assemble.kernel_section", "assemble", kernel_section)
FILE = task_of("assemble.variable_type", "assemble", assemble_file,
               labels={"stage_one": "first stage", "keys": "dispatch keys"})
# A section ends after a kernel whose unit name hashes to 0 modulo this (content-defined, as
# a chunking backup tool cuts files: adding a kernel moves no other section's bounds), or at
# SECTION_MOST kernels: ~2,000 kernels make ~60 sections.
SECTION_EVERY = 32
SECTION_MOST = 128
HEADER = task_of("assemble.variable_type_h", "assemble", assemble_header)


def variable_type(engine: Engine, functions: Value, plan: Value, matches: Value,
                  matched: Value, keys: Value, templates: Value, source: Value, header: Value,
                  layout: Value, release: Value) -> Outputs:
    """Each VariableType_N.cpp in a group of its own (`group.variable_type_file`): an edit
    reaching one file's functions maps only theirs, not the ~1600 functions' tasks; a cold
    build runs half of the files' groups in a forked child (`Engine.groups`). Then
    VariableTypeEverything.cpp, every kernel in C++-name order, from the file groups' kernels."""
    functions_of = kernel_functions(engine, functions, plan, matches, matched)
    stage_one = engine.run(TEMPLATE, [source, keys], "templates/VariableType.cpp")
    shards = kernel_shards([f.cpp_name for f in functions_of], engine.record(release))
    shard_ids = [s for s in shards if s != "Everything"]  # _0 … _9 (2.12: _4): a group each
    indexes = engine.records(engine.groups([(VARIABLE_TYPE_FILE, _file_inputs(
        engine, [functions_of[p] for p in shards[s]], templates, stage_one, keys, layout,
        release, s),
        f"VariableType{s}.cpp") for s in shard_ids]))
    log = FailureLog(engine)
    for index in indexes:
        log.add(RENDER, engine.problems([engine.ref(h, Failure) for h in index.failures if h]))
    if log.phases:
        return Outputs((), (), failures=log.index())
    kernels = units_in_order([f.name for f in functions_of], indexes)  # C++-name order
    everything = engine.run(FILE, [
        sections(engine, "VariableTypeEverything.cpp",
                 [(unit, engine.ref(h, RenderedKernel)) for unit, h in kernels]),
        stage_one, keys, layout, engine.text("Everything")], "VariableTypeEverything.cpp")
    # the first stage is a file of its own in generate_code's tree (service/files/placement.py)
    named = {"VariableType.h": engine.run(HEADER, [header, layout], "VariableType.h"),
             "VariableTypeEverything.cpp": everything, "templates/VariableType.cpp": stage_one}
    return Outputs(tuple(sorted([*((n, v.hash) for n, v in named.items()),
                                 *(f for index in indexes for f in index.files)])),
                   tuple(kernels))


class KernelFunction(NamedTuple):
    """A function that gets kernels: its record, its match (an empty one for an abstract
    function without any), its name (tasks' ident), its C++ name (its shard) and its root
    name (FunctionSummary.root)."""

    function: Value
    match: Value
    name: str
    cpp_name: str
    root: str


def kernel_functions(engine: Engine, functions: Value, plan: Value, matches: Value,
                     matched: Value) -> list[KernelFunction]:
    """The functions that get kernels, in C++-name order (the files' order), as the kernel
    plan (tasks.KERNEL_PLAN) names them."""
    plan_record = engine.record(plan)
    function_values = engine.items(functions)
    positions = engine.record(matched).positions
    match_of = dict(zip(positions, engine.items(matches)))
    # an abstract function without a match: kernels_of reads no name from it, so one serves all
    no_match = engine.literal(FunctionMatch(""))
    return [KernelFunction(function_values[p], match_of.get(p) or no_match, name, cpp_name,
                           root)
            for p, name, cpp_name, root in zip(plan_record.positions, plan_record.names,
                                               plan_record.cpp_names, plan_record.roots)]


def _file_inputs(engine: Engine, members: list[KernelFunction], templates: Value,
                 stage_one: Value, keys: Value, layout: Value, release: Value, shard: str
                 ) -> list[Value]:
    return VARIABLE_TYPE_FILE.bind(
        functions=engine.collection([m.function for m in members], NativeFunction),
        matches=engine.collection([m.match for m in members], FunctionMatch),
        names=engine.literal(Labels(tuple(m.name for m in members))), templates=templates,
        stage_one=stage_one, keys=keys, layout=layout, release=release,
        shard=engine.text(shard))


def kernels_of_file(engine: Engine, functions: Value, matches: Value, names: Value,
                    templates: Value, stage_one: Value, keys: Value, layout: Value,
                    release: Value, shard: Value) -> Outputs:
    """One VariableType_N.cpp: its functions' kernels, each rendered, joined."""
    log = FailureLog(engine)
    idents = engine.record(names).labels
    file = f"VariableType{engine.record(shard).text}.cpp"
    kernel_lists = engine.map(KERNELS, [((f, m, release), ident) for f, m, ident in zip(
        engine.items(functions), engine.items(matches), idents)])
    owners = kernel_owners(engine, idents, kernel_lists)
    rendered = engine.map(RENDER_KERNEL, [((kernel, templates), f"{ident} {n}")
                                          for ident, n, kernel in owners])
    log.close(RENDER)
    if log.phases:
        return Outputs((), (), failures=log.index())
    units = [f"{file} {ident} {n}" for ident, n, _ in owners]
    text = engine.run(FILE, [sections(engine, file, list(zip(units, rendered))), stage_one, keys,
                             layout, shard], file)
    return Outputs(((file, text.hash),), tuple((unit, value.hash)
                                               for unit, value in zip(units, rendered)))


def sections(engine: Engine, file: str, kernels: list[tuple[str, Value]]) -> Value:
    """A file's kernels (unit name, rendered kernel), in its order, joined in sections (each
    named by the file and its first kernel)."""
    bounds = section_bounds([unit for unit, _ in kernels])
    return engine.collection(engine.map(SECTION, [
        ((engine.collection([v for _, v in kernels[start:end]], RenderedKernel),),
         f"{file} {kernels[start][0].split(' ', 1)[1]}") for start, end in bounds]),
        KernelSection)


def section_bounds(units: Sequence[str]) -> list[tuple[int, int]]:
    """Each section's (start, end) in the list of kernel units."""
    bounds, start = [], 0
    for at, unit in enumerate(units):
        if (xxhash.xxh3_64_intdigest(unit.encode()) % SECTION_EVERY == 0
                or at + 1 - start == SECTION_MOST):
            bounds.append((start, at + 1))
            start = at + 1
    if start < len(units):
        bounds.append((start, len(units)))
    return bounds


VARIABLE_TYPE_FILE = group_of("group.variable_type_file", "render", kernels_of_file,
                              labels={"stage_one": "first stage", "keys": "dispatch keys"})
VARIABLE_TYPE = group_of("group.variable_type", "render", variable_type,
                         labels={"plan": "kernel plan", "keys": "dispatch keys",
                                 "source": "VariableType.cpp template",
                                 "header": "VariableType.h template"})
