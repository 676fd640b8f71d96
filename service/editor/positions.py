"""Positions as the Language Server Protocol counts them: lines from 0, and columns in UTF-16
code units (a character outside the Basic Multilingual Plane counts two), while gradshard's
problems count lines from 1 and columns in characters (code points) from 1."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Span", "identifier_span", "line_of", "to_utf16", "from_utf16"]

_IDENTIFIER = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")


@dataclass(frozen=True)
class Span:
    """Characters [start, end) of one line (code points, from 0)."""

    start: int
    end: int


def to_utf16(line: str, column: int) -> int:
    """The UTF-16 offset of character `column` (from 0) of `line`; past its end, its end."""
    prefix = line[:max(column, 0)]
    return len(prefix) + sum(1 for c in prefix if ord(c) > 0xFFFF)


def from_utf16(line: str, units: int) -> int:
    """The character (from 0) at UTF-16 offset `units` of `line` (a surrogate pair's second
    half is its character); past its end, its end."""
    counted = 0
    for index, character in enumerate(line):
        counted += 2 if ord(character) > 0xFFFF else 1
        if counted > units:
            return index
    return len(line)


def line_of(text: str, number: int) -> str:
    """Line `number` (from 0) of `text`, without its end; "" past the last."""
    lines = text.split("\n")
    return lines[number].rstrip("\r") if 0 <= number < len(lines) else ""


def identifier_span(line: str, column: int) -> Span | None:
    """The identifier (letters, digits, `_`) at or just before character `column`; None
    when there is none."""
    start = min(max(column, 0), len(line))
    if (start == len(line) or line[start] not in _IDENTIFIER) and start > 0 \
            and line[start - 1] in _IDENTIFIER:
        start -= 1
    if start >= len(line) or line[start] not in _IDENTIFIER:
        return None
    end = start
    while start > 0 and line[start - 1] in _IDENTIFIER:
        start -= 1
    while end < len(line) and line[end] in _IDENTIFIER:
        end += 1
    return Span(start, end)
