"""The daemon's `--try` (`watch --try`, `daemon start --try`): once each build has written its
files, the ops whose generated code differs from the installed torch's are patched, and those whose
code this save changed are gradchecked by a warm worker; one line per op.

    save ─► build: files ─► TryChecks.before_compile ─► compile ─► published result
                                 plan (the session's engine, warm) ─► patch library
                                 ─► warm worker (torch and op_db already imported)

It runs between the files and the compile, so that the verdict comes first. Every op that
differs is installed (the process runs the whole edited spec), but only the ops whose code
changed since the last check (their PatchOp.code) are checked again; the verdicts of the
others stay as they were. Nothing here ends a build: a patch that does not compile, or a
worker that dies, is a line of its own.
"""

from __future__ import annotations

import logging
import time
from typing import Callable

from gradshard.cache.errors import CompileError
from gradshard.cache.store.database import StoreDamaged
from gradshard.pipeline.problems import GradshardError
from gradshard.service.compile.report import diagnostic_text
from gradshard.service.exit_codes import ending_of
from gradshard.service.files.spec_location import SpecLocation
from gradshard.service.live.command import (TryOptions, build_library, check_extra,
                                            check_generator, check_ops, compiler_text, op_json,
                                            op_lines, torch_library_dir)
from gradshard.service.live.compiler import TryCompiler, choose_try_compiler
from gradshard.service.live.plan import plan_patch
from gradshard.service.live.process import TryProcess

__all__ = ["TryChecks"]


class TryChecks:
    """What a daemon with --try keeps: its warm worker, and per op the code last checked and
    its verdict (for `daemon status`)."""

    def __init__(self, location: SpecLocation, options: TryOptions,
                 announce: Callable[[str], None], log: logging.Logger) -> None:
        self.location, self.options, self.announce, self.log = location, options, announce, log
        self.worker = TryProcess(options.timeout)
        self.checked: dict[str, str] = {}  # op → the code its verdict is for
        self.ops: dict[str, dict] = {}  # op → its last op_json, verdicts included
        self.last: dict = {}  # the last check: seconds, finished, error, phases
        self.phases: dict[str, float] = {}  # the last check's seconds: plan, build, check
        self.compiler: TryCompiler | None = None  # chosen at start, kept for the daemon's life

    def start(self) -> None:
        """Refuse what cannot work before serving (no try extra, a checkout of another torch
        version); then warm the worker while the first build runs."""
        check_extra()
        check_generator(self.location, ())
        self.compiler = choose_try_compiler(self.location, self.options.cxx, torch_library_dir())
        self.announce("try: patches compile" + compiler_text(self.compiler).removeprefix(";"))
        self.worker.warm()

    def close(self) -> None:
        self.worker.close()

    def status(self) -> dict:
        """`daemon status`'s "checks": the last check, every op's last verdicts, and their
        lines as `try` prints them (status_text prints these without importing anything)."""
        compiler = self.compiler.json() if self.compiler is not None else None
        return {**self.last, "compiler": compiler, "ops": list(self.ops.values()),
                "lines": [line for report in self.ops.values() for line in op_lines(report)]}

    def before_compile(self, session) -> None:
        """The build's hook (service/build.py: build_and_compile's `before_compile`): never
        raises, so that the build goes on to compile whatever happens here."""
        started = time.perf_counter()
        try:
            lines, error = self._check(session), ""
        except CompileError as failure:
            error = "\n".join(diagnostic_text(d, failure.source) for d in failure.diagnostics)
            lines = [f"try: the patch does not compile\n{error}"]
        except GradshardError as failure:
            error = str(failure)
            lines = [f"try: {failure}"]
        except StoreDamaged:
            raise  # the build's own retry sets the store aside and runs again
        except OSError as failure:  # the machine's (a full disk under the try directory)
            error = str(ending_of(failure).error)
            lines = [f"try: {error}"]
        except Exception as failure:  # a bug: reported and logged, the build goes on
            self.log.exception("failure in the --try checks")
            error = f"internal error: {type(failure).__name__}: {failure}"
            lines = [f"try: {error} (a bug in gradshard; the daemon's log has the traceback)"]
        seconds = time.perf_counter() - started
        self.last = {"seconds": round(seconds, 3), "finished": time.time(), "error": error,
                     "phases": self.phases if not error else {}}
        if lines:
            self.announce("\n".join(lines))

    def _check(self, session) -> list[str]:
        """Plan, build, check; the lines to print. The verdicts are replaced as a whole at the
        end: `status` reads them from the socket's threads."""
        started = time.perf_counter()
        plan = plan_patch(self.location, session, ())
        planned = time.perf_counter()
        assert self.compiler is not None  # start() chose it
        library = build_library(plan, self.compiler, self.options.jobs)
        built = time.perf_counter()
        current = {op.name: op for op in plan.ops}
        lines = [f"try: {name}: back to the installed torch's code"
                 for name in self.ops if name not in current]
        due = [op for op in plan.ops if self.checked.get(op.name) != op.code]
        answers = {}
        if library is not None and any(not op.reason for op in due):
            answers = check_ops(library, [op for op in due if not op.reason], self.options,
                                self.worker)
        ops = {name: report for name, report in self.ops.items() if name in current}
        for op in due:
            ops[op.name] = op_json(plan, op, answers.get(op.name, {}))
            lines += ["try: " + line for line in op_lines(ops[op.name])]
        self.checked = {name: current[name].code for name in ops}
        self.ops = dict(sorted(ops.items()))
        self.phases = {"plan": round(planned - started, 3), "build": round(built - planned, 3),
                       "check": round(time.perf_counter() - built, 3)}
        return lines
