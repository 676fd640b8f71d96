"""The memo key of an item call: a digest of the call's arguments, the generator's own objects
(NativeFunction, DifferentiabilityInfo, CodeTemplate, …) read by their structure.

The key covers what the item can read of its arguments, whatever the generator's release:
every dataclass field (`Location`s left out: where an entry lies in its file prints nothing an
item returns, and an edit above an entry must not miss every item below it), every list,
tuple (told apart) and dict in order (a dict's is its insertion order, which an item iterating
it sees), sets by their sorted members (their order in memory is the hash seed's, not the
spec's), enums by name, a CodeTemplate by its pattern. An argument of any other kind
is not keyed: `KeyRefused`, and the item runs whole.

A dataclass's digest is computed once (`ArgumentKeys` remembers it by identity, holding the
object so that its id is not reused): the same NativeFunction reaches the trace, the
inplace-or-view and the binding items, and each call after the first pays one lookup. The
generator's objects are frozen dataclasses that no item mutates (tests/test_host_worker.py
runs every item twice and compares its arguments' keys), so a digest stays true while its
object lives: across generations for the native functions of a parse cache the worker kept
(worker.py: ParseCaches) and the infos the object memo serves again (objects.py). A digest a
generation did not use is forgotten at the next (`forget_the_unused`), and with it the
table's hold on its object.

Standard library, xxhash and what the generator passes only: this module runs in the host
worker (worker.py), beside the spec's torchgen.
"""

from __future__ import annotations

import dataclasses
import enum
from typing import Any

import xxhash

__all__ = ["ArgumentKeys", "KeyRefused"]

# between the parts of a canonical text, and of one set member (a string part carries its
# length, so a separator inside a string cannot make two texts one)
_SEPARATOR, _MEMBER = "\x1f", "\x1e"


class KeyRefused(TypeError):
    """An argument the key cannot read: the call is not memoized."""


class ArgumentKeys:
    """Keys of item calls for one generation."""

    def __init__(self) -> None:
        self._digests: dict[int, tuple[object, str]] = {}  # id → (the object, its digest)
        self._earlier: dict[int, tuple[object, str]] = {}  # the last generation's
        self._fields: dict[type, tuple[str, ...]] = {}

    def forget_the_unused(self) -> None:
        """A new generation: the digests the last one used are kept for it (the native
        functions of a kept parse cache, the infos the object memo serves again); those it did
        not use are dropped, and with them the table's hold on their objects (the last
        generation's pairs and signatures)."""
        self._earlier, self._digests = self._digests, {}

    def key(self, qualified_name: str, args: tuple, kwargs: dict[str, Any]) -> str:
        parts = [qualified_name]
        for argument in args:
            self._canonical(argument, parts)
        for name in sorted(kwargs):
            parts.append("=" + name)
            self._canonical(kwargs[name], parts)
        return _digest(parts)

    def digest(self, value: object) -> str:
        """One value's digest, as a key reads it."""
        parts: list[str] = []
        self._canonical(value, parts)
        return _digest(parts)

    def _canonical(self, value: object, parts: list[str]) -> None:
        kind = type(value)
        if kind is str:
            parts.append(f"s{len(value)}:{value}")  # type: ignore[arg-type]
        elif value is None or kind is bool or kind is int or kind is float:
            parts.append(repr(value))
        elif kind is list or kind is tuple:
            parts.append(f"{'[' if kind is list else '('}{len(value)}")  # type: ignore
            for item in value:  # type: ignore[attr-defined]
                self._canonical(item, parts)
        elif dataclasses.is_dataclass(kind):
            parts.append("L" if kind.__name__ == "Location" else "@" + self._dataclass(value))
        elif isinstance(value, enum.Enum):
            parts.append(f"E{kind.__qualname__}.{value.name}")
        elif kind is dict:  # in insertion order: what an item iterating it sees
            parts.append(f"d{len(value)}")  # type: ignore[arg-type]
            for item_key, item in value.items():  # type: ignore[attr-defined]
                self._canonical(item_key, parts)
                self._canonical(item, parts)
        elif kind is set or kind is frozenset:
            self._sorted(value, parts)
        elif isinstance(value, dict):  # Counter, defaultdict: a dict and its kind's name
            factory = getattr(value, "default_factory", None)
            parts.append(f"D{kind.__qualname__}:{getattr(factory, '__qualname__', factory)}")
            self._canonical(dict(value), parts)
        else:
            self._other(value, parts)

    def _other(self, value: Any, parts: list[str]) -> None:
        name = type(value).__name__
        if name == "OrderedSet":  # torchgen.utils: iterated in insertion order, as keyed
            members = list(value)
            parts.append(f"O{len(members)}")
            for member in members:
                self._canonical(member, parts)
        elif name == "CodeTemplate":  # torchgen.code_template: all it substitutes from
            parts.append("T" + value.pattern)
        else:
            raise KeyRefused(f"an argument of type {type(value).__module__}."
                             f"{type(value).__qualname__}")

    def _sorted(self, members: Any, parts: list[str]) -> None:
        texts = []
        for member in members:
            own: list[str] = []
            self._canonical(member, own)
            texts.append(_MEMBER.join(own))
        texts.sort()
        parts.append(f"u{len(texts)}")
        parts.extend(texts)

    def _dataclass(self, value: object) -> str:
        known = self._digests.get(id(value))
        if known is not None and known[0] is value:
            return known[1]
        known = self._earlier.get(id(value))
        if known is not None and known[0] is value:
            self._digests[id(value)] = known
            return known[1]
        parts = [type(value).__qualname__]
        for name in self._field_names(type(value)):
            parts.append(name)
            self._canonical(getattr(value, name), parts)
        digest = _digest(parts)
        self._digests[id(value)] = (value, digest)
        return digest

    def _field_names(self, kind: type) -> tuple[str, ...]:
        names = self._fields.get(kind)
        if names is None:
            names = tuple(field.name for field in dataclasses.fields(kind))
            self._fields[kind] = names
        return names


def _digest(parts: list[str]) -> str:
    return xxhash.xxh3_128_hexdigest(_SEPARATOR.join(parts).encode("utf-8", "surrogatepass"))
