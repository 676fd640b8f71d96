"""The error hierarchy: every failure a user can cause is one of these, with structured fields.

- `SpecError` (exit code 1): the spec is wrong. It carries one or more `Problem`s, each with
  file, line, entry, rule and hint, so that all independent mistakes are reported in one run.
- `UsageError` (exit code 2): the command line or the environment is wrong;
  `EnvironmentFailure` is the machine's part of it (a full disk, a read-only cache, a file
  that is not a regular file, a limit exceeded).
- `CompileError` (exit code 3): generated code failed to compile.
- `InternalError` (exit code 4): gradshard itself failed; never caused by spec content.
- `VerifyMismatch` (exit code 6): `build --verify` found cached results that disagree with a
  fresh run of their task.

Pure stage code raises `RuleViolation`, which knows the rule but not where the entry lives;
the stage boundary turns it into a `Problem` at the entry's location. Records never hold
absolute line numbers (so an entry that merely moves keeps its cache key): a problem found
by a cross-entry stage names its entry, and `Problem.locate` completes the line later.
"""

from __future__ import annotations

import difflib
import enum
import errno
from dataclasses import dataclass, replace
from typing import Iterable, Mapping

from .records import Record


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

    exit_code = 4


class SpecError(GradshardError):
    """The spec has one or more problems; nothing was written."""

    exit_code = 1

    def __init__(self, problems: Iterable[Problem]) -> None:
        self.problems = tuple(problems)
        super().__init__(f"{len(self.problems)} problem(s) in the spec")

    @classmethod
    def located(cls, problems: Iterable[Problem],
                entry_lines: Mapping[tuple[SpecFile, str], int]) -> SpecError:
        """The error for problems named by entry: each placed at its line, in spec order."""
        return cls(sorted((p.locate(entry_lines) for p in problems), key=Problem.sort_key))


class UsageError(GradshardError):
    """The command line or the environment is wrong (not the spec)."""

    exit_code = 2

    def __init__(self, message: str, hint: str = "") -> None:
        self.message = message
        self.hint = hint
        super().__init__(message)


class EnvironmentFailure(UsageError):
    """The machine, not the spec or gradshard, failed or refused: a full disk, a read-only or
    unreadable directory, a FIFO where a spec file should be, an input over a size limit.
    Nothing is damaged; the message says what failed and the hint what to do."""

    def __init__(self, message: str, hint: str = "", path: str | None = None) -> None:
        self.path = path
        super().__init__(message, hint)

    @classmethod
    def from_os_error(cls, error: OSError) -> EnvironmentFailure | None:
        """The failure an OSError reports, when it is the machine's (None: a bug)."""
        hint = _OS_ERROR_HINTS.get(error.errno or 0)
        if hint is None:
            return None
        where = f" ({error.filename})" if error.filename else ""
        return cls(f"{error.strerror or error}{where}", hint,
                   None if error.filename is None else str(error.filename))


# OSErrors that are the machine's, with what to do about each.
_OS_ERROR_HINTS = {
    errno.ENOSPC: "free space on that filesystem, or point --out/--cache elsewhere",
    errno.EDQUOT: "free space within your quota, or point --out/--cache elsewhere",
    errno.EROFS: "that filesystem is read-only: point --out/--cache at a writable directory",
    errno.EACCES: "check the permissions of that file and its directories",
    errno.EPERM: "check the permissions of that file and its directories",
    errno.EIO: "the device reported an I/O error: check the disk",
    errno.EMFILE: "too many open files: raise the limit (ulimit -n)",
    errno.ENFILE: "the system is out of file handles",
    errno.ENAMETOOLONG: "use a shorter path",
    errno.ELOOP: "a symbolic link points to itself",
    errno.ENOTDIR: "a part of the path is a file, not a directory",
    errno.EISDIR: "a directory stands where a file is expected",
}


class VerifyMismatch(GradshardError):
    """`build --verify`: cached task results that differ from what their task computes now.
    Each disagreement names the task (name and ident) and the two hashes."""

    exit_code = 6

    def __init__(self, disagreements: Iterable[str]) -> None:
        self.disagreements = tuple(disagreements)
        super().__init__(f"{len(self.disagreements)} cached result(s) disagree with their task")


@dataclass(frozen=True, slots=True)
class CompileDiagnostic(Record):
    """A compiler error in generated code, placed at its source: the derivatives.yaml line
    of the formula when the code came from one (else `line` is None), the entry, the
    variable and formula, and the compiler's own words at the generated file's line."""

    entry: str
    node: str
    variables: str
    formula: str
    line: int | None
    generated: str  # path:line:column of the generated code
    message: str  # the compiler's diagnostic, as printed


class CompileError(GradshardError):
    """Generated code failed to compile: units that compiled are kept."""

    exit_code = 3

    def __init__(self, diagnostics: Iterable[CompileDiagnostic], failed: Iterable[str],
                 raw: str, source: str = "derivatives.yaml") -> None:
        self.diagnostics = tuple(diagnostics)
        self.failed = tuple(failed)
        self.raw = raw
        self.source = source  # the derivatives.yaml path the diagnostics' lines are in
        super().__init__(f"{len(self.failed)} unit(s) failed to compile")


class InternalError(GradshardError):
    """A bug in gradshard: reported with its cause, never blamed on the spec."""

    exit_code = 4


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
