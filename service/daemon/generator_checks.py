"""The daemon's generator check, in the background: a build whose generator is not a known
one writes gradshard's files at once (a save must not wait ~15 s for the real generator),
then this runs the generator on the spec as built (service/generator/check.py: complete) and
records what it finds; then the daemon builds again, and that build serves the real
generator's files where they differ and reports the difference (once per generator and spec).

One check runs at a time; a save during a check queues the newest spec's check after it (the
running one finds the spec changed and records nothing). A spec whose check failed is not
checked again until it changes: the failure is in the log and in `daemon status`.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import threading
import time
import traceback
from typing import Callable

from gradshard.cache.errors import GeneratorFailed
from gradshard.cache.store.verdicts import VerdictLedger
from gradshard.service.files.spec_location import SpecLocation
from gradshard.service.defaults import state_directory
from gradshard.service.generator.check import SPEC_CHANGED, GeneratorVerdict, State, complete

__all__ = ["BackgroundCheck"]

STOP_WAIT = 10.0  # seconds the daemon waits for a killed check's thread


class BackgroundCheck:
    """The daemon's checks of its spec against its generator (`offer` each build's verdict)."""

    def __init__(self, location: SpecLocation, timeout: float, log: logging.Logger,
                 checked: Callable[[], None]) -> None:
        self.location, self.timeout, self.log, self.checked = location, timeout, log, checked
        self._lock = threading.Lock()
        self._running: GeneratorVerdict | None = None
        self._queued: GeneratorVerdict | None = None
        self._failed: set[str] = set()  # specs whose check failed: not run again unchanged
        self._last: dict = {}
        self._thread: threading.Thread | None = None
        self._group: int | None = None  # the running generator's process group
        self._stopping = False

    def offer(self, verdict: GeneratorVerdict) -> None:
        """A build's verdict: a pending one is checked (now, or after the running check)."""
        if verdict.state != State.PENDING:
            return
        with self._lock:
            if verdict.spec in self._failed or (
                    self._running is not None and self._running.spec == verdict.spec):
                return
            if self._running is not None:
                self._queued = verdict
                return
            self._start(verdict)

    def status(self) -> dict:
        with self._lock:
            running = self._running
            return {"checking": list(running.pending) if running else [], "last": self._last}

    def stop(self) -> None:
        """The daemon stops: the running generator's process group is killed (it would run
        on for seconds, its scratch directory left behind), and its thread joined."""
        with self._lock:
            self._stopping, self._queued, group = True, None, self._group
        if group is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(group, signal.SIGKILL)
        self.wait(STOP_WAIT)

    def wait(self, timeout: float) -> bool:
        """Wait for the running check (tests, stopping); True when none runs."""
        thread = self._thread
        if thread is not None:
            thread.join(timeout)
        return thread is None or not thread.is_alive()

    def _start(self, verdict: GeneratorVerdict) -> None:
        if self._stopping:
            return
        self._running = verdict
        self._thread = threading.Thread(target=self._work, args=(verdict,),
                                        name="generator check", daemon=True)
        self._thread.start()

    def _work(self, verdict: GeneratorVerdict) -> None:
        # its own connection: the builder's belongs to its thread
        ledger = VerdictLedger(state_directory())
        started = time.time()
        self.log.info("generator check: running %s on the spec (%d files to check)",
                      verdict.identity.name, len(verdict.pending))
        checked = False
        try:
            self._last = _finished(complete(verdict, self.location, ledger, self.timeout,
                                            self._note_group), started)
            self.log.info("generator check: %s", self._last["summary"])
            checked = True
        except GeneratorFailed as failure:
            self._failure(verdict, str(failure), failure.detail)
        except Exception as error:  # noqa: BLE001 -- a thread's end would go unseen
            self._failure(verdict, f"{type(error).__name__}: {error}",
                          traceback.format_exc())
        finally:
            ledger.close()
            self._next()
        if checked:  # the next build serves what was found, and reports it
            self.checked()

    def _note_group(self, group: int) -> None:
        with self._lock:
            self._group = group
        if self._stopping:  # stopped while it started
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(group, signal.SIGKILL)

    def _failure(self, verdict: GeneratorVerdict, error: str, detail: str) -> None:
        """A failed check: said in the log and `daemon status`, and not run again for this
        spec unless the spec changed under it (the next build's check covers that)."""
        self._last = {"state": State.FAILED, "error": error, "detail": detail,
                      "finished": time.time()}
        self.log.warning("generator check failed: %s\n%s", error, detail)
        if not error.startswith(SPEC_CHANGED):
            self._failed.add(verdict.spec)

    def _next(self) -> None:
        with self._lock:
            queued, self._queued, self._running = self._queued, None, None
            self._group = None
            if queued is not None:
                self._start(queued)


def _finished(verdict: GeneratorVerdict, started: float) -> dict:
    return {"state": verdict.state, "checked": list(verdict.checked),
            "differing": list(verdict.differing), "summary": verdict.summary(),
            "seconds": round(time.time() - started, 2), "finished": time.time()}
