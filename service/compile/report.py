"""How the compile step reports itself: a progress bar on long compiles, one summary line,
and errors placed at their derivatives.yaml line (or the compiler's output, with --raw)."""

from __future__ import annotations

import contextlib
import errno
import os
import re
import sys
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Iterator

from gradshard.cache.errors import CompileDiagnostic, EnvironmentFailure
from gradshard.service.compile.launcher_counts import LauncherCounts

if TYPE_CHECKING:  # the build report imports this module on the no-op path: stay light
    from gradshard.pipeline.layout.compile_layout import CompileUnit

__all__ = ["CompileReport", "PchFailure", "compile_json", "compile_line", "diagnostic_text",
           "environment_failure", "pch_failure_diagnostic", "progress_printer",
           "union", "unit_failure_diagnostic"]


@dataclass
class CompileReport:
    units: int = 0
    compiled: list[str] = field(default_factory=list)  # units whose compiler ran
    cached: list[str] = field(default_factory=list)  # units served from the object cache
    spliced: list[str] = field(default_factory=list)  # merged units patched with edited parts
    failed: list[str] = field(default_factory=list)
    blocked: list[str] = field(default_factory=list)  # failed: splices whose parts failed
    written: int = 0  # compile-directory files rewritten
    seconds: float = 0.0
    logs: dict[str, str] = field(default_factory=dict)  # unit → compiler output
    warnings: list[str] = field(default_factory=list)  # damaged cache entries, made again
    # unit → why it failed when its compiler's messages do not say (object_cache's record:
    # a signal, an OSError such as a full disk)
    failures: dict[str, dict] = field(default_factory=dict)
    pch_failures: list[PchFailure] = field(default_factory=list)
    # what the launcher's cache served of the compiles that reached it (None: no launcher
    # gradshard can count: service/compile/launcher_counts.py)
    launcher: LauncherCounts | None = None

    def then(self, later: CompileReport) -> CompileReport:
        """This run followed by a retry: what either ran or served; what the retry failed."""
        return CompileReport(
            later.units, union(self.compiled, later.compiled),
            union(self.cached, later.cached), union(self.spliced, later.spliced),
            later.failed, later.blocked, self.written + later.written,
            self.seconds + later.seconds, {**self.logs, **later.logs},
            union(self.warnings, later.warnings), later.failures, later.pch_failures,
            added_counts(self.launcher, later.launcher))


@dataclass(frozen=True)
class PchFailure:
    """A precompiled header that failed to build: every unit of its kind waited on it."""

    kind: str
    header: str
    failure: dict | None  # object_cache's record (a signal, an OSError), else see the log
    log: str


def union(first: list[str], second: list[str]) -> list[str]:
    """first, then what second adds to it, in order."""
    return first + [name for name in second if name not in first]


_STATUS = re.compile(r"^\[(\d+)/(\d+)\] ")
QUIET_SECONDS = 1.0  # a compile shorter than this shows no progress at all


def compile_line(report: CompileReport) -> str:
    ran = len(report.compiled) + len(report.cached) + len(report.spliced)
    spliced = f"{len(report.spliced)} spliced, " if report.spliced else ""
    launcher = f" · {report.launcher.text()}" if report.launcher else ""
    return (f"compile: {report.units} units ({len(report.compiled)} compiled, {spliced}"
            f"{len(report.cached)} from the object cache, {report.units - ran} up to date)"
            f"{launcher} · {report.seconds:.2f} s")


def compile_json(report: CompileReport) -> dict:
    return {"units": report.units, "compiled": report.compiled, "cached": report.cached,
            "spliced": report.spliced, "failed": report.failed,
            "seconds": round(report.seconds, 4), "files_written": report.written,
            "warnings": report.warnings,
            "launcher": report.launcher.to_json() if report.launcher else None}


def added_counts(first: LauncherCounts | None,
                 then: LauncherCounts | None) -> LauncherCounts | None:
    """A run's launcher counts and its retry's, as one build's."""
    if first is None or then is None:
        return then or first
    return LauncherCounts(then.launcher, first.hits + then.hits, first.misses + then.misses,
                          first.other + then.other, then.note or first.note)


@contextlib.contextmanager
def progress_printer(enabled: bool) -> Iterator[Callable[[str], None]]:
    """A rich progress bar fed by ninja's status lines, on a terminal, once a compile has
    taken a second; nothing otherwise."""
    if not (enabled and sys.stderr.isatty()):
        yield lambda line: None
        return
    bar = _ProgressBar()
    try:
        yield bar
    finally:
        bar.stop()


class _ProgressBar:
    """ninja's `[done/total]` status lines on a rich progress bar, shown only once the
    compile has taken QUIET_SECONDS: a short compile does not flash a bar."""

    def __init__(self) -> None:
        # imported here: the build report imports this module on the no-op path
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

        self.started = time.perf_counter()
        self.bar = Progress(TextColumn("compiling"), BarColumn(),
                            TextColumn("{task.completed}/{task.total}"), TimeElapsedColumn(),
                            transient=True, console=None)
        self.task = self.bar.add_task("compile", total=None)
        self.shown = False

    def __call__(self, line: str) -> None:
        status = _STATUS.match(line)
        if not status:
            return
        if not self.shown and time.perf_counter() - self.started > QUIET_SECONDS:
            self.bar.start()
            self.shown = True
        self.bar.update(self.task, completed=int(status[1]), total=int(status[2]))

    def stop(self) -> None:
        if self.shown:
            self.bar.stop()


def diagnostic_text(d: CompileDiagnostic, derivatives: str) -> str:
    if d.line is None and not d.entry:
        return f"{d.generated}: error: {d.message}"
    where = f"{derivatives}:{d.line}" if d.line is not None else derivatives
    what = f"{d.entry} ({d.node})" if d.node else d.entry
    formula = f"\n  {d.variables}: {d.formula}" if d.variables else ""
    return (f"{where}: error: generated code for {what} does not compile{formula}\n"
            f"  {d.generated}: error: {d.message}")


# ---------------------------------------------------------------------------------------------
# Failures that are not compiler errors: what failed and why


def failure_text(failure: dict) -> str:
    """object_cache's record of a failure, as a reason."""
    if failure.get("kind") == "signal":
        return (f"{failure.get('program')} was killed by signal {failure.get('signal')} "
                f"({failure.get('name')})")
    where = f" ({failure['path']})" if failure.get("path") else ""
    return f"{failure.get('message')}{where}"


def _os_failure(failure: dict) -> OSError | None:
    if failure.get("kind") != "os" or not isinstance(failure.get("errno"), int):
        return None
    return OSError(failure["errno"], str(failure.get("message")), failure.get("path"))


# How GCC (and the kernel through it) says a write found the disk full, in the C locale.
_NO_SPACE_TEXT = os.strerror(errno.ENOSPC)


def environment_failure(report: CompileReport) -> EnvironmentFailure | None:
    """The machine's failure behind a failed compile, if any: an OSError object_cache met
    (a full disk storing an object, a read-only cache), or a compiler that says its disk is
    full."""
    recorded = [(name, f) for name, f in report.failures.items()]
    recorded += [(f.header, f.failure) for f in report.pch_failures if f.failure]
    for name, failure in recorded:
        error = _os_failure(failure)
        found = error and EnvironmentFailure.from_os_error(error)
        if found:
            return EnvironmentFailure(f"{name}: {found.message}", found.hint, found.path)
    logs = [(name, report.logs.get(name, "")) for name in report.failed]
    logs += [(f.header, f.log) for f in report.pch_failures]
    for name, log in logs:
        line = next((line for line in log.splitlines() if _NO_SPACE_TEXT in line), None)
        if line:
            hint = EnvironmentFailure.from_os_error(OSError(errno.ENOSPC, _NO_SPACE_TEXT)).hint
            return EnvironmentFailure(f"{name}: the compiler ran out of disk space: "
                                      f"{line.strip()}", hint)
    return None


def _cause(what: str, message: str) -> CompileDiagnostic:
    return CompileDiagnostic("", "", "", "", None, what, message)


def pch_failure_diagnostic(failure: PchFailure) -> CompileDiagnostic:
    why = (failure_text(failure.failure) if failure.failure
           else first_error_line(failure.log) or "its compiler failed and printed nothing")
    return _cause(failure.header, f"precompiled header failed to build: {why}")


def unit_failure_diagnostic(unit: CompileUnit, report: CompileReport) -> CompileDiagnostic:
    """Why a unit failed when its compiler's messages name no place in it."""
    if unit.name in report.failures:
        return _cause(unit.name, failure_text(report.failures[unit.name]))
    if unit.name in report.blocked:
        return _cause(unit.name, "not spliced: its edited parts failed to compile")
    if unit.name not in report.logs and unit.pch in {f.kind for f in report.pch_failures}:
        return _cause(unit.name, "not compiled: its precompiled header failed to build")
    if unit.name not in report.logs:
        return _cause(unit.name, "not compiled: ninja did not run it (see its output above)")
    return _cause(unit.name, first_error_line(report.logs[unit.name])
                  or "the compiler failed and printed nothing")


def first_error_line(log: str) -> str:
    """The compiler's first error (`g++: fatal error: Killed signal terminated program
    cc1plus` when the OOM killer took cc1plus), else its last line."""
    lines = [line.strip() for line in log.splitlines() if line.strip()]
    return next((line for line in lines if "error:" in line), lines[-1] if lines else "")
