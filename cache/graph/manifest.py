"""Manifests: what a build read and wrote, kept so later commands can compare with it.

`build` stores one per (spec, output directory): the hash of every input (the no-op check
reads those from the manifests table directly), the entry stamps of each spec file (for
`affected`: which entries changed), and the build's index (every output file, and the
generated code of every node and binding, by hash).

A build on the host path (service/host/) keeps a HostManifest instead: the inputs, and its
HostIndex (every output file, and every item value its generation used, by hash), from which
the next build's fresh worker gets its memo.
"""

from __future__ import annotations

from dataclasses import dataclass

from gradshard.cache.engine.jobs import task_of
from gradshard.pipeline.parse.source import split_entries
from gradshard.pipeline.parse.spec import entry_label
from gradshard.pipeline.problems import SpecFile
from gradshard.pipeline.records import Record, Text, content_hash

__all__ = ["ENTRY_STAMPS", "EntryStamp", "EntryStamps", "HostIndex", "HostManifest", "Manifest"]


@dataclass(frozen=True, slots=True)
class EntryStamp(Record):
    """One spec entry: its name (label), where it starts, and its content hash."""

    label: str
    line: int
    hash: str


@dataclass(frozen=True, slots=True)
class EntryStamps(Record):
    file: str
    stamps: tuple[EntryStamp, ...]


def entry_stamps(file: Text, text: Text) -> EntryStamps:
    spec_file = SpecFile(file.text)
    return EntryStamps(file.text, tuple(EntryStamp(entry_label(e), e.line, content_hash(e.text))
                                        for e in split_entries(spec_file, text.text)))


ENTRY_STAMPS = task_of("manifest.entry_stamps", "parse", entry_stamps)


@dataclass(frozen=True, slots=True)
class Manifest(Record):
    spec: str
    layout: str
    inputs: tuple[tuple[str, str], ...]  # input name → hash (see service/files/inputs.py)
    entries: tuple[str, ...]  # EntryStamps of each spec file, by hash
    index: str  # the BuildIndex


@dataclass(frozen=True, slots=True)
class HostIndex(Record):
    """What a host-path generation made: its generator (hash), every file (name → text
    hash), every item value it used (item key → value hash, blob_hash "text") and what those
    items are of (key, qualified function, subject: a node or an op, part: which of its
    parts, JSON), which `affected` compares and `try` patches."""

    generator: str
    files: tuple[tuple[str, str], ...]
    items: tuple[tuple[str, str], ...]
    subjects: tuple[tuple[str, str, str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class HostManifest(Record):
    spec: str
    layout: str
    inputs: tuple[tuple[str, str], ...]  # input name → hash (see service/files/inputs.py)
    index: str  # the HostIndex
