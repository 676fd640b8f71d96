"""Records: frozen dataclasses with a canonical JSON form and a stable content hash.

Every value that crosses a stage boundary is a record. Its JSON form is canonical (sorted
keys, no whitespace, UTF-8), so equal records always serialize to the same bytes and their
xxh3-128 content hash can key a cache. Decoding is driven by the dataclass annotations, so
`Cls.from_json(x.to_json()) == x` holds for every record without per-class code.

Two kinds of record exist:

- `Record`: encoded as a JSON object of its fields.
- `TextRecord`: a record that *is* a piece of spec text (a schema, a type, an operator name).
  Its JSON form is that text, and `parse(str(x)) == x` is guaranteed by its grammar.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import json
import types
import typing
from typing import Any, Self

import xxhash

__all__ = ["Record", "Text", "TextRecord", "canonical_json", "content_hash"]

# One encoder, made once (json.dumps with options makes one per call). Records are trees, so
# the check for cycles, which tracks every container written, is not needed.
_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                              check_circular=False)


def canonical_json(value: object) -> str:
    """The one JSON spelling of a plain JSON value (what records hash and store)."""
    return _CANONICAL.encode(value)


def content_hash(text: str | bytes) -> str:
    """xxh3-128 of `text` as 32 hex digits: the project's content address."""
    data = text.encode("utf-8") if isinstance(text, str) else text
    return xxhash.xxh3_128_hexdigest(data)


class Record:
    """Base of every frozen dataclass that flows between stages."""

    __slots__ = ()

    def to_json(self) -> Any:
        return _codec_for(type(self)).encode(self)

    @classmethod
    def from_json(cls, value: Any) -> Self:
        return _codec_for(cls).decode(value)

    def canonical_json(self) -> str:
        return canonical_json(self.to_json())


class TextRecord(Record):
    """A record whose canonical form is its own spec text."""

    __slots__ = ()

    @classmethod
    def parse(cls, text: str) -> Self:
        raise NotImplementedError


# ---------------------------------------------------------------------------------------------
# Codecs: one small object per annotation, built once per class and reused.


class _PlainCodec:
    """str, int, bool and None pass through JSON unchanged."""

    def encode(self, value: Any) -> Any:
        return value

    def decode(self, value: Any) -> Any:
        return value


class _OptionalCodec:
    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def encode(self, value: Any) -> Any:
        return None if value is None else self.inner.encode(value)

    def decode(self, value: Any) -> Any:
        return None if value is None else self.inner.decode(value)


class _TupleCodec:
    """tuple[X, ...] (one item codec) or tuple[X, Y] (one codec per position). A fixed tuple
    of plain values, and a list of those (a HostIndex holds ~70,000 pairs), go through JSON
    without a call per item."""

    def __init__(self, items: list[Any], variadic: bool) -> None:
        self.items = items
        self.variadic = variadic

    @property
    def plain(self) -> bool:
        """A fixed tuple of plain values (resolved lazily, as recursive types are)."""
        return not self.variadic and all(c is _PLAIN for c in self.items)

    def encode(self, value: tuple) -> list:
        if self.variadic:
            item = self.items[0]
            if item is _PLAIN:
                return list(value)
            if isinstance(item, _TupleCodec) and item.plain:
                return list(map(list, value))
            return [item.encode(v) for v in value]
        return [c.encode(v) for c, v in zip(self.items, value)]

    def decode(self, value: list) -> tuple:
        if self.variadic:
            item = self.items[0]
            if item is _PLAIN:
                return tuple(value)
            if isinstance(item, _TupleCodec) and item.plain:
                found = tuple(map(tuple, value))
                if any(len(v) != len(item.items) for v in found):
                    raise ValueError(f"expected items of {len(item.items)}")
                return found
            return tuple([item.decode(v) for v in value])
        if len(value) != len(self.items):
            raise ValueError(f"expected {len(self.items)} items, got {len(value)}")
        return tuple([c.decode(v) for c, v in zip(self.items, value)])


class _EnumCodec:
    def __init__(self, cls: type[enum.Enum]) -> None:
        self.cls = cls

    def encode(self, value: enum.Enum) -> Any:
        return value.value

    def decode(self, value: Any) -> enum.Enum:
        return self.cls(value)


class _TextCodec:
    """A TextRecord as its text. Parsing is pure, so each distinct text is parsed once per
    process (schemas and types recur across records)."""

    def __init__(self, cls: type[TextRecord]) -> None:
        self.cls = cls
        self.parsed: dict[str, TextRecord] = {}

    def encode(self, value: TextRecord) -> str:
        return str(value)

    def decode(self, value: str) -> TextRecord:
        found = self.parsed.get(value)
        if found is None:
            found = self.parsed[value] = self.cls.parse(value)
        return found


class _RecordCodec:
    """A dataclass as a JSON object; fields are resolved lazily to allow recursive types.
    Fields holding plain JSON values skip their codec (most fields are strings). Keys come
    in sorted order, as canonical JSON writes them: sorting them again is then cheap."""

    def __init__(self, cls: type) -> None:
        self.cls = cls
        self._fields: list[tuple[str, Any]] | None = None
        self._names: frozenset[str] = frozenset()

    def fields(self) -> list[tuple[str, Any]]:
        if self._fields is None:
            hints = typing.get_type_hints(self.cls)
            fields = sorted(((f.name, _codec_for(hints[f.name]))
                             for f in dataclasses.fields(self.cls) if f.init),
                            key=lambda field: field[0])
            self._names = frozenset(name for name, _ in fields)
            self._fields = [(name, None if codec is _PLAIN else codec) for name, codec in fields]
        return self._fields

    def encode(self, value: Any) -> dict:
        out = {}
        for name, codec in self._fields or self.fields():
            item = getattr(value, name)
            out[name] = item if codec is None else codec.encode(item)
        return out

    def decode(self, value: dict) -> Any:
        fields = self._fields or self.fields()
        if value.keys() != self._names:
            unknown = set(value) - self._names
            if unknown:
                raise ValueError(f"{self.cls.__name__}: unknown fields {sorted(unknown)}")
        return self.cls(**{name: value[name] if codec is None else codec.decode(value[name])
                           for name, codec in fields if name in value})


_PLAIN = _PlainCodec()
_PLAIN_TYPES: tuple[type, ...] = (str, int, bool, type(None))


@functools.cache
def _codec_for(annotation: Any) -> Any:
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        members = [a for a in typing.get_args(annotation) if a is not type(None)]
        if all(m in _PLAIN_TYPES for m in members):
            return _PLAIN
        if len(members) != 1:
            raise TypeError(f"records cannot hold the union {annotation}")
        return _OptionalCodec(_codec_for(members[0]))
    if origin is tuple:
        args = typing.get_args(annotation)
        if len(args) == 2 and args[1] is Ellipsis:
            return _TupleCodec([_codec_for(args[0])], variadic=True)
        return _TupleCodec([_codec_for(a) for a in args], variadic=False)
    if annotation in _PLAIN_TYPES or annotation is Any:
        return _PLAIN
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return _EnumCodec(annotation)
    if isinstance(annotation, type) and issubclass(annotation, TextRecord):
        return _TextCodec(annotation)
    if isinstance(annotation, type) and dataclasses.is_dataclass(annotation):
        return _RecordCodec(annotation)
    raise TypeError(f"records cannot hold values of type {annotation!r}")



@dataclasses.dataclass(frozen=True, slots=True)
class Text(Record):
    """Plain text (a spec entry, a template, a generated file). The cache stores and hashes
    it as its UTF-8 bytes, so a file's content hash is the hash of the file on disk."""

    text: str
