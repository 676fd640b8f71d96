"""The autograd code generation end to end, without caching: spec texts → output files.

parse → match (with foreach synthesis) → one BackwardNode per info with derivatives →
render each node → expand the spec's file templates. The cache engine runs the same stage
functions as separate tasks; this is the straight-line composition used by `check` and as
the reference for it.
"""

from __future__ import annotations

from dataclasses import dataclass

from .differentiability import EntryInfos
from .errors import Problem, RuleViolation, SpecError, SpecFile
from .matching import MatchResult
from .nodes import BackwardNode, backward_node
from .render import (RenderedNode, TemplateSet, functions_files, python_functions_files,
                     render_node)
from .spec import ParsedSpec, SpecTexts, match_spec, parse_spec

# The spec templates the autograd functions need, in the spec's templates directory.
AUTOGRAD_TEMPLATES = ("Functions.h", "Functions.cpp", "python_functions.h", "python_functions.cpp")


@dataclass(frozen=True)
class AutogradCodegen:
    spec: ParsedSpec
    matched: MatchResult
    nodes: tuple[BackwardNode, ...]
    files: dict[str, str]


def entry_label(entry: EntryInfos) -> str:
    return entry.entry_name.split("(", 1)[0]


def backward_nodes(matched: MatchResult) -> tuple[BackwardNode, ...]:
    """A node per info with derivatives, in torchgen's order (get_infos_with_derivatives_list);
    raises SpecError naming the derivatives entry of every node that cannot be built."""
    nodes: list[BackwardNode] = []
    problems: list[Problem] = []
    for entry in matched.infos:
        for keyed in entry.infos:
            if not keyed.info.has_derivatives:
                continue
            try:
                nodes.append(backward_node(keyed.info))
            except RuleViolation as violation:
                problems.append(violation.to_problem(SpecFile.DERIVATIVES, entry_label(entry)))
    if problems:
        raise SpecError(problems)
    return tuple(nodes)


def render_files(nodes: tuple[BackwardNode, ...], templates: TemplateSet,
                 spec_templates: TemplateSet, layout: str) -> dict[str, str]:
    rendered: list[RenderedNode] = [render_node(n, templates) for n in nodes]
    files = functions_files(rendered, spec_templates, layout)
    files.update(python_functions_files(rendered, spec_templates, templates, layout))
    return files


@dataclass(frozen=True)
class AutogradAnalysis:
    """Everything before rendering: the parsed spec, the matches and the nodes."""

    spec: ParsedSpec
    matched: MatchResult
    nodes: tuple[BackwardNode, ...]


def analyze_autograd(texts: SpecTexts) -> AutogradAnalysis:
    spec = parse_spec(texts)
    matched = match_spec(spec)
    try:
        nodes = backward_nodes(matched)
    except SpecError as error:
        lines = spec.entry_lines()
        raise SpecError([p.locate(lines) for p in error.problems]) from None
    return AutogradAnalysis(spec, matched, nodes)


def generate_autograd(analysis: AutogradAnalysis, templates: TemplateSet,
                      spec_templates: TemplateSet, layout: str) -> AutogradCodegen:
    return AutogradCodegen(analysis.spec, analysis.matched, analysis.nodes,
                           render_files(analysis.nodes, templates, spec_templates, layout))
