"""tags.yaml entries → `Tag` records (gen.py: parse_tags_yaml_struct)."""

from __future__ import annotations

from dataclasses import dataclass

from .errors import RuleViolation, did_you_mean
from .records import Record
from .source import LoadedEntry, quote_value

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
    """The declared tags: what a native entry's `tags:` may name."""

    names: tuple[str, ...]


def tag_names(tags: tuple[Tag, ...]) -> TagNames:
    seen: set[str] = set()
    for tag in tags:
        if tag.name in seen:
            raise RuleViolation("tags.duplicate", f"tag '{tag.name}' is defined twice",
                                "remove one definition")
        seen.add(tag.name)
    return TagNames(tuple(t.name for t in tags))
