"""FunctionalInverses.h: the declaration of every view op's inverse.

Functionalization undoes a mutated view by calling `FunctionalInverses::<view>_inverse`
(hand-written in ATen); torchgen declares one per view group whose view has no
CompositeImplicitAutograd kernel, so a new view op fails to link until its inverse is written.
PyTorch's ADInplaceOrViewType_*.cpp include the header, which the torch wheel does not ship,
so gradshard prints it for its own compile (gen.py writes it with the ATen files:
`cpu_fm.write("FunctionalInverses.h", ...)`). The ATen templates directory is no part of the
spec gradshard reads, so the whole file is gradshard's template (templates/codegen/functional_inverses.j2).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from gradshard.pipeline.cpp import argument_ctype
from gradshard.pipeline.parse.native import NativeFunction
from gradshard.pipeline.parse.views import ViewGrouping
from gradshard.pipeline.problems import RuleViolation
from gradshard.pipeline.records import Record
from gradshard.pipeline.render.templating import TemplateSet, jinja_module
from gradshard.pipeline.render.variable_type import Formal
from gradshard.pipeline.schema import FunctionSchema, OperatorName

__all__ = ["RenderedInverse", "functional_inverses_file", "functional_inverses_header",
           "inverse_views", "render_inverse", "view_inverse"]

# The parameters every inverse starts with (api/functionalization.py: base_binding,
# mutated_view_binding, inverse_return_mode_binding) and the one multi-output views add
# (out_index_binding).
LEADING_PARAMETERS = (Formal("const at::Tensor &", "base"),
                      Formal("const at::Tensor &", "mutated_view"),
                      Formal("at::functionalization::InverseReturnMode", "inverse_return_mode"))
OUT_INDEX = Formal("int64_t", "out_index")
# Every inverse returns one tensor, a multi-output view's too (functionalization.py: returns_type).
INVERSE_RETURN_TYPE = "at::Tensor"


@dataclass(frozen=True, slots=True)
class ViewInverse(Record):
    """One view's inverse as FunctionalInverses.h declares it (api/types/signatures.py:
    ViewInverseSignature)."""

    name: str
    return_type: str
    parameters: tuple[Formal, ...]


@dataclass(frozen=True, slots=True)
class RenderedInverse(Record):
    name: str
    declaration: str


def inverse_views(grouping: ViewGrouping) -> tuple[NativeFunction, ...]:
    """The views that get an inverse, in view-group order (gen_functionalization_type.py:
    gen_functionalization_view_inverse_declaration returns None for a composite view: its
    decomposition is functionalized instead)."""
    return tuple(g.view for g in grouping.groups
                 if not g.view.has_composite_implicit_autograd_kernel)


def view_inverse(view: NativeFunction) -> ViewInverse:
    """functionalization.py: reverse_name, returns_type and op_arguments(is_reverse=True)."""
    func = view.func
    _check_tensor_returns(func)
    extra = (OUT_INDEX,) if _is_multi_output(func) else ()
    return ViewInverse(f"{unambiguous_name(func.name)}_inverse", INVERSE_RETURN_TYPE,
                       LEADING_PARAMETERS + extra + _non_self_parameters(view))


def unambiguous_name(name: OperatorName) -> str:
    """model.py: OperatorName.unambiguous_name (the overload appended after `_`)."""
    return f"{name.name}_{name.overload}" if name.overload else str(name.name)


def _non_self_parameters(view: NativeFunction) -> tuple[Formal, ...]:
    """The view's arguments after its first, in the dispatcher API (dispatcher.py: argument):
    SymInt kept, typed in the view's own CppFlags context (context.py: native_function_manager)."""
    arguments = view.func.arguments.all
    if not arguments or str(arguments[0].type) != "Tensor":
        raise RuleViolation("views.inverse-first-argument",
                            f"view {view.func.name} does not take a Tensor first, so "
                            "functionalization cannot declare its inverse",
                            "make the viewed tensor the first argument (self)")
    return tuple(Formal(str(argument_ctype(a.type, mutable=a.is_write, flags=view.cpp_flags,
                                           symint=True)), a.name)
                 for a in arguments[1:])


def _check_tensor_returns(func: FunctionSchema) -> None:
    """functionalization.py: returns_type asserts every view returns tensors."""
    if not func.returns or not all(r.type.is_tensor_like() for r in func.returns):
        raise RuleViolation("views.inverse-returns",
                            f"view {func.name} returns '{', '.join(str(r.type) for r in func.returns)}'"
                            ", but functionalization inverts only views that return tensors",
                            "return Tensor(a) or Tensor(a)[]")


def _is_multi_output(func: FunctionSchema) -> bool:
    """functionalization.py: is_multi_output — its inverse takes the output's index."""
    return len(func.returns) > 1 or func.returns[0].type.list_type() is not None


def render_inverse(inverse: ViewInverse, templates: TemplateSet) -> RenderedInverse:
    macros = jinja_module(templates, "functional_inverses.j2")
    return RenderedInverse(inverse.name, str(macros.declaration(inverse)))


def functional_inverses_file(templates: TemplateSet,
                             inverses: Sequence[RenderedInverse]) -> str:
    """The whole header (ATen/templates/FunctionalInverses.h as gen.py writes it)."""
    macros = jinja_module(templates, "functional_inverses.j2")
    return str(macros.header([i.declaration for i in inverses]))


def functional_inverses_header(grouping: ViewGrouping, templates: TemplateSet) -> str:
    """FunctionalInverses.h of a spec's view groups, in one call."""
    return functional_inverses_file(templates, [
        render_inverse(view_inverse(view), templates) for view in inverse_views(grouping)])
