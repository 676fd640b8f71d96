"""View groups: a view op, its in-place view variant and its `_copy` variant.

gen.py: get_grouped_by_view_native_functions keys functions by `view_signature()` (the
signature with `_copy` stripped) and pairs each aliasing op with its in-place and copy
variants. load_derivatives uses the flattened order of this grouping for its lookups, and
gives every view with a derivative formula a derivative for its `_copy` twin.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Sequence

from gradshard.pipeline.parse.native import NativeFunction
from gradshard.pipeline.problems import Problem, RuleViolation, SpecFile
from gradshard.pipeline.records import Record
from gradshard.pipeline.schema import OperatorName, SchemaKind

__all__ = ["ViewGroup", "ViewGrouping", "ViewOrder", "view_grouping", "view_order"]


class ViewKind(enum.Enum):
    ALIASING = "aliasing"
    ALIASING_INPLACE = "aliasing_inplace"


@dataclass(frozen=True, slots=True)
class ViewGroup(Record):
    view: NativeFunction
    view_inplace: NativeFunction | None = None
    view_copy: NativeFunction | None = None

    def functions(self) -> tuple[NativeFunction, ...]:
        return tuple(f for f in (self.view, self.view_inplace, self.view_copy) if f is not None)


def view_kind(fn: NativeFunction) -> ViewKind | None:
    """None for non-aliasing functions (model.py: NativeFunction.view_schema_kind)."""
    if not fn.is_view_op:
        return None
    if fn.func.name.name.inplace:
        if "inplace_view" not in fn.tags:
            raise RuleViolation("views.missing-inplace-view-tag",
                                f"{fn.func.name} modifies a view in place but is not tagged "
                                "inplace_view", "add 'tags: inplace_view'")
        return ViewKind.ALIASING_INPLACE
    return ViewKind.ALIASING


@dataclass(frozen=True, slots=True)
class ViewGrouping(Record):
    """Every function in load_derivatives' order, and the view groups among them."""

    ordered: tuple[NativeFunction, ...]
    groups: tuple[ViewGroup, ...]


@dataclass(frozen=True, slots=True)
class ViewGroupPositions(Record):
    view: int
    view_inplace: int | None = None
    view_copy: int | None = None


@dataclass(frozen=True, slots=True)
class ViewOrder(Record):
    """load_derivatives' function order and the view groups, as positions in the function
    list (what the cache keeps; `view_grouping` turns it back into functions)."""

    ordered: tuple[int, ...]
    groups: tuple[ViewGroupPositions, ...]
    problems: tuple[Problem, ...] = ()  # views torchgen's grouping rejects


def view_order(functions: Sequence[NativeFunction]) -> ViewOrder:
    buckets: dict[str, dict[object, int]] = {}
    problems: list[Problem] = []
    for position, fn in enumerate(functions):
        try:
            kind = view_kind(fn) or fn.func.kind()
        except RuleViolation as violation:
            problems.append(violation.to_problem(SpecFile.NATIVE_FUNCTIONS, str(fn.func.name)))
            continue
        bucket = buckets.setdefault(str(fn.func.view_signature()), {})
        if kind in bucket:
            clash = functions[bucket[kind]]
            if not _same_signature_and_kind(fn, clash):  # else native.duplicate-signature
                problems.append(_problem(fn, "views.duplicate-kind",
                                         f"{fn.func.name} and {clash.func.name} are both "
                                         f"'{kind.value}' variants of one view signature",
                                         "rename one of them or change its arguments"))
            continue
        bucket[kind] = position
    ordered: list[int] = []
    groups: list[ViewGroupPositions] = []
    for bucket in buckets.values():
        group = _view_group(bucket, functions, problems)
        if group is not None:
            groups.append(group)
            ordered.extend(p for p in (group.view, group.view_inplace, group.view_copy)
                           if p is not None)
        ordered.extend(bucket.values())
    return ViewOrder(tuple(ordered), tuple(groups), tuple(problems))


def _same_signature_and_kind(fn: NativeFunction, other: NativeFunction) -> bool:
    """Whether the two clash in signature groups too (variants.py: signature_groups reports
    them as native.duplicate-signature), so a view-kind clash is the same fault, not a second
    one. The view signature only adds the clash of `foo` with a `foo_copy` of one kind."""
    return (fn.func.kind() is other.func.kind()
            and str(fn.func.signature()) == str(other.func.signature()))


def view_grouping(functions: Sequence[NativeFunction], order: ViewOrder) -> ViewGrouping:
    return ViewGrouping(tuple(functions[p] for p in order.ordered),
                        tuple(_group_of(functions, g) for g in order.groups))


def _group_of(functions: Sequence[NativeFunction], group: ViewGroupPositions) -> ViewGroup:
    return ViewGroup(functions[group.view], _at(functions, group.view_inplace),
                     _at(functions, group.view_copy))


def _at(functions: Sequence[NativeFunction], position: int | None) -> NativeFunction | None:
    return None if position is None else functions[position]


def _view_group(bucket: dict[object, int], functions: Sequence[NativeFunction],
                problems: list[Problem]) -> ViewGroupPositions | None:
    """Pops the view, view_inplace and view_copy out of the bucket (maybe_create_view_group)."""
    if ViewKind.ALIASING not in bucket:
        return None
    group = ViewGroupPositions(bucket.pop(ViewKind.ALIASING),
                               bucket.pop(ViewKind.ALIASING_INPLACE, None),
                               bucket.pop(SchemaKind.FUNCTIONAL, None))
    problem = _group_problem(_group_of(functions, group))
    if problem is not None:
        problems.append(problem)
    return group


def _group_problem(group: ViewGroup) -> Problem | None:
    """model.py: NativeFunctionsViewGroup.__post_init__."""
    view, copy, inplace = group.view, group.view_copy, group.view_inplace
    if copy is None:
        if needs_generated_view_copy(view):
            return _problem(view, "views.missing-copy",
                            f"{view.func.name} returns an alias of its input but there is no "
                            f"{view_copy_name(view)}",
                            f"add '{view_copy_name(view)}' (tagged view_copy) to "
                            "native_functions.yaml, as for the other view ops")
    else:
        if not copy.func.name.name.base.endswith(("_copy", "_scatter")):
            return _problem(copy, "views.copy-name", f"view copy {copy.func.name} must end in "
                            "'_copy' or '_scatter'", f"rename it {view_copy_name(view)}")
        if str(view.func.signature()) != str(copy.func.signature(strip_view_copy_name=True)):
            return _problem(copy, "views.copy-signature",
                            f"{copy.func.name} does not match its view {view.func.name}: "
                            f"{copy.func.signature(strip_view_copy_name=True)} != "
                            f"{view.func.signature()}", "give both the same arguments and returns")
        if "view_copy" not in copy.tags:
            return _problem(copy, "views.copy-tag",
                            f"{copy.func.name} is the copy variant of {view.func.name} but is "
                            "not tagged view_copy", "add 'view_copy' to its tags")
    if inplace is not None and str(view.func.signature()) != str(inplace.func.signature()):
        return _problem(inplace, "views.inplace-signature",
                        f"{inplace.func.name} does not match its view {view.func.name}",
                        "give both the same arguments and returns")
    if inplace is not None and (
            view.has_composite_implicit_autograd_kernel
            and not inplace.has_composite_implicit_autograd_kernel
            or view.has_composite_implicit_autograd_nested_tensor_kernel
            and not inplace.has_composite_implicit_autograd_nested_tensor_kernel):
        return _problem(inplace, "views.composite-mismatch",
                        f"{view.func.name} and {inplace.func.name} must both or neither have "
                        "composite implicit kernels", "give both the same kind of dispatch table")
    return None


def needs_generated_view_copy(fn: NativeFunction) -> bool:
    """model.py: gets_generated_view_copy."""
    return (fn.is_view_op and not fn.has_composite_implicit_autograd_kernel
            and "inplace_view" not in fn.tags and not fn.func.name.name.base.endswith("_inverse"))


def view_copy_name(fn: NativeFunction) -> OperatorName:
    return OperatorName.parse(f"{fn.func.name.name.base}_copy" +
                              (f".{fn.func.name.overload}" if fn.func.name.overload else ""))


def _problem(fn: NativeFunction, rule: str, message: str, hint: str) -> Problem:
    return Problem(SpecFile.NATIVE_FUNCTIONS, str(fn.func.name), rule, message, hint)
