"""A formula as C++ tokens: identifiers with what surrounds them, brackets and quotes.

Only what the name check needs is told apart: comments are dropped, string and character
literals and numbers are single tokens, `::` and `->` are one token each, and every other
character is its own token. Positions are offsets into the formula's text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["BracketFault", "Token", "bracket_fault", "identifier_uses", "tokens"]

_TOKEN = re.compile(r"""
    (?P<comment>//[^\n]*|/\*.*?(?:\*/|\Z))
  | (?P<string>"(?:\\.|[^"\\\n])*"?)
  | (?P<char>'(?:\\.|[^'\\\n])*'?)
  | (?P<number>\.?\d(?:[eEpP][+-]|[\w.'])*)
  | (?P<identifier>[A-Za-z_]\w*)
  | (?P<punct>::|->|\S)
""", re.S | re.X)
_OPENING, _CLOSING = "([{", ")]}"


@dataclass(frozen=True)
class Token:
    kind: str  # comment, string, char, number, identifier or punct
    text: str
    start: int


@dataclass(frozen=True)
class BracketFault:
    """A bracket without its partner, or a literal left open: the offset and what is wrong."""

    start: int
    text: str
    message: str


def tokens(formula: str) -> list[Token]:
    """Every token of the formula but comments."""
    return [Token(m.lastgroup or "", m.group(), m.start()) for m in _TOKEN.finditer(formula)
            if m.lastgroup != "comment"]


def bracket_fault(formula: str, found: list[Token]) -> BracketFault | None:
    """The first unterminated literal or unbalanced bracket: an open one at the end, a
    closing one that closes nothing or the wrong kind."""
    for token in found:
        if token.kind in ("string", "char") and (len(token.text) < 2
                                                 or token.text[-1] != token.text[0]):
            what = "string" if token.kind == "string" else "character literal"
            return BracketFault(token.start, token.text[0], f"the {what} is never closed")
    opened: list[Token] = []
    for token in found:
        if token.kind != "punct":
            continue
        if token.text in _OPENING:
            opened.append(token)
        elif token.text in _CLOSING:
            expected = _CLOSING[_OPENING.index(opened[-1].text)] if opened else None
            if expected != token.text:
                message = (f"'{token.text}' closes nothing" if expected is None else
                           f"'{token.text}' closes the '{opened[-1].text}' opened before it, "
                           f"which needs '{expected}'")
                return BracketFault(token.start, token.text, message)
            opened.pop()
    if opened:
        last = opened[-1]
        closing = _CLOSING[_OPENING.index(last.text)]
        return BracketFault(last.start, last.text,
                            f"'{last.text}' is never closed (a '{closing}' is missing)")
    return None


def identifier_uses(found: list[Token]) -> tuple[list[Token], set[str]]:
    """The identifiers a formula names in its own scope (not a member after `.` or `->`, not
    qualified by `::`, not a qualifier before `::`), and the names it declares itself (a
    lambda's parameters, `TYPE name =` locals)."""
    used, declared = [], set()
    parameters = False  # inside a lambda's parameter list: `](...)`
    for at, token in enumerate(found):
        before = found[at - 1].text if at else ""
        after = found[at + 1].text if at + 1 < len(found) else ""
        if token.text == "(" and before == "]":
            parameters = True
        elif token.text == ")":
            parameters = False
        if token.kind != "identifier":
            continue
        if parameters and after in (",", ")", "="):
            declared.add(token.text)
        elif (after == "=" and at + 2 < len(found) and found[at + 2].text != "=" and at > 0
              and (found[at - 1].kind == "identifier" or before in ("&", "*", ">"))):
            declared.add(token.text)
        if before in (".", "->", "::") or after == "::":
            continue
        used.append(token)
    return used, declared
