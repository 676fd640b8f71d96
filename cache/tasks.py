"""Every task of a build: which pipeline function it runs, over which inputs.

Each compute function is a pipeline function, or a one-line adapter giving it record inputs
and a record output; a stage's problems become a raised SpecError (the build then reports
them through the straight pipeline, which locates every problem; see graph.py). Parameters
such as a file name travel as `Text` inputs, so they are part of the key.
"""

from __future__ import annotations

from dataclasses import dataclass

from gradshard.pipeline.derivatives import DerivativeEntry
from gradshard.pipeline.differentiability import (DerivativeBuckets, EntryInfos, InfoSummary,
                                                  OpNames, ViewCopies, copy_entry,
                                                  derivative_buckets, derive_entry_infos,
                                                  op_names, summarize_infos, view_copies,
                                                  with_op_names)
from gradshard.pipeline.errors import RuleViolation, SpecError, SpecFile
from gradshard.pipeline.generation import (SignatureGroups, generate_for_group, signature_group,
                                           signature_groups)
from gradshard.pipeline.matching import (FunctionSummary, MatchStep,
                                         match_function, match_plan, summarize_function)
from gradshard.pipeline.foreach import synthesized_infos
from gradshard.pipeline.native import NativeFunction
from gradshard.pipeline.native_checks import cross_function_problems
from gradshard.pipeline.nodes import BackwardNode, NodeNames, backward_node, node_names, \
    with_derivatives
from gradshard.pipeline.records import Record, Text
from gradshard.pipeline.render import (TemplateSet, functions_file, python_functions_header,
                                       python_functions_shard, render_node)
from gradshard.pipeline.schema import FunctionSchema
from gradshard.pipeline.source import Entry
from gradshard.pipeline.spec import (parse_derivatives_entry,
                                     parse_native_entry, parse_tag_entry)
from gradshard.pipeline.tags import Tag, TagNames, tag_names
from gradshard.pipeline.views import ViewOrder, view_order

from .engine import Task


@dataclass(frozen=True, slots=True)
class Passed(Record):
    """A check's output: it found nothing wrong."""


def _raise_problems(problems: list) -> None:
    if problems:
        raise SpecError(problems)


# ---------------------------------------------------------------------------------------------
# Parse


def parse_tag(entry: Text) -> Tag:
    return parse_tag_entry(Entry(SpecFile.TAGS, 1, entry.text))


def parse_native(entry: Text, tags: TagNames) -> NativeFunction:
    return parse_native_entry(Entry(SpecFile.NATIVE_FUNCTIONS, 1, entry.text),
                              frozenset(tags.names))


def check_natives(functions: tuple[NativeFunction, ...]) -> Passed:
    _raise_problems(cross_function_problems(list(functions)))
    return Passed()


def group_signatures(functions: tuple[NativeFunction, ...]) -> SignatureGroups:
    groups, problems = signature_groups(functions)
    _raise_problems(problems)
    return groups


def generate(members: tuple[NativeFunction, ...]) -> tuple[NativeFunction, ...]:
    return tuple(generate_for_group(signature_group(members)))


def order_views(functions: tuple[NativeFunction, ...]) -> ViewOrder:
    order, problems = view_order(functions)
    _raise_problems(problems)
    return order


def bucket_functions(functions: tuple[NativeFunction, ...], order: ViewOrder) -> DerivativeBuckets:
    buckets = derivative_buckets(functions, order.ordered)
    if buckets.duplicates:
        duplicate = functions[buckets.duplicates[0]]
        raise RuleViolation("native.duplicate-schema",
                            f"the schema {duplicate.func} is declared twice",
                            "remove one of the entries")
    return buckets


def parse_derivative(entry: Text) -> DerivativeEntry:
    return parse_derivatives_entry(Entry(SpecFile.DERIVATIVES, 1, entry.text))


def entry_infos(entry: DerivativeEntry, bucket: tuple[NativeFunction, ...]) -> EntryInfos:
    """The entry's infos, from the signature bucket of the function its label names; the
    entry's schema must be one of the bucket's (else it names no function exactly)."""
    if not any(str(f.func) == entry.name for f in bucket):
        raise RuleViolation("derivatives.unknown-schema",
                            f"no native function has the schema '{entry.name}'", "")
    return derive_entry_infos(entry, bucket)


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


PARSE_TAG = Task("parse.tag", "parse", parse_tag, Tag, ("entry",))
TAG_NAMES = Task("parse.tag_names", "parse", tag_names, TagNames, ("tags",))
PARSE_NATIVE = Task("parse.native", "parse", parse_native, NativeFunction, ("entry", "tags"))
CHECK_NATIVES = Task("parse.native_checks", "parse", check_natives, Passed, ("functions",))
SIGNATURE_GROUPS = Task("parse.signature_groups", "parse", group_signatures, SignatureGroups,
                        ("functions",))
GENERATE = Task("parse.generate", "parse", generate, NativeFunction, ("group",), fan_out=True)
FUNCTION_SUMMARY = Task("parse.function_summary", "parse", summarize_function, FunctionSummary,
                        ("function",))
VIEW_ORDER = Task("parse.view_order", "parse", order_views, ViewOrder, ("functions",))
BUCKETS = Task("parse.buckets", "parse", bucket_functions, DerivativeBuckets,
               ("functions", "view order"))
PARSE_DERIVATIVE = Task("parse.derivative", "parse", parse_derivative, DerivativeEntry,
                        ("entry",))
ENTRY_INFOS = Task("parse.entry_infos", "parse", entry_infos, EntryInfos,
                   ("entry", "signature bucket"))
INFO_SUMMARY = Task("parse.info_summary", "parse", summarize_infos, InfoSummary, ("infos",))
OP_NAMES = Task("parse.op_names", "parse", number_ops, OpNames, ("summaries",), fan_out=True)
NUMBERED_INFOS = Task("parse.numbered_infos", "parse", number_entry, EntryInfos,
                      ("infos", "op names"))
VIEW_COPIES = Task("parse.view_copies", "parse", plan_view_copies, ViewCopies,
                   ("summaries", "functions", "view order"))
VIEW_COPY = Task("parse.view_copy", "parse", copy_entry, EntryInfos, ("view infos", "copy"))


# ---------------------------------------------------------------------------------------------
# Match and foreach


def plan_matches(functions: tuple[FunctionSummary, ...], infos: tuple[InfoSummary, ...]
                 ) -> tuple[MatchStep, ...]:
    """The plan's steps, each its own value (a function's match reads its step only)."""
    plan, problems = match_plan(functions, infos)
    _raise_problems(problems)
    return plan.steps


def synthesize(function: NativeFunction, reference: EntryInfos, step: MatchStep) -> EntryInfos:
    return synthesized_infos(function, FunctionSchema.parse(step.reference_signature), reference)


def check_match(function: NativeFunction, step: MatchStep, infos: EntryInfos) -> Passed:
    """A function's match is checked (find_info's rules, in-place forward formulas); none of
    the files built here prints it, so only the verdict is kept."""
    match_function(function, step, infos)
    return Passed()


MATCH_PLAN = Task("match.plan", "match", plan_matches, MatchStep, ("functions", "infos"),
                  fan_out=True)
MATCH_FUNCTION = Task("match.function", "match", check_match, Passed,
                      ("function", "step", "infos"))
FOREACH = Task("foreach.synthesize", "foreach", synthesize, EntryInfos,
               ("function", "reference", "step"))


# ---------------------------------------------------------------------------------------------
# Render (autograd)


def nodes_of(entry: EntryInfos) -> tuple[BackwardNode, ...]:
    return tuple(backward_node(info) for info in with_derivatives(entry))


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


NODE_NAMES = Task("render.node_names", "render", node_names, NodeNames, ("infos",))
NODES = Task("render.nodes", "render", nodes_of, BackwardNode, ("infos",), fan_out=True)
RENDER_NODE = Task("render.node", "render", render_pieces, Text, ("node", "templates"),
                   fan_out=True)
FUNCTIONS_FILE = Task("assemble.functions", "assemble", assemble_functions, Text,
                      ("pieces", "template", "layout", "file"))
PYTHON_FUNCTIONS_HEADER = Task("assemble.python_functions_h", "assemble", assemble_python_header,
                               Text, ("template", "templates", "layout"))
PYTHON_FUNCTIONS_SHARD = Task("assemble.python_functions", "assemble", assemble_python_shard,
                              Text, ("classes", "properties", "template", "layout", "shard"))
