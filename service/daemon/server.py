"""The background build service: a file watcher, one builder and a local socket.

    watchdog observer ──► Changes (debounced) ──► builder (main thread) ──► last Result
    socket clients ──► status | build | wait | affected | shutdown ──► answers from Result

The builder keeps one process warm: the imports, the templates and the engine's memory of
every task, so an edited formula regenerates in a tenth of a second and recompiles one unit.
A bad edit leaves the outputs as they were (a build writes nothing unless it succeeds) and
its errors are the result until a later save builds; nothing a build raises stops the daemon.

Clients are untrusted in their timing and size: a request line is at most REQUEST_LIMIT bytes
(never buffered beyond that) and must arrive whole within REQUEST_TIMEOUT; while a request is
being worked on, a progress line goes out every PROGRESS_INTERVAL, so that a client can tell
a daemon at work (a cold compile takes minutes) from a stopped or dead one.
"""

from __future__ import annotations

import json
import logging
import logging.handlers
import os
import signal
import socket
import socketserver
import threading
import time
import traceback
from concurrent.futures import Future
from concurrent.futures import wait as wait_for_futures
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Callable

from watchdog.events import FileSystemEvent, FileSystemEventHandler
from watchdog.observers import Observer

from gradshard.cache.errors import CompileError, UsageError
from gradshard.cache.store.database import StoreDamaged
from gradshard.pipeline.problems import YAML_FILES, GradshardError, SpecError
from gradshard.service.compile.driver import CompileOptions
from gradshard.service.compile.report import diagnostic_text
from gradshard.service.config.files import file_digest
from gradshard.service.daemon.generator_checks import BackgroundCheck
from gradshard.service.daemon.runtime import DaemonLock, DaemonPaths, running_daemon
from gradshard.service.daemon.try_checks import TryChecks
from gradshard.service.defaults import config_file
from gradshard.service.exit_codes import (EXIT_INTERNAL, NEXT_BUILD, Ending, Report, damaged_text,
                                          ending_of)
from gradshard.service.files.placement import Placement
from gradshard.service.files.spec_location import SpecLocation
from gradshard.service.generator.check import GeneratorCheck, GeneratorVerdict, State
from gradshard.service.generator.identity import identify_generator
from gradshard.service.live.command import TryOptions
from gradshard.service.report.build import build_json, build_text
from gradshard.service.report.problems import (generator_failure_text, problem_json,
                                               problem_lines,
                                               spec_error_lines, spec_error_text,
                                               spec_texts_of, unread_spec_note,
                                               verify_mismatch_text)
from gradshard.service.session import Session

__all__ = ["Daemon", "DaemonConfig", "LOG_BYTES", "REQUEST_TIMEOUT", "RequestHandler",
           "compile_error_json", "daemon_logger", "spec_signature"]

LOG_BYTES = 1_000_000  # per log file; three old ones are kept
WATCH_CHECK = 0.5  # seconds between checks that the watched directories are still the same
# Seconds between progress lines while a request is worked on. The documented promise is one
# at least every 2 s (clients give up after service/daemon/runtime.py: SILENCE_LIMIT of silence); half of
# it leaves room for a loaded machine's scheduling.
PROGRESS_INTERVAL = 1.0
REQUEST_LIMIT = 1 << 20  # bytes in one request line (1 MiB): a request is a small JSON object
REQUEST_TIMEOUT = 5.0  # seconds for a request line to arrive whole (idle connections included)
SEND_TIMEOUT = 5.0  # seconds one answer or progress line may wait for a client that reads
# What the builder and the request threads survive: any exception, and SystemExit (a library
# calling sys.exit() inside a build must not end the daemon). KeyboardInterrupt cannot reach
# them (SIGINT is handled), and a BrokenPipeError from `watch`'s output is meant to end it.
SURVIVED = (Exception, SystemExit)


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
    placement: Placement = Placement()  # which files go where under out (service/files/placement.py)
    # how the spec's generator is checked: `later`, in the background (generator_checks.py)
    generator: GeneratorCheck = GeneratorCheck(later=True)


@dataclass
class Changes:
    """What the watcher saw since the last build started; the builder waits for it."""

    condition: threading.Condition = field(default_factory=threading.Condition)
    paths: set[str] = field(default_factory=set)
    last_event: float = 0.0
    forced: bool = False  # a `build` request: no settling
    jobs: list[tuple[Callable[[], dict], Future]] = field(default_factory=list)

    def note(self, path: str) -> None:
        with self.condition:
            self.paths.add(path)
            self.last_event = time.monotonic()
            self.condition.notify_all()

    def force(self) -> None:
        with self.condition:
            self.forced = True
            self.paths.add("(build request)")
            self.condition.notify_all()

    def submit(self, job: Callable[[], dict]) -> Future:
        """Work for the builder's thread (the one that owns the cache's connection)."""
        done: Future = Future()
        with self.condition:
            self.jobs.append((job, done))
            self.condition.notify_all()
        return done

    def take_jobs(self) -> list[tuple[Callable[[], dict], Future]]:
        with self.condition:
            jobs, self.jobs = self.jobs, []
        return jobs

    def take(self, settle: float, stopping: threading.Event, patience: float) -> list[str] | None:
        """The changed paths once they have settled; [] when nothing changed for `patience`
        seconds or a job waits, None when stopping."""
        deadline = time.monotonic() + patience
        with self.condition:
            while not stopping.is_set():
                if self.jobs:
                    return []
                if self.paths:
                    quiet = time.monotonic() - self.last_event
                    if self.forced or quiet >= settle:
                        taken, self.paths, self.forced = sorted(self.paths), set(), False
                        return taken
                    self.condition.wait(settle - quiet)
                elif time.monotonic() >= deadline:
                    return []
                else:
                    self.condition.wait(deadline - time.monotonic())
        return None


class SpecWatcher(FileSystemEventHandler):
    """Notes every event touching a spec file, the templates directory or a source of the
    spec's generator found beside it (a saved tools/autograd/gen_variable_type.py changes
    which generator the spec has). Directory moves and deletions (a checkout switching
    branches) note a rescan: the next build re-reads all."""

    def __init__(self, location: SpecLocation, changes: Changes) -> None:
        self.files = {str(location.path_of(f).resolve()) for f in YAML_FILES}
        self.templates = str(location.templates.resolve())
        self.generator = [(str(d.resolve()), recursive) for d, recursive
                          in identify_generator(location).source_directories()]
        self.changes = changes

    def on_any_event(self, event: FileSystemEvent) -> None:
        if event.event_type in ("opened", "closed_no_write"):
            return
        paths = [p for p in (event.src_path, getattr(event, "dest_path", "")) if p]
        for path in map(os.fsdecode, paths):
            if (path in self.files or path.startswith(self.templates + os.sep)
                    or self._generator_source(path)):
                self.changes.note(path)
            elif event.is_directory and event.event_type in ("moved", "deleted"):
                self.changes.note(f"(rescan: {path} {event.event_type})")

    def _generator_source(self, path: str) -> bool:
        """A .py file in the generator's directories (identity.source_name's files, and a
        few more that never change the hash: a build finds that out)."""
        return path.endswith(".py") and any(
            path.startswith(directory + os.sep)
            and (recursive or os.path.dirname(path) == directory)
            for directory, recursive in self.generator)

    def directories(self) -> list[tuple[Path, bool]]:
        """What to watch, and whether recursively: the spec files' directories on their own
        (in a checkout, aten/src/ATen/native holds the whole of ATen's sources), the
        templates directory with everything below it, and the generator's beside the spec."""
        spec_dirs = sorted({Path(f).parent for f in self.files})
        return ([(d, False) for d in spec_dirs] + [(Path(self.templates), True)]
                + [(Path(d), recursive) for d, recursive in self.generator])


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
        self._signature: tuple = ()
        self._observer: Observer | None = None
        self._server: socketserver.UnixStreamServer | None = None
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
            self._observer.stop()
            self._observer.join(timeout=5)
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        self.paths.socket.unlink(missing_ok=True)

    # -- watching -------------------------------------------------------------------------

    def _start_observer(self) -> None:
        """(Re)start watching; a watched directory that was deleted, moved or replaced since is
        watched anew, and the next build re-reads everything."""
        if self._observer is not None:
            self._observer.stop()
            self._observer.join(timeout=5)
        watcher = SpecWatcher(self.config.location, self.changes)
        self._observer = Observer()
        self._watched = {}
        for directory, recursive in watcher.directories():
            self._watched[directory] = _identity(directory)
            if self._watched[directory] is not None:
                self._observer.schedule(watcher, str(directory), recursive=recursive)
        self._observer.start()

    def _check_watches(self) -> None:
        current = {d: _identity(d) for d in self._watched}
        if current != self._watched or not (self._observer and self._observer.is_alive()):
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
                self.session.settle()  # while idle: no full garbage pass in the next build
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
            done.set_result(self.guarded(job, "a request"))

    def guarded(self, work: Callable[[], dict], what: str) -> dict:
        """work()'s answer; a failure becomes an answer too (and a bug is logged), never the
        end of a thread."""
        try:
            return work()
        except GradshardError as error:
            return {"ok": False, "error": str(error)}
        except SURVIVED as error:
            self._log_failure(what, error)
            return {"ok": False, "error": f"internal error: {type(error).__name__}: {error}"}

    def answer_of(self, answer: Future, what: str) -> dict:
        """A finished request's answer; what its work raised past `guarded` (a
        BaseException that is neither an Exception nor SystemExit) becomes an error answer."""
        failure = answer.exception()
        if failure is None:
            return answer.result()
        self._log_failure(what, failure)
        return {"ok": False, "error": f"internal error: {type(failure).__name__}: {failure}"}

    def survive(self, work: Callable[[], object], what: str) -> None:
        """work(), its failure logged instead of ending the builder."""
        try:
            work()
        except SURVIVED as error:
            self._log_failure(what, error)
        else:
            self._last_failure = ""  # the same failure coming back is news again

    def _log_failure(self, what: str, error: BaseException) -> None:
        summary = f"{what}: {type(error).__name__}: {error}"
        if summary != self._last_failure:
            self.log.error("failure in %s\n%s", summary,
                           "".join(traceback.format_exception(error)))
        self._last_failure = summary

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
            self._log_failure("a build", error)
            return {"ok": False, "exit": EXIT_INTERNAL,
                    "errors": [f"gradshard: internal error: {type(error).__name__}: {error} "
                               f"(a bug in gradshard; the daemon's log has the traceback)"]}

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
            return self._failure(ending)

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

    def _failure(self, ending: Ending) -> dict:
        """A failed build's answer: its exit code, its errors as `check` and `build` print
        them (`errors`, for `watch` and `status`), and what `gradshard build` prints on stderr
        for it, in the command line's own words (`stderr`: service/report's texts, a generator
        check's report or last lines and every --verify disagreement included; a compile
        error's `compile_error`, which the client reports as --raw asks: commands.py)."""
        error = ending.error
        if ending.report is Report.SPEC:
            return self._spec_failure(error, ending.code)
        if ending.report is Report.DAMAGED:  # damaged again after the build's own retry
            return self._damaged(error, ending.code)
        if ending.report is Report.COMPILE:
            return {"ok": False, "exit": ending.code, "failed": list(error.failed),
                    "errors": [diagnostic_text(d, error.source) for d in error.diagnostics],
                    "compile_error": compile_error_json(error)}
        if ending.report is Report.GENERATOR:  # the diff, or the generator's last lines
            return _said({"ok": False, "exit": ending.code,
                          "errors": [generator_failure_text(error)]})
        if ending.report is Report.VERIFY:  # every disagreeing task
            return _said({"ok": False, "exit": ending.code,
                          "errors": [verify_mismatch_text(error)]})
        return _said({"ok": False, "exit": ending.code, "errors": [error_text(error)]})

    def _damaged(self, damage: StoreDamaged, code: int) -> dict:
        """The store is set aside, so that the next build starts a new one instead of
        meeting the same damage."""
        self.session.set_aside()
        return _said({"ok": False, "exit": code, "errors": [damaged_text(damage, NEXT_BUILD)]})

    def _spec_failure(self, error: SpecError, code: int) -> dict:
        location = self.config.location
        texts = spec_texts_of(location)
        identity = identify_generator(location)
        note = [] if identity.known else [unread_spec_note(identity)]  # as `build` says it
        return {"ok": False, "exit": code,
                "problems": [problem_json(p, location) for p in error.problems],
                "errors": [*note, *spec_error_lines(error, location, texts), *note],
                "stderr": spec_error_text(error, location, texts, identity)}

    # -- requests -------------------------------------------------------------------------

    def answer(self, message: dict) -> dict:
        kind = message.get("request")
        if kind == "status":
            return self.status()
        if kind == "build":
            return self._wait_for_build()
        if kind == "wait":
            return self._wait_idle()
        if kind == "affected":
            return self._affected()
        if kind == "shutdown":
            threading.Thread(target=self.stop, daemon=True).start()
            return {"ok": True, "state": "stopping"}
        return {"ok": False, "error": f"unknown request {kind!r}",
                "hint": "requests: status, build, wait, affected, shutdown"}

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

    def _wait_for_build(self) -> dict:
        with self.finished:
            target = self.builds + (2 if self.state == "building" else 1)
            self.changes.force()
            while self.builds < target and not self.stopping.is_set():
                self.finished.wait(0.5)
            return dict(self.result)

    def _wait_idle(self) -> dict:
        with self.finished:
            while not self.stopping.is_set() and (self.state != "idle" or self.changes.paths):
                self.finished.wait(0.5)
            return dict(self.result)

    def _affected(self) -> dict:
        return self.changes.submit(self._affected_now).result()

    def _affected_now(self) -> dict:
        from gradshard.service.query.affected import affected, affected_json

        result = affected(self.config.location, self.session, None, None)
        return affected_json(result, self.config.location)


class DaemonServer(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True
    # The system's largest accept queue: a burst of clients (an editor, a build farm's jobs)
    # waits for the daemon instead of being refused.
    request_queue_size = socket.SOMAXCONN

    def __init__(self, path: str, daemon: Daemon) -> None:
        self.daemon = daemon
        old = os.umask(0o177)  # the socket is born 0600
        try:
            super().__init__(path, RequestHandler)
        finally:
            os.umask(old)


class RefusedLine(Exception):
    """A request line the daemon will not read: too long, or too slow to arrive."""

    def __init__(self, message: str, hint: str) -> None:
        super().__init__(message)
        self.answer = {"ok": False, "error": message, "hint": hint}


class LineReader:
    """A connection's request lines, each at most `limit` bytes and arriving whole within
    `timeout` seconds; never holds more than limit + 1 bytes of the connection's data."""

    def __init__(self, connection: socket.socket, limit: int, timeout: float) -> None:
        self.connection, self.limit, self.timeout = connection, limit, timeout
        self.pending = bytearray()

    def next_line(self) -> bytes | None:
        """The next line without its newline; None once the client has closed its side.
        RefusedLine when the line is too long or does not arrive in time."""
        deadline = time.monotonic() + self.timeout
        scanned = 0
        while (end := self.pending.find(b"\n", scanned)) < 0:
            scanned = len(self.pending)
            if scanned > self.limit:
                raise self._too_long()
            chunk = self._receive(deadline, self.limit + 1 - scanned)
            if not chunk:
                return None
            self.pending += chunk
        if end > self.limit:
            raise self._too_long()
        line = bytes(self.pending[:end])
        del self.pending[:end + 1]
        return line

    def _receive(self, deadline: float, most: int) -> bytes:
        remaining = deadline - time.monotonic()
        try:
            if remaining <= 0:
                raise TimeoutError
            self.connection.settimeout(remaining)
            return self.connection.recv(min(most, 1 << 16))
        except TimeoutError:
            raise RefusedLine(f"no complete request line within {self.timeout:g} s: "
                              "the connection is closed",
                              "end each request with a newline; after an idle pause, "
                              "connect again") from None

    def _too_long(self) -> RefusedLine:
        return RefusedLine(f"a request line over {self.limit / (1 << 20):g} MiB "
                           f"({self.limit} bytes) is refused: the connection is closed",
                           "a request is one small JSON object on one line")


class RequestHandler(socketserver.BaseRequestHandler):
    """Newline-delimited JSON: for each request line, progress lines while the daemon works
    on it (`{"progress": STATE, "seconds": S}`), then one answer line. A line too long or
    too slow is answered with an error and the connection closed, the rest of it unread."""

    def handle(self) -> None:
        lines = LineReader(self.request, REQUEST_LIMIT, REQUEST_TIMEOUT)
        try:
            while (line := lines.next_line()) is not None:
                self._send(self._answer(line))
        except RefusedLine as refused:
            self._send_last(refused.answer)
        except OSError:
            pass  # the client went away or stopped reading: nobody to answer

    def _answer(self, line: bytes) -> dict:
        try:
            message = json.loads(line)
        except (ValueError, RecursionError) as error:  # not JSON, not UTF-8, nested too deep
            return {"ok": False, "error": f"not JSON: {type(error).__name__}: {error}"}
        return self._answer_with_progress(message if isinstance(message, dict) else {})

    def _answer_with_progress(self, request: dict) -> dict:
        """The daemon's answer, computed on a thread of its own while this one tells the
        client, every PROGRESS_INTERVAL, that the daemon is alive and working."""
        daemon: Daemon = self.server.daemon  # type: ignore[attr-defined]
        answer: Future = Future()
        what = f"a {str(request.get('request'))!r:.60} request"
        work = partial(daemon.guarded, partial(daemon.answer, request), what)
        threading.Thread(target=_resolve, args=(answer, work), name="request",
                         daemon=True).start()
        started = time.monotonic()
        while not wait_for_futures([answer], timeout=PROGRESS_INTERVAL).done:
            self._send({"progress": daemon.activity(),
                        "seconds": round(time.monotonic() - started, 1)})
        return daemon.answer_of(answer, what)

    def _send(self, message: dict) -> None:
        self.request.settimeout(SEND_TIMEOUT)
        self.request.sendall(json.dumps(message).encode() + b"\n")

    def _send_last(self, message: dict) -> None:
        """The answer before closing; a client that went away meanwhile misses nothing."""
        try:
            self._send(message)
        except OSError:
            pass


def _resolve(answer: Future, work: Callable[[], dict]) -> None:
    """work()'s answer, or whatever it raised, into `answer`: never left unset, or the
    request's handler would send progress lines forever. Nothing is raised again: this
    thread ends here, and the handler answers and logs the failure."""
    try:
        answer.set_result(work())
    except BaseException as error:
        answer.set_exception(error)


def _said(answer: dict) -> dict:
    """A failure whose errors are the whole of what the command line prints for it."""
    return {**answer, "stderr": "".join(f"{error}\n" for error in answer["errors"])}


def compile_error_json(error: CompileError) -> dict:
    """A compile error as the client rebuilds it (commands.py) to report it with the command
    line's own reporter, placed or raw as the client's --raw says."""
    return {"diagnostics": [d.to_json() for d in error.diagnostics],
            "failed": list(error.failed), "raw": error.raw, "source": error.source,
            "directory": error.directory}


def error_text(error: GradshardError) -> str:
    """An error as the command line prints it: the message, then the hint when there is one."""
    hint = getattr(error, "hint", "")
    return f"gradshard: error: {error}" + (f"\n  hint: {hint}" if hint else "")


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


def spec_signature(location: SpecLocation) -> tuple:
    """What the spec files and templates look like on disk (inode, size, mtime), and which
    generator the spec has (its hash: hashed again only when its sources' stats change): a
    change the watcher did not report shows here."""
    paths = [location.path_of(f) for f in YAML_FILES]
    if location.templates.is_dir():
        paths += sorted(location.templates.iterdir())
    stats = [(str(p), _stat(p)) for p in paths]
    return (tuple((p, s and (s.st_ino, s.st_size, s.st_mtime_ns)) for p, s in stats),
            identify_generator(location).hash)


def _identity(directory: Path) -> tuple[int, int] | None:
    """Which directory is there (not its mtime: every save in it changes that)."""
    info = _stat(directory)
    return info and (info.st_dev, info.st_ino)


def _stat(path: Path) -> os.stat_result | None:
    try:
        return path.stat()
    except OSError:
        return None


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
