"""What flows between tasks: a value (a record known by its content hash, or an ordered
collection of them), the recipe that made it, and the group scope it is seen in."""

from __future__ import annotations

from typing import Any

from gradshard.cache.engine.jobs import Group, Task

__all__ = ["Recipe", "Value", "has_failed", "in_scope", "rescoped"]


class Recipe:
    """How a value is made: the job, its inputs, the ident and the key of the run. (A plain
    class: one is made per task of a build, and a frozen dataclass costs thrice as much.)"""

    __slots__ = ("job", "inputs", "ident", "key")

    def __init__(self, job: Task | Group, inputs: tuple[Value, ...], ident: str,
                 key: str) -> None:
        self.job = job
        self.inputs = inputs
        self.ident = ident
        self.key = key


class Value:
    """A record by content hash. `items` is set for collections (None while a fanned-out
    output's list is not read yet); `record` once the record is in memory."""

    __slots__ = ("hash", "type", "items", "record", "recipe", "scope", "is_collection")

    def __init__(self, hash: str, type: type, *, record: Any = None,
                 items: tuple[Value, ...] | None = None, is_collection: bool = False,
                 recipe: Recipe | None = None, scope: int = 0) -> None:
        self.hash = hash
        self.type = type
        self.record = record
        self.items = items
        self.is_collection = is_collection or items is not None
        self.recipe = recipe
        self.scope = scope

    def __repr__(self) -> str:
        kind = f"[{self.type.__name__}]" if self.is_collection else self.type.__name__
        return f"Value({kind} {self.hash[:12]})"

    @property
    def failed(self) -> bool:
        """The output of a task whose inputs broke a rule (its record is a Failure)."""
        return self.hash[0] == "!"


def has_failed(value: Value) -> bool:
    """The value, or an item of it, failed."""
    return value.failed or (value.items is not None and any(i.failed for i in value.items))


def rescoped(value: Value, scope: int) -> Value:
    """The same value as seen inside another group (records are shared, never copied)."""
    return Value(value.hash, value.type, record=value.record, items=value.items,
                 is_collection=value.is_collection, recipe=value.recipe, scope=scope)


def in_scope(items: tuple[Value, ...], scope: int) -> tuple[Value, ...]:
    """These items as seen in `scope` (themselves when they are already)."""
    if all(i.scope == scope for i in items):
        return items
    return tuple(rescoped(i, scope) for i in items)
