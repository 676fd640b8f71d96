"""The guards that run before libyaml sees an entry (pipeline/parse/source.py: load_entry):
what it would crash on or take too long over, refused with a line and a column.

- Nesting: libyaml's composer recurses in C for each level (a few ten thousand crash the
  process) and its scanner slows down with the square of the depth, so an entry's depth is
  measured first, by a linear scan that follows YAML's quoting, comments and block scalars
  (check_nesting: at most MAX_NESTING levels).
- Aliases: PyYAML builds an aliased value once and shares it, but whatever walks or prints the
  value expands it, so the composed node graph is sized before any value is built
  (check_alias_expansion: a "billion laughs" is refused).
"""

from __future__ import annotations

import re
from itertools import islice

import yaml

from gradshard.pipeline.problems import RuleViolation

__all__ = ["ALIAS_EXPANSION_LIMIT", "MAX_NESTING", "check_alias_expansion", "check_nesting"]

MAX_NESTING = 100  # levels: open flow collections plus block indentation levels
# Nodes and characters that aliases may add to an entry beyond twice its own text.
ALIAS_EXPANSION_LIMIT = 100_000


# ---------------------------------------------------------------------------------------------
# Aliases: PyYAML builds an aliased value once and shares it, but whatever walks or prints the
# value (records, messages) expands it, so an entry of nested aliases can stand for billions.


def check_alias_expansion(root: yaml.Node, text: str) -> None:
    limit = 2 * len(text) + ALIAS_EXPANSION_LIMIT  # an entry without aliases stays below 2x
    culprit, recursive = _oversized_node(root, limit)
    if culprit is None:
        return
    what = ("contains an alias of itself" if recursive else
            f"expands through its aliases to more than {limit:,} values and characters")
    raise RuleViolation("yaml.alias-expansion", f"this value {what}",
                        "aliases may repeat a value a few times; write the values out, or "
                        "restructure the entry", line_in_entry=culprit.start_mark.line,
                        column=culprit.start_mark.column + 1)


def _oversized_node(root: yaml.Node, limit: int) -> tuple[yaml.Node | None, bool]:
    """The first node, children before parents, whose expanded size (nodes plus scalar
    characters) exceeds limit, or one inside its own alias (True); each node is sized once."""
    sizes: dict[int, int] = {}
    open_nodes: set[int] = set()  # the nodes on the path being walked
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, children_sized = stack.pop()
        if children_sized:
            open_nodes.discard(id(node))
            sizes[id(node)] = _node_size(node, sizes)
            if sizes[id(node)] > limit:
                return node, False
        elif id(node) in open_nodes:
            return node, True
        elif id(node) not in sizes:
            open_nodes.add(id(node))
            stack.append((node, True))
            stack.extend((child, False) for child in _children(node))
    return None, False


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    return node.value if isinstance(node, yaml.SequenceNode) else []


def _node_size(node: yaml.Node, sizes: dict[int, int]) -> int:
    if isinstance(node, yaml.ScalarNode):
        return 1 + len(node.value)
    return 1 + sum(sizes[id(child)] for child in _children(node))


# ---------------------------------------------------------------------------------------------
# Nesting: libyaml's composer recurses in C for each level (a few ten thousand crash the
# process) and its scanner slows down with the square of the depth, so depth is measured
# before libyaml sees an entry.

# Every level of nesting starts at one of these (a block sequence at '-', a block mapping at
# ':' or '?', a flow collection at '[' or '{'), so their count bounds the depth.
_LEVEL_START = re.compile(r"[-:?\[{]")
_SKIP = re.compile(r"(?:[ \t]+|#[^\n]*|\n)*")
_WHITESPACE = re.compile(r"[ \t\n]*")
_SPACES = re.compile(r" *")
_PLAIN_END = re.compile(r"[ \t\n]|:(?=[ \t\n]|\Z)")
_FLOW_PLAIN_END = re.compile(r"[ \t\n,\[\]{}]|:(?=[ \t\n,\[\]{}?]|\Z)")
_NAME = re.compile(r"[0-9A-Za-z_-]*")
_TAG = re.compile(r"[^ \t\n]*")
_BLOCK_HEADER = re.compile(r"([+-]?[1-9]?|[1-9][+-])[ \t]*(?:#[^\n]*)?(?=\n|\Z)")
_ODD_BREAKS = re.compile("\r\n?|[\x85\u2028\u2029]")
_DOCUMENT_MARKER = re.compile(r"(?:---|\.\.\.)(?=[ \t\n]|\Z)")


def check_nesting(text: str) -> None:
    """Refuse an entry nested deeper than MAX_NESTING levels, at the line where it gets too
    deep. Linear; entries with few level-starting characters are not scanned at all."""
    if len(text) <= MAX_NESTING or _level_starts(text) <= MAX_NESTING:
        return
    try:
        position = _NestingScan(text).too_deep_at()
    except _Unmodelled:
        # a construct the scan does not follow: fall back on the count, which is an upper bound
        position = next(islice(_LEVEL_START.finditer(text), MAX_NESTING, None)).start()
    if position is None:
        return
    line_start = text.rfind("\n", 0, position) + 1
    raise RuleViolation("yaml.nesting-too-deep", f"the entry nests deeper than {MAX_NESTING} "
                        "levels here", "spec entries nest a few levels (keys, dispatch keys, "
                        "lists of booleans); look for an unclosed '[' or '{' or indentation "
                        "that keeps growing", line_in_entry=text.count("\n", 0, position),
                        column=position - line_start + 1)


def _level_starts(text: str) -> int:
    return text.count("-") + text.count(":") + text.count("?") + text.count("[") + text.count("{")


class _Unmodelled(Exception):
    """The scan met something it does not follow as libyaml would (a tag holding brackets,
    a directive, a character no token starts with)."""


class _NestingScan:
    """Follows libyaml's scanner (scanner.c) just far enough to tell structure from scalar
    text: flow brackets outside quoted scalars and comments, and the indentation stack of
    block collections (roll and unroll). The depth is the open flow collections plus the
    indentation levels; the composer's is at most twice that. Where the input is an error
    for libyaml, libyaml stops, so what the scan makes of the rest does not matter."""

    def __init__(self, text: str) -> None:
        # libyaml breaks lines at CR, LF, CRLF, NEL, LS and PS; one character each keeps
        # positions (a CRLF's CR becomes a space)
        self.text = _ODD_BREAKS.sub(lambda m: " \n" if len(m.group()) == 2 else "\n", text)
        self.pos = self.line_start = self.flow = 0
        self.indents: list[int] = []
        self.key_column: int | None = None  # where a simple (implicit) key could start
        self.key_pos = 0
        self.simple_key_allowed = True
        self.level_start = 0  # where the collection the current token opens starts

    @property
    def column(self) -> int:
        return self.pos - self.line_start

    def too_deep_at(self) -> int | None:
        """Where the first collection deeper than MAX_NESTING starts, or None."""
        while self._skip_to_token():
            self.level_start = self.pos
            if self._token() and len(self.indents) + self.flow > MAX_NESTING:
                return self.level_start
        return None

    def _skip_to_token(self) -> bool:
        """Past blanks, comments and line breaks; unroll the indentation (block context).
        False at the end of the text."""
        if self._advance(_SKIP.match(self.text, self.pos).end()) and not self.flow:
            self.simple_key_allowed = True
        if self.pos >= len(self.text):
            return False
        if not self.flow:
            while self.indents and self.indents[-1] > self.column:
                self.indents.pop()
        return True

    def _advance(self, end: int) -> bool:
        """Move to end; True if a line break was passed, which makes a simple key stale
        (implicit keys are one line)."""
        newline = self.text.rfind("\n", self.pos, end)
        self.pos = end
        if newline < 0:
            return False
        self.line_start = newline + 1
        self.key_column = None
        return True

    def _token(self) -> bool:
        """Scan one token; True if it opened a level."""
        char = self.text[self.pos]
        if self.column == 0 and _DOCUMENT_MARKER.match(self.text, self.pos) or char in "%@`":
            raise _Unmodelled
        return _TOKENS.get(char, _NestingScan._plain)(self)

    def _blank_after(self) -> bool:
        return self.pos + 1 >= len(self.text) or self.text[self.pos + 1] in " \t\n"

    def _note_key(self) -> None:
        """Where a key would start, for a block mapping (keys inside flow collections do not
        start block collections)."""
        if self.simple_key_allowed and not self.flow:
            self.key_column, self.key_pos = self.column, self.pos

    def _roll(self, column: int) -> bool:
        """A block collection starts at column if it is deeper than the current one."""
        if self.flow or (self.indents and self.indents[-1] >= column):
            return False
        self.indents.append(column)
        return True

    def _open(self) -> bool:
        self._note_key()
        self.flow += 1
        self.simple_key_allowed = True
        self.pos += 1
        return True

    def _close(self) -> bool:
        self.flow = max(0, self.flow - 1)
        self.simple_key_allowed = False
        self.pos += 1
        return False

    def _comma(self) -> bool:
        self.simple_key_allowed = True
        self.pos += 1
        return False

    def _dash(self) -> bool:
        if not self._blank_after():
            return self._plain()
        if self.flow:
            raise _Unmodelled  # a block entry inside a flow collection
        return self._indicator(self.column)

    def _question(self) -> bool:
        if not (self.flow or self._blank_after()):
            return self._plain()
        return self._indicator(self.column)

    def _colon(self) -> bool:
        if not (self.flow or self._blank_after()):
            return self._plain()
        if self.key_column is None or self.pos - self.key_pos > 1024:
            return self._indicator(self.column)
        self.level_start = self.key_pos  # a block mapping starts at its first key
        return self._indicator(self.key_column)

    def _indicator(self, collection_column: int) -> bool:
        """'- ', '? ' or ': ': a block collection may start at collection_column."""
        if not self.flow:
            self.key_column = None
        self.simple_key_allowed = not self.flow
        self.pos += 1
        return self._roll(collection_column)

    def _anchor_or_alias(self) -> bool:
        self._note_key()
        self.simple_key_allowed = False
        self.pos = _NAME.match(self.text, self.pos + 1).end()
        return False

    def _tag(self) -> bool:
        self._note_key()
        tag = _TAG.match(self.text, self.pos)
        if any(c in tag.group() for c in ",[]{}"):
            raise _Unmodelled  # libyaml's URI rules decide whether these end the tag
        self.simple_key_allowed = False
        self.pos = tag.end()
        return False

    def _quoted(self) -> bool:
        self._note_key()
        self._advance(_quoted_end(self.text, self.pos))
        self.simple_key_allowed = False
        return False

    def _plain(self) -> bool:
        """A plain scalar, as scan_plain_scalar reads it: runs of non-blanks up to ': ' (and
        ',[]{}' in flow context), continued over blanks and line breaks unless a comment
        follows or (block context) the next line is not indented past the collection."""
        self._note_key()
        indent = (self.indents[-1] if self.indents else -1) + 1
        ends = _FLOW_PLAIN_END if self.flow else _PLAIN_END
        self.simple_key_allowed = False
        search_from = self.pos + 1  # the first character starts the token: never an end
        while True:
            found = ends.search(self.text, search_from)
            if found is None:
                self._advance(len(self.text))
                return False
            self._advance(found.start())
            if found.group() not in (" ", "\t", "\n"):
                return False  # ': ' or a flow indicator ends it
            self.simple_key_allowed = self._advance(_WHITESPACE.match(self.text, self.pos).end())
            if self._plain_ends_here(indent):
                return False
            search_from = self.pos

    def _plain_ends_here(self, indent: int) -> bool:
        return (self.pos >= len(self.text) or self.text[self.pos] == "#"
                or (self.column == 0 and _DOCUMENT_MARKER.match(self.text, self.pos) is not None)
                or (not self.flow and self.column < indent))

    def _block_scalar(self) -> bool:
        """'|' or '>' and the lines indented at least as far as its first content line."""
        header = _BLOCK_HEADER.match(self.text, self.pos + 1)
        if self.flow or header is None:
            raise _Unmodelled
        self._advance(header.end())
        start = min(header.end() + 1, len(self.text))
        increment = "".join(c for c in header.group(1) if c.isdigit())
        least = max((self.indents[-1] if self.indents else -1) + 1, 1)
        indent = (least + int(increment) - 1 if increment
                  else _detected_indent(self.text, start, least))
        self._advance(_block_scalar_end(self.text, start, indent))
        self.simple_key_allowed = True
        return False


_TOKENS = {"[": _NestingScan._open, "{": _NestingScan._open, "]": _NestingScan._close,
           "}": _NestingScan._close, ",": _NestingScan._comma, "-": _NestingScan._dash,
           "?": _NestingScan._question, ":": _NestingScan._colon,
           "&": _NestingScan._anchor_or_alias, "*": _NestingScan._anchor_or_alias,
           "!": _NestingScan._tag, "'": _NestingScan._quoted, '"': _NestingScan._quoted,
           "|": _NestingScan._block_scalar, ">": _NestingScan._block_scalar}


def _quoted_end(text: str, start: int) -> int:
    """The position after the quoted scalar starting at start ('' and \\" do not end one);
    the end of the text if it is never closed."""
    quote, position = text[start], start + 1
    while True:
        found = text.find(quote, position)
        if found < 0:
            return len(text)
        if quote == "'":
            if not text.startswith("''", found):
                return found + 1
            position = found + 2
            continue
        escapes = (found - position) - len(text[position:found].rstrip("\\"))
        if escapes % 2 == 0:
            return found + 1
        position = found + 1


def _detected_indent(text: str, start: int, least: int) -> int:
    """A block scalar's indentation without an indicator: that of its first non-blank line,
    at least `least`, and no less than its leading all-space lines (scanner.c)."""
    indent, position = least, start
    while position < len(text):
        spaces = _SPACES.match(text, position).end() - position
        indent = max(indent, spaces)
        if position + spaces >= len(text) or text[position + spaces] != "\n":
            return indent
        position += spaces + 1
    return indent


def _block_scalar_end(text: str, start: int, indent: int) -> int:
    """Where the block scalar whose content starts at start ends: the first line holding
    something before column `indent`."""
    position = start
    while position < len(text):
        spaces = _SPACES.match(text, position).end() - position
        blank = position + spaces >= len(text) or text[position + spaces] == "\n"
        if spaces < indent and not blank:
            return position
        newline = text.find("\n", position)
        position = len(text) if newline < 0 else newline + 1
    return len(text)
