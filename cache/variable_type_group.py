"""The VariableType group: every function's autograd kernels, rendered, joined per file.

    functions (C++-name order) ─► variable_type.kernels ×function (its match only)
        ─► render.kernel ×kernel ─► assemble.variable_type ×file (its kernels, the first stage)
    spec VariableType.cpp + the dispatch keys ─► assemble.variable_type_template (first stage)
    spec VariableType.h ─► assemble.variable_type_h

A kernel reads its function and the match the plan gave it (pipeline/variable_type.py), so a
formula edit reruns the kernels of the functions using that entry; a kernel whose record is
unchanged (a backward formula saving the same values) is not rendered again, and a file whose
kernels' texts are unchanged is not assembled again. Functions without a match that are not
abstract get no kernel and no task.
"""

from __future__ import annotations

from gradshard.pipeline.kernel_render import (DispatchKeys, RenderedKernel, kernel_shards,
                                              render_kernel, variable_type_file,
                                              variable_type_header, variable_type_template)
from gradshard.pipeline.matching import FunctionMatch, cpp_name_order
from gradshard.pipeline.native import NativeFunction
from gradshard.pipeline.records import Text
from gradshard.pipeline.render import TemplateSet
from gradshard.pipeline.variable_type import VariableKernel, variable_kernels

from .engine import Engine, Group, Task, Value
from .graph_records import RENDER, FailureLog, Outputs
from .tasks import NATIVE, single_template


def kernels_of(function: NativeFunction, match: FunctionMatch) -> tuple[VariableKernel, ...]:
    return variable_kernels(function, match if match.infos is not None else None)


def render(kernel: VariableKernel, templates: TemplateSet) -> RenderedKernel:
    return render_kernel(kernel, templates)


def assemble_template(template: Text, keys: DispatchKeys) -> Text:
    return Text(variable_type_template(single_template("VariableType.cpp", template), keys))


def assemble_file(kernels: tuple[RenderedKernel, ...], stage_one: Text, keys: DispatchKeys,
                  layout: Text, shard: Text) -> Text:
    return Text(variable_type_file(stage_one.text, shard.text, kernels, keys, layout.text))


def assemble_header(template: Text, layout: Text) -> Text:
    return Text(variable_type_header(single_template("VariableType.h", template), layout.text))


KERNELS = Task("variable_type.kernels", "render", kernels_of, VariableKernel,
               ("function", "match"), fan_out=True, blames=NATIVE)
RENDER_KERNEL = Task("render.kernel", "render", render, RenderedKernel,
                     ("kernel", "templates"), splits=True)
TEMPLATE = Task("assemble.variable_type_template", "assemble", assemble_template, Text,
                ("template", "dispatch keys"))
FILE = Task("assemble.variable_type", "assemble", assemble_file, Text,
            ("kernels", "first stage", "dispatch keys", "layout", "shard"))
HEADER = Task("assemble.variable_type_h", "assemble", assemble_header, Text,
              ("template", "layout"))


def variable_type(engine: Engine, functions: Value, summaries: Value, matches: Value,
                  matched: Value, keys: Value, templates: Value, source: Value, header: Value,
                  layout: Value) -> Outputs:
    log = FailureLog(engine)
    summary_records = engine.records(list(engine.items(summaries)))
    function_values = engine.items(functions)
    positions = engine.records([matched])[0].positions
    match_of = dict(zip(positions, engine.items(matches)))
    calls, names = [], []
    for p in cpp_name_order(summary_records):
        summary = summary_records[p]
        match = match_of.get(p)
        if match is None and not summary.abstract:
            continue  # derives nothing: no kernel (gen_inplace_or_view_type.py: use_derived)
        calls.append(((function_values[p], match or engine.literal(FunctionMatch(summary.name))),
                      summary.name))
        names.append(summary.cpp_name)
    kernel_lists = engine.map(KERNELS, calls)
    kept = [(name, kernels) for name, kernels in zip(names, kernel_lists) if not kernels.failed]
    idents = [ident for (_, ident), kernels in zip(calls, kernel_lists) if not kernels.failed]
    per_function = engine.items_of([kernels for _, kernels in kept])
    owners = [(f, n) for f, items in enumerate(per_function) for n in range(len(items))]
    flat = engine.map(RENDER_KERNEL, [((per_function[f][n], templates), f"{idents[f]} {n}")
                                      for f, n in owners])
    rendered: list[list[Value]] = [[] for _ in per_function]
    for (f, _), value in zip(owners, flat):
        rendered[f].append(value)
    log.close(RENDER)
    if log.phases:
        return Outputs((), (), failures=log.index())
    names = [name for name, _ in kept]
    files = _files(engine, names, rendered, keys, source, header, layout)
    return Outputs(tuple(sorted((n, v.hash) for n, v in files.items())),
                   _kernel_units(names, idents, rendered), failures=log.index())


def _files(engine: Engine, names: list[str], rendered: list[list[Value]], keys: Value,
           source: Value, header: Value, layout: Value) -> dict[str, Value]:
    files = {"VariableType.h": engine.run(HEADER, [header, layout], "VariableType.h")}
    stage_one = engine.run(TEMPLATE, [source, keys], "templates/VariableType.cpp")
    for shard_id, members in kernel_shards(names).items():
        name = f"VariableType{shard_id}.cpp"
        files[name] = engine.run(FILE, [
            engine.collection([k for p in members for k in rendered[p]], RenderedKernel),
            stage_one, keys, layout, engine.text(shard_id)], name)
    return files


def _kernel_units(names: list[str], idents: list[str], rendered: list[list[Value]]
                  ) -> tuple[tuple[str, str], ...]:
    """Each kernel as `<file> <function> <n>` (its n-th kernel) by the hash of its
    RenderedKernel, which names its wrapper and key: `affected` reads only the records of
    the kernels that changed."""
    file_of = {}
    for shard_id, members in kernel_shards(names).items():
        if shard_id != "Everything":
            file_of.update((p, f"VariableType{shard_id}.cpp") for p in members)
    return tuple((f"{file_of[p]} {idents[p]} {n}", value.hash)
                 for p, values in enumerate(rendered) for n, value in enumerate(values))


def kernel_unit_fields(unit: str) -> tuple[str, str]:
    """The file and function of a kernel unit (`<file> <function> <n>`)."""
    file, function, _ = unit.split(" ")
    return file, function


VARIABLE_TYPE = Group("group.variable_type", "render", variable_type, Outputs,
                      ("functions", "summaries", "matches", "matched", "dispatch keys",
                       "templates", "VariableType.cpp template", "VariableType.h template",
                       "layout"))
