"""The Python bindings group of the build graph: keys → plan → one binding per name and
file → rendered → files (gen_python_functions.py: gen)."""

from __future__ import annotations

from gradshard.cache.engine.core import Engine
from gradshard.cache.engine.jobs import group_of
from gradshard.cache.engine.values import Value
from gradshard.cache.graph import binding_tasks as t
from gradshard.cache.graph.group_records import (BIND, PARSE, RENDER, FailureLog, Outputs,
                                                 entry_values, parsed, pick, split_failed)
from gradshard.pipeline.parse.deprecated import DeprecatedSignature
from gradshard.pipeline.parse.native import NativeFunction
from gradshard.pipeline.problems import SpecError, SpecFile
from gradshard.pipeline.render.python.files import (METHODS_FILE, TORCH_FILE, TORCH_SHARD_IDS,
                                                    BindingKey, BindingPlan, RenderedBinding,
                                                    StructseqTypes, one_per_fault, torch_file_name,
                                                    torch_shard_of)
from gradshard.pipeline.render.template_names import MODULE_FILES
from gradshard.pipeline.render.templating import TemplateSet

__all__ = ["PYTHON_BINDINGS"]


def python_bindings(engine: Engine, functions: Value, names: Value, deprecated: Value,
                    tag_names: Value, templates: Value, spec_templates: Value,
                    layout: Value, release: Value) -> Outputs:
    try:
        entries = entry_values(engine, SpecFile.DEPRECATED, deprecated)
    except SpecError as error:
        return Outputs((), (), failures=split_failed(engine, error.problems))
    log = FailureLog(engine)
    items = engine.items(functions)
    function_names = engine.record(names).names
    signature_values = engine.map(t.PARSE_DEPRECATED, [((e.value, release), e.label)
                                                       for e in entries])
    log.place(PARSE, signature_values, entries)
    good = parsed(signature_values, entries)
    signatures = [v for v, _ in good]
    keys = engine.map(t.BINDING_KEY, [((f,), n) for f, n in zip(items, function_names)])
    plan: BindingPlan = engine.record(engine.run(t.BINDING_PLAN, [
        engine.collection(keys, BindingKey), engine.collection(signatures, DeprecatedSignature)],
        "bindings"))
    log.close(PARSE)
    engine.map(t.CHECK_DEPRECATED, [
        ((signatures[k], engine.collection(pick(items, calls), NativeFunction)), good[k][1].label)
        for k, calls in enumerate(plan.deprecated)])
    made = engine.map(t.BIND, [
        ((engine.literal(p.target), engine.collection(pick(items, p.functions), NativeFunction),
          engine.collection(pick(signatures, p.deprecated), DeprecatedSignature), release),
         p.target.python_name) for p in plan.bindings])
    types = _return_types(engine, plan, items)
    log.close(BIND, one_per_fault)
    rendered = engine.map(t.RENDER_BINDING, [((b, templates), p.target.python_name)
                                             for b, p in zip(made, plan.bindings)])
    sources = engine.record(spec_templates)
    files = _binding_files(engine, plan, rendered, sources, layout)
    files.update(_return_type_files(engine, types, tag_names, templates, sources, layout))
    log.close(RENDER)
    return Outputs(tuple(sorted((n, v.hash) for n, v in files.items())),
                   tuple((p.target.python_name, r.hash) for p, r in zip(plan.bindings, rendered)),
                   records=engine.collection(signatures, DeprecatedSignature, persist=True).hash,
                   failures=log.index())


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


def _return_types(engine: Engine, plan: BindingPlan, functions: tuple[Value, ...]) -> Value:
    """Every bound name's named-tuple return types (create_python_return_type_bindings)."""
    named = [(name, members) for name, has_names, members in plan.names if has_names]
    computed = iter(engine.map(t.RETURN_TYPES, [
        ((engine.collection(pick(functions, members), NativeFunction),), name)
        for name, members in named]))
    none = engine.literal(StructseqTypes(()))
    return engine.collection([next(computed) if has_names else none
                              for _, has_names, _ in plan.names], StructseqTypes)


def _return_type_files(engine: Engine, types: Value, tag_names: Value, templates: Value,
                       sources: TemplateSet, layout: Value) -> dict[str, Value]:
    files = {}
    for name, task in (("python_return_types.cpp", t.RETURN_TYPES_FILE),
                       ("python_return_types.h", t.RETURN_TYPES_HEADER)):
        files[name] = engine.run(task, [types, templates, engine.text(sources.text(name)),
                                        layout], name)
    files["python_enum_tag.cpp"] = engine.run(t.ENUM_TAG_FILE, [
        tag_names, templates, engine.text(sources.text("python_enum_tag.cpp")), layout],
        "python_enum_tag.cpp")
    return files


PYTHON_BINDINGS = group_of("group.python_bindings", "bindings", python_bindings,
                           labels={"deprecated": "deprecated.yaml", "tag_names": "tags"})
