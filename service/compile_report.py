"""How the compile step reports itself: a progress bar on long compiles, one summary line,
and errors placed at their derivatives.yaml line (or the compiler's output, with --raw)."""

from __future__ import annotations

import contextlib
import json
import re
import sys
import time
from typing import TYPE_CHECKING, Callable, Iterator

from gradshard.pipeline.errors import CompileDiagnostic, CompileError

if TYPE_CHECKING:  # the build report imports this module on the no-op path: stay light
    from .compile import CompileReport

_STATUS = re.compile(r"^\[(\d+)/(\d+)\] ")
QUIET_SECONDS = 1.0  # a compile shorter than this shows no progress at all


def compile_line(report: CompileReport) -> str:
    ran = len(report.compiled) + len(report.cached) + len(report.spliced)
    spliced = f"{len(report.spliced)} spliced, " if report.spliced else ""
    return (f"compile: {report.units} units ({len(report.compiled)} compiled, {spliced}"
            f"{len(report.cached)} from the object cache, {report.units - ran} up to date)"
            f" · {report.seconds:.2f} s")


def compile_json(report: CompileReport) -> dict:
    return {"units": report.units, "compiled": report.compiled, "cached": report.cached,
            "spliced": report.spliced, "failed": report.failed,
            "seconds": round(report.seconds, 4), "files_written": report.written}


@contextlib.contextmanager
def progress_printer(enabled: bool) -> Iterator[Callable[[str], None]]:
    """A rich progress bar fed by ninja's status lines, on a terminal, once a compile has
    taken a second; nothing otherwise."""
    if not (enabled and sys.stderr.isatty()):
        yield lambda line: None
        return
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    started = time.perf_counter()
    bar = Progress(TextColumn("compiling"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
                   TimeElapsedColumn(), transient=True, console=None)
    task = bar.add_task("compile", total=None)
    shown = False

    def update(line: str) -> None:
        nonlocal shown
        status = _STATUS.match(line)
        if not status:
            return
        if not shown and time.perf_counter() - started > QUIET_SECONDS:
            bar.start()
            shown = True
        bar.update(task, completed=int(status[1]), total=int(status[2]))

    try:
        yield update
    finally:
        if shown:
            bar.stop()


def diagnostic_text(d: CompileDiagnostic, derivatives: str) -> str:
    if d.line is None and not d.entry:
        return f"{d.generated}: error: {d.message}"
    where = f"{derivatives}:{d.line}" if d.line is not None else derivatives
    what = f"{d.entry} ({d.node})" if d.node else d.entry
    formula = f"\n  {d.variables}: {d.formula}" if d.variables else ""
    return (f"{where}: error: generated code for {what} does not compile{formula}\n"
            f"  {d.generated}: error: {d.message}")


def report_compile_error(error: CompileError, raw: bool, as_json: bool) -> None:
    if as_json:
        print(json.dumps({"ok": False, "failed": list(error.failed),
                          "errors": [d.to_json() for d in error.diagnostics]}, indent=2))
    if raw:
        sys.stderr.write(error.raw)
    else:
        for d in error.diagnostics:
            print(diagnostic_text(d, error.source), file=sys.stderr)
    print(f"gradshard: error: {len(error.failed)} unit(s) failed to compile: "
          f"{', '.join(error.failed)}\n  hint: --raw shows the compiler's output as it is",
          file=sys.stderr)
