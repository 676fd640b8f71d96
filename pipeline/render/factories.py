"""variable_factories.h: the `torch::` factory functions that make autograd Variables.

A factory is a function variant that takes TensorOptions or whose C++ name ends in `_like`
(PA/gen_variable_factories.py: is_factory_function). Each gets an inline wrapper per C++ API
signature (the plain one, and the SymInt one when the schema has SymInts) that calls
`at::<name>` below the ADInplaceOrView key and marks the result as requiring grad when its
options say so. The file lists factories in native_functions.yaml order (generated functions
after), an `#include` of each one's operator header, duplicates kept. Every C++ spelling is
in `templates/codegen/variable_factories.j2`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from gradshard.pipeline.cpp import CppBinding, cpp_arguments, default_expr
from gradshard.pipeline.parse.native import NativeFunction
from gradshard.pipeline.problems import RuleViolation
from gradshard.pipeline.records import Record
from gradshard.pipeline.render.templating import (TemplateSet, expand_spec_template,
                                                  generated_comment, jinja_module)
from gradshard.pipeline.schema import TensorOptionsGroup, cpp_name

__all__ = ["RenderedFactory", "is_factory_function", "render_factory", "variable_factories",
           "variable_factories_file"]

TEMPLATE = "variable_factories.h"


@dataclass(frozen=True, slots=True)
class FactoryFormal(Record):
    """One parameter of a wrapper and its C++ default ("" for none); `options` for the folded
    TensorOptions, which the wrapper passes on without requires_grad and which says whether
    the result requires grad (gen_variable_factories.py: process_function)."""

    type: str
    name: str
    default: str
    options: bool = False


@dataclass(frozen=True, slots=True)
class FactoryWrapper(Record):
    """One inline `torch::<name>` wrapper of `at::<name>`."""

    name: str
    formals: tuple[FactoryFormal, ...]


@dataclass(frozen=True, slots=True)
class VariableFactory(Record):
    """A factory function: its operator header's name and its wrappers."""

    function: str  # the schema's operator name, for messages
    header: str  # the operator's root name (ATen/ops/<header>.h)
    wrappers: tuple[FactoryWrapper, ...]


@dataclass(frozen=True, slots=True)
class RenderedFactory(Record):
    """A factory's two pieces of variable_factories.h."""

    function: str
    ops_header: str
    definitions: str


def is_factory_function(fn: NativeFunction) -> bool:
    """PA/gen_variable_factories.py: is_factory_function (an out function's C++ name ends in
    `_out`, so none is a `_like` factory)."""
    if "function" not in fn.variants:
        return False
    return fn.func.arguments.options is not None or cpp_name(fn.func).endswith("_like")


def variable_factories(fn: NativeFunction) -> tuple[VariableFactory, ...]:
    """The function's factory (none when it is not one): PA/gen_variable_factories.py:
    process_function, over CppSignatureGroup's signature and symint_signature."""
    if not is_factory_function(fn):
        return ()
    symints = (False, True) if fn.func.has_symint() else (False,)
    try:
        wrappers = tuple(_wrapper(fn, symint) for symint in symints)
    except RuleViolation as violation:
        violation.entry = violation.entry or str(fn.func.name)
        raise
    return (VariableFactory(str(fn.func.name), fn.func.name.name.base, wrappers),)


def _wrapper(fn: NativeFunction, symint: bool) -> FactoryWrapper:
    """One C++ API signature (api/types/signatures.py: CppSignature, not faithful, not a
    method) as a wrapper. Its types go through gen_variable_factories.py's
    fully_qualified_type, which prefixes `at::` to a type that starts with a capital: none
    of the C++ API's spellings does (they start with `at::`, `c10::`, `::std::`, `const ` or a
    builtin), so it changes nothing here."""
    bindings = cpp_arguments(fn.func, fn.cpp_flags, symint=symint)
    return FactoryWrapper(cpp_name(fn.func, symint_overload=symint),
                          tuple(_formal(fn, b, symint) for b in bindings))


def _formal(fn: NativeFunction, binding: CppBinding, symint: bool) -> FactoryFormal:
    if binding.argument is None:
        return FactoryFormal(binding.type, binding.name,
                             _options_default(fn.func.arguments.options), options=True)
    argument = binding.argument
    default = ""
    if argument.default is not None and argument.name not in fn.cpp_no_default_args:
        default = default_expr(argument.default, argument.type, symint=symint)
    return FactoryFormal(binding.type, binding.name, default)


def _options_default(options: TensorOptionsGroup) -> str:
    """The folded TensorOptions' C++ default (api/cpp.py: argument, TensorOptionsArguments)."""
    if all(a.default == "None" for a in options.all()):
        return "{}"
    if options.dtype.default == "long":
        return "at::kLong"  # torchgen's own TODO calls this wrong; it is what C++ sees
    return ""


def render_factory(factory: VariableFactory, templates: TemplateSet) -> RenderedFactory:
    macros = jinja_module(templates, "variable_factories.j2")
    return RenderedFactory(factory.function, str(macros.ops_header(factory)),
                           str(macros.definitions(factory)))


def variable_factories_file(spec_templates: TemplateSet, rendered: Sequence[RenderedFactory],
                            layout: str) -> str:
    """PA/gen_variable_factories.py: gen_variable_factories' write_with_template."""
    return expand_spec_template(spec_templates, TEMPLATE, {
        "generated_comment": generated_comment(layout, TEMPLATE),
        "ops_headers": [r.ops_header for r in rendered],
        "function_definitions": [r.definitions for r in rendered],
    })
