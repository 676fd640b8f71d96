"""Where things are in a spec file's text as the editor holds it, read line by line so that
a buffer that is not valid YAML for a moment still has its entries: the entry at a line (its
name, its operator, the key whose value the line is part of), each entry's first line by
operator, and the word at a position."""

from __future__ import annotations

import re
from dataclasses import dataclass

from gradshard.pipeline.problems import SpecFile

__all__ = ["EntryAt", "NAME_KEYS", "entry_at", "entry_starts", "formula_line", "operator_of"]

# The key that names an entry (pipeline/parse/spec.py: entry_label reads the same)
NAME_KEYS = {SpecFile.DERIVATIVES: "name", SpecFile.NATIVE_FUNCTIONS: "func",
             SpecFile.DEPRECATED: "name", SpecFile.TAGS: "tag"}
_KEY = re.compile(r"^(?P<indent>\s+)(?P<key>[A-Za-z_][\w, ]*?)\s*:(?:\s|$)")


@dataclass(frozen=True)
class EntryAt:
    """The entry holding a line: its name (the schema as written), operator (`sin`,
    `mul.Tensor`), first line and, when the line is inside one of its top keys' values, that
    key (`self`, `result`, `self, other`) and its line (lines from 0)."""

    file: SpecFile
    name: str
    operator: str
    line: int
    key: str | None = None
    key_line: int | None = None


def operator_of(name: str) -> str:
    """A schema's operator name: `sin(Tensor self) -> Tensor` → `sin`; `aten::mul.Tensor(...)`
    → `mul.Tensor`."""
    return name.split("(", 1)[0].strip().split("::")[-1]


def _name_on(file: SpecFile, line: str) -> str | None:
    """The name an entry's first line gives (`- name: X` / `- func: X`), or None."""
    if not line.startswith("-"):
        return None
    key, sep, value = line[1:].strip().partition(":")
    if not sep or key.strip() != NAME_KEYS.get(file):
        return None
    return value.split(" #", 1)[0].strip().strip("'\"") or None


def entry_at(file: SpecFile, text: str, line: int) -> EntryAt | None:
    """The entry whose lines hold `line` (from 0), or None (before the first, outside any)."""
    lines = text.split("\n")
    if not 0 <= line < len(lines):
        return None
    start = next((n for n in range(line, -1, -1) if lines[n].startswith("-")), None)
    if start is None:
        return None
    name = _name_on(file, lines[start].rstrip("\r"))
    if name is None:
        name = next((v for n in range(start + 1, min(line + 1, len(lines)))
                     if (v := _nested_name(file, lines[n])) is not None), None)
        if name is None:
            return None
    key, key_line = _key_at(lines, start, line)
    return EntryAt(file, name, operator_of(name), start, key, key_line)


def _nested_name(file: SpecFile, line: str) -> str | None:
    """`  name: X` on a later line of an entry that does not start with it."""
    match = _KEY.match(line)
    if match is None or match["key"] != NAME_KEYS.get(file):
        return None
    return line[match.end():].split(" #", 1)[0].strip().strip("'\"") or None


def _key_at(lines: list[str], start: int, line: int) -> tuple[str | None, int | None]:
    """The entry's top key whose value holds `line`: the nearest key line at or above it at
    the entry's key indent (the first line's `- ` counts as that indent)."""
    for n in range(line, start - 1, -1):
        text = lines[n].rstrip("\r")
        if n == start:
            text = " " + text[1:]
        match = _KEY.match(text)
        if match is not None and len(match["indent"]) <= 2:
            return match["key"].strip(), n
    return None, None


def entry_starts(file: SpecFile, text: str) -> dict[str, int]:
    """Each named entry's first line (from 0), by operator name and by whole name; the first
    entry of a name wins."""
    starts: dict[str, int] = {}
    for number, line in enumerate(text.split("\n")):
        name = _name_on(file, line.rstrip("\r"))
        if name is not None:
            starts.setdefault(name, number)
            starts.setdefault(operator_of(name), number)
    return starts


def formula_line(text: str, entry_line: int, argument: str | None) -> int:
    """The line (from 0) of the formula for `argument` (a key naming it: `self`, `self,
    other`) in the derivatives entry starting at `entry_line`; its first formula's line when
    no key names it (or none is given); the entry's line when it has none."""
    lines = text.split("\n")
    end = next((n for n in range(entry_line + 1, len(lines)) if lines[n].startswith("-")),
               len(lines))
    keys = [(n, match["key"]) for n in range(entry_line + 1, end)
            if (match := _KEY.match(lines[n])) is not None and len(match["indent"]) <= 6
            and match["key"] not in ("name", "output_differentiability", "dispatch")
            and not match["key"][0].isupper()]  # a dispatch key's own line (Default:)
    named = [n for n, key in keys
             if argument is not None and argument in (k.strip() for k in key.split(","))]
    if named:
        return named[0]
    return keys[0][0] if keys else entry_line
