"""tags.yaml entries → `Tag` records (gen.py: parse_tags_yaml_struct)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from gradshard.pipeline.parse.source import LoadedEntry, quote_value
from gradshard.pipeline.problems import Problem, RuleViolation, SpecFile, did_you_mean
from gradshard.pipeline.records import Record

__all__ = ["Tag", "TagNames", "duplicate_tag", "parse_tag", "tag_names"]

TAG_KEYS = ("tag", "desc")


@dataclass(frozen=True, slots=True)
class Tag(Record):
    name: str
    desc: str


def parse_tag(loaded: LoadedEntry) -> Tag:
    entry = loaded.value
    for key in entry:
        if key not in TAG_KEYS:
            raise RuleViolation("tags.unknown-key", f"unknown key {quote_value(key)}",
                                did_you_mean(str(key), TAG_KEYS) or "a tag has 'tag' and 'desc'",
                                line_in_entry=loaded.offset_of(str(key)))
    name = entry.get("tag")
    if not isinstance(name, str) or not name:
        raise RuleViolation("tags.bad-value", "'tag' must be the tag's name",
                            "write '- tag: my_tag'", line_in_entry=0)
    desc = entry.get("desc", "")
    if desc == "":  # gen.py: parse_tags_yaml_struct rejects exactly this (a null desc passes)
        raise RuleViolation("tags.no-description", f"tag '{name}' has no description",
                            "every tag needs a non-empty 'desc'", line_in_entry=0)
    return Tag(name, desc if isinstance(desc, str) else "")


@dataclass(frozen=True, slots=True)
class TagNames(Record):
    """The declared tags: what a native entry's `tags:` may name. `duplicates` holds each tag
    defined again: its position among the tags and its name."""

    names: tuple[str, ...]
    duplicates: tuple[tuple[int, str], ...] = ()


def tag_names(tags: Sequence[Tag], failed: Sequence[str] = ()) -> TagNames:
    """The tags' names, the first definition of each kept; a tag whose entry failed to parse
    (`failed`: their labels) still counts as declared, so its users are not blamed too."""
    first: dict[str, int] = {}
    duplicates = []
    for position, tag in enumerate(tags):
        if tag.name in first:
            duplicates.append((position, tag.name))
        first.setdefault(tag.name, position)
    return TagNames(tuple(first) + tuple(f for f in failed if f not in first), tuple(duplicates))


def duplicate_tag(name: str, line: int) -> Problem:
    """A tag defined again, at the line of its second definition."""
    return Problem(SpecFile.TAGS, name, "tags.duplicate", f"tag '{name}' is defined twice",
                   "remove one definition", line=line)
