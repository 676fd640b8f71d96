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
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import yaml

from .errors import Problem, RuleViolation, SpecError, SpecFile
from .records import Record, content_hash

_DIRECTIVE = re.compile(r"(%|---|\.\.\.)")


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
    """UTF-8 text of a spec file, or a problem pointing at the first undecodable byte."""
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        column = e.start - (data.rfind(b"\n", 0, e.start) + 1) + 1
        raise _file_problem(
            file, "yaml.not-utf8", line,
            f"byte 0x{data[e.start]:02x} is not valid UTF-8 ({e.reason})",
            "spec files must be UTF-8; re-save the file with UTF-8 encoding", column) from None


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


def resplit_entries(file: SpecFile, old_text: str, old_entries: tuple[Entry, ...],
                    new_text: str) -> tuple[Entry, ...]:
    """split_entries(new_text), reusing the entries of old_text that an edit did not touch.

    Only the entries overlapping the changed bytes are split again; those after them keep
    their text and move by the number of lines the edit added or removed."""
    if new_text == old_text:
        return old_entries
    prefix = _common_prefix(old_text, new_text)
    suffix = _common_suffix(old_text, new_text, min(len(old_text), len(new_text)) - prefix)
    spans = _chunk_spans(old_text, old_entries)
    indent = _list_indent(old_text)
    # an entry is kept as a start only if its whole marker ('-' and what follows) is unchanged
    marker = len(indent or "") + 2
    if not spans or prefix < spans[0][0] + marker or _list_indent(new_text) != indent:
        return split_entries(file, new_text)
    first = max(i for i, (start, _) in enumerate(spans) if start + marker <= prefix)
    old_end = len(old_text) - suffix
    after = [i for i, (start, _) in enumerate(spans) if start - 1 >= old_end and start > spans[first][0]]
    last = after[0] if after else len(spans)
    shift = len(new_text) - len(old_text)
    region_end = spans[last][0] + shift if after else len(new_text)
    region = new_text[spans[first][0]:region_end]
    middle = split_entries(file, region)
    line_shift = new_text.count("\n", 0, region_end) - old_text.count("\n", 0, region_end - shift)
    base = old_entries[first].line - 1
    moved = tuple(Entry(file, e.line + base, e.text) for e in middle)
    tail = old_entries[last:] if line_shift == 0 else tuple(
        Entry(file, e.line + line_shift, e.text) for e in old_entries[last:])
    return old_entries[:first] + moved + tail


def _chunk_spans(text: str, entries: tuple[Entry, ...]) -> list[tuple[int, int]]:
    """(start offset, first line) of each entry's chunk in the text it was split from."""
    starts = _entry_starts(text, _list_indent(text) or "") if entries else []
    return [(start, entry.line) for start, entry in zip(starts, entries)]


def _common_prefix(a: str, b: str) -> int:
    """Length of the longest common prefix, by halving (each step compares in C)."""
    low, high = 0, min(len(a), len(b))
    while low < high:
        mid = (low + high + 1) // 2
        if a[:mid] == b[:mid]:
            low = mid
        else:
            high = mid - 1
    return low


def _common_suffix(a: str, b: str, limit: int) -> int:
    low, high = 0, limit
    while low < high:
        mid = (low + high + 1) // 2
        if a[len(a) - mid:] == b[len(b) - mid:]:
            low = mid
        else:
            high = mid - 1
    return low


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
                    "yaml.duplicate-key", f"key '{key}' is given twice in one mapping",
                    f"the first '{key}' is {key_node.start_mark.line - earlier} line(s) above; "
                    "keep one of them", line_in_entry=key_node.start_mark.line,
                    column=key_node.start_mark.column + 1)
        return super().construct_mapping(node, deep=deep)


def load_entry(entry: Entry) -> LoadedEntry:
    """Parse one entry's YAML; syntax errors become violations at the entry-relative line."""
    loader = _EntryLoader(entry.text)
    try:
        node = loader.get_single_node()
        items = loader.construct_document(node) if node is not None else None
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        if "undefined alias" in str(e.problem):
            raise RuleViolation(
                "yaml.cross-entry-alias",
                f"YAML alias *{_alias_at(entry.text, mark)} refers to an anchor outside this entry",
                "gradshard parses each entry on its own, so an alias cannot refer to an anchor "
                "in another entry; repeat the value instead",
                line_in_entry=mark.line if mark else 0,
                column=mark.column + 1 if mark else None) from None
        raise RuleViolation(
            "yaml.syntax", f"YAML syntax error: {e.problem or e.context}",
            "check the indentation and quoting of this entry",
            line_in_entry=mark.line if mark else 0,
            column=mark.column + 1 if mark else None) from None
    except yaml.YAMLError as e:
        raise RuleViolation("yaml.syntax", f"YAML error: {e}",
                            "check the indentation and quoting of this entry", line_in_entry=0) from None
    finally:
        loader.dispose()
    if not isinstance(items, list) or len(items) != 1 or not isinstance(items[0], dict):
        raise RuleViolation("yaml.entry-not-mapping",
                            "an entry must be a mapping of keys to values",
                            "write the entry as '- key: value' lines", line_in_entry=0)
    offsets: dict[tuple[str, ...], int] = {}
    _collect_key_offsets(node.value[0], (), offsets)
    return LoadedEntry(value=items[0], key_offsets=offsets)


def _alias_at(text: str, mark: yaml.Mark | None) -> str:
    if mark is None:
        return ""
    line = text.split("\n")[mark.line] if mark.line < text.count("\n") + 1 else ""
    found = re.match(r"\*([^\s,\]}]+)", line[mark.column:])
    return found.group(1) if found else ""


def _collect_key_offsets(node: yaml.Node, path: tuple[str, ...],
                         offsets: dict[tuple[str, ...], int]) -> None:
    if not isinstance(node, yaml.MappingNode):
        return
    for key_node, value_node in node.value:
        if isinstance(key_node, yaml.ScalarNode):
            key_path = path + (key_node.value,)
            offsets[key_path] = key_node.start_mark.line
            _collect_key_offsets(value_node, key_path, offsets)
