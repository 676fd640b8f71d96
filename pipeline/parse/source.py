"""Spec text → entries: each top-level YAML list item with its exact text and first line.

The spec files are YAML lists whose items start with `- ` (at column 0, or at the indent of
the first item). Splitting on those lines lets every entry be hashed and parsed on its own,
so an edit re-parses one entry. An entry's text runs from its `-` line to the next entry,
minus trailing blank lines and comments at the list's indent (they sit between entries).
YAML aliases cannot reach from one entry into another; such a file is reported.

Each entry is parsed with libyaml (CSafeLoader) as a one-item document; duplicate keys are
errors, as in torchgen's YamlLoader (yaml_utils.py). Line offsets of mapping keys are kept
relative to the entry, so that diagnostics can point at a formula without records holding
absolute positions.

Text is decoded as torchgen reads it (`open()` in text mode: universal newlines), so a CRLF
checkout gives the same entries, digests and outputs as its LF twin. What libyaml would
choke on is refused first, with a line: control characters anywhere in a file (libyaml
rejects the whole file, comments included), entries nested deeper than MAX_NESTING (its
composer recurses in C and crashes the process; its scanner slows down with the square of
the depth), and aliases that expand an entry far beyond its text (a "billion laughs"): the
last two are pipeline/parse/yaml_guards.py's.
"""

from __future__ import annotations

import re
import reprlib
from dataclasses import dataclass
from typing import Any

import yaml

from gradshard.pipeline.problems import Problem, RuleViolation, SpecError, SpecFile
from gradshard.pipeline.parse.yaml_guards import check_alias_expansion, check_nesting
from gradshard.pipeline.records import Record, content_hash

__all__ = ["Entry", "LoadedEntry", "decode_spec_text", "load_entry", "quote_value",
           "split_entries", "universal_newlines"]

_DIRECTIVE = re.compile(r"(%|---|\.\.\.)")
# Characters libyaml's reader refuses anywhere in a stream (reader.c: "control characters
# are not allowed"); a decoded str holds no surrogates.
_NOT_YAML = re.compile("[^\t\n\r\x20-\x7e\x85\xa0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
_PLAIN_BYTES = bytes(range(0x20, 0x7f)) + b"\t\n\r"
# Left once those are removed: a control character, or the UTF-8 lead byte of U+0080-U+009F
# (0xc2) or of U+FFFE/U+FFFF (0xef)
_SUSPECT_BYTES = re.compile(rb"[\x00-\x7f\xc2\xef]")



@dataclass(frozen=True, slots=True)
class Entry(Record):
    """One top-level item of a spec file: its exact text and where it starts."""

    file: SpecFile
    line: int
    text: str

    @property
    def digest(self) -> str:
        return content_hash(self.text)


@dataclass(frozen=True, slots=True)
class LoadedEntry:
    """An entry's YAML value plus the line offset (from the entry's first line) of each key.

    `key_offsets` maps a key path such as ("dispatch", "Default", "self") to its offset.
    """

    value: Any
    key_offsets: dict[tuple[str, ...], int]

    def offset_of(self, *path: str) -> int | None:
        return self.key_offsets.get(path)


def decode_spec_text(file: SpecFile, data: bytes) -> str:
    """The text of a spec file as torchgen reads it (UTF-8, universal newlines), or a problem
    at the first undecodable byte or character libyaml refuses."""
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    try:
        text = universal_newlines(data.decode("utf-8"))
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        column = e.start - (data.rfind(b"\n", 0, e.start) + 1) + 1
        raise _file_problem(
            file, "yaml.not-utf8", line,
            f"byte 0x{data[e.start]:02x} is not valid UTF-8 ({e.reason})",
            "spec files must be UTF-8; re-save the file with UTF-8 encoding", column) from None
    _check_characters(file, data, text)
    return text


def universal_newlines(text: str) -> str:
    """The text with CRLF and CR line ends turned into LF, as Python's text mode reads files."""
    if "\r" not in text:
        return text
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _check_characters(file: SpecFile, data: bytes, text: str) -> None:
    # a pass over the bytes at C speed spares the character search for clean files
    if not _SUSPECT_BYTES.search(data.translate(None, _PLAIN_BYTES)):
        return
    found = _NOT_YAML.search(text)
    if found is None:
        return
    line = text.count("\n", 0, found.start()) + 1
    column = found.start() - (text.rfind("\n", 0, found.start()) + 1) + 1
    raise _file_problem(file, "yaml.control-character", line,
                        _control_character_message(ord(found.group())), _CONTROL_HINT, column)


_CONTROL_HINT = "remove it: YAML allows tabs, line breaks and printable characters only"


def _control_character_message(code: int) -> str:
    return (f"character U+{code:04X} is not allowed in YAML, not even in a comment (libyaml, "
            "and so torchgen, rejects the whole file)")


def quote_value(value: Any, width: int = 120) -> str:
    """A repr of a YAML value for a message, at most `width` characters: reprlib looks at a
    few items of a few levels only, so a huge or aliased value costs no more than a small one."""
    text = _QUOTE.repr(value)
    return text if len(text) <= width else text[:width - 1] + "…"


_QUOTE = reprlib.Repr()
_QUOTE.maxstring = _QUOTE.maxother = 80
_QUOTE.maxlist = _QUOTE.maxtuple = _QUOTE.maxdict = _QUOTE.maxset = 6
_QUOTE.maxlevel = 3


def split_entries(file: SpecFile, text: str) -> tuple[Entry, ...]:
    """The top-level entries of a spec file, in file order."""
    indent = _list_indent(text)
    starts = _entry_starts(text, indent) if indent is not None else []
    _check_preamble(file, text[:starts[0]] if starts else text, indent or "")
    if not starts:
        if _content(text) == "[]":
            return ()
        raise _file_problem(file, "yaml.empty-file", 1, "the file holds no entries",
                            "a spec file is a YAML list: each entry starts with '- ' at column 0")
    entries = []
    line = text.count("\n", 0, starts[0]) + 1
    for n, start in enumerate(starts):
        end = starts[n + 1] if n + 1 < len(starts) else len(text)
        chunk = text[start:end]
        entries.append(Entry(file=file, line=line, text=_without_trailing_gap(chunk, indent)))
        line += chunk.count("\n")
    return tuple(entries)


def _content(text: str) -> str:
    """The text without comments and blank lines, lines joined."""
    return "".join(l.strip() for l in text.split("\n") if l.strip() and not l.lstrip().startswith("#"))


def _lines(text: str):
    """The lines of text, lazily (the first list item is usually within a few hundred)."""
    start = 0
    while start <= len(text):
        end = text.find("\n", start)
        end = len(text) if end < 0 else end
        yield text[start:end]
        start = end + 1


def _list_indent(text: str) -> str | None:
    """The indent of the first list item, if the first content line starts one."""
    for line in _lines(text):
        stripped = line.lstrip()
        if not stripped or stripped.startswith("#") or _DIRECTIVE.match(line):
            continue
        if stripped.startswith("-") and stripped[1:2] in ("", " ", "\t", "\r"):
            return line[:len(line) - len(stripped)]
        return None
    return None


def _entry_starts(text: str, indent: str) -> list[int]:
    """Offsets of the lines that start, after `indent`, with '-' and then whitespace."""
    marker = re.escape(indent) + r"-(?:[ \t\r\n]|$)"
    starts = [m.start() + 1 for m in re.finditer(r"\n(?=" + marker + ")", text)]
    return ([0] if re.match(marker, text) else []) + starts


def _without_trailing_gap(chunk: str, indent: str) -> str:
    """The chunk minus trailing blank lines and comments at the list's indent (they sit
    between entries). Scans back from the end, since the gap is usually one blank line."""
    end = len(chunk.rstrip("\n"))
    last = chunk[chunk.rfind("\n", 0, end) + 1:end]
    if last.strip() and not last.lstrip().startswith("#"):
        return chunk[:end]  # the usual case: the entry ends in content
    while True:
        newline = chunk.rfind("\n", 0, end)
        if newline < 0 or not _is_between_entries(chunk[newline + 1:end], indent):
            return chunk[:end]
        end = newline


def _is_between_entries(line: str, indent: str = "") -> bool:
    stripped = line.lstrip()
    return not stripped or (stripped.startswith("#") and len(line) - len(stripped) <= len(indent))


def _check_preamble(file: SpecFile, preamble: str, indent: str) -> None:
    for i, line in enumerate(preamble.split("\n")):
        if _is_between_entries(line, indent) or _DIRECTIVE.match(line) and i == 0:
            continue
        if _content(preamble) == "[]":
            continue
        raise _file_problem(
            file, "yaml.not-a-list", i + 1,
            f"expected a list entry ('- ' at column 0), found: {line.strip()[:60]}",
            "a spec file is a YAML list of mappings; start each entry with '- ' at column 0")


def _file_problem(file: SpecFile, rule: str, line: int, message: str, hint: str,
                  column: int | None = None) -> SpecError:
    return SpecError([Problem(file=file, entry="", rule=rule, message=message, hint=hint,
                              line=line, column=column)])


class _EntryLoader(yaml.CSafeLoader):
    """libyaml's safe loader, rejecting duplicate keys as torchgen's YamlLoader does."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict:
        first_seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            try:
                seen = key in first_seen
                earlier = first_seen.setdefault(key, key_node.start_mark.line)
            except TypeError:
                raise RuleViolation("yaml.syntax", f"a mapping key must be a plain value, "
                                    f"not {type(key).__name__}", "keys are names such as "
                                    "'func' or 'self'", line_in_entry=key_node.start_mark.line,
                                    column=key_node.start_mark.column + 1) from None
            if seen:
                raise RuleViolation(
                    "yaml.duplicate-key", f"key {quote_value(key)} is given twice in one mapping",
                    f"the first {quote_value(key)} is {key_node.start_mark.line - earlier} "
                    "line(s) above; keep one of them", line_in_entry=key_node.start_mark.line,
                    column=key_node.start_mark.column + 1)
        return super().construct_mapping(node, deep=deep)


def load_entry(entry: Entry) -> LoadedEntry:
    """Parse one entry's YAML; syntax errors become violations at the entry-relative line."""
    check_nesting(entry.text)
    node, items = _compose_and_construct(entry.text)
    if not isinstance(items, list) or len(items) != 1 or not isinstance(items[0], dict):
        raise RuleViolation("yaml.entry-not-mapping",
                            "an entry must be a mapping of keys to values",
                            "write the entry as '- key: value' lines", line_in_entry=0)
    return LoadedEntry(value=items[0], key_offsets=_key_offsets(node.value[0]))


def _compose_and_construct(text: str) -> tuple[yaml.Node | None, Any]:
    """The entry's node graph and its value; aliases are checked before the value is built."""
    loader = _EntryLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None, None
        if "&" in text:  # an alias needs an anchor in the same entry
            check_alias_expansion(node, text)
        return node, loader.construct_document(node)
    except yaml.MarkedYAMLError as e:
        raise _syntax_violation(text, e) from None
    except yaml.reader.ReaderError as e:
        raise _reader_violation(text, e) from None
    except yaml.YAMLError as e:
        raise RuleViolation("yaml.syntax", f"YAML error: {e}",
                            "check the indentation and quoting of this entry", line_in_entry=0) from None
    finally:
        loader.dispose()


def _syntax_violation(text: str, error: yaml.MarkedYAMLError) -> RuleViolation:
    mark = error.problem_mark or error.context_mark
    line, column = (mark.line, mark.column + 1) if mark else (0, None)
    if "undefined alias" in str(error.problem):
        return RuleViolation(
            "yaml.cross-entry-alias",
            f"YAML alias *{_alias_at(text, mark)} refers to an anchor outside this entry",
            "gradshard parses each entry on its own, so an alias cannot refer to an anchor "
            "in another entry; repeat the value instead", line_in_entry=line, column=column)
    return RuleViolation("yaml.syntax", f"YAML syntax error: {error.problem or error.context}",
                         "check the indentation and quoting of this entry",
                         line_in_entry=line, column=column)


def _reader_violation(text: str, error: yaml.reader.ReaderError) -> RuleViolation:
    """A character libyaml's reader refused (decode_spec_text refuses them in whole files;
    this places one in an entry made otherwise). libyaml counts UTF-8 bytes."""
    position = len(text.encode("utf-8")[:error.position].decode("utf-8", "ignore"))
    line_start = text.rfind("\n", 0, position) + 1
    code = ord(error.character) if isinstance(error.character, str) else error.character
    return RuleViolation("yaml.control-character", _control_character_message(code),
                         _CONTROL_HINT, line_in_entry=text.count("\n", 0, position),
                         column=position - line_start + 1)


def _alias_at(text: str, mark: yaml.Mark | None) -> str:
    if mark is None:
        return ""
    line = text.split("\n")[mark.line] if mark.line < text.count("\n") + 1 else ""
    found = re.match(r"\*([^\s,\]}]+)", line[mark.column:])
    return found.group(1) if found else ""


def _key_offsets(root: yaml.Node) -> dict[tuple[str, ...], int]:
    """The line offset of each mapping key, by key path. A path through an alias is walked
    again: check_alias_expansion has bounded that, and check_nesting the recursion depth."""
    offsets: dict[tuple[str, ...], int] = {}
    _collect_key_offsets(root, (), offsets)
    return offsets


def _collect_key_offsets(node: yaml.Node, path: tuple[str, ...],
                         offsets: dict[tuple[str, ...], int]) -> None:
    if not isinstance(node, yaml.MappingNode):
        return
    for key_node, value_node in node.value:
        if isinstance(key_node, yaml.ScalarNode):
            key_path = path + (key_node.value,)
            offsets[key_path] = key_node.start_mark.line
            _collect_key_offsets(value_node, key_path, offsets)
