"""The background build service: its lifetime and its builder. What it watches is
watcher.py's room, how clients talk to it protocol.py's.

    watchdog observer ──► Changes (debounced) ──► builder (main thread) ──► last Result
    socket clients ──► protocol.REQUESTS: status | build | wait | affected | shutdown

The builder keeps one process warm: the imports, the templates and the engine's memory of
every task, so an edited formula regenerates in a tenth of a second and recompiles one unit.
A bad edit leaves the outputs as they were (a build writes nothing unless it succeeds) and
its errors are the result until a later save builds; nothing a build raises stops the daemon.
A failed build's result says it as `gradshard build` would (service/report/endings.py), with
the same exit code (service/exit_codes.py).
"""

from __future__ import annotations

import json
import logging
import logging.handlers
import os
import signal
import threading
import time
import traceback
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from gradshard.cache.errors import CompileError, UsageError
from gradshard.service.compile.driver import CompileOptions
from gradshard.service.config_file import file_digest
from gradshard.service.daemon.generator_checks import BackgroundCheck
from gradshard.service.daemon.protocol import (SURVIVED, DaemonServer, answer_request,
                                               guarded)
from gradshard.service.daemon.runtime import DaemonLock, DaemonPaths, running_daemon
from gradshard.service.daemon.try_checks import TryChecks
from gradshard.service.daemon.watcher import (WATCH_CHECK, Changes, observe, spec_signature,
                                              stop_observing, watches_moved)
from gradshard.service.defaults import config_file
from gradshard.service.exit_codes import EXIT_INTERNAL, Ending, Report, ending_of
from gradshard.service.files.placement import Placement
from gradshard.service.files.spec_location import SpecLocation
from gradshard.service.generator.check import GeneratorCheck, GeneratorVerdict, State
from gradshard.service.live.command import TryOptions
from gradshard.service.report.build import build_json, build_text
from gradshard.service.report.endings import Known, render_ending
from gradshard.service.report.problems import problem_json, problem_lines
from gradshard.service.session import Session

if TYPE_CHECKING:
    from watchdog.observers import Observer

__all__ = ["Daemon", "DaemonConfig", "LOG_BYTES", "compile_error_json", "daemon_logger",
           "failure_answer", "rebuild_line"]

LOG_BYTES = 1_000_000  # per log file; three old ones are kept


@dataclass(frozen=True)
class DaemonConfig:
    location: SpecLocation
    out: Path
    cache: Path
    codegen_only: bool
    compile: CompileOptions
    # seconds without events before a burst is built: an editor's save (write, or write and
    # rename) takes a few milliseconds; 50 ms is also watchexec's default debounce
    settle: float = 0.05
    options: tuple[str, ...] = ()  # its match words (service/options.py: match_words)
    checks: TryOptions | None = None  # --try: gradcheck the edited ops before each compile
    # which files go where under out (service/files/placement.py)
    placement: Placement = Placement()
    # how the spec's generator is checked: `later`, in the background (generator_checks.py)
    generator: GeneratorCheck = GeneratorCheck(later=True)


class Daemon:
    def __init__(self, config: DaemonConfig, paths: DaemonPaths,
                 announce: Callable[[str], None]) -> None:
        self.config, self.paths, self.announce = config, paths, announce
        # the configuration file it started under (it runs in the starting shell's directory):
        # its settings are in the options it was given; status says when the file changes
        self.settings_file = config_file(Path.cwd())
        self.settings_digest = file_digest(self.settings_file)
        self.changes = Changes()
        self.stopping = threading.Event()
        self.session = Session(config.cache)
        self.state = "starting"
        self.builds = 0
        self.result: dict = {}
        self.finished = threading.Condition()
        self.lock = DaemonLock(paths.lock)
        self.log = daemon_logger(paths.log)
        self._watched: dict[Path, tuple[int, int] | None] = {}
        self._last_failure = ""  # logged once while it repeats (a check every 0.5 s)
        self._signature: tuple = ()  # the spec as the last build began to read it
        self._observer: Observer | None = None
        self._server: DaemonServer | None = None
        self.checks = (TryChecks(config.location, config.checks, announce, self.log)
                       if config.checks is not None else None)
        self._verdict: GeneratorVerdict | None = None  # the last build's, to offer
        self.generator_checks = BackgroundCheck(config.location, config.generator.timeout,
                                                self.log, partial(self.changes.note,
                                                                  "(generator checked)"))

    # -- lifetime -------------------------------------------------------------------------

    def description(self) -> dict:
        """Who this daemon is: written into its lock, and part of every status answer."""
        return {"pid": os.getpid(), "spec": str(self.config.location.root),
                "out": str(self.config.out), "cache": str(self.config.cache),
                "codegen_only": self.config.codegen_only, "options": list(self.config.options),
                "try": self.checks is not None,
                "socket": str(self.paths.socket), "log": str(self.paths.log)}

    def run(self) -> None:
        description = self.description()
        if not self.lock.acquire(description):
            running = running_daemon(self.paths) or {}
            raise UsageError(f"a daemon already serves this spec and cache "
                             f"(pid {running.get('pid', '?')}, socket {self.paths.socket})",
                             "gradshard daemon status shows it; gradshard daemon stop ends it")
        try:
            if self.checks is not None:
                self.checks.start()
            self._serve(description)
        finally:
            self.generator_checks.stop()
            self._stop_services()
            if self.checks is not None:
                self.checks.close()
            self.session.close()
            self.lock.release()
            self.log.info("stopped")

    def _serve(self, description: dict) -> None:
        self.paths.socket.unlink(missing_ok=True)  # left by a daemon killed with -9
        self._server = DaemonServer(str(self.paths.socket), self)
        os.chmod(self.paths.socket, 0o600)
        threading.Thread(target=self._server.serve_forever, name="socket", daemon=True).start()
        self._start_observer()
        for sig in (signal.SIGTERM, signal.SIGINT):
            if threading.current_thread() is threading.main_thread():
                signal.signal(sig, self._on_signal)
        self.log.info("started: %s", json.dumps(description))
        self.changes.note("(start)")
        self._build_loop()

    def _on_signal(self, signum: int, frame: object) -> None:
        self.log.info("signal %d: stopping", signum)
        self.stop()

    def stop(self) -> None:
        self.stopping.set()
        with self.changes.condition:
            self.changes.condition.notify_all()
        with self.finished:
            self.finished.notify_all()

    def _stop_services(self) -> None:
        if self._observer is not None:
            stop_observing(self._observer)
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        self.paths.socket.unlink(missing_ok=True)

    def survive(self, work: Callable[[], object], what: str) -> None:
        """work(), its failure logged instead of ending the builder."""
        try:
            work()
        except SURVIVED as error:
            self.log_failure(what, error)
        else:
            self._last_failure = ""  # the same failure coming back is news again

    def log_failure(self, what: str, error: BaseException) -> None:
        """A failure the daemon survives, with its traceback; once while it repeats."""
        summary = f"{what}: {type(error).__name__}: {error}"
        if summary != self._last_failure:
            self.log.error("failure in %s\n%s", summary,
                           "".join(traceback.format_exception(error)))
        self._last_failure = summary

    # -- watching (watcher.py) ------------------------------------------------------------

    def _start_observer(self) -> None:
        """(Re)start watching; a watched directory that was deleted, moved or replaced since is
        watched anew, and the next build re-reads everything."""
        if self._observer is not None:
            stop_observing(self._observer)
        self._observer, self._watched = observe(self.config.location, self.changes)

    def _check_watches(self) -> None:
        if watches_moved(self._watched, self._observer):
            self.log.info("watched directories changed: watching anew")
            self._start_observer()
            self.changes.note("(rescan)")
        elif spec_signature(self.config.location) != self._signature:
            # events the observer lost (an inotify queue overflow drops them silently)
            self.log.info("spec files changed without events: rescanning")
            self.changes.note("(rescan)")

    # -- building -------------------------------------------------------------------------

    def _build_loop(self) -> None:
        """Build each settled burst of changes; between bursts, run the requests' jobs and
        check the watches. Every build ends as a published result, whatever it raised, so a
        request waiting for it always gets an answer."""
        while not self.stopping.is_set():
            self.state = "idle"
            with self.finished:
                self.finished.notify_all()
            changed = self.changes.take(self.config.settle, self.stopping, WATCH_CHECK)
            if changed is None:
                break
            if changed and self._nothing_changed(changed):
                self.log.info("events without a change since the last build: %s", changed)
            elif changed:
                self._publish(self.build_once(changed))
                self._offer_check()
                # while idle: no full garbage pass in the next build
                self.session.freeze_survivors()
            else:
                self._run_jobs()
                # a directory moved or replaced reports no event
                self.survive(self._check_watches, "checking the watched directories")

    def _nothing_changed(self, changed: list[str]) -> bool:
        """Events that changed no input since the last build began: a file closed after a
        write of nothing, or one save seen twice (watchdog reports a rename whose halves it
        read apart as a move and a creation, and under load the second comes after the
        settling time). Building again would replace the save's result with an empty one.
        A signature that cannot be taken (a generator tree too deep to hash) is the build's to
        report: this says "changed", never ends the builder's thread."""
        if self.builds == 0 or any(path.startswith("(") for path in changed):
            return False
        try:
            return spec_signature(self.config.location) == self._signature
        except SURVIVED:
            return False

    def _offer_check(self) -> None:
        """The last build's generator verdict to the background check (a pending one runs
        now: its files are written and the build published)."""
        verdict, self._verdict = self._verdict, None
        if verdict is not None:
            self.generator_checks.offer(verdict)

    def _publish(self, result: dict) -> None:
        with self.finished:
            self.builds += 1
            self.result = result
            self.finished.notify_all()
        self.announce("\n".join([result["line"], *result.get("errors", []),
                                  *result.get("finding_lines", [])]))

    def _run_jobs(self) -> None:
        for job, done in self.changes.take_jobs():
            done.set_result(guarded(job, "a request", self.log_failure))

    def build_once(self, changed: list[str]) -> dict:
        self.state = "building"
        started = time.perf_counter()
        result = self._outcome()
        result["seconds"] = round(time.perf_counter() - started, 4)
        result["changed"] = changed
        result["finished"] = time.time()
        result["line"] = rebuild_line(result, self.config.location)
        self.log.info("%s", result["line"])
        for error in [*result.get("errors", []), *result.get("finding_lines", [])]:
            self.log.info("%s", error)
        return result

    def _outcome(self) -> dict:
        """The build's result, never an exception: a bug, or a failure while reporting a
        failure, is an internal error in the result (and in the log)."""
        try:
            return self._reported_build()
        except SURVIVED as error:
            self.log_failure("a build", error)
            return failure_answer(Ending(Report.INTERNAL, EXIT_INTERNAL, error),
                                  self.config.location)

    def _reported_build(self) -> dict:
        """The build's result, its errors reported as the command line reports them, with
        the command line's exit code (service/exit_codes.py)."""
        try:
            self._signature = spec_signature(self.config.location)
            return self._build()
        except Exception as error:
            ending = ending_of(error)
            if ending.report is Report.INTERNAL:  # a bug: _outcome reports it
                raise
            if ending.report is Report.DAMAGED:  # damaged again after the build's own retry
                # set aside, so that the next build starts a new store instead of meeting
                # the same damage
                self.session.set_aside()
            return failure_answer(ending, self.config.location)

    def _build(self) -> dict:
        """Build and compile (unless --codegen-only) as `gradshard build` does. Each build's
        warnings are its own: the session's list is emptied first, and the result keeps a
        copy (status answers read it after later builds have begun)."""
        from gradshard.service.build import build_and_compile

        self.session.warnings.clear()  # in place: the open store reports into this list
        options = None if self.config.codegen_only else self.config.compile
        checks = self.checks
        after_graph = partial(checks.after_graph, self.session) if checks else None
        outcome = build_and_compile(self.config.location, self.config.out, self.session,
                                    options, after_graph=after_graph,
                                    placement=self.config.placement,
                                    check=self.config.generator)
        self._verdict = outcome.generator  # offered once the build is published
        # the formula check's findings, printed under the rebuild's line as errors are
        found = problem_lines(outcome.findings, outcome.location, None, "warning")
        return {**build_json(outcome), "warnings": list(outcome.warnings),
                "text": build_text(outcome), "finding_lines": found}

    # -- what requests ask of it (protocol.py's REQUESTS) --------------------------------

    def answer(self, request: dict) -> dict:
        return answer_request(self, request)

    def activity(self) -> str:
        """starting, idle, pending (changes wait to settle) or building."""
        return "pending" if self.state == "idle" and self.changes.paths else self.state

    def status(self) -> dict:
        checks = {"checks": self.checks.status()} if self.checks is not None else {}
        settings = {"file": str(self.settings_file) if self.settings_file else None,
                    "changed": file_digest(self.settings_file) != self.settings_digest}
        return {"ok": True, "state": self.activity(), "builds": self.builds,
                **self.description(), "config": settings, "last": self.result, **checks,
                "generator": {**self.result.get("generator", {}),
                              "background": self.generator_checks.status()}}

    def wait_for_build(self) -> dict:
        """The result of a build begun after this request (a build under way may have read
        the files before the client saved them)."""
        with self.finished:
            target = self.builds + (2 if self.state == "building" else 1)
            self.changes.force()
            while self.builds < target and not self.stopping.is_set():
                self.finished.wait(0.5)
            return dict(self.result)

    def wait_idle(self) -> dict:
        with self.finished:
            while not self.stopping.is_set() and (self.state != "idle" or self.changes.paths):
                self.finished.wait(0.5)
            return dict(self.result)

    def on_builder(self, job: Callable[[SpecLocation, Session], dict]) -> dict:
        """job's answer from the spec and the session, run by the builder's thread between
        builds (it owns the cache's connection)."""
        return self.changes.submit(partial(job, self.config.location, self.session)).result()


# ---------------------------------------------------------------------------------------------
# A build's result as the daemon answers it


def failure_answer(ending: Ending, location: SpecLocation) -> dict:
    """A failed build's answer: its exit code, its errors as `check` and `build` print them
    (`errors`, for `watch` and `status`), and what `gradshard build` prints on stderr for
    it, in the command line's own words (`stderr`: service/report/endings.py's). A compile
    error has `compile_error` instead, which the client reports as --raw asks (commands.py);
    a bug has neither (the client prints its errors)."""
    said = render_ending(ending, Known(location, daemon=True))
    error = ending.error
    answer: dict = {"ok": False, "exit": ending.code}
    if ending.report is Report.SPEC:
        answer["problems"] = [problem_json(p, location) for p in error.problems]
    elif ending.report is Report.COMPILE:
        answer["failed"] = list(error.failed)
    answer["errors"] = list(said.errors)
    if ending.report is Report.COMPILE:
        answer["compile_error"] = compile_error_json(error)
    elif ending.report is not Report.INTERNAL:
        answer["stderr"] = said.stderr
    return answer


def compile_error_json(error: CompileError) -> dict:
    """A compile error as the client rebuilds it (commands.py) to report it with the command
    line's own reporter, placed or raw as the client's --raw says."""
    return {"diagnostics": [d.to_json() for d in error.diagnostics],
            "failed": list(error.failed), "raw": error.raw, "source": error.source,
            "directory": error.directory}


def rebuild_line(result: dict, location: SpecLocation) -> str:
    """One line per rebuild: what changed, what was regenerated and recompiled, how long."""
    changed = ", ".join(_short(p, location) for p in result.get("changed", [])) or "nothing"
    when = time.strftime("%H:%M:%S")
    if not result.get("ok"):
        count = len(result.get("problems") or result.get("errors", []))
        return f"[{when}] {changed}: {count} error{'s' if count != 1 else ''} " \
               f"({result['seconds']:.2f} s); outputs kept as they were"
    files = result.get("files", {})
    words = [f"{len(files.get('written', []))} file(s) written"]
    compiled = result.get("compile")
    if compiled:
        words.append(f"{len(compiled['compiled'])} unit(s) compiled")
        if compiled.get("spliced"):
            words.append(f"{len(compiled['spliced'])} spliced")
    if result.get("findings"):
        count = len(result["findings"])
        words.append(f"{count} warning{'s' if count != 1 else ''} (gradshard's own rules)")
    generator = result.get("generator", {})
    if generator.get("state") == State.DIFFERS:
        words.append(f"{len(generator['differing'])} from the spec's generator")
    elif generator.get("state") in (State.PENDING, State.SKIPPED, State.FAILED):
        words.append(f"generator check {generator['state']}")
    return f"[{when}] {changed}: {', '.join(words)} ({result['seconds']:.2f} s)"


def _short(path: str, location: SpecLocation) -> str:
    try:
        return str(Path(path).relative_to(location.root.resolve()))
    except ValueError:
        return path


def daemon_logger(path: Path) -> logging.Logger:
    path.parent.mkdir(parents=True, exist_ok=True)
    logger = logging.getLogger(f"gradshard.daemon.{path}")
    if not logger.handlers:
        handler = logging.handlers.RotatingFileHandler(path, maxBytes=LOG_BYTES, backupCount=3)
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
        logger.propagate = False
    return logger
