"""The rest of gen_autograd and gen_annotated_fn_args: TraceType, variable_factories.h and
annotated_fn_args.py from the native side; ADInplaceOrViewType and ViewFuncs from the native
side and the matches.

    native side ─► group.native_codegen ─┬─ TraceType_0..9, Everything (cache/graph/kernel_family.py)
                                         ├─ factory.render ×function ─► assemble.variable_factories
                                         └─ annotated.render ×function ─► assemble.annotated_fn_args
    native side + matches ─► group.view_codegen ─┬─ ADInplaceOrViewType_0..1, Everything
                                                 └─ view_func.render ×view ─► assemble.view_funcs ×2

Every function is its own task over its record (and its match, for the two that read
derivatives.yaml through it), rendered by gradshard's templates and joined per file by the
spec's, so a native_functions.yaml edit reruns the tasks of the functions it changes, and a
formula edit reaches only the view group, and only through a changed match. The native
group reads nothing of derivatives.yaml: an edited formula never enters it.
"""

from __future__ import annotations

from gradshard.cache.engine.core import Engine
from gradshard.cache.engine.jobs import group_of, task_of
from gradshard.cache.engine.values import Value
from gradshard.cache.graph.group_records import RENDER, FailureLog, Outputs
from gradshard.cache.graph.kernel_family import FamilyMember, KernelFamily, family_files, register
from gradshard.cache.graph.tasks import NATIVE, single_template
from gradshard.cache.graph.variable_type_group import kernel_functions
from gradshard.pipeline.match.match_infos import FunctionMatch
from gradshard.pipeline.parse.native import NativeFunction
from gradshard.pipeline.records import Text
from gradshard.pipeline.render.annotated_args import (RenderedAnnotatedArgs,
                                                      annotated_fn_args_file, annotated_function,
                                                      render_annotated_args)
from gradshard.pipeline.render.factories import (RenderedFactory, render_factory,
                                                 variable_factories, variable_factories_file)
from gradshard.pipeline.render.inplace_or_view import (RenderedInplaceOrView, inplace_or_view_file,
                                                       inplace_or_view_kernels,
                                                       inplace_or_view_shards,
                                                       render_inplace_or_view, view_side_match)
from gradshard.pipeline.render.kernel_lists import view_info
from gradshard.pipeline.render.templating import TemplateSet
from gradshard.pipeline.render.trace_type import (RenderedTrace, is_trace_item, render_trace,
                                                  trace_kernel, trace_shards, trace_type_file)
from gradshard.pipeline.render.view_funcs import (VIEW_FUNCS_FILES, RenderedViewFunc,
                                                  render_view_func, view_func, view_funcs_files)

__all__ = ["NATIVE_CODEGEN", "VIEW_CODEGEN", "VIEW_SIDE_MATCH", "native_codegen_inputs",
           "view_codegen_inputs"]

TRACE_TEMPLATE = "TraceType.cpp"
INPLACE_OR_VIEW_TEMPLATE = "ADInplaceOrViewType.cpp"
FACTORIES_TEMPLATE, FACTORIES = "variable_factories.h", "variable_factories.h"
ANNOTATED_TEMPLATE, ANNOTATED = "annotated_fn_args.py.in", "annotated_fn_args.py"


# ---------------------------------------------------------------------------------------------
# Task adapters: the pipeline's functions over records


def traced(function: NativeFunction, templates: TemplateSet) -> tuple[RenderedTrace, ...]:
    if not is_trace_item(function):
        return ()
    return (render_trace(trace_kernel(function), templates),)


def trace_file(kernels: tuple[RenderedTrace, ...], template: Text, layout: Text,
               shard: Text) -> Text:
    return Text(trace_type_file(single_template(TRACE_TEMPLATE, template), kernels,
                                layout.text, shard.text))


def factories(function: NativeFunction, templates: TemplateSet) -> tuple[RenderedFactory, ...]:
    return tuple(render_factory(f, templates) for f in variable_factories(function))


def factories_file(rendered: tuple[RenderedFactory, ...], template: Text, layout: Text) -> Text:
    return Text(variable_factories_file(single_template(FACTORIES_TEMPLATE, template), rendered,
                                        layout.text))


def annotated(function: NativeFunction, templates: TemplateSet) -> RenderedAnnotatedArgs:
    return render_annotated_args(annotated_function(function), templates)


def annotated_file(rendered: tuple[RenderedAnnotatedArgs, ...], template: Text) -> Text:
    return Text(annotated_fn_args_file(single_template(ANNOTATED_TEMPLATE, template), rendered))


def inplace_or_view(function: NativeFunction, match: FunctionMatch, templates: TemplateSet
                    ) -> tuple[RenderedInplaceOrView, ...]:
    return tuple(render_inplace_or_view(k, templates)
                 for k in inplace_or_view_kernels(function, _match(match)))


def inplace_or_view_text(kernels: tuple[RenderedInplaceOrView, ...], template: Text,
                         layout: Text, shard: Text) -> Text:
    return Text(inplace_or_view_file(single_template(INPLACE_OR_VIEW_TEMPLATE, template),
                                     kernels, layout.text, shard.text))


def view_funcs(function: NativeFunction, match: FunctionMatch, templates: TemplateSet
               ) -> tuple[RenderedViewFunc, ...]:
    return tuple(render_view_func(v, templates) for v in view_func(function, _match(match)))


def view_funcs_file(structs: tuple[RenderedViewFunc, ...], header: Text, source: Text,
                    layout: Text, name: Text) -> Text:
    spec = TemplateSet(tuple(zip(VIEW_FUNCS_FILES, (header.text, source.text))))
    return Text(view_funcs_files(spec, structs, layout.text)[name.text])


def _match(match: FunctionMatch) -> FunctionMatch | None:
    """An abstract function without infos has an empty match (variable_type_group.py)."""
    return match if match.infos is not None else None


TRACE_KERNEL = task_of("trace_type.kernel", "render", traced, forks=True, blames=NATIVE)
TRACE_FILE = task_of("assemble.trace_type", "assemble", trace_file)
FACTORY = task_of("factory.render", "render", factories, blames=NATIVE)
FACTORIES_FILE = task_of("assemble.variable_factories", "assemble", factories_file,
                         labels={"rendered": "factories"})
ANNOTATED_ARGS = task_of("annotated.render", "render", annotated, forks=True, blames=NATIVE)
ANNOTATED_FILE = task_of("assemble.annotated_fn_args", "assemble", annotated_file,
                         labels={"rendered": "entries"})

# per function, in the autograd side: what the view group reads of its match (a formula edit
# of a function that is no view leaves it unchanged, so the view group is not entered)
VIEW_SIDE_MATCH = task_of("match.view_side", "match", view_side_match, labels={"fn": "function"})
INPLACE_OR_VIEW_KERNEL = task_of("inplace_or_view.kernel", "render", inplace_or_view, forks=True,
                                 blames=NATIVE)
INPLACE_OR_VIEW_FILE = task_of("assemble.inplace_or_view", "assemble", inplace_or_view_text)
VIEW_FUNC = task_of("view_func.render", "render", view_funcs, blames=NATIVE)
VIEW_FUNCS_FILE = task_of("assemble.view_funcs", "assemble", view_funcs_file,
                          labels={"header": "ViewFuncs.h template",
                                  "source": "ViewFuncs.cpp template", "name": "file"})

INPLACE_OR_VIEW = register(KernelFamily("ADInplaceOrViewType", INPLACE_OR_VIEW_TEMPLATE,
                                        INPLACE_OR_VIEW_KERNEL, INPLACE_OR_VIEW_FILE,
                                        inplace_or_view_shards, reads_match=True,
                                        dispatch_key="ADInplaceOrView"))
TRACE_TYPE = register(KernelFamily("TraceType", TRACE_TEMPLATE, TRACE_KERNEL, TRACE_FILE,
                                   trace_shards, reads_match=False, dispatch_key="Tracer"))


# ---------------------------------------------------------------------------------------------
# The native group


def native_codegen(engine: Engine, functions: Value, summaries: Value, templates: Value,
                   trace_template: Value, factories_template: Value,
                   annotated_template: Value, layout: Value, release: Value) -> Outputs:
    """TraceType (every function in YAML order, generated ones last: gen_trace_type reads
    the parse's list unfiltered), variable_factories.h and annotated_fn_args.py (the same
    list: gen_variable_factories and gen_annotated parse it again)."""
    items = engine.items(functions)
    summary_records = engine.records(list(engine.items(summaries)))
    names = [s.name for s in summary_records]
    members = [FamilyMember(f, None, s.name, s.root) for f, s in zip(items, summary_records)]
    log = FailureLog(engine)
    trace = family_files(engine, log, TRACE_TYPE, members, templates, layout, trace_template,
                         engine.record(release))
    made = engine.map(FACTORY, [((f, templates), n) for f, n in zip(items, names)])
    entries = engine.map(ANNOTATED_ARGS, [((f, templates), n) for f, n in zip(items, names)])
    log.close(RENDER)
    if log.phases or trace is None:
        return Outputs((), (), failures=log.index())
    factory_values = [v for found in engine.items_of(made) for v in found]
    files = {
        FACTORIES: engine.run(FACTORIES_FILE, [engine.collection(factory_values, RenderedFactory),
                                               factories_template, layout], FACTORIES),
        ANNOTATED: engine.run(ANNOTATED_FILE, [engine.collection(entries, RenderedAnnotatedArgs),
                                               annotated_template], ANNOTATED)}
    return Outputs(tuple(sorted([*trace.files, *((n, v.hash) for n, v in files.items())])),
                   trace.units)


def native_codegen_inputs(engine: Engine, functions: Value, summaries: Value, templates: Value,
                          sources: TemplateSet, layout: Value, release: Value) -> list[Value]:
    """Its spec templates only: another template's edit does not enter the group."""
    trace, factories, annotated = (engine.text(sources.text(n)) for n in (
        TRACE_TEMPLATE, FACTORIES_TEMPLATE, ANNOTATED_TEMPLATE))
    return NATIVE_CODEGEN.bind(functions=functions, summaries=summaries, templates=templates,
                               trace_template=trace, factories_template=factories,
                               annotated_template=annotated, layout=layout, release=release)


NATIVE_CODEGEN = group_of("group.native_codegen", "render", native_codegen,
                          labels={"trace_template": "TraceType.cpp template",
                                  "factories_template": "variable_factories.h template",
                                  "annotated_template": "annotated_fn_args.py.in template"})


# ---------------------------------------------------------------------------------------------
# The view group


def view_codegen(engine: Engine, functions: Value, plan: Value, view_matches: Value,
                 matched: Value, templates: Value, inplace_or_view_template: Value,
                 header_template: Value, source_template: Value, layout: Value,
                 release: Value) -> Outputs:
    """ADInplaceOrViewType and ViewFuncs: the functions with derived kernels, in C++-name
    order (gen_inplace_or_view_type and gen_view_funcs iterate gen_autograd's sorted list);
    only those whose base name is a view's can have a ViewFunc. `view_matches`: each match
    as match.view_side projects it (what these files read of it)."""
    kept = kernel_functions(engine, functions, plan, view_matches, matched)
    members = [FamilyMember(k.function, k.match, k.name, k.root) for k in kept]
    log = FailureLog(engine)
    kernels = family_files(engine, log, INPLACE_OR_VIEW, members, templates, layout,
                           inplace_or_view_template, engine.record(release))
    views = [k for k in kept if view_info(k.root) is not None]
    structs = engine.map(VIEW_FUNC, [((k.function, k.match, templates), k.name) for k in views])
    log.close(RENDER)
    if log.phases or kernels is None:
        return Outputs((), (), failures=log.index())
    rendered = engine.collection([v for found in engine.items_of(structs) for v in found],
                                 RenderedViewFunc)
    files = {name: engine.run(VIEW_FUNCS_FILE, [rendered, header_template, source_template,
                                                layout, engine.text(name)], name)
             for name in VIEW_FUNCS_FILES}
    return Outputs(tuple(sorted([*kernels.files, *((n, v.hash) for n, v in files.items())])),
                   kernels.units)


def view_codegen_inputs(engine: Engine, functions: Value, plan: Value, view_matches: Value,
                        matched: Value, templates: Value, sources: TemplateSet, layout: Value,
                        release: Value) -> list[Value]:
    """The functions, the kernel plan and the matched positions as the VariableType group
    reads them; of the matches, what match.view_side projects. Its spec templates only."""
    inplace_or_view, header, source = (engine.text(sources.text(n)) for n in (
        INPLACE_OR_VIEW_TEMPLATE, *VIEW_FUNCS_FILES))
    return VIEW_CODEGEN.bind(functions=functions, plan=plan, view_matches=view_matches,
                             matched=matched, templates=templates,
                             inplace_or_view_template=inplace_or_view, header_template=header,
                             source_template=source, layout=layout, release=release)


VIEW_CODEGEN = group_of("group.view_codegen", "render", view_codegen,
                        labels={"plan": "kernel plan", "view_matches": "view-side matches",
                                "inplace_or_view_template": "ADInplaceOrViewType.cpp template",
                                "header_template": "ViewFuncs.h template",
                                "source_template": "ViewFuncs.cpp template"})
