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

import logging
import threading
import time
from typing import Callable

from gradshard.cache.errors import GeneratorFailed
from gradshard.cache.store.verdicts import VerdictLedger
from gradshard.service.files.spec_location import SpecLocation
from gradshard.service.generator.check import GeneratorVerdict, State, complete

__all__ = ["BackgroundCheck"]


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

    def wait(self, timeout: float) -> bool:
        """Wait for the running check (tests, stopping); True when none runs."""
        thread = self._thread
        if thread is not None:
            thread.join(timeout)
        return thread is None or not thread.is_alive()

    def _start(self, verdict: GeneratorVerdict) -> None:
        self._running = verdict
        self._thread = threading.Thread(target=self._work, args=(verdict,),
                                        name="generator check", daemon=True)
        self._thread.start()

    def _work(self, verdict: GeneratorVerdict) -> None:
        ledger = VerdictLedger()  # its own connection: the builder's belongs to its thread
        started = time.time()
        self.log.info("generator check: running %s on the spec (%d files to check)",
                      verdict.identity.name, len(verdict.pending))
        checked = False
        try:
            self._last = _finished(complete(verdict, self.location, ledger, self.timeout),
                                   started)
            self.log.info("generator check: %s", self._last["summary"])
            checked = True
        except GeneratorFailed as failure:
            self._last = {"state": State.FAILED, "error": str(failure),
                          "detail": failure.detail, "finished": time.time()}
            self.log.warning("generator check failed: %s\n%s", failure, failure.detail)
            if "spec changed" not in str(failure):
                self._failed.add(verdict.spec)
        finally:
            ledger.close()
            self._next()
        if checked:  # the next build serves what was found, and reports it
            self.checked()

    def _next(self) -> None:
        with self._lock:
            queued, self._queued, self._running = self._queued, None, None
            if queued is not None:
                self._start(queued)


def _finished(verdict: GeneratorVerdict, started: float) -> dict:
    return {"state": verdict.state, "checked": list(verdict.checked),
            "differing": list(verdict.differing), "summary": verdict.summary(),
            "seconds": round(time.time() - started, 2), "finished": time.time()}
