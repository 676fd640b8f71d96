"""Manifests: what a build read and wrote, kept so later commands can compare with it.

`build` stores one per (spec, output directory): the hash of every input (for the no-op
check), of every spec entry (for `affected`: which entries changed), of every output file,
and of the generated code of every autograd node and Python binding.
"""

from __future__ import annotations

from dataclasses import dataclass

from gradshard.pipeline.records import Record


@dataclass(frozen=True, slots=True)
class EntryStamp(Record):
    """One spec entry: its file, its name (label), where it starts, and its content hash."""

    file: str
    label: str
    line: int
    hash: str


@dataclass(frozen=True, slots=True)
class Manifest(Record):
    spec: str
    layout: str
    inputs: tuple[tuple[str, str], ...]  # input name → hash (see service/inputs.py)
    entries: tuple[EntryStamp, ...]
    files: tuple[tuple[str, str], ...]  # output file → content hash
    nodes: tuple[tuple[str, str], ...]  # backward node (op name) → hash of its generated code
    bindings: tuple[tuple[str, str], ...]  # Python name → hash of its generated code
