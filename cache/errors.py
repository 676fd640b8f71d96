"""The process's errors: what goes wrong around the spec rather than in it.

- `UsageError`: the command line or the environment is wrong; `EnvironmentFailure` is the
  machine's part of it (a full disk, a read-only cache, a file that is not a regular file,
  a limit exceeded).
- `CompileError`: generated code failed to compile (with each `CompileDiagnostic`).
- `VerifyMismatch`: `build --verify` found cached results that disagree with a fresh run of
  their task.
- `GeneratorFailed`: the spec's own generator, run to check gradshard's files, raised or
  timed out (service/generator/runner.py); `GeneratorMismatch`: it writes other files than
  gradshard, and the build was told that is an error (--generator-check strict).

They derive from the spec problems' root (pipeline/problems.py: GradshardError) but live
here, outside the code version (cache/version.py): no task computes them, and their hints
name command-line flags. The cache is the lowest layer that raises them (the store on a
full disk, gc on a bad argument). Their exit codes are the process's (service/exit_codes.py).
"""

from __future__ import annotations

import errno
from dataclasses import dataclass
from typing import Iterable

from gradshard.pipeline.problems import GradshardError
from gradshard.pipeline.records import Record

__all__ = ["CompileDiagnostic", "CompileError", "EnvironmentFailure", "GeneratorFailed",
           "GeneratorMismatch", "UsageError", "VerifyMismatch"]


class UsageError(GradshardError):
    """The command line or the environment is wrong (not the spec)."""

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


class GeneratorFailed(GradshardError):
    """The spec's own generator failed when run to check gradshard's files: it raised (the
    last lines of its error output are the detail) or it ran past its time limit. The
    build's own files stay, marked unverified."""

    def __init__(self, message: str, detail: str = "", hint: str = "") -> None:
        self.message = message
        self.detail = detail
        self.hint = hint
        super().__init__(message)


class GeneratorMismatch(GradshardError):
    """The spec's generator writes other files than gradshard does (`files`: their names),
    and the build was asked to fail on it (--generator-check strict). `report` says which
    files and their first differing lines."""

    def __init__(self, files: Iterable[str], report: str, hint: str = "") -> None:
        self.files = tuple(files)
        self.report = report
        self.hint = hint
        super().__init__(f"{len(self.files)} generated files differ from the spec's generator")


class VerifyMismatch(GradshardError):
    """`build --verify`: cached task results that differ from what their task computes now.
    Each disagreement names the task (name and ident) and the two hashes."""

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

    def __init__(self, diagnostics: Iterable[CompileDiagnostic], failed: Iterable[str],
                 raw: str, source: str = "derivatives.yaml", directory: str = "") -> None:
        self.diagnostics = tuple(diagnostics)
        self.failed = tuple(failed)
        self.raw = raw
        self.source = source  # the derivatives.yaml path the diagnostics' lines are in
        # the directory the compiler ran in, which a relative generated path is under
        self.directory = directory
        super().__init__(f"{len(self.failed)} unit(s) failed to compile")
