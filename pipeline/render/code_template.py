"""The spec's own file templates (`autograd/templates/Functions.h`…) and their `$name` syntax.

torchgen's CodeTemplate (code_template.py) substitutes `$name` and `${name}`:

- A placeholder alone on its line after nothing but spaces is a *block*: the value (a string
  or a list of strings) is split into lines, every non-blank line indented like the
  placeholder, every line stripped of trailing whitespace, and trailing blank lines dropped.
  An empty value leaves an empty line.
- Anywhere else it is *inline*: a list prints joined by ", ", and `${,name}` / `${name,}` add
  a leading / trailing ", " when the list is not empty; other values print as they are.
"""

from __future__ import annotations

import re
from typing import Mapping, Sequence

from gradshard.pipeline.problems import RuleViolation

__all__ = ["BlockLines", "Value", "block", "block_lines", "expand_template", "inline"]

_PLACEHOLDER = re.compile(r"(^[^\n\S]*)?\$([^\d\W]\w*|\{,?[^\d\W]\w*,?\})", re.MULTILINE)

Value = str | Sequence[str]


class BlockLines(str):
    """Text already in the form block() prints an item in at no indent: its lines, each
    right-stripped, joined by "\n", with a "\n" after the last (none when it has no lines).
    Made by `block_lines` (or read back from a record field holding what it made); block()
    joins these as they are."""

    __slots__ = ()


def block_lines(text: str) -> BlockLines:
    """`text` in the form of BlockLines (its lines as splitlines() cuts them)."""
    lines = [line.rstrip() for line in text.splitlines()]
    return BlockLines("".join(line + "\n" for line in lines))


def block(value: Value, indent: str) -> str:
    """A value printed as a block at `indent` (code_template.py: indent_lines): each item's
    lines, right-stripped, non-blank ones indented (`indent` is only whitespace)."""
    items = [value] if isinstance(value, str) else value
    if not indent and all(type(item) is BlockLines for item in items):
        return "".join(items).rstrip()  # each is its lines already, "\n" after each
    if not indent and all(isinstance(item, str) for item in items):
        # the common case, and the largest (a whole file's kernels): nothing to split or strip
        text = "\n".join([item[:-1] if item.endswith("\n") else item for item in items if item])
        if _lines_kept(text):
            return text.rstrip()
    lines = [line for item in items for line in str(item).splitlines()]
    if not indent:
        return "\n".join([line.rstrip() for line in lines]).rstrip()
    return "\n".join([indent + text if (text := line.rstrip()) else "" for line in lines]).rstrip()


# What makes splitlines() split, or rstrip() strip, anywhere but at a plain "\n" (ASCII only).
_NOT_PLAIN = ("\r", "\v", "\f", "\x1c", "\x1d", "\x1e", "\x1f", " \n", "\t\n")


def _lines_kept(text: str) -> bool:
    """Whether splitting `text` into lines and right-stripping each changes none of them
    (its very end aside, which block() strips anyway)."""
    return text.isascii() and not any(mark in text for mark in _NOT_PLAIN)


def inline(value: Value, comma_before: bool = False, comma_after: bool = False) -> str:
    if isinstance(value, str):
        return value
    if not value:
        return ""
    return (", " if comma_before else "") + ", ".join(value) + (", " if comma_after else "")


class _Substitution:
    """The replacement for one placeholder match (re.sub callback)."""

    def __init__(self, env: Mapping[str, Value], template_name: str, text: str) -> None:
        self.env = env
        self.template_name = template_name
        self.text = text

    def __call__(self, m: re.Match[str]) -> str:
        indent, key = m.group(1), m.group(2)
        comma_before = comma_after = False
        if key.startswith("{"):
            key = key[1:-1]
            comma_before, key = key.startswith(","), key.lstrip(",")
            comma_after, key = key.endswith(","), key.rstrip(",")
        if key not in self.env:
            raise RuleViolation(
                "templates.unknown-placeholder",
                f"template {self.template_name} uses ${key}, which the generator does not provide",
                f"placeholders provided for this file: {', '.join('$' + k for k in sorted(self.env))}",
                line_in_entry=self.text.count("\n", 0, m.start()))
        value = self.env[key]
        if indent is not None:
            return block(value, indent)
        return inline(value, comma_before, comma_after)


def expand_template(text: str, env: Mapping[str, Value], template_name: str = "") -> str:
    """The template with every placeholder substituted from `env`."""
    return _PLACEHOLDER.sub(_Substitution(env, template_name, text), text)
