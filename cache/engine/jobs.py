"""What the engine runs: a task (a pure function over records) or a group (a task whose body
runs tasks), and the key of one run, known before anything runs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

import xxhash

from gradshard.pipeline.problems import SpecFile
from gradshard.pipeline.records import Record

__all__ = ["Group", "Task", "task_key"]


@dataclass(frozen=True)
class Task:
    """A pure function over records. `inputs` names each argument (for "why it ran");
    `output` is the record type it returns, or of each item when it fans out. A rule the
    inputs break (RuleViolation, SpecError) makes the output a `Failure`; a violation that
    names no entry blames the task's ident, an entry of the file `blames`. A task that
    `forks` costs well above reading its output back: a long map of it may hand part of
    its runs to a forked child while a processor is free."""

    name: str
    stage: str
    compute: Callable[..., Any]
    output: type
    inputs: tuple[str, ...]
    fan_out: bool = False
    blames: SpecFile | None = None
    forks: bool = False


@dataclass(frozen=True)
class Group:
    """A task whose body runs tasks: body(engine, *input values) → an index record."""

    name: str
    stage: str
    body: Callable[..., Record]
    output: type
    inputs: tuple[str, ...]


def task_key(name: str, version: str, inputs: Sequence[str]) -> str:
    """xxh3-128 over the job's name, the code version and its inputs' content hashes."""
    return xxhash.xxh3_128_hexdigest("\x00".join((name, version, *inputs)).encode())
