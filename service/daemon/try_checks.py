"""The daemon's `--try` (`watch --try`, `daemon start --try`): once each build's graph has run,
the ops whose generated code differs from the installed torch's are patched, and those whose
code this save changed are gradchecked by a warm worker; one line per op.

    save ─► build: graph ─► TryChecks.after_graph ─► files ─► compile ─► published result
                             plan (from the build's run) ─► patch library
                             ─► warm worker (torch and op_db already imported)

It runs between the graph and the files, so that the verdict comes first: the plan reads the
build's own run (no graph runs again), and the files follow it (~50 ms of writes and rows).
Every op that differs is installed (the process runs the whole edited spec), but only the
ops whose code changed since the last check (their PatchOp.code) are checked again; the
verdicts of the others stay as they were. Each op's verdict line is announced as soon as the
worker knows it (and `daemon status` shows it), the failing samples with their errors located
after all of them. Nothing here ends a build: a patch that does not compile, or a worker that
dies, is a line of its own.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field, replace
from functools import partial
from typing import TYPE_CHECKING, Callable

from gradshard.cache.errors import CompileError
from gradshard.cache.store.database import StoreDamaged
from gradshard.pipeline.problems import GradshardError
from gradshard.service.compile.report import diagnostic_text
from gradshard.service.exit_codes import ending_of
from gradshard.service.files.spec_location import SpecLocation
from gradshard.service.generator.identity import identify_generator
from gradshard.service.live.command import (TryOptions, build_library, check_extra,
                                            check_generator, check_ops, compiler_text, failed,
                                            op_json, op_lines, torch_library_dir, verdict_line)
from gradshard.service.live.compiler import TryCompiler, choose_try_compiler
from gradshard.service.live.plan import PatchOp, PatchPlan, plan_patch
from gradshard.service.live.process import TryProcess

if TYPE_CHECKING:
    from gradshard.service.graph_run import GraphResult

__all__ = ["TryChecks"]


@dataclass(frozen=True)
class TryStatus:
    """What `daemon status` shows. The socket's threads read it while the build thread checks:
    it is replaced as a whole (one assignment) on each change, its dicts never changed once
    in it, so that a status never mixes two moments of a check."""

    compiler: dict | None = None  # the compiler patches are built with (chosen at start)
    ops: dict[str, dict] = field(default_factory=dict)  # op → its last op_json, verdicts too
    # op → the verdict the running (or last) check found for it: its line and its seconds
    # since the check started
    verdicts: dict[str, dict] = field(default_factory=dict)
    checking: bool = False  # a check is running
    # the last check: started, seconds, finished, error, and its phases' seconds (plan,
    # build, check, and from its start to the first verdict and to all of them:
    # first_verdict, all_verdicts)
    last: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Checked:
    """A check's outcome: the lines to print after its verdicts, every current op's report,
    its phases' seconds, and what it failed of (empty when it ran to its end)."""

    lines: list[str]
    ops: dict[str, dict]
    phases: dict[str, float]
    error: str = ""


class TryChecks:
    """What a daemon with --try keeps: its warm worker, and per op the code last checked and
    its verdict (for `daemon status`)."""

    def __init__(self, location: SpecLocation, options: TryOptions,
                 announce: Callable[[str], None], log: logging.Logger) -> None:
        self.location, self.options, self.announce, self.log = location, options, announce, log
        self.worker = TryProcess(options.timeout)
        self.checked: dict[str, str] = {}  # op → the code its verdict is for
        self.compiler: TryCompiler | None = None  # chosen at start, kept for the daemon's life
        self.snapshot = TryStatus()

    def start(self) -> None:
        """Refuse what cannot work before serving (no try extra, a checkout of another torch
        version); then warm the worker while the first build runs."""
        check_extra()
        check_generator(identify_generator(self.location), ())
        self.compiler = choose_try_compiler(self.location, self.options.cxx, torch_library_dir())
        self.announce("try: patches compile" + compiler_text(self.compiler).removeprefix(";"))
        self.snapshot = replace(self.snapshot, compiler=self.compiler.json())
        self.worker.warm()

    def close(self) -> None:
        self.worker.close()

    def status(self) -> dict:
        """`daemon status`'s "checks": the last check, every op's last verdicts, and their
        lines as `try` prints them (status_text prints these without importing anything);
        while a check runs, the verdicts it has found so far in place of their ops' last."""
        now = self.snapshot  # read once: the build thread replaces it as a whole
        return {**now.last, "compiler": now.compiler, "checking": now.checking,
                "verdicts": now.verdicts, "ops": list(now.ops.values()),
                "lines": _status_lines(now.ops, now.verdicts if now.checking else {})}

    def after_graph(self, session, run: GraphResult | None) -> None:
        """The build's hook (service/build.py: build_and_compile's `after_graph`), before
        the build writes its files: the patch is planned from the build's own run (None: the
        build is up to date, and the plan reads the cache). Never raises (but StoreDamaged,
        for the build's own retry), so that the build goes on whatever happens here."""
        started, started_at = time.perf_counter(), time.time()
        self.snapshot = replace(self.snapshot, verdicts={}, checking=True)
        try:
            checked = self._outcome(session, started, run)
        except BaseException:  # StoreDamaged (the build's retry checks again), an interrupt
            self.snapshot = replace(self.snapshot, checking=False)
            raise
        # "started" (the clock's time at the check's start: the build's files written) is
        # where the phases' seconds count from: a save's time to its first verdict is
        # started + phases["first_verdict"] - the save's time
        last = {"started": started_at, "seconds": round(time.perf_counter() - started, 3),
                "finished": time.time(), "error": checked.error, "phases": checked.phases}
        self.snapshot = replace(self.snapshot, ops=checked.ops, checking=False, last=last)
        if checked.lines:
            self.announce("\n".join(checked.lines))

    def _outcome(self, session, started: float, run: GraphResult | None) -> Checked:
        """The check, or what it failed of (the ops' reports as they were): raises only
        StoreDamaged."""
        try:
            return self._check(session, started, run)
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
        return Checked(lines, self.snapshot.ops, {}, error)

    def _check(self, session, started: float, run: GraphResult | None) -> Checked:
        """Plan, build, check (each verdict announced as it comes, and in the snapshot); the
        lines to print after all of them."""
        plan = plan_patch(self.location, session, (), run)
        planned = time.perf_counter()
        assert self.compiler is not None  # start() chose it
        library = build_library(plan, self.compiler, self.options.jobs)
        built = time.perf_counter()
        if library is not None and library.note:
            self.announce(f"try: warning: {library.note}")
        current = {op.name: op for op in plan.ops}
        due = [op for op in plan.ops if self.checked.get(op.name) != op.code]
        sent = [op for op in due if not op.reason] if library is not None else []
        self._announce_unchecked(plan, current, [op for op in due if op not in sent])
        answers = {}
        if sent:
            answers = check_ops(library, sent, self.options, self.worker,
                                partial(self._verdict_arrived, plan, started))
        ops = {name: report for name, report in self.snapshot.ops.items() if name in current}
        ops.update({op.name: op_json(plan, op, answers.get(op.name, {})) for op in due})
        phases = {"plan": round(planned - started, 3), "build": round(built - planned, 3),
                  "check": round(time.perf_counter() - built, 3),
                  **_verdict_times(self.snapshot.verdicts)}
        lines = ["try: " + line for op in sent if failed(ops[op.name])
                 for line in op_lines(ops[op.name])]
        # last, as the reports are published with it: an op marked checked has its report
        self.checked = {name: current[name].code for name in ops}
        return Checked(lines, dict(sorted(ops.items())), phases)

    def _announce_unchecked(self, plan: PatchPlan, current: dict[str, PatchOp],
                            unsent: list[PatchOp]) -> None:
        """What is known before the checks: the ops back to the installed torch's code, and
        those that changed but cannot be checked (SKIP, with the reason)."""
        lines = [f"try: {name}: back to the installed torch's code"
                 for name in self.snapshot.ops if name not in current]
        lines += ["try: " + line for op in unsent for line in op_lines(op_json(plan, op, {}))]
        if lines:
            self.announce("\n".join(lines))

    def _verdict_arrived(self, plan: PatchPlan, started: float, event: dict) -> None:
        """An op's verdict from the worker: announced, and in `daemon status`, at once."""
        op = next(op for op in plan.ops if op.name == event["op"])
        line = verdict_line(op_json(plan, op, {}), event)
        found = {"verdict": event["verdict"], "line": line,
                 "seconds": round(time.perf_counter() - started, 3)}
        # only this (the build) thread replaces the snapshot: nothing is lost between the read
        # and the replacement
        now = self.snapshot
        self.snapshot = replace(now, verdicts={**now.verdicts, op.name: found})
        self.announce("try: " + line)


def _verdict_times(verdicts: dict[str, dict]) -> dict[str, float]:
    """Seconds from the check's start to its first verdict and to the last (none when no op
    was checked)."""
    if not verdicts:
        return {}
    seconds = [found["seconds"] for found in verdicts.values()]
    return {"first_verdict": min(seconds), "all_verdicts": max(seconds)}


def _status_lines(ops: dict[str, dict], found: dict[str, dict]) -> list[str]:
    """Each op's lines as `try` prints them: its verdict line when the running check has found
    one, else its last check's lines."""
    return [line for name in sorted({*ops, *found})
            for line in ([found[name]["line"]] if name in found else op_lines(ops[name]))]
