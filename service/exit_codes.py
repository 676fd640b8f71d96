"""How a command ends: every exit code any command can exit with, each with one meaning
(EXIT_CODES: the table usage.md's "Exit codes" shows, checked against it by
tests/test_exit_codes.py), and every error's exit code and the way it is reported (ending_of),
which the command line (service/cli.py) and the daemon's build answers
(service/daemon/server.py) both read, and service/report/endings.py puts in words for both,
so that `gradshard build` exits with the same code and words whether it built by itself or
a daemon built for it.

`try`'s verdicts (service/live/command.py) and `daemon status|stop|logs`'s "no daemon"
(service/daemon/commands.py, runtime.py) take their codes from here too. Until issue 47
"nothing could be checked" was 2 (usage's), "no daemon" 1 (the spec's) and a try worker that
overran or died 2 (documented as 4): each has a code of its own now.

Exit codes are the process's business, not the errors': the classes (pipeline/problems.py,
cache/errors.py) carry none, so that a new exit code changes no code version. This module
imports no error class until an error is to be ended: `gradshard daemon status` (editors poll
it: service/daemon/runtime.py) reads its codes from the standard library alone.
"""

from __future__ import annotations

import enum
from typing import NamedTuple

__all__ = ["EXIT_CLOSED_PIPE", "EXIT_CODES", "EXIT_COMPILE", "EXIT_GENERATOR_FAILED",
           "EXIT_GENERATOR_MISMATCH", "EXIT_INTERNAL", "EXIT_INTERRUPTED", "EXIT_NO_DAEMON",
           "EXIT_OK", "EXIT_SPEC", "EXIT_TRY_FAILED", "EXIT_TRY_NOTHING", "EXIT_TRY_WORKER",
           "EXIT_USAGE", "EXIT_VERIFY", "Ending", "ExitCode", "Report", "ending_of"]

EXIT_OK, EXIT_SPEC, EXIT_USAGE, EXIT_COMPILE, EXIT_INTERNAL = 0, 1, 2, 3, 4
EXIT_TRY_FAILED, EXIT_VERIFY, EXIT_GENERATOR_MISMATCH, EXIT_GENERATOR_FAILED = 5, 6, 7, 8
EXIT_TRY_WORKER, EXIT_TRY_NOTHING, EXIT_NO_DAEMON = 9, 10, 11
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as a shell reports a command stopped by Ctrl-C
EXIT_CLOSED_PIPE = 141  # 128 + SIGPIPE, as a shell tool killed by it (service/process_end.py)


class ExitCode(NamedTuple):
    """One exit code and its one meaning, word for word as usage.md's table gives it."""

    code: int
    meaning: str


EXIT_CODES: tuple[ExitCode, ...] = (
    ExitCode(EXIT_OK, "success"),
    ExitCode(EXIT_SPEC, "the spec has errors (all of them are listed; nothing is written)"),
    ExitCode(EXIT_USAGE, "usage or environment error: bad arguments, no spec found, unreadable "
             "files or directories, a spec file that is not a regular file or is over the "
             "size limit, unknown NAME, no recorded build to compare with, a cache that cannot "
             "be opened (locked, read-only, not writable) or written (disk full: the database "
             "is kept), an output directory that cannot be written (disk full: its files are "
             "kept), or a cache found damaged by `stats`/`gc` (it is moved aside)"),
    ExitCode(EXIT_COMPILE, "generated code failed to compile (`gradshard build`, "
             "`gradshard try`)"),
    ExitCode(EXIT_INTERNAL, "internal error: a bug in gradshard (set `GRADSHARD_DEBUG=1` for "
             "the traceback)"),
    ExitCode(EXIT_TRY_FAILED, "`gradshard try`: a gradient check failed"),
    ExitCode(EXIT_VERIFY, "`build --verify` found cached results that disagree with a fresh "
             "run of their task (listed; the rows were rewritten)"),
    ExitCode(EXIT_GENERATOR_MISMATCH, "the spec's generator writes other files than "
             "gradshard: `build --generator-check strict` (nothing written), "
             "`gradshard generator`"),
    ExitCode(EXIT_GENERATOR_FAILED, "the spec's generator failed when run to check "
             "gradshard's files (it raised, exited, was killed, timed out or lacks one of its "
             "modules); gradshard's files were written, unverified"),
    ExitCode(EXIT_TRY_WORKER, "`gradshard try`: its worker process ran past `--timeout`, "
             "died (patched code that crashes it) or failed in itself; its last stderr lines "
             "are printed"),
    ExitCode(EXIT_TRY_NOTHING, "`gradshard try`: nothing could be checked (no op's code "
             "changed, or no op could be patched or has samples: each op's reason is printed)"),
    ExitCode(EXIT_NO_DAEMON, "`gradshard daemon status|stop|logs`: no daemon runs for this "
             "spec and cache (`logs`: none has written a log yet)"),
    ExitCode(EXIT_INTERRUPTED, "interrupted (Ctrl-C)"),
    ExitCode(EXIT_CLOSED_PIPE, "the reader of the output went away (`gradshard affected | "
             "head`): gradshard stops quietly, with the status a shell tool killed by SIGPIPE "
             "has"),
)


class Report(enum.Enum):
    """How a failure is reported: the command line and the daemon's answer say each in the
    same words, service/report/endings.py's."""

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


def _endings() -> tuple[tuple[type[BaseException], Report, int], ...]:
    """Each error class, how it is reported and its exit code; the first class an error is an
    instance of decides (a try worker's failure and EnvironmentFailure are UsageErrors)."""
    from gradshard.cache.errors import (CompileError, GeneratorFailed, GeneratorMismatch,
                                        UsageError, VerifyMismatch)
    from gradshard.cache.store.database import StoreDamaged
    from gradshard.pipeline.problems import GradshardError, SpecError
    from gradshard.service.live.process import TryWorkerFailure

    return ((SpecError, Report.SPEC, EXIT_SPEC),
            (TryWorkerFailure, Report.USAGE, EXIT_TRY_WORKER),
            (UsageError, Report.USAGE, EXIT_USAGE),
            (CompileError, Report.COMPILE, EXIT_COMPILE),
            (VerifyMismatch, Report.VERIFY, EXIT_VERIFY),
            (GeneratorMismatch, Report.GENERATOR, EXIT_GENERATOR_MISMATCH),
            (GeneratorFailed, Report.GENERATOR, EXIT_GENERATOR_FAILED),
            (GradshardError, Report.ERROR, EXIT_INTERNAL),
            (StoreDamaged, Report.DAMAGED, EXIT_USAGE))


def ending_of(error: BaseException) -> Ending:
    """The one mapping of an error to its exit code and report. An OSError is the machine's
    (a full disk, a permission: a usage error naming it) or else a bug."""
    from gradshard.cache.errors import EnvironmentFailure

    for kind, report, code in _endings():
        if isinstance(error, kind):
            return Ending(report, code, error)
    if isinstance(error, OSError):
        failure = EnvironmentFailure.from_os_error(error)
        if failure is not None:
            return Ending(Report.USAGE, EXIT_USAGE, failure)
    return Ending(Report.INTERNAL, EXIT_INTERNAL, error)

