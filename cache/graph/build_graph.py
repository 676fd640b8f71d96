"""The build graph: the pipeline's stages wired as engine tasks, in six groups under the
build's own.

    build ─┬─ native side      native_functions.yaml, tags.yaml: parse, generate
           ├─ native outputs   native side + deprecated.yaml + templates, begun first (a child
           │   ├─ python bindings   may run it): bind, render, assemble (bindings_group.py)
           │   └─ native codegen    TraceType, variable_factories.h, annotated_fn_args.py
           │                        (codegen_group.py)
           ├─ autograd side    derivatives.yaml + native side: views, parse, match, foreach
           ├─ view codegen     ADInplaceOrViewType, ViewFuncs: native side + the matches' view
           │                   projections, begun before the next two (codegen_group.py)
           ├─ autograd files   autograd side + templates: nodes, render, assemble
           └─ VariableType     native side + matches + templates: kernels per file
                               (variable_type_group.py)

The compile layout is a group of its own (layout_group.py), run over a build's index when it
compiles.

A group whose inputs are unchanged is answered by its index without looking inside, so an
edited formula never visits the native side or the bindings. Inside a group, every unit
(entry, function, info, node, binding, file) is its own task over exactly the records it
reads; small summary records route inputs to them (which bucket an entry reads, which
entry a function matches), so an edit that leaves a summary unchanged stops there.

A spec's problems are its tasks' outputs: a unit that breaks a rule is left out of what
follows, the rest goes on, and each group's index keeps its problems phase by phase
(cache/graph/group_records.py). The build's index keeps those of the first phase that has any,
each placed at its file and line, so a cached run reports them without running a task.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Sequence

from gradshard.cache.engine.core import Engine
from gradshard.cache.engine.jobs import Group, group_of
from gradshard.cache.engine.values import Value
from gradshard.cache.graph import tasks as t
from gradshard.cache.graph.bindings_group import PYTHON_BINDINGS
from gradshard.cache.graph.codegen_group import (NATIVE_CODEGEN, VIEW_CODEGEN, VIEW_SIDE_MATCH,
                                                 native_codegen_inputs, view_codegen_inputs)
from gradshard.cache.graph.group_records import (BIND, BLOCKED, MATCH, NONE_FAILED, PARSE, PHASES,
                                                 RENDER, SPLIT, AutogradSide, BuildIndex,
                                                 BuildInputs, EntryValue, FailureLog,
                                                 FunctionNames, Labels, NativeOutputs, NativeSide,
                                                 Outputs, Positions, entry_values, parsed, pick,
                                                 split_failed)
from gradshard.cache.graph.variable_type_group import VARIABLE_TYPE
from gradshard.pipeline.formulas.names import EntryFormulas, FormulaFindings, FormulaSources
from gradshard.pipeline.match.match_infos import FOREACH as FOREACH_STEP
from gradshard.pipeline.match.match_infos import (FunctionMatch, FunctionSummary, MatchStep,
                                                  merge_formula_faults)
from gradshard.pipeline.parse.derivatives import DerivativeEntry
from gradshard.pipeline.parse.differentiability import (UNKNOWN_SCHEMA, DerivativeBuckets,
                                                        EntryInfos, InfoSummary, ViewCopies,
                                                        duplicate_entry)
from gradshard.pipeline.parse.native import NativeFunction
from gradshard.pipeline.parse.spec import SpecTexts, entry_lines, split_spec
from gradshard.pipeline.parse.tags import Tag, TagNames, duplicate_tag
from gradshard.pipeline.problems import Failure, InternalError, Problem, SpecError, SpecFile
from gradshard.pipeline.records import Record, Text
from gradshard.pipeline.releases import Release
from gradshard.pipeline.render.nodes import BackwardNode
from gradshard.pipeline.render.templating import TemplateSet, python_function_shards
from gradshard.pipeline.render.variable_type_files import DispatchKeys

__all__ = ["binding_outputs", "build_index", "located_findings", "spec_findings", "spec_sides"]

Parsed = tuple[Value, EntryValue]  # an entry, and what its parse task gave
Derived = tuple[Value, Value, EntryValue]  # an entry's infos, their summary, the entry


def build_index(engine: Engine, inputs: BuildInputs) -> tuple[str, BuildIndex]:
    """Run (or reuse) the whole build: the index's hash and the index. A spec with problems
    raises SpecError with every problem of its first failing phase, each at its line."""
    texts = inputs.texts
    values = BUILD.bind(natives=engine.text(texts.native_functions),
                        tags=engine.text(texts.tags), derivatives=engine.text(texts.derivatives),
                        deprecated=engine.text(texts.deprecated),
                        spec_templates=engine.literal(inputs.spec_templates),
                        templates=engine.literal(inputs.templates),
                        layout=engine.text(inputs.layout), release=engine.literal(inputs.release),
                        formulas=engine.literal(inputs.formulas))
    index = engine.group(BUILD, values, "build")
    record = engine.record(index)
    if record.failures:
        raise SpecError(engine.problems([engine.ref(record.failures, Failure)]))
    return index.hash, record


# ---------------------------------------------------------------------------------------------
# The whole build


def whole_build(engine: Engine, natives: Value, tags: Value, derivatives: Value,
                deprecated: Value, spec_templates: Value, templates: Value,
                layout: Value, release: Value, formulas: Value) -> BuildIndex:
    texts = (natives, tags, derivatives, deprecated)
    native_value, native = _indexed(engine, NATIVE_SIDE, NATIVE_SIDE.bind(
        natives=natives, tags=tags, release=release), "native side")
    if _failed_at(native, SPLIT):
        return _rejected(engine, texts, [native], native)
    # the bindings and the native codegen read nothing of the autograd side: they may run
    # meanwhile, in a child
    native_files = engine.begin(NATIVE_OUTPUTS, NATIVE_OUTPUTS.bind(
        **_binding_inputs(engine, native, deprecated, templates, spec_templates, layout, release),
        summaries=engine.ref_collection(native.summaries, FunctionSummary)), "native outputs")
    autograd_value, autograd = _indexed(engine, AUTOGRAD_SIDE,
                                        _autograd_inputs(engine, native, derivatives, formulas),
                                        "autograd side")
    autograd_out = kernels_out = views_out = None
    if not _failed_at(autograd, SPLIT):
        kernel = _kernel_inputs(engine, native, autograd, templates, spec_templates, layout,
                                release)
        # the view group reads neither the autograd files nor VariableType: begun first, it
        # runs in a child once one of the two processors frees up
        view_files = engine.begin(VIEW_CODEGEN, view_codegen_inputs(
            engine, kernel["functions"], kernel["plan"],
            engine.ref_collection(autograd.view_matches, FunctionMatch), kernel["matched"],
            templates, engine.record(spec_templates), layout, release), "view codegen")
        autograd_files = engine.begin(AUTOGRAD_FILES, AUTOGRAD_FILES.bind(
            loaded=engine.ref_collection(autograd.loaded, EntryInfos),
            foreach=engine.ref_collection(autograd.foreach, EntryInfos), templates=templates,
            spec_templates=spec_templates, layout=layout, release=release), "autograd files")
        kernels_out = _indexed(engine, VARIABLE_TYPE, VARIABLE_TYPE.bind(**kernel),
                               "variable type")[1]
        autograd_out = engine.record(autograd_files.join())
        views_out = engine.record(view_files.join())
    outputs = engine.record(native_files.join())
    python_value = engine.ref(outputs.bindings, Outputs)
    python_out, native_out = engine.records([python_value, engine.ref(outputs.codegen, Outputs)])
    indexes = [i for i in (native, autograd, autograd_out, kernels_out, views_out, python_out,
                           native_out) if i is not None]
    if (autograd_out is None or kernels_out is None or views_out is None
            or any(i.failures for i in indexes)):
        return _rejected(engine, texts, indexes, native)
    return BuildIndex(tuple(sorted(autograd_out.files + kernels_out.files + python_out.files
                                   + views_out.files + native_out.files)),
                      autograd_out.units, python_out.units, autograd_out.keys,
                      autograd_out.records, autograd_out.python_nodes, native_value.hash,
                      autograd_value.hash, python_value.hash,
                      kernels=kernels_out.units,
                      family_kernels=views_out.units + native_out.units)


def _indexed(engine: Engine, group: Group, inputs: list[Value], ident: str
             ) -> tuple[Value, Any]:
    """A group's value and its index record."""
    value = engine.group(group, inputs, ident)
    return value, engine.record(value)


def _autograd_inputs(engine: Engine, native: NativeSide, derivatives: Value,
                     formulas: Value) -> list[Value]:
    """The autograd side reads the native side and, for the formula check, the names every
    formula may use (the helper header's, the templates', the native functions')."""
    names = engine.ref(native.names, FunctionNames)
    return [derivatives, engine.ref_collection(native.functions, NativeFunction), names,
            engine.ref_collection(native.summaries, FunctionSummary),
            engine.ref(native.failed, Labels),
            engine.run(t.FORMULA_NAMES, [formulas, names], "formula names")]


def _kernel_inputs(engine: Engine, native: NativeSide, autograd: AutogradSide,
                   templates: Value, spec_templates: Value, layout: Value, release: Value
                   ) -> dict[str, Value]:
    """The VariableType group's inputs by name. Its spec templates only: another template's
    edit does not enter the group."""
    sources = engine.record(spec_templates)
    matched = engine.ref(autograd.matched, Positions)
    summaries = engine.ref_collection(native.summaries, FunctionSummary)
    return dict(functions=engine.ref_collection(native.functions, NativeFunction),
                plan=engine.run(t.KERNEL_PLAN, [summaries, matched], "functions"),
                matches=engine.ref_collection(autograd.matches, FunctionMatch), matched=matched,
                keys=engine.ref(autograd.dispatch_keys, DispatchKeys), templates=templates,
                source=engine.text(sources.text("VariableType.cpp")),
                header=engine.text(sources.text("VariableType.h")), layout=layout,
                release=release)


def _binding_inputs(engine: Engine, native: NativeSide, deprecated: Value, templates: Value,
                    spec_templates: Value, layout: Value, release: Value) -> dict[str, Value]:
    """The Python bindings' inputs by name (the native outputs read them too)."""
    return dict(functions=engine.ref_collection(native.functions, NativeFunction),
                names=engine.ref(native.names, FunctionNames), deprecated=deprecated,
                tag_names=engine.ref(native.tag_names, TagNames), templates=templates,
                spec_templates=spec_templates, layout=layout, release=release)


def native_outputs(engine: Engine, functions: Value, names: Value, deprecated: Value,
                   tag_names: Value, templates: Value, spec_templates: Value, layout: Value,
                   release: Value, summaries: Value) -> NativeOutputs:
    """The Python bindings, then TraceType, variable_factories.h and annotated_fn_args.py: one
    group, so that one child process runs both beside the autograd side."""
    bindings = engine.group(PYTHON_BINDINGS, PYTHON_BINDINGS.bind(
        functions=functions, names=names, deprecated=deprecated, tag_names=tag_names,
        templates=templates, spec_templates=spec_templates, layout=layout, release=release),
        "python bindings")
    codegen = engine.group(NATIVE_CODEGEN, native_codegen_inputs(
        engine, functions, summaries, templates, engine.record(spec_templates), layout,
        release), "native codegen")
    return NativeOutputs(bindings.hash, codegen.hash)


def spec_sides(engine: Engine, texts: SpecTexts, release: Release,
               formulas: FormulaSources = FormulaSources()
               ) -> tuple[NativeSide, AutogradSide]:
    """The native and autograd sides of a spec alone (parse and match: no bindings, no
    templates but those the formula check reads), as the build runs them; SpecError with
    their problems, as the build gives them. What the parse benchmark times and the parse
    tests read."""
    native = _native_side_of(engine, texts, release)
    if _failed_at(native, SPLIT):
        raise SpecError(first_problems(engine, texts, [native], native))
    autograd = _indexed(engine, AUTOGRAD_SIDE, _autograd_inputs(
        engine, native, engine.text(texts.derivatives), engine.literal(formulas)),
        "autograd side")[1]
    if native.failures or autograd.failures:
        raise SpecError(first_problems(engine, texts, [native, autograd], native))
    return native, autograd


def spec_findings(engine: Engine, texts: SpecTexts, release: Release,
                  formulas: FormulaSources) -> tuple[tuple[Problem, ...], tuple[Problem, ...]]:
    """What gradshard's own rules find in a spec alone: its problems (spec_sides') and the
    formula check's findings of every entry that got that far, each at its line."""
    native = _native_side_of(engine, texts, release)
    if _failed_at(native, SPLIT):
        return first_problems(engine, texts, [native], native), ()
    autograd = _indexed(engine, AUTOGRAD_SIDE, _autograd_inputs(
        engine, native, engine.text(texts.derivatives), engine.literal(formulas)),
        "autograd side")[1]
    problems = (first_problems(engine, texts, [native, autograd], native)
                if native.failures or autograd.failures else ())
    return problems, located_findings(engine, texts, autograd)


def located_findings(engine: Engine, texts: SpecTexts, autograd: AutogradSide
                     ) -> tuple[Problem, ...]:
    """The formula check's findings of a run's autograd side, each at its line (they are all
    derivatives.yaml's: that file alone is split to place them)."""
    if not autograd.findings:
        return ()
    found = engine.record(engine.ref(autograd.findings, FormulaFindings)).problems
    if not found:
        return ()
    lines = entry_lines(split_spec(texts, (SpecFile.DERIVATIVES,)), ())
    return SpecError.located(found, lines).problems


def binding_outputs(engine: Engine, inputs: BuildInputs) -> Outputs:
    """The Python binding files alone (the native side, then the bindings), as the build
    runs them: what the bindings benchmark times."""
    native = _native_side_of(engine, inputs.texts, inputs.release)
    return _indexed(engine, PYTHON_BINDINGS, PYTHON_BINDINGS.bind(**_binding_inputs(
        engine, native, engine.text(inputs.texts.deprecated), engine.literal(inputs.templates),
        engine.literal(inputs.spec_templates), engine.text(inputs.layout),
        engine.literal(inputs.release))), "python bindings")[1]


def _native_side_of(engine: Engine, texts: SpecTexts, release: Release) -> NativeSide:
    return _indexed(engine, NATIVE_SIDE, NATIVE_SIDE.bind(
        natives=engine.text(texts.native_functions), tags=engine.text(texts.tags),
        release=engine.literal(release)), "native side")[1]


def _failed_at(index: NativeSide | AutogradSide | Outputs, phase: int) -> bool:
    return len(index.failures) > phase and index.failures[phase] != ""


def _rejected(engine: Engine, texts: Sequence[Value], indexes: Sequence[Record],
              native: NativeSide) -> BuildIndex:
    """The index of a spec with problems, kept as one Failure."""
    spec = SpecTexts(*(r.text for r in engine.records(list(texts))))
    failure = engine.literal(Failure(first_problems(engine, spec, indexes, native)),
                             persist=True)
    return BuildIndex((), (), (), (), "", 0, failures=failure.hash)


def first_problems(engine: Engine, spec: SpecTexts, indexes: Sequence[Record],
                   native: NativeSide) -> tuple[Problem, ...]:
    """The problems of the first phase the groups' indexes have any for (the stages stop
    there), each placed at its line, in spec order."""
    phase = next(p for p in range(len(PHASES)) if any(_failed_at(i, p) for i in indexes))
    if phase == SPLIT:  # every file's, as no other phase runs (split problems have lines)
        try:
            split_spec(spec)
        except SpecError as error:
            return error.problems
    found = engine.problems([engine.ref(i.failures[phase], Failure) for i in indexes
                             if _failed_at(i, phase)])
    return SpecError.located(found, _entry_lines(engine, spec, native)).problems


def _entry_lines(engine: Engine, spec: SpecTexts, native: NativeSide
                 ) -> dict[tuple[SpecFile, str], int]:
    """Where each entry starts (a generated function's: where its source entry does)."""
    summaries = engine.records(list(engine.items(
        engine.ref_collection(native.summaries, FunctionSummary))))
    return entry_lines(split_spec(spec), [(s.name, s.origin) for s in summaries if s.origin])


# ---------------------------------------------------------------------------------------------
# Native side


def native_side(engine: Engine, natives: Value, tags: Value, release: Value) -> NativeSide:
    try:
        tag_entries = entry_values(engine, SpecFile.TAGS, tags)
        entries = entry_values(engine, SpecFile.NATIVE_FUNCTIONS, natives)
    except SpecError as error:
        return NativeSide(failures=split_failed(engine, error.problems))
    log = FailureLog(engine)
    tags, tag_names = _tags(engine, tag_entries, log)
    parsed_natives = engine.map(t.PARSE_NATIVE, [((e.value, tag_names, release), e.label)
                                                 for e in entries])
    log.place(PARSE, parsed_natives, entries)
    good = parsed(parsed_natives, entries)
    failed = Labels(tuple(e.label for v, e in zip(parsed_natives, entries) if v.failed))
    functions, idents = _with_generated(engine, good, log)
    function_list = engine.collection(functions, NativeFunction, persist=True)
    summaries = engine.map(t.FUNCTION_SUMMARY, [((f,), i) for f, i in zip(functions, idents)])
    names = FunctionNames(tuple(s.name for s in engine.records(summaries)))
    log.close(PARSE)
    return NativeSide(
        functions=function_list.hash, names=engine.literal(names, persist=True).hash,
        summaries=engine.collection(summaries, FunctionSummary, persist=True).hash,
        tag_names=tag_names.hash, failed=engine.literal(failed, persist=True).hash,
        tags=tags.hash, failures=log.index(), generated=len(functions) - len(good))


def _tags(engine: Engine, entries: list[EntryValue], log: FailureLog) -> tuple[Value, Value]:
    """The tags that parsed, and the declared ones (a tag whose entry failed still counts);
    a tag defined again is a problem at its second definition."""
    values = engine.map(t.PARSE_TAG, [((e.value,), e.label) for e in entries])
    log.place(PARSE, values, entries)
    good = parsed(values, entries)
    failed = Labels(tuple(e.label for v, e in zip(values, entries) if v.failed))
    tags = engine.collection([v for v, _ in good], Tag, persist=True)
    names = engine.run(t.TAG_NAMES, [tags, engine.literal(failed)], "tags")
    log.add(PARSE, [duplicate_tag(name, good[at][1].entry.line)
                    for at, name in engine.record(names).duplicates])
    return tags, names


def _with_generated(engine: Engine, good: list[Parsed], log: FailureLog
                    ) -> tuple[list[Value], list[str]]:
    """The YAML functions, then those torchgen generates for their signature groups; each
    with its ident."""
    yaml_functions = engine.collection([v for v, _ in good], NativeFunction)
    engine.run(t.CHECK_NATIVES, [yaml_functions], "native functions")
    grouping = engine.record(engine.run(t.SIGNATURE_GROUPS, [yaml_functions],
                                          "native functions"))
    log.add(PARSE, grouping.problems)
    groups = grouping.groups
    made = engine.map(t.GENERATE, [((engine.collection([good[p][0] for p in g], NativeFunction),),
                                    good[g[0]][1].label) for g in groups])
    made_groups = [(g, m) for g, m in zip(groups, made) if not m.failed]
    functions, idents = [v for v, _ in good], [e.label for _, e in good]
    for (group, _), generated in zip(made_groups, engine.items_of([m for _, m in made_groups])):
        functions.extend(generated)
        label = good[group[0]][1].label
        idents.extend(f"{label} (generated {k})" for k in range(len(generated)))
    return functions, idents


# ---------------------------------------------------------------------------------------------
# Autograd side: the functions' views and signature buckets; derivatives entries → numbered
# infos → matches and foreach infos. (The views are native rules, but only the derivatives
# read them: the bindings need not wait for them.)


def autograd_side(engine: Engine, derivatives: Value, functions: Value, names: Value,
                  summaries: Value, failed: Value, formula_names: Value) -> AutogradSide:
    log = FailureLog(engine)
    order = engine.run(t.VIEW_ORDER, [functions], "native functions")
    buckets = engine.run(t.BUCKETS, [functions, order], "native functions")
    log.add(PARSE, engine.record(buckets).problems)  # the views' and the schemas'
    try:
        entries = entry_values(engine, SpecFile.DERIVATIVES, derivatives)
    except SpecError as error:
        return AutogradSide(view_order=order.hash, buckets=buckets.hash,
                            failures=split_failed(engine, error.problems))
    function_items = engine.items(functions)
    function_names = engine.record(names).names
    good, kept, copies = _derived(engine, entries, function_items, function_names, summaries,
                                  order, buckets, failed, log)
    info_summaries = [s for _, s, _ in kept]
    summary_list = engine.collection(info_summaries, InfoSummary)
    keys = engine.run(t.DISPATCH_KEYS, [summary_list], "derivatives")
    op_names = engine.items(engine.run(t.OP_NAMES, [summary_list], "derivatives"))
    numbered = engine.map(t.NUMBERED_INFOS, [((i, ops), e.label)
                                             for (i, _, e), ops in zip(kept, op_names)])
    findings = _formula_findings(engine, good, kept, numbered, formula_names)
    copied = engine.map(t.VIEW_COPY, [((numbered[at], function_items[copy]), function_names[copy])
                                      for at, copy in copies])
    copy_summaries = engine.map(t.INFO_SUMMARY, [((c,), function_names[copy])
                                                 for c, (_, copy) in zip(copied, copies)])
    log.close(PARSE)
    steps = engine.items(engine.run(t.MATCH_PLAN, [summaries, engine.collection(
        info_summaries + copy_summaries, InfoSummary)], "functions"))
    loaded = numbered + copied
    synthesized, matches = _matches(engine, steps, function_items, function_names, loaded, log)
    step_records = engine.records(list(steps))
    matched = Positions(tuple(s.function for s in step_records))
    view_matches = engine.map(VIEW_SIDE_MATCH, [
        ((function_items[s.function], match), function_names[s.function])
        for match, s in zip(matches, step_records)])
    counts = _info_counts(engine.records(info_summaries + copy_summaries), step_records,
                          synthesized)
    keyed, with_nodes, matched_functions = counts
    return AutogradSide(
        loaded=engine.collection(loaded, EntryInfos, persist=True).hash,
        foreach=engine.collection([v for v in synthesized.values() if not v.failed],
                                  EntryInfos, persist=True).hash,
        entries=engine.collection([d for d, _ in good], DerivativeEntry, persist=True).hash,
        matches=engine.collection(matches, FunctionMatch, persist=True).hash,
        view_order=order.hash, buckets=buckets.hash,
        matched=engine.literal(matched, persist=True).hash,
        dispatch_keys=engine.literal(engine.record(keys), persist=True).hash,
        view_matches=engine.collection(view_matches, FunctionMatch, persist=True).hash,
        failures=log.index(), findings=findings, keyed_infos=keyed,
        infos_with_nodes=with_nodes, matched_functions=matched_functions)


def _info_counts(summaries: list[InfoSummary], steps: list[MatchStep],
                 synthesized: dict[int, Value]) -> tuple[int, int, int]:
    """What `check` counts of the infos, from their summaries: the keyed infos, those with a
    backward node, and the functions that use infos (a synthesized foreach info has them
    when its synthesis did not fail)."""
    keyed = sum(len(s.op_prefixes) for s in summaries)
    with_nodes = sum(p is not None for s in summaries for p in s.op_prefixes)
    matched = sum((not synthesized[k].failed) if s.how == FOREACH_STEP
                  else summaries[s.entry].has_infos for k, s in enumerate(steps))
    return keyed, with_nodes, matched


def _formula_findings(engine: Engine, good: list[Parsed], kept: list[Derived],
                      numbered: list[Value], names: Value) -> str:
    """The formula check (pipeline/formulas/names.py): each entry kept read alone, then
    every entry's open names against the spec-wide ones. A finding is no failure (torchgen
    accepts the formula), so it stops nothing."""
    parsed_of = {e.entry.line: d for d, e in good}
    read = engine.map(t.CHECK_FORMULAS, [((e.value, parsed_of[e.entry.line], i), e.label)
                                         for (_, _, e), i in zip(kept, numbered)])
    entries = engine.collection([v for v in read if not v.failed], EntryFormulas)
    return engine.run(t.FORMULA_FINDINGS, [entries, names], "derivatives").hash


def _derived(engine: Engine, entries: list[EntryValue], functions: tuple[Value, ...],
             names: Sequence[str], summaries: Value, order: Value, buckets: Value,
             failed: Value, log: FailureLog
             ) -> tuple[list[Parsed], list[Derived], tuple[tuple[int, int], ...]]:
    """Each entry parsed (those that did), then derived into its infos (load_derivatives): the
    parsed entries, the derived ones (infos, info summary, entry) and their view copies."""
    values = engine.map(t.PARSE_DERIVATIVE, [((e.value,), e.label) for e in entries])
    log.place(PARSE, values, entries)
    good = _not_failed_natives(engine, parsed(values, entries), failed)
    infos = _entry_infos(engine, good, functions, names, summaries, order, buckets)
    log.place(PARSE, infos, [e for _, e in good])
    kept, copies = _first_entries(engine, [(i, d, e) for i, (d, e) in zip(infos, good)
                                           if not i.failed], summaries, order, log)
    return good, kept, copies


def _not_failed_natives(engine: Engine, good: list[Parsed], failed: Value
                        ) -> list[Parsed]:
    """The entries whose function's native entry did not fail to parse: that one is
    reported, and its formulas are not blamed for it too."""
    if failed.hash == NONE_FAILED:
        return good
    labels = set(engine.record(failed).labels)
    entries = engine.records([d for d, _ in good])
    return [g for g, entry in zip(good, entries) if entry.op_name not in labels]


def _entry_infos(engine: Engine, good: list[Parsed],
                 functions: tuple[Value, ...], names: Sequence[str], summaries: Value,
                 order: Value, buckets: Value) -> list[Value]:
    """Each entry's infos, from the signature bucket of the function it names
    (load_derivatives.py: create_differentiability_info's lookups), routed by its label (the
    operator name read from its text); an entry naming no function, or a schema its
    function does not have, is told so with every function's names."""
    lookup = engine.record(buckets)
    routed = _routes(engine, good, names, lookup)
    known = [k for k, bucket in enumerate(routed) if bucket is not None]
    infos: list[Value] = [engine.ref("", EntryInfos)] * len(good)
    members = [engine.collection(pick(functions, lookup.buckets[routed[k]]),  # type: ignore[index]
                                 NativeFunction) for k in known]
    for k, value in zip(known, engine.map(t.ENTRY_INFOS, [
            ((good[k][0], bucket), good[k][1].label) for k, bucket in zip(known, members)])):
        infos[k] = value
    unknown = [k for k, bucket in enumerate(routed) if bucket is None]
    unknown += _unknown_schemas(engine, [(k, infos[k]) for k in known if infos[k].failed])
    for k, value in zip(unknown, engine.map(t.NO_FUNCTION, [
            ((good[k][0], summaries, order), good[k][1].label) for k in unknown])):
        infos[k] = value
    return infos


def _routes(engine: Engine, good: list[Parsed], names: Sequence[str],
            lookup: DerivativeBuckets) -> list[int | None]:
    """Each entry's bucket (None: no function has its schema), by its label; an entry whose
    label names no function, or one two functions share, by the schema it parsed to."""
    by_name = {names[position]: bucket for _, position, bucket in lookup.schemas}
    if len(by_name) < len(lookup.schemas):
        shared = Counter(names[position] for _, position, _ in lookup.schemas)
        by_name = {name: b for name, b in by_name.items() if shared[name] == 1}
    routed = [by_name.get(e.label) for _, e in good]
    unread = [k for k, bucket in enumerate(routed) if bucket is None]
    if unread:
        by_schema = {schema: bucket for schema, _, bucket in lookup.schemas}
        for k, entry in zip(unread, engine.records([good[k][0] for k in unread])):
            routed[k] = by_schema.get(entry.name)
    return routed


def _unknown_schemas(engine: Engine, failed: list[tuple[int, Value]]) -> list[int]:
    """Those of the failed entries whose schema their bucket lacks (what the bucket alone
    cannot name the closest schemas for)."""
    records = engine.records([v for _, v in failed if v.hash != BLOCKED])
    failures = iter(records)
    return [k for k, v in failed if v.hash != BLOCKED and
            any(p.rule == UNKNOWN_SCHEMA for p in next(failures).problems)]


def _first_entries(engine: Engine, entries: list[Derived],
                   functions: Value, order: Value, log: FailureLog
                   ) -> tuple[list[Derived], tuple[tuple[int, int], ...]]:
    """The entries (infos, info summary, entry), but for a second entry of one function (a
    problem at its line, left out), and the view copies to make of them."""
    summaries = engine.map(t.INFO_SUMMARY, [((i,), e.label) for i, _, e in entries])
    kept = [(i, s, e) for (i, _, e), s in zip(entries, summaries)]
    plan = _view_copies(engine, summaries, functions, order)
    if plan.duplicates:
        parsed_entries = engine.records([entries[at][1] for at, _, _ in plan.duplicates])
        log.add(PARSE, [duplicate_entry(d.op_name, function, entries[at][2].entry.line,
                                        entries[first][2].entry.line)
                        for (at, first, function), d in zip(plan.duplicates, parsed_entries)])
        seconds = {at for at, _, _ in plan.duplicates}
        kept = [k for at, k in enumerate(kept) if at not in seconds]
        plan = _view_copies(engine, [s for _, s, _ in kept], functions, order)
    return kept, plan.copies


def _view_copies(engine: Engine, summaries: list[Value], functions: Value, order: Value
                 ) -> ViewCopies:
    return engine.record(engine.run(t.VIEW_COPIES, [
        engine.collection(summaries, InfoSummary), functions, order], "derivatives"))


def _matches(engine: Engine, step_values: tuple[Value, ...], functions: tuple[Value, ...],
             names: Sequence[str], loaded: list[Value], log: FailureLog
             ) -> tuple[dict[int, Value], list[Value]]:
    """The foreach infos, by step number, in plan order (they follow the loaded infos), and
    every step's match; their problems merged (matching.merge_formula_faults)."""
    steps = list(zip(step_values, engine.records(step_values)))
    chosen = [(k, v, s) for k, (v, s) in enumerate(steps) if s.how == FOREACH_STEP]
    if any(s.entry >= len(loaded) for _, _, s in chosen):
        raise InternalError("a foreach op's reference is itself synthesized")
    made = engine.map(t.FOREACH, [((functions[s.function], loaded[s.entry], v), names[s.function])
                                  for _, v, s in chosen])
    synthesized = {k: value for (k, _, _), value in zip(chosen, made)}
    every = loaded + list(synthesized.values())
    matches = engine.map(t.MATCH_FUNCTION, [
        ((functions[s.function], v, synthesized[k] if s.how == FOREACH_STEP else every[s.entry]),
         names[s.function]) for k, (v, s) in enumerate(steps)])
    log.add(MATCH, _match_problems(engine, [s for _, s in steps], synthesized, matches, names))
    return synthesized, matches


def _match_problems(engine: Engine, steps: list[MatchStep], synthesized: dict[int, Value],
                    matches: list[Value], names: Sequence[str]) -> list[Problem]:
    """Each failed step's problem (its synthesis's, when that failed and so blocked its
    match; else its match's) with its function, merged (matching.merge_formula_faults)."""
    found = []
    for k in [k for k, match in enumerate(matches) if match.failed]:
        synthesis = synthesized.get(k)
        failed = synthesis if synthesis is not None and synthesis.failed else matches[k]
        if failed.hash != BLOCKED:
            found.append((failed, names[steps[k].function]))
    records = engine.records([v for v, _ in found])
    return merge_formula_faults([(p, name) for r, (_, name) in zip(records, found)
                                 for p in r.problems])


# ---------------------------------------------------------------------------------------------
# Autograd files: nodes → rendered pieces → Functions.h/.cpp, python_functions*


def autograd_files(engine: Engine, loaded: Value, foreach: Value, templates: Value,
                   spec_templates: Value, layout: Value, release: Value) -> Outputs:
    """Functions.* hold the nodes of every info; python_functions* bind those of the infos
    as loaded, which come first (generate_code.py runs gen_autograd_python, and so
    gen_autograd_functions_python, before gen_autograd's matching adds the foreach infos)."""
    log = FailureLog(engine)
    loaded_entries = engine.items(loaded)
    entries = loaded_entries + engine.items(foreach)
    names = engine.records(engine.map(t.NODE_NAMES, [((e,), f"infos {k}")
                                                     for k, e in enumerate(entries)]))
    with_nodes = [(k, e, n) for k, (e, n) in enumerate(zip(entries, names)) if n.ops]
    node_lists = engine.map(t.NODES, [((e, release), n.ops[0]) for _, e, n in with_nodes])
    log.close(BIND)
    built = [(k, n, nodes) for (k, _, n), nodes in zip(with_nodes, node_lists) if not nodes.failed]
    nodes = [node for items in engine.items_of([n for _, _, n in built]) for node in items]
    ops = [op for _, n, _ in built for op in n.ops]
    keys = [key for _, n, _ in built for key in n.names]
    if len(nodes) != len(ops):
        raise InternalError("node names and nodes disagree")
    rendered = engine.map(t.RENDER_NODE, [((n, templates), op) for n, op in zip(nodes, ops)])
    pieces = engine.items_of(rendered)
    sources = engine.record(spec_templates)
    files = {}
    for index, name in enumerate(("Functions.h", "Functions.cpp")):
        files[name] = engine.run(t.FUNCTIONS_FILE, [
            engine.collection([p[index] for p in pieces], Text),
            engine.text(sources.text(name)), layout, engine.text(name)], name)
    bound = sum(len(n.ops) for k, n, _ in built if k < len(loaded_entries))
    files.update(_python_functions(engine, pieces[:bound], keys[:bound], sources, templates,
                                   layout))
    log.close(RENDER)
    return Outputs(tuple(sorted((n, v.hash) for n, v in files.items())),
                   tuple((op, r.hash) for op, r in zip(ops, rendered)), tuple(keys),
                   engine.collection(nodes, BackwardNode, persist=True).hash, bound,
                   log.index())


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


NATIVE_SIDE = group_of("group.native_side", "parse", native_side,
                       labels={"natives": "native_functions.yaml", "tags": "tags.yaml"})
AUTOGRAD_SIDE = group_of("group.autograd_side", "parse", autograd_side,
                         labels={"derivatives": "derivatives.yaml", "failed": "failed natives"})
NATIVE_OUTPUTS = group_of("group.native_outputs", "render", native_outputs,
                          labels={"deprecated": "deprecated.yaml"})
AUTOGRAD_FILES = group_of("group.autograd_files", "render", autograd_files,
                          labels={"loaded": "loaded infos", "foreach": "foreach infos"})
BUILD = group_of("group.build", "parse", whole_build,
                 labels={"natives": "native_functions.yaml", "tags": "tags.yaml",
                         "derivatives": "derivatives.yaml", "deprecated": "deprecated.yaml",
                         "formulas": "formula sources"})
