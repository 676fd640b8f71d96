"""The spec's files as the stages read them: decoded texts, their entries, each entry parsed
on its own (`parse_*_entry`), how problems name an entry and where each entry starts.

The stages that look across entries run as the build graph's tasks (cache/graph/build_graph.py), in
torchgen's order (gen.py: parse_native_yaml_struct, then load_derivatives.py:
load_derivatives).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from gradshard.pipeline.parse.deprecated import DeprecatedSignature, parse_deprecated
from gradshard.pipeline.parse.derivatives import DerivativeEntry, parse_derivative_entry
from gradshard.pipeline.parse.native import NativeFunction, parse_native_function
from gradshard.pipeline.parse.source import Entry, decode_spec_text, load_entry, split_entries
from gradshard.pipeline.parse.tags import Tag, parse_tag
from gradshard.pipeline.problems import YAML_FILES, Problem, SpecError, SpecFile
from gradshard.pipeline.records import Record
from gradshard.pipeline.releases import Release

__all__ = ["SpecTexts", "decode_spec", "entry_label", "entry_lines", "generated_origins",
           "parse_deprecated_entry", "parse_derivatives_entry", "parse_native_entry",
           "parse_tag_entry", "split_spec"]


@dataclass(frozen=True, slots=True)
class SpecTexts(Record):
    """The four spec files' contents (the templates join in the render stage)."""

    native_functions: str
    tags: str
    derivatives: str
    deprecated: str

    def text_of(self, file: SpecFile) -> str:
        return getattr(self, file.name.lower())


# ---------------------------------------------------------------------------------------------
# Per-entry parsers: each depends only on its entry's text (plus the valid tags).


def parse_tag_entry(entry: Entry) -> Tag:
    return parse_tag(load_entry(entry))


def parse_native_entry(entry: Entry, valid_tags: frozenset[str], release: Release
                       ) -> NativeFunction:
    return parse_native_function(load_entry(entry), valid_tags, release)


def parse_deprecated_entry(entry: Entry, release: Release) -> DeprecatedSignature:
    return parse_deprecated(load_entry(entry), release)


def parse_derivatives_entry(entry: Entry) -> DerivativeEntry:
    return parse_derivative_entry(load_entry(entry))


# The key whose value names an entry, per file.
_NAME_KEYS = {SpecFile.NATIVE_FUNCTIONS: "func", SpecFile.DERIVATIVES: "name",
              SpecFile.DEPRECATED: "name", SpecFile.TAGS: "tag"}


def entry_label(entry: Entry) -> str:
    """How problems name an entry before it parses: its operator or tag name, read from the
    text, or 'entry at line N'."""
    first = entry.text.split("\n", 1)[0][1:].strip()
    key, sep, value = first.partition(":")
    value = value.split(" #", 1)[0].strip().strip("'\"")
    if sep and key.strip() == _NAME_KEYS[entry.file] and value:
        # deprecated entries share operator names, so their whole schema names them
        return value if entry.file is SpecFile.DEPRECATED else value.split("::")[-1].split("(", 1)[0]
    return f"entry at line {entry.line}"


# ---------------------------------------------------------------------------------------------
# Whole files


def split_spec(texts: SpecTexts,
               files: tuple[SpecFile, ...] = YAML_FILES) -> dict[SpecFile, tuple[Entry, ...]]:
    """All entries of the given files; every file's split problems are reported together."""
    entries: dict[SpecFile, tuple[Entry, ...]] = {}
    problems: list[Problem] = []
    for file in files:
        try:
            entries[file] = split_entries(file, texts.text_of(file))
        except SpecError as error:
            problems.extend(error.problems)
    if problems:
        raise SpecError(problems)
    return entries


def decode_spec(data: dict[SpecFile, bytes]) -> SpecTexts:
    texts: dict[str, str] = {}
    problems: list[Problem] = []
    for file in YAML_FILES:
        try:
            texts[file.name.lower()] = decode_spec_text(file, data[file])
        except SpecError as error:
            problems.extend(error.problems)
    if problems:
        raise SpecError(problems)
    return SpecTexts(**texts)


def entry_lines(entries: dict[SpecFile, tuple[Entry, ...]],
                generated: Iterable[tuple[str, str]]) -> dict[tuple[SpecFile, str], int]:
    """Where each named entry starts; generated functions (`generated`: each one's name and
    the name of the function it comes from) point at the entry they come from."""
    lines: dict[tuple[SpecFile, str], int] = {}
    for file, file_entries in entries.items():
        for entry in file_entries:
            lines.setdefault((file, entry_label(entry)), entry.line)
    for name, origin in generated:
        source = lines.get((SpecFile.NATIVE_FUNCTIONS, origin))
        if source is not None:
            lines.setdefault((SpecFile.NATIVE_FUNCTIONS, name), source)
    return lines


def generated_origins(functions: Iterable[NativeFunction]) -> list[tuple[str, str]]:
    """Each generated function's name, with the name of the function it comes from."""
    return [(str(f.func.name), str(f.generated_from)) for f in functions
            if f.generated_from is not None]
