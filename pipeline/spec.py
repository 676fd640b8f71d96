"""The parse stage end to end: spec texts → every record the later stages start from.

Each entry is parsed on its own (`parse_*_entry`), then the cross-entry steps run in
torchgen's order (gen.py: parse_native_yaml_struct, then load_derivatives.py:
load_derivatives). Problems are collected rather than raised one by one, so a run reports
every independent mistake; an entry that fails is left out of the later steps, and
follow-on errors it would cause (a formula for a function that failed to parse) are not
reported twice.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable, TypeVar

from .deprecated import DeprecatedSignature, parse_deprecated
from .derivatives import DerivativeEntry, parse_derivative_entry
from .differentiability import (EntryInfos, derivative_buckets, derive_entry_infos,
                                duplicate_entry, known_function, number_ops, unknown_schema,
                                view_copy_infos)
from .errors import YAML_FILES, Problem, RuleViolation, SpecError, SpecFile
from .generation import generated_functions, group_by_signature
from .matching import MatchResult, match_infos
from .native import NativeFunction, parse_native_function
from .native_checks import cross_function_problems
from .records import Record
from .source import Entry, decode_spec_text, load_entry, split_entries
from .tags import Tag, duplicate_tag, parse_tag
from .views import ViewGrouping, group_views

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class SpecTexts(Record):
    """The four spec files' contents (the templates join in the render stage)."""

    native_functions: str
    tags: str
    derivatives: str
    deprecated: str

    def text_of(self, file: SpecFile) -> str:
        return getattr(self, file.name.lower())


@dataclass(frozen=True, slots=True)
class NativeSpec:
    """The ATen side of the spec (gen.py: parse_native_yaml plus deprecated.yaml): all the
    Python bindings need. Not a cache record: its parts are."""

    entries: dict[SpecFile, tuple[Entry, ...]]
    tags: tuple[Tag, ...]
    native_functions: tuple[NativeFunction, ...]
    deprecated: tuple[DeprecatedSignature, ...]

    def entry_lines(self) -> dict[tuple[SpecFile, str], int]:
        return entry_lines(self.entries, generated_origins(self.native_functions))


@dataclass(frozen=True, slots=True)
class ParsedSpec:
    """Everything the parse stage knows. Not a cache record: its parts are."""

    entries: dict[SpecFile, tuple[Entry, ...]]
    tags: tuple[Tag, ...]
    native_functions: tuple[NativeFunction, ...]
    view_grouping: ViewGrouping
    deprecated: tuple[DeprecatedSignature, ...]
    derivative_entries: tuple[DerivativeEntry, ...]
    infos: tuple[EntryInfos, ...]

    def entry_lines(self) -> dict[tuple[SpecFile, str], int]:
        return entry_lines(self.entries, generated_origins(self.native_functions))


# ---------------------------------------------------------------------------------------------
# Per-entry parsers: each depends only on its entry's text (plus the valid tags).


def parse_tag_entry(entry: Entry) -> Tag:
    return parse_tag(load_entry(entry))


def parse_native_entry(entry: Entry, valid_tags: frozenset[str]) -> NativeFunction:
    return parse_native_function(load_entry(entry), valid_tags)


def parse_deprecated_entry(entry: Entry) -> DeprecatedSignature:
    return parse_deprecated(load_entry(entry))


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
# The whole stage


class _ProblemLog:
    def __init__(self) -> None:
        self.problems: list[Problem] = []

    def attempt(self, entry: Entry, parse: Callable[..., T], *args: object) -> T | None:
        """parse(*args), or None with the violation logged at the entry."""
        try:
            return parse(*args)
        except RuleViolation as violation:
            self.problems.append(violation.to_problem(entry.file, entry_label(entry), entry.line))
            return None

    def extend(self, problems: list[Problem]) -> None:
        self.problems.extend(problems)

    def raise_if_any(self, entry_lines: Callable[[], dict[tuple[SpecFile, str], int]]) -> None:
        """SpecError with every problem, each located at its entry's line, sorted."""
        if self.problems:
            raise SpecError.located(self.problems, entry_lines())


NATIVE_SIDE = (SpecFile.NATIVE_FUNCTIONS, SpecFile.TAGS, SpecFile.DEPRECATED)


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


def parse_spec(texts: SpecTexts) -> ParsedSpec:
    """Parse and validate the whole spec; raises SpecError listing every problem found."""
    entries = split_spec(texts)
    log = _ProblemLog()
    natives, failed_schemas = _parse_native_side(entries, log)
    grouping, problems = group_views(list(natives.native_functions))
    log.extend(problems)
    derivative_entries, infos = _load_derivatives(entries[SpecFile.DERIVATIVES], grouping,
                                                  failed_schemas, log)
    spec = ParsedSpec(entries, natives.tags, natives.native_functions, grouping,
                      natives.deprecated, tuple(derivative_entries), tuple(infos))
    log.raise_if_any(spec.entry_lines)
    return spec


def parse_native_spec(texts: SpecTexts) -> NativeSpec:
    """Only the files the Python bindings read (gen_python_functions.py: gen); derivatives.yaml
    is neither split nor checked."""
    log = _ProblemLog()
    natives, _ = _parse_native_side(split_spec(texts, NATIVE_SIDE), log)
    log.raise_if_any(natives.entry_lines)
    return natives


def _parse_native_side(entries: dict[SpecFile, tuple[Entry, ...]],
                       log: _ProblemLog) -> tuple[NativeSpec, set[str]]:
    """gen.py: parse_native_yaml_struct and add_generated_native_functions, then
    deprecated.yaml; also the labels of the native entries that failed."""
    tags, failed_tags = _parse_tags(entries[SpecFile.TAGS], log)
    # a tag whose entry failed still counts as declared, so its users are not blamed too
    valid_tags = frozenset(t.name for t in tags) | failed_tags
    yaml_functions, failed_schemas = _parse_natives(entries[SpecFile.NATIVE_FUNCTIONS],
                                                    valid_tags, log)
    log.extend(cross_function_problems(yaml_functions))
    groups, problems = group_by_signature(yaml_functions)
    log.extend(problems)
    generated, problems = generated_functions(groups)
    log.extend(problems)
    deprecated = _parse_deprecated(entries[SpecFile.DEPRECATED], log)
    native_entries = {f: entries[f] for f in NATIVE_SIDE}
    return (NativeSpec(native_entries, tuple(tags), tuple(yaml_functions + generated),
                       tuple(deprecated)), failed_schemas)


def _parse_tags(entries: tuple[Entry, ...], log: _ProblemLog) -> tuple[list[Tag], set[str]]:
    tags: dict[str, Tag] = {}
    failed: set[str] = set()
    for entry in entries:
        tag = log.attempt(entry, parse_tag_entry, entry)
        if tag is None:
            failed.add(entry_label(entry))
            continue
        if tag.name in tags:
            log.extend([duplicate_tag(tag.name, entry.line)])
            continue
        tags[tag.name] = tag
    return list(tags.values()), failed


def _parse_deprecated(entries: tuple[Entry, ...], log: _ProblemLog) -> list[DeprecatedSignature]:
    parsed = (log.attempt(entry, parse_deprecated_entry, entry) for entry in entries)
    return [d for d in parsed if d is not None]


def _parse_natives(entries: tuple[Entry, ...], valid_tags: frozenset[str],
                   log: _ProblemLog) -> tuple[list[NativeFunction], set[str]]:
    functions = []
    failed: set[str] = set()
    for entry in entries:
        fn = log.attempt(entry, parse_native_entry, entry, valid_tags)
        if fn is None:
            failed.add(entry_label(entry))
        else:
            functions.append(fn)
    return functions, failed


def _load_derivatives(entries: tuple[Entry, ...], grouping: ViewGrouping, failed_natives: set[str],
                      log: _ProblemLog) -> tuple[list[DerivativeEntry], list[EntryInfos]]:
    """load_derivatives.py: load_derivatives, one entry at a time."""
    index = _NativeIndex(grouping.ordered)
    log.extend(list(index.lookup.problems))
    parsed: list[DerivativeEntry] = []
    infos: list[EntryInfos] = []
    seen: dict[str, Entry] = {}
    for entry in entries:
        derivative = log.attempt(entry, parse_derivatives_entry, entry)
        if derivative is None:
            continue
        parsed.append(derivative)
        if derivative.op_name in failed_natives:
            continue  # its function already failed to parse; don't report it twice
        result = log.attempt(entry, _entry_infos, derivative, index)
        if result is None:
            continue
        first = seen.setdefault(str(result.schema), entry)
        if first is not entry:
            log.extend([duplicate_entry(derivative.op_name, str(result.schema.name), entry.line,
                                        first.line)])
            continue
        infos.append(result)
    numbered = number_ops(infos)
    return parsed, numbered + view_copy_infos(numbered, grouping.groups)


def match_spec(spec: ParsedSpec) -> MatchResult:
    """The match stage over a parsed spec: every function's infos, foreach ones synthesized;
    raises SpecError listing every function that cannot be matched."""
    result, problems = match_infos(spec.native_functions, spec.infos)
    if problems:
        raise SpecError.located(problems, spec.entry_lines())
    return result


class _NativeIndex:
    """The lookups over the view-grouped function order, with the functions themselves."""

    def __init__(self, ordered: tuple[NativeFunction, ...]) -> None:
        self.ordered = ordered
        self.lookup = derivative_buckets(ordered, range(len(ordered)))
        self.by_schema = {text: bucket for text, _, bucket in self.lookup.schemas}


def _entry_infos(entry: DerivativeEntry, index: _NativeIndex) -> EntryInfos:
    bucket = index.by_schema.get(entry.name)
    if bucket is None:
        raise unknown_schema(entry, [known_function(f) for f in index.ordered])
    return derive_entry_infos(entry, tuple(index.ordered[p] for p in index.lookup.buckets[bucket]))


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
