"""annotated_fn_args.py: the arguments of every Python-bound ATen function, for
test/test_overrides.py's procedural __torch_function__ tests.

Each function with a Python binding (gen_python_functions.py: should_generate_py_binding)
is listed under each namespace it is bound in, with its arguments that have no default
(PA/gen_annotated_fn_args.py: gen_annotated_args). The file goes namespace by namespace, in a
fixed order; within one, functions are grouped by name in the order names first appear in
native_functions.yaml (generated functions after), each group in YAML order
(gen_annotated's defaultdict). Overloads give duplicate dict keys, as torchgen's do. The text
of a line is in `templates/codegen/annotated_fn_args.j2`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from gradshard.pipeline.parse.native import NativeFunction
from gradshard.pipeline.problems import RuleViolation
from gradshard.pipeline.records import Record
from gradshard.pipeline.render.python.files import should_bind
from gradshard.pipeline.render.python.signatures import argument_type_str
from gradshard.pipeline.render.templating import TemplateSet, expand_spec_template, jinja_module
from gradshard.pipeline.schema import Argument

__all__ = ["RenderedAnnotatedArgs", "annotated_fn_args_file", "annotated_function",
           "annotated_lines", "namespaces_of", "render_annotated_args"]

TEMPLATE = "annotated_fn_args.py.in"
# gen_annotated's mappings, in its order: the namespace, and the python_module and variant
# a function needs to be in it (gen_python_functions.py: is_py_torch_function,
# is_py_<module>_function, is_py_variable_method; a module function's variants do not count).
NAMESPACES = (
    ("torch._C._VariableFunctions", None, "function"),
    ("torch._C._nn", "nn", None),
    ("torch._C._linalg", "linalg", None),
    ("torch._C._special", "special", None),
    ("torch._C._fft", "fft", None),
    ("torch.Tensor", None, "method"),
)
# Functions whose keyword-only arguments are left out: test_overrides.py cannot pass them
# (gen_annotated_fn_args.py: _get_kwargs_func_exclusion_list).
KWARGS_EXCLUDED = frozenset({"diagonal", "round_", "round", "scatter_"})


@dataclass(frozen=True, slots=True)
class AnnotatedArg(Record):
    """One argument without a default: its name, its parser type (simple form), whether it
    is keyword-only, and its list size (0 when it has none)."""

    name: str
    simple_type: str
    kwarg_only: bool
    size: int = 0


@dataclass(frozen=True, slots=True)
class AnnotatedFunction(Record):
    """A function's entry: its name (str of the base operator name: the group it joins), the
    namespaces it is listed in (in NAMESPACES order; none when it has no Python binding),
    and its arguments."""

    function: str  # the operator name with overload, for messages
    name: str
    namespaces: tuple[str, ...]
    args: tuple[AnnotatedArg, ...]


@dataclass(frozen=True, slots=True)
class RenderedAnnotatedArgs(Record):
    """A function's lines of the `annotated_args` dict: (namespace, line), one per namespace
    it is listed in."""

    name: str
    lines: tuple[tuple[str, str], ...]


def namespaces_of(fn: NativeFunction) -> tuple[str, ...]:
    """The namespaces gen_annotated lists the function in."""
    if not should_bind(fn):
        return ()
    return tuple(namespace for namespace, module, variant in NAMESPACES
                 if fn.python_module == module and (variant is None or variant in fn.variants))


def annotated_function(fn: NativeFunction) -> AnnotatedFunction:
    """The function's entry (PA/gen_annotated_fn_args.py: gen_annotated_args); a function
    listed nowhere has no arguments (torchgen never looks at them)."""
    name = str(fn.func.name.name)
    namespaces = namespaces_of(fn)
    if not namespaces:
        return AnnotatedFunction(str(fn.func.name), name, (), ())
    arguments = fn.func.arguments
    listed = [(a, False) for a in arguments.positional]
    if name not in KWARGS_EXCLUDED:
        listed += [(a, True) for a in arguments.kwarg_only]
    try:
        args = tuple(_annotated_arg(a, kwarg_only) for a, kwarg_only in listed
                     if a.default is None)
    except RuleViolation as violation:
        violation.entry = violation.entry or str(fn.func.name)
        raise
    return AnnotatedFunction(str(fn.func.name), name, namespaces, args)


def _annotated_arg(argument: Argument, kwarg_only: bool) -> AnnotatedArg:
    """api/python.py: argument_type_str(simple_type=True) and argument_type_size (the size of
    a list, or of an optional list, unless it is a bool list)."""
    listed = argument.type.list_type()
    size = listed.size if listed is not None and str(listed.elem) != "bool" else None
    return AnnotatedArg(argument.name, argument_type_str(argument.type, simple_type=True),
                        kwarg_only, size or 0)


def render_annotated_args(entry: AnnotatedFunction, templates: TemplateSet
                          ) -> RenderedAnnotatedArgs:
    """The entry's line in each of its namespaces. torchgen prints each argument as the
    `repr` of a dict, so its strings are given to the template as Python literals."""
    macros = jinja_module(templates, "annotated_fn_args.j2")
    args = [{"name": repr(a.name), "kwarg_only": repr(str(a.kwarg_only)),
             "simple_type": repr(a.simple_type), "size": a.size} for a in entry.args]
    return RenderedAnnotatedArgs(entry.name, tuple(
        (namespace, str(macros.line(namespace, entry.name, args)))
        for namespace in entry.namespaces))


def annotated_lines(rendered: Sequence[RenderedAnnotatedArgs]) -> list[str]:
    """The lines in gen_annotated's order: by namespace, then by name in the order names
    first appear in the namespace, then in spec order."""
    lines: list[str] = []
    for namespace, _, _ in NAMESPACES:
        groups: dict[str, list[str]] = {}
        for entry in rendered:
            for listed_in, line in entry.lines:
                if listed_in == namespace:
                    groups.setdefault(entry.name, []).append(line)
        lines.extend(line for group in groups.values() for line in group)
    return lines


def annotated_fn_args_file(spec_templates: TemplateSet,
                           rendered: Sequence[RenderedAnnotatedArgs]) -> str:
    """PA/gen_annotated_fn_args.py: gen_annotated's write_with_template (the template has no
    generated comment, so the file does not depend on the layout). Every line is indented
    already (torchgen's textwrap.indent)."""
    return expand_spec_template(spec_templates, TEMPLATE,
                                {"annotated_args": "\n".join(annotated_lines(rendered))})
