"""Every task of a build: which pipeline function it runs, over which inputs.

Each compute function is a pipeline function, or a one-line adapter giving it record inputs
and a record output; a stage's problems become a raised SpecError (the build then reports
them through the straight pipeline, which locates every problem; see graph.py). Parameters
such as a file name travel as `Text` inputs, so they are part of the key.
"""

from __future__ import annotations

from dataclasses import dataclass

from gradshard.pipeline.deprecated import DeprecatedSignature
from gradshard.pipeline.derivatives import DerivativeEntry
from gradshard.pipeline.differentiability import (DerivativeBuckets, EntryInfos, InfoSummary,
                                                  OpNames, ViewCopies, copy_entry,
                                                  derivative_buckets, derive_entry_infos,
                                                  op_names, summarize_infos, view_copies,
                                                  with_op_names)
from gradshard.pipeline.errors import RuleViolation, SpecError, SpecFile
from gradshard.pipeline.generation import (SignatureGroups, generate_for_group, signature_group,
                                           signature_groups)
from gradshard.pipeline.matching import (FunctionSummary, MatchPlan, MatchStep,
                                         match_function, match_plan, summarize_function)
from gradshard.pipeline.foreach import synthesized_infos
from gradshard.pipeline.native import NativeFunction
from gradshard.pipeline.native_checks import cross_function_problems
from gradshard.pipeline.nodes import BackwardNode, NodeNames, backward_node, node_names, \
    with_derivatives
from gradshard.pipeline.python_binding import Binding
from gradshard.pipeline.python_files import (BindingKey, BindingPlan, RenderedBinding, StructseqTypes, bind, binding_file,
                                             binding_key, binding_plan, enum_tag_file,
                                             render_binding, return_types_file,
                                             return_types_header, structseq_types, torch_file)
from gradshard.pipeline.python_signature import deprecated_pairs, pairs_by_name, python_pair
from gradshard.pipeline.records import Record, Text
from gradshard.pipeline.render import (TemplateSet, functions_file, python_functions_header,
                                       python_functions_shard, render_node)
from gradshard.pipeline.schema import FunctionSchema
from gradshard.pipeline.source import Entry
from gradshard.pipeline.spec import (parse_deprecated_entry, parse_derivatives_entry,
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


def parse_deprecated(entry: Text) -> DeprecatedSignature:
    return parse_deprecated_entry(Entry(SpecFile.DEPRECATED, 1, entry.text))


def parse_derivative(entry: Text) -> DerivativeEntry:
    return parse_derivatives_entry(Entry(SpecFile.DERIVATIVES, 1, entry.text))


def derivative_name(entry: DerivativeEntry) -> Text:
    return Text(entry.name)


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
PARSE_DEPRECATED = Task("parse.deprecated", "parse", parse_deprecated, DeprecatedSignature,
                        ("entry",))
PARSE_DERIVATIVE = Task("parse.derivative", "parse", parse_derivative, DerivativeEntry,
                        ("entry",))
DERIVATIVE_NAME = Task("parse.derivative_name", "parse", derivative_name, Text, ("entry",))
ENTRY_INFOS = Task("parse.entry_infos", "parse", derive_entry_infos, EntryInfos,
                   ("entry", "signature bucket"))
INFO_SUMMARY = Task("parse.info_summary", "parse", summarize_infos, InfoSummary, ("infos",))
OP_NAMES = Task("parse.op_names", "parse", op_names, OpNames, ("summaries",))
NUMBERED_INFOS = Task("parse.numbered_infos", "parse", number_entry, EntryInfos,
                      ("infos", "op names"))
VIEW_COPIES = Task("parse.view_copies", "parse", plan_view_copies, ViewCopies,
                   ("summaries", "functions", "view order"))
VIEW_COPY = Task("parse.view_copy", "parse", copy_entry, EntryInfos, ("view infos", "copy"))


# ---------------------------------------------------------------------------------------------
# Match and foreach


def plan_matches(functions: tuple[FunctionSummary, ...], infos: tuple[InfoSummary, ...]
                 ) -> MatchPlan:
    plan, problems = match_plan(functions, infos)
    _raise_problems(problems)
    return plan


def synthesize(function: NativeFunction, reference: EntryInfos, step: MatchStep) -> EntryInfos:
    return synthesized_infos(function, FunctionSchema.parse(step.reference_signature), reference)


def check_match(function: NativeFunction, step: MatchStep, infos: EntryInfos) -> Passed:
    """A function's match is checked (find_info's rules, in-place forward formulas); none of
    the files built here prints it, so only the verdict is kept."""
    match_function(function, step, infos)
    return Passed()


MATCH_PLAN = Task("match.plan", "match", plan_matches, MatchPlan, ("functions", "infos"))
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
                               _single(name.text, template), layout.text))


def assemble_python_header(template: Text, templates: TemplateSet, layout: Text) -> Text:
    return Text(python_functions_header(_single("python_functions.h", template), templates,
                                        layout.text))


def assemble_python_shard(classes: tuple[Text, ...], properties: tuple[Text, ...],
                          template: Text, layout: Text, shard: Text) -> Text:
    return Text(python_functions_shard(shard.text, [c.text for c in classes],
                                       [p.text for p in properties],
                                       _single("python_functions.cpp", template), layout.text))


def _single(name: str, template: Text) -> TemplateSet:
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


# ---------------------------------------------------------------------------------------------
# Python bindings


def check_deprecated(signature: DeprecatedSignature, functions: tuple[NativeFunction, ...]) -> Passed:
    """A deprecated signature must fit an overload of the function it calls, in both passes."""
    for method in (False, True):
        deprecated_pairs(signature, pairs_by_name(python_pair(f, method) for f in functions),
                         method)
    return Passed()


def assemble_binding_file(rendered: tuple[RenderedBinding, ...], template: Text, layout: Text,
                          name: Text) -> Text:
    return Text(binding_file(name.text, rendered, _single(name.text, template), layout.text))


def assemble_torch_file(rendered: tuple[RenderedBinding, ...], template: Text, layout: Text,
                        shard: Text) -> Text:
    return Text(torch_file(shard.text, rendered, _single("python_torch_functions.cpp", template),
                           layout.text))


def assemble_return_types(groups: tuple[StructseqTypes, ...], templates: TemplateSet,
                          template: Text, layout: Text) -> Text:
    return Text(return_types_file(groups, templates,
                                  _single("python_return_types.cpp", template), layout.text))


def assemble_return_types_header(groups: tuple[StructseqTypes, ...], templates: TemplateSet,
                                 template: Text, layout: Text) -> Text:
    return Text(return_types_header(groups, templates,
                                    _single("python_return_types.h", template), layout.text))


def assemble_enum_tag(tags: TagNames, templates: TemplateSet, template: Text,
                      layout: Text) -> Text:
    return Text(enum_tag_file(sorted(tags.names), templates,
                              _single("python_enum_tag.cpp", template), layout.text))


BINDING_KEY = Task("bindings.key", "bindings", binding_key, BindingKey, ("function",))
BINDING_PLAN = Task("bindings.plan", "bindings", binding_plan, BindingPlan,
                    ("keys", "deprecated"))
CHECK_DEPRECATED = Task("bindings.deprecated_check", "bindings", check_deprecated, Passed,
                        ("deprecated", "functions"))
BIND = Task("bindings.bind", "bindings", bind, Binding, ("target", "functions", "deprecated"))
RENDER_BINDING = Task("bindings.render", "bindings", render_binding, RenderedBinding,
                      ("binding", "templates"))
RETURN_TYPES = Task("bindings.return_types", "bindings", structseq_types, StructseqTypes,
                    ("functions",))
BINDING_FILE = Task("assemble.binding_file", "assemble", assemble_binding_file, Text,
                    ("bindings", "template", "layout", "file"))
TORCH_FILE = Task("assemble.torch_functions", "assemble", assemble_torch_file, Text,
                  ("bindings", "template", "layout", "shard"))
RETURN_TYPES_FILE = Task("assemble.return_types", "assemble", assemble_return_types, Text,
                         ("types", "templates", "template", "layout"))
RETURN_TYPES_HEADER = Task("assemble.return_types_h", "assemble", assemble_return_types_header,
                           Text, ("types", "templates", "template", "layout"))
ENUM_TAG_FILE = Task("assemble.enum_tag", "assemble", assemble_enum_tag, Text,
                     ("tags", "templates", "template", "layout"))
