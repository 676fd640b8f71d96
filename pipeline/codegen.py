"""The code generation end to end, without caching: spec texts → output files.

Autograd: parse → match (with foreach synthesis) → one BackwardNode per info with
derivatives → render each node → expand Functions.* and python_functions*.
Python bindings: bound functions → signatures and overload groups → render each group →
expand python_variable_methods.cpp, python_torch_functions_*.cpp and the module files,
python_return_types.* and python_enum_tag.cpp.

The cache engine runs the same stage functions as separate tasks; this is the straight-line
composition used by `check` and as the reference for it.
"""

from __future__ import annotations

from dataclasses import dataclass

from .errors import Problem, SpecError
from .matching import MatchResult
from .nodes import BackwardNode, entry_nodes, node_count
from .python_files import PythonBindings, one_per_fault, python_binding_files, python_bindings
from .render import (RenderedNode, TemplateSet, functions_files, python_functions_files,
                     render_node)
from .spec import NativeSpec, ParsedSpec, SpecTexts, match_spec, parse_spec



@dataclass(frozen=True)
class Analysis:
    """Everything before rendering: the parsed spec, matches, nodes and Python bindings."""

    spec: ParsedSpec
    matched: MatchResult
    nodes: tuple[BackwardNode, ...]
    bindings: PythonBindings


@dataclass(frozen=True)
class Codegen:
    analysis: Analysis
    files: dict[str, str]

    @property
    def spec(self) -> ParsedSpec:
        return self.analysis.spec

    @property
    def matched(self) -> MatchResult:
        return self.analysis.matched

    @property
    def nodes(self) -> tuple[BackwardNode, ...]:
        return self.analysis.nodes


def backward_nodes(matched: MatchResult) -> tuple[tuple[BackwardNode, ...], list[Problem]]:
    """A node per info with derivatives, in torchgen's order (get_infos_with_derivatives_list),
    and a problem naming the derivatives entry of every node that cannot be built."""
    nodes: list[BackwardNode] = []
    problems: list[Problem] = []
    for entry in matched.infos:
        try:
            nodes.extend(entry_nodes(entry))
        except SpecError as error:
            problems.extend(error.problems)
    return tuple(nodes), problems


def bind_python(spec: NativeSpec | ParsedSpec) -> tuple[PythonBindings, list[Problem]]:
    """The Python bindings of a parsed spec, and a problem for each entry that cannot be bound."""
    bindings, problems = python_bindings(spec.native_functions, spec.deprecated,
                                         [t.name for t in spec.tags])
    return bindings, one_per_fault(problems)


def analyze(texts: SpecTexts) -> Analysis:
    """Every stage but rendering; raises SpecError listing every problem found."""
    spec = parse_spec(texts)
    matched = match_spec(spec)
    nodes, problems = backward_nodes(matched)
    bindings, binding_problems = bind_python(spec)
    problems += binding_problems
    if problems:
        raise SpecError.located(problems, spec.entry_lines())
    return Analysis(spec, matched, nodes, bindings)


def render_files(analysis: Analysis, templates: TemplateSet, spec_templates: TemplateSet,
                 layout: str) -> dict[str, str]:
    rendered: list[RenderedNode] = [render_node(n, templates) for n in analysis.nodes]
    files = functions_files(rendered, spec_templates, layout)
    # python_functions* bind the nodes of the infos as loaded, which come first: PyTorch's build
    # renders them before matching adds the foreach infos (generate_code.py: gen_autograd_python
    # runs before gen_autograd)
    loaded = rendered[:node_count(analysis.spec.infos)]
    files.update(python_functions_files(loaded, spec_templates, templates, layout))
    files.update(python_binding_files(analysis.bindings, templates, spec_templates, layout))
    return files


def generate(analysis: Analysis, templates: TemplateSet, spec_templates: TemplateSet,
             layout: str) -> Codegen:
    return Codegen(analysis, render_files(analysis, templates, spec_templates, layout))
