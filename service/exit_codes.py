"""How a command ends: every error's exit code and the way it is reported, in one table that
the command line (service/cli.py) and the daemon's build answers (service/daemon/server.py)
both read, so that `gradshard build` exits with the same code and words whether it built by
itself or a daemon built for it.

| code | the failure |
|---|---|
| 0 | none |
| 1 | the spec has errors (SpecError) |
| 2 | usage or environment (UsageError, EnvironmentFailure, an OSError of the machine's, a
      damaged cache database: it is set aside) |
| 3 | generated code failed to compile (CompileError) |
| 4 | internal error: any other GradshardError, or a bug |
| 6 | `build --verify` found cached results that disagree with their task (VerifyMismatch) |
| 7 | the spec's generator writes other files than gradshard, under `--generator-check strict`
      or in `gradshard generator` (GeneratorMismatch) |
| 8 | the spec's generator failed when run to check gradshard's files: it raised or timed out
      (GeneratorFailed); gradshard's files were written, unverified |
| 130 | interrupted (Ctrl-C); 141 the reader of the output went away (process_end.py) |

`try` adds its verdicts' 0, 2 and 5 (service/live/command.py), `daemon status|stop|logs` 1 for
"no daemon" (service/daemon/commands.py).

Exit codes are the process's business, not the errors': the classes (pipeline/problems.py,
cache/errors.py) carry none, so that a new exit code changes no code version.
"""

from __future__ import annotations

import enum
from typing import NamedTuple

from gradshard.cache.errors import (CompileError, EnvironmentFailure, GeneratorFailed,
                                    GeneratorMismatch, UsageError, VerifyMismatch)
from gradshard.cache.store.database import StoreDamaged
from gradshard.pipeline.problems import GradshardError, SpecError

__all__ = ["EXIT_COMPILE", "EXIT_GENERATOR_FAILED", "EXIT_GENERATOR_MISMATCH", "EXIT_INTERNAL",
           "EXIT_INTERRUPTED", "EXIT_OK", "EXIT_SPEC", "EXIT_USAGE", "EXIT_VERIFY", "Ending",
           "NEXT_BUILD", "RUN_AGAIN", "Report", "damaged_text", "ending_of"]

EXIT_OK, EXIT_SPEC, EXIT_USAGE, EXIT_COMPILE, EXIT_INTERNAL, EXIT_VERIFY = 0, 1, 2, 3, 4, 6
EXIT_GENERATOR_MISMATCH, EXIT_GENERATOR_FAILED = 7, 8
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as a shell reports a command stopped by Ctrl-C


class Report(enum.Enum):
    """How a failure is reported: each reporter (the command line, the daemon's answer) has
    one way for each."""

    SPEC = "spec"  # every problem at its spec line
    USAGE = "usage"  # the message and its hint (--json: also as an object on stdout)
    COMPILE = "compile"  # each diagnostic at its derivatives.yaml line
    VERIFY = "verify"  # each disagreeing task
    GENERATOR = "generator"  # the generator check's failure: its report, or the generator's error
    ERROR = "error"  # another GradshardError: its message
    DAMAGED = "damaged"  # the cache database is set aside, and said so
    INTERNAL = "internal"  # a bug in gradshard: said to be one, its traceback on request


class Ending(NamedTuple):
    """How a command that raised `error` ends: how it is reported, the exit code, and the
    error to report (an OSError of the machine's becomes its EnvironmentFailure)."""

    report: Report
    code: int
    error: BaseException


# The first class an error is an instance of decides; EnvironmentFailure is a UsageError.
_ENDINGS: tuple[tuple[type[BaseException], Report, int], ...] = (
    (SpecError, Report.SPEC, EXIT_SPEC),
    (UsageError, Report.USAGE, EXIT_USAGE),
    (CompileError, Report.COMPILE, EXIT_COMPILE),
    (VerifyMismatch, Report.VERIFY, EXIT_VERIFY),
    (GeneratorMismatch, Report.GENERATOR, EXIT_GENERATOR_MISMATCH),
    (GeneratorFailed, Report.GENERATOR, EXIT_GENERATOR_FAILED),
    (GradshardError, Report.ERROR, EXIT_INTERNAL),
    (StoreDamaged, Report.DAMAGED, EXIT_USAGE),
)


def ending_of(error: BaseException) -> Ending:
    """The one mapping of an error to its exit code and report. An OSError is the machine's
    (a full disk, a permission: a usage error naming it) or else a bug."""
    for kind, report, code in _ENDINGS:
        if isinstance(error, kind):
            return Ending(report, code, error)
    if isinstance(error, OSError):
        failure = EnvironmentFailure.from_os_error(error)
        if failure is not None:
            return Ending(Report.USAGE, EXIT_USAGE, failure)
    return Ending(Report.INTERNAL, EXIT_INTERNAL, error)


# What to do after a damaged database was set aside: the command line's user runs the
# command again; the daemon's next build starts the new cache by itself.
RUN_AGAIN = "run the command again (a new cache is started)"
NEXT_BUILD = "the next build starts a new cache"


def damaged_text(damage: StoreDamaged, next_step: str) -> str:
    """A damaged cache database, once it is set aside."""
    return (f"gradshard: error: the cache database {damage.path} {damage}; it was moved "
            f"aside\n  hint: {next_step}")
