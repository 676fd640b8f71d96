"""The spec's problems, as the stages find them: the root of gradshard's error hierarchy.

- `SpecError`: the spec is wrong. It carries one or more `Problem`s, each with file, line,
  entry, rule and hint, so that all independent mistakes are reported in one run. Their
  hints are task outputs (a cached run reports them), so they belong to the code version.
- `InternalError`: gradshard itself failed; never caused by spec content.

The process's own errors (usage, the machine, the compiler, --verify) are in
cache/errors.py, outside the code version: their hints name command-line flags, and editing
one must leave every cache warm. No error carries its exit code: that is the process's
business (service/exit_codes.py).

Pure stage code raises `RuleViolation`, which knows the rule but not where the entry lives;
the stage boundary turns it into a `Problem` at the entry's location. Records never hold
absolute line numbers (so an entry that merely moves keeps its cache key): a problem found
by a cross-entry stage names its entry, and `Problem.locate` completes the line later.
"""

from __future__ import annotations

import difflib
import enum
from dataclasses import dataclass, replace
from typing import Iterable, Mapping

from gradshard.pipeline.records import Record

__all__ = ["Failure", "GradshardError", "InternalError", "Problem", "RuleViolation", "SpecError",
           "SpecFile", "YAML_FILES", "did_you_mean"]


class SpecFile(enum.Enum):
    """The spec files gradshard reads; the service maps each to a path on disk."""

    NATIVE_FUNCTIONS = "native_functions.yaml"
    TAGS = "tags.yaml"
    DERIVATIVES = "derivatives.yaml"
    DEPRECATED = "deprecated.yaml"
    TEMPLATES = "templates"  # problems name the template file as their entry


# The YAML files of a spec (the templates directory is read separately).
YAML_FILES = (SpecFile.NATIVE_FUNCTIONS, SpecFile.TAGS, SpecFile.DERIVATIVES, SpecFile.DEPRECATED)


@dataclass(frozen=True, slots=True)
class Problem(Record):
    """One mistake in the spec, as the user will read it.

    `line` is absolute (1-based) once known; until then `line_in_entry` is the offset from
    the first line of the entry named `entry` and `locate` resolves it.
    """

    file: SpecFile
    entry: str
    rule: str
    message: str
    hint: str
    line: int | None = None
    line_in_entry: int = 0
    column: int | None = None

    def locate(self, entry_lines: Mapping[tuple[SpecFile, str], int]) -> Problem:
        if self.line is not None:
            return self
        first = entry_lines.get((self.file, self.entry))
        if first is None:
            return self
        return replace(self, line=first + self.line_in_entry)

    def sort_key(self) -> tuple:
        """Spec-file order (native functions first), then position."""
        return (list(SpecFile).index(self.file), self.line or 0, self.column or 0, self.rule,
                self.message)


@dataclass(frozen=True, slots=True)
class Failure(Record):
    """What a task gives when its inputs break a rule: the problems, named by entry (the
    build places each at its line when it reports them). It is cached like any output (a
    cached run reports the same problems without running anything), and a task given a
    failed input gives the empty failure: the problem is reported where it was found."""

    problems: tuple[Problem, ...] = ()


class GradshardError(Exception):
    """Base of every error gradshard reports to its user."""


class SpecError(GradshardError):
    """The spec has one or more problems; nothing was written."""

    def __init__(self, problems: Iterable[Problem]) -> None:
        self.problems = tuple(problems)
        super().__init__(f"{len(self.problems)} problem(s) in the spec")

    @classmethod
    def located(cls, problems: Iterable[Problem],
                entry_lines: Mapping[tuple[SpecFile, str], int]) -> SpecError:
        """The error for problems named by entry: each placed at its line, in spec order."""
        return cls(sorted((p.locate(entry_lines) for p in problems), key=Problem.sort_key))


class InternalError(GradshardError):
    """A bug in gradshard: reported with its cause, never blamed on the spec."""


class RuleViolation(Exception):
    """Raised inside pure stage code; the stage boundary adds file, entry and line.

    `line_in_entry`, when given, is the offset of the offending line from the entry's
    first line (a formula, a key); `column` is 1-based. `entry` (and `file`, when it is not
    the one the catching code expects) names the culprit when that code looks at several
    entries at once.
    """

    def __init__(self, rule: str, message: str, hint: str, line_in_entry: int | None = None,
                 column: int | None = None, entry: str | None = None,
                 file: SpecFile | None = None) -> None:
        super().__init__(message)
        self.rule = rule
        self.message = message
        self.hint = hint
        self.line_in_entry = line_in_entry
        self.column = column
        self.entry = entry
        self.file = file

    def at(self, line_in_entry: int | None) -> RuleViolation:
        """The same violation, pinned to a line of the entry unless it already has one."""
        if self.line_in_entry is None and line_in_entry is not None:
            self.line_in_entry = line_in_entry
        return self

    def to_problem(self, file: SpecFile, entry: str, entry_line: int | None = None) -> Problem:
        offset = self.line_in_entry or 0
        return Problem(
            file=self.file or file, entry=self.entry or entry, rule=self.rule, message=self.message, hint=self.hint,
            line=None if entry_line is None else entry_line + offset,
            line_in_entry=offset, column=self.column)


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """A hint naming the closest valid spelling, or '' when nothing is close."""
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.75)
    return f"did you mean '{close[0]}'?" if close else ""
