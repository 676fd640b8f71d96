"""Every task of a build: which pipeline function it runs, over which inputs.

Each compute function is a pipeline function, or a one-line adapter giving it record inputs
and a record output. A rule the inputs break makes the output a `Failure` (cache/engine/core.py);
a per-entry task blames its entry (`blames`: the entry's file; its ident, the entry's
label). A cross-entry stage that leaves units out (a second function of one signature kind,
a view torchgen cannot group) keeps going, and its record names the problems for the group
to report. Parameters such as a file name travel as `Text` inputs, so they are part of the
key.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from gradshard.cache.engine.jobs import task_of
from gradshard.cache.graph.group_records import FunctionNames, Labels, Positions
from gradshard.pipeline.formulas.names import (EntryFormulas, FormulaNames,
                                               FormulaSources, entry_formulas, formula_findings,
                                               formula_names)
from gradshard.pipeline.match.foreach import synthesized_infos
from gradshard.pipeline.match.match_infos import (FunctionSummary, KernelPlan,
                                                  MatchStep, kernel_plan, match_function,
                                                  match_plan, summarize_function)
from gradshard.pipeline.parse.derivatives import DerivativeEntry
from gradshard.pipeline.parse.differentiability import (EntryInfos, InfoSummary,
                                                        OpNames, ViewCopies, bucket_infos,
                                                        copy_entry, op_names, summarize_infos,
                                                        unknown_schema, view_copies,
                                                        view_ordered_buckets, with_op_names)
from gradshard.pipeline.parse.native import NativeFunction
from gradshard.pipeline.parse.native_checks import cross_function_problems
from gradshard.pipeline.parse.source import Entry
from gradshard.pipeline.parse.spec import (parse_derivatives_entry, parse_native_entry,
                                           parse_tag_entry)
from gradshard.pipeline.parse.tags import Tag, TagNames, tag_names
from gradshard.pipeline.parse.variants import (generate_for_members,
                                               signature_groups)
from gradshard.pipeline.parse.views import ViewOrder, view_order
from gradshard.pipeline.problems import Problem, SpecError, SpecFile
from gradshard.pipeline.records import Record, Text
from gradshard.pipeline.releases import Release
from gradshard.pipeline.render.nodes import BackwardNode, entry_nodes, node_names
from gradshard.pipeline.render.templating import (TemplateSet, functions_file,
                                                  python_functions_header, python_functions_shard,
                                                  render_node)
from gradshard.pipeline.render.variable_type_files import DispatchKeys, dispatch_keys
from gradshard.pipeline.schema import FunctionSchema

__all__ = ["BUCKETS", "CHECK_FORMULAS", "CHECK_NATIVES", "DISPATCH_KEYS", "ENTRY_INFOS",
           "FOREACH", "FORMULA_FINDINGS", "FORMULA_NAMES", "FUNCTIONS_FILE", "FUNCTION_SUMMARY",
           "GENERATE", "INFO_SUMMARY", "KERNEL_PLAN", "MATCH_FUNCTION", "MATCH_PLAN", "NATIVE",
           "NODES", "NODE_NAMES", "NO_FUNCTION", "NUMBERED_INFOS", "OP_NAMES", "PARSE_DERIVATIVE",
           "PARSE_NATIVE", "PARSE_TAG", "PYTHON_FUNCTIONS_HEADER", "PYTHON_FUNCTIONS_SHARD",
           "Passed", "RENDER_NODE", "SIGNATURE_GROUPS", "TAG_NAMES", "VIEW_COPIES", "VIEW_COPY",
           "VIEW_ORDER", "single_template"]

NATIVE, TAGS, DERIVATIVES = SpecFile.NATIVE_FUNCTIONS, SpecFile.TAGS, SpecFile.DERIVATIVES


@dataclass(frozen=True, slots=True)
class Passed(Record):
    """A check's output: it found nothing wrong."""


def passed(problems: Sequence[Problem]) -> Passed:
    if problems:
        raise SpecError(problems)
    return Passed()


# ---------------------------------------------------------------------------------------------
# Parse


def parse_tag(entry: Text) -> Tag:
    return parse_tag_entry(Entry(TAGS, 1, entry.text))


def declared_tags(tags: tuple[Tag, ...], failed: Labels) -> TagNames:
    return tag_names(tags, failed.labels)


def parse_native(entry: Text, tags: TagNames, release: Release) -> NativeFunction:
    return parse_native_entry(Entry(NATIVE, 1, entry.text), frozenset(tags.names), release)


def check_natives(functions: tuple[NativeFunction, ...]) -> Passed:
    return passed(cross_function_problems(list(functions)))


def parse_derivative(entry: Text) -> DerivativeEntry:
    return parse_derivatives_entry(Entry(DERIVATIVES, 1, entry.text))


def no_function(entry: DerivativeEntry, functions: tuple[FunctionSummary, ...],
                order: ViewOrder) -> EntryInfos:
    """An entry whose schema no function has (`functions` in view order name the closest)."""
    raise unknown_schema(entry, [(f.schema, f.name, f.cpp_name)
                                 for f in (functions[p] for p in order.ordered)])


def number_ops(summaries: tuple[InfoSummary, ...]) -> tuple[OpNames, ...]:
    """The file-wide numbering, one item per entry (each holding that entry's op names)."""
    return tuple(OpNames((ops,)) for ops in op_names(summaries).names)


def number_entry(entry: EntryInfos, names: OpNames) -> EntryInfos:
    """`names` holds this entry's op names only."""
    return with_op_names(entry, names.names[0])


def plan_view_copies(summaries: tuple[InfoSummary, ...], functions: tuple[FunctionSummary, ...],
                     order: ViewOrder) -> ViewCopies:
    groups = [(g.view, g.view_copy) for g in order.groups]
    return view_copies(summaries, [f.schema for f in functions], groups)


def used_dispatch_keys(summaries: tuple[InfoSummary, ...]) -> DispatchKeys:
    return dispatch_keys([s.dispatch_keys for s in summaries])


PARSE_TAG = task_of("parse.tag", "parse", parse_tag, blames=TAGS)
TAG_NAMES = task_of("parse.tag_names", "parse", declared_tags, labels={"failed": "failed tags"})
PARSE_NATIVE = task_of("parse.native", "parse", parse_native, blames=NATIVE, forks=True)
CHECK_NATIVES = task_of("parse.native_checks", "parse", check_natives)
SIGNATURE_GROUPS = task_of("parse.signature_groups", "parse", signature_groups)
GENERATE = task_of("parse.generate", "parse", generate_for_members, blames=NATIVE, forks=True,
                   labels={"members": "group"})
FUNCTION_SUMMARY = task_of("parse.function_summary", "parse", summarize_function, forks=True,
                           labels={"fn": "function"})
VIEW_ORDER = task_of("parse.view_order", "parse", view_order)
BUCKETS = task_of("parse.buckets", "parse", view_ordered_buckets, labels={"order": "view order"})
def spec_formula_names(sources: FormulaSources, functions: FunctionNames) -> FormulaNames:
    return formula_names(sources, functions.names)


def check_entry_formulas(entry: Text, parsed: DerivativeEntry, infos: EntryInfos
                         ) -> EntryFormulas:
    return entry_formulas(Entry(DERIVATIVES, 1, entry.text), parsed, infos)


PARSE_DERIVATIVE = task_of("parse.derivative", "parse", parse_derivative, blames=DERIVATIVES)
ENTRY_INFOS = task_of("parse.entry_infos", "parse", bucket_infos, blames=DERIVATIVES,
                      labels={"bucket": "signature bucket"})
NO_FUNCTION = task_of("parse.no_function", "parse", no_function, blames=DERIVATIVES,
                      labels={"order": "view order"})
INFO_SUMMARY = task_of("parse.info_summary", "parse", summarize_infos, labels={"entry": "infos"})
OP_NAMES = task_of("parse.op_names", "parse", number_ops)
NUMBERED_INFOS = task_of("parse.numbered_infos", "parse", number_entry,
                         labels={"entry": "infos", "names": "op names"})
FORMULA_NAMES = task_of("parse.formula_names", "parse", spec_formula_names)
CHECK_FORMULAS = task_of("parse.check_formulas", "parse", check_entry_formulas,
                         labels={"parsed": "parsed entry"})
FORMULA_FINDINGS = task_of("parse.formula_findings", "parse", formula_findings,
                           labels={"entries": "entries' formulas"})
VIEW_COPIES = task_of("parse.view_copies", "parse", plan_view_copies,
                      labels={"order": "view order"})
VIEW_COPY = task_of("parse.view_copy", "parse", copy_entry, labels={"entry": "view infos"})
DISPATCH_KEYS = task_of("parse.dispatch_keys", "parse", used_dispatch_keys)


# ---------------------------------------------------------------------------------------------
# Match and foreach


def plan_matches(functions: tuple[FunctionSummary, ...], infos: tuple[InfoSummary, ...]
                 ) -> tuple[MatchStep, ...]:
    """The plan's steps, each its own value (a function's match reads its step only)."""
    return match_plan(functions, infos).steps


def synthesize(function: NativeFunction, reference: EntryInfos, step: MatchStep) -> EntryInfos:
    return synthesized_infos(function, FunctionSchema.parse(step.reference_signature), reference)


def plan_kernels(summaries: tuple[FunctionSummary, ...], matched: Positions) -> KernelPlan:
    return kernel_plan(summaries, frozenset(matched.positions))


MATCH_PLAN = task_of("match.plan", "match", plan_matches)
# One record of what the functions' summaries say of their kernels: the kernel groups read
# it, not the ~2,600 summaries, and an edit that changes no summary and no matched position
# finds it unchanged.
KERNEL_PLAN = task_of("match.kernels", "match", plan_kernels)
MATCH_FUNCTION = task_of("match.function", "match", match_function, blames=NATIVE,
                         labels={"fn": "function", "found": "infos"})
FOREACH = task_of("foreach.synthesize", "foreach", synthesize, blames=NATIVE)


# ---------------------------------------------------------------------------------------------
# Render (autograd)


def render_pieces(node: BackwardNode, templates: TemplateSet) -> tuple[Text, ...]:
    """declaration, definition, python class, python properties."""
    rendered = render_node(node, templates)
    return (Text(rendered.declaration), Text(rendered.definition), Text(rendered.python_class),
            Text(rendered.python_properties))


def assemble_functions(pieces: tuple[Text, ...], template: Text, layout: Text, name: Text) -> Text:
    return Text(functions_file(name.text, [p.text for p in pieces],
                               single_template(name.text, template), layout.text))


def assemble_python_header(template: Text, templates: TemplateSet, layout: Text) -> Text:
    return Text(python_functions_header(single_template("python_functions.h", template), templates,
                                        layout.text))


def assemble_python_shard(classes: tuple[Text, ...], properties: tuple[Text, ...],
                          template: Text, layout: Text, shard: Text) -> Text:
    return Text(python_functions_shard(shard.text, [c.text for c in classes],
                                       [p.text for p in properties],
                                       single_template("python_functions.cpp", template), layout.text))


def single_template(name: str, template: Text) -> TemplateSet:
    """One spec template as the template set the file renderers take."""
    return TemplateSet(((name, template.text),))


NODE_NAMES = task_of("render.node_names", "render", node_names, labels={"entry": "infos"})
NODES = task_of("render.nodes", "render", entry_nodes, labels={"entry": "infos"})
RENDER_NODE = task_of("render.node", "render", render_pieces, forks=True)
FUNCTIONS_FILE = task_of("assemble.functions", "assemble", assemble_functions,
                         labels={"name": "file"})
PYTHON_FUNCTIONS_HEADER = task_of("assemble.python_functions_h", "assemble",
                                  assemble_python_header)
PYTHON_FUNCTIONS_SHARD = task_of("assemble.python_functions", "assemble", assemble_python_shard)
