"""Checks that look across native functions (gen.py: error_check_native_functions)."""

from __future__ import annotations

import keyword

from gradshard.pipeline.parse.native import NativeFunction
from gradshard.pipeline.problems import Problem, SpecFile
from gradshard.pipeline.schema import BaseOperatorName

__all__ = ["cross_function_problems"]

# Arguments named after Python keywords that torchgen tolerates for historical reasons.
KEYWORD_ARGUMENTS_ALLOWED = frozenset({
    ("_has_compatible_shallow_copy_type", "from"), ("random_.from", "from"), ("uniform_", "from"),
})
# In-place views that need no out-of-place twin (Note [resize_ in Functionalization]).
INPLACE_VIEWS_WITHOUT_TWIN = frozenset({"resize_", "resize_as_"})


def cross_function_problems(functions: list[NativeFunction]) -> list[Problem]:
    """Problems across the YAML functions: delegates, keywords, in-place view naming,
    and operator names declared twice."""
    by_name = {}
    problems: list[Problem] = []
    for fn in functions:
        name = str(fn.func.name)
        if name in by_name:
            problems.append(_problem(fn, "native.duplicate-name",
                                     f"operator {name} is declared twice",
                                     "every operator name (name.overload) must be unique"))
        by_name.setdefault(name, fn)
    base_names = {f.func.name.name for f in functions}
    for fn in functions:
        problems.extend(_function_problems(fn, by_name, base_names))
    return problems


def _function_problems(fn: NativeFunction, by_name: dict[str, NativeFunction],
                       base_names: set[BaseOperatorName]) -> list[Problem]:
    problems = []
    name = str(fn.func.name)
    if fn.structured_delegate is not None:
        delegate = by_name.get(str(fn.structured_delegate))
        if delegate is None:
            problems.append(_problem(fn, "native.missing-delegate",
                                     f"structured_delegate {fn.structured_delegate} does not exist",
                                     "name an existing out= function marked 'structured: True'"))
        elif not delegate.structured:
            problems.append(_problem(fn, "native.delegate-not-structured",
                                     f"structured_delegate {fn.structured_delegate} is not "
                                     "structured", f"add 'structured: True' to {delegate.func.name}"))
    for arg in fn.func.arguments.all:
        if keyword.iskeyword(arg.name) and (name, arg.name) not in KEYWORD_ARGUMENTS_ALLOWED:
            problems.append(_problem(fn, "native.keyword-argument",
                                     f"argument '{arg.name}' is a reserved Python keyword",
                                     "rename the argument"))
    base = fn.func.name.name
    if ("inplace_view" in fn.tags and name not in INPLACE_VIEWS_WITHOUT_TWIN
            and str(base) != "set_"):
        if not base.inplace:
            problems.append(_problem(fn, "native.inplace-view-name",
                                     f"{name} is tagged inplace_view but its name has no "
                                     "trailing '_'", "in-place ops are named 'op_'"))
        elif BaseOperatorName(base.base, dunder=base.dunder) not in base_names:
            problems.append(_problem(fn, "native.inplace-view-twin",
                                     f"{name} is tagged inplace_view but there is no view "
                                     f"op named '{base.base}'", "add the out-of-place view op"))
    return problems


def _problem(fn: NativeFunction, rule: str, message: str, hint: str) -> Problem:
    return Problem(SpecFile.NATIVE_FUNCTIONS, str(fn.func.name), rule, message, hint)
