"""The try worker's process, seen from the side that asks: started once, asked request after
request, each answer awaited with a time limit; the events the worker sends before an answer
(each op's verdict as soon as it is known: service/live/worker.py) go to the asker's callback.

`gradshard try` starts one per command; the daemon keeps one warm for its life (torch and the
OpInfo database imported by a ping sent at start, answered while the first build runs), so a
save's verdicts cost the checks only. A worker that dies (patched code can crash the process
it is loaded in) or overruns its time is killed and reported; the next request starts a new
one. A long-lived worker is replaced after RECYCLE_AFTER patches: each patch's library stays
loaded in it (service/live/worker.py).
"""

from __future__ import annotations

import json
import os
import selectors
import subprocess
import sys
import tempfile
import time
from typing import IO, Callable

from gradshard.cache.errors import EnvironmentFailure
from gradshard.service.options import TRY_TIMEOUT

__all__ = ["TryProcess", "TryWorkerFailure"]

RECYCLE_AFTER = 50
WORKER_MODULE = "gradshard.service.live.worker"


class TryWorkerFailure(EnvironmentFailure):
    """The worker ran past its time, died (patched code can crash the process it is loaded
    in) or failed in itself: no verdict, and an exit code of its own
    (service/exit_codes.py: EXIT_TRY_WORKER), not a usage error's."""


class TryProcess:
    def __init__(self, timeout: float = TRY_TIMEOUT,
                 command: tuple[str, ...] = (sys.executable, "-m", WORKER_MODULE)) -> None:
        self.timeout, self.command = timeout, command
        self._process: subprocess.Popen | None = None
        self._stderr: IO[bytes] | None = None
        self._buffer = b""
        self._pending = 0  # pings sent whose answers are still to be read
        self._served = 0

    def __enter__(self) -> TryProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        # an exception passing through: nothing the worker does is awaited, and a graceful
        # exit can take seconds (torch still importing)
        self.close(kill=exc[0] is not None)

    def warm(self) -> None:
        """Start the worker and have it import torch and the OpInfos now, without waiting."""
        self._started()
        self._send({"ping": True})
        self._pending += 1

    def ask(self, request: dict, on_event: Callable[[dict], None] | None = None) -> dict:
        """The worker's answer to one request, each event before it passed to on_event as it
        arrives (the time limit covers them all); TryWorkerFailure when it dies, overruns or
        fails in itself."""
        if self._served >= RECYCLE_AFTER:
            self.close()
        self._started()
        self._served += 1
        deadline = time.monotonic() + self.timeout
        try:
            self._send(request)
            while self._pending:
                self._answer(deadline)
                self._pending -= 1
            answer = self._answer(deadline)
            while "event" in answer:
                if on_event is not None:
                    on_event(answer)
                answer = self._answer(deadline)
        except BaseException:
            # dead, overrunning, or the asker's own failure (its callback, an interrupt) with
            # the answer half read: nothing of this worker is worth waiting for
            self.close(kill=True)
            raise
        if not answer.get("ok"):
            raise TryWorkerFailure(f"the try worker failed: {answer.get('error')}",
                                     "GRADSHARD_DEBUG=1 shows its traceback")
        return answer

    def close(self, kill: bool = False) -> None:
        """End the worker: its input closed and a few seconds to leave, or killed."""
        process, self._process = self._process, None
        if process is not None:
            _ended(process, kill)
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None
        self._buffer, self._pending, self._served = b"", 0, 0

    # -- the pipe -------------------------------------------------------------------------

    def _started(self) -> subprocess.Popen:
        if self._process is None or self._process.poll() is not None:
            self.close()
            self._stderr = tempfile.TemporaryFile()
            self._process = subprocess.Popen(self.command, stdin=subprocess.PIPE,
                                             stdout=subprocess.PIPE, stderr=self._stderr,
                                             bufsize=0)
        return self._process

    def _send(self, message: dict) -> None:
        try:
            self._process.stdin.write((json.dumps(message) + "\n").encode())
        except OSError:
            raise self._death() from None

    def _answer(self, deadline: float) -> dict:
        """The next answer or event line (lines that are not JSON objects are output of the
        checked code's own, and skipped)."""
        while True:
            line, newline, rest = self._buffer.partition(b"\n")
            if not newline:
                self._read(deadline)
                continue
            self._buffer = rest
            message = _json_object(line)
            if message is not None:
                return message

    def _read(self, deadline: float) -> None:
        left = deadline - time.monotonic()
        with selectors.DefaultSelector() as selector:
            selector.register(self._process.stdout, selectors.EVENT_READ)
            ready = selector.select(max(0.0, left))
        if not ready:
            raise TryWorkerFailure(
                f"the try worker gave no answer within {self.timeout:.0f} s and was stopped",
                "a patched formula may loop; --timeout SECONDS allows more")
        chunk = os.read(self._process.stdout.fileno(), 1 << 16)
        if not chunk:
            raise self._death()
        self._buffer += chunk

    def _death(self) -> TryWorkerFailure:
        try:
            code = self._process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self._process.kill()
            code = self._process.wait()
        how = f"was killed by signal {-code}" if code < 0 else f"exited with {code}"
        return TryWorkerFailure(f"the try worker {how}{self._stderr_tail()}",
                                  "the patched code crashed the process it was loaded in, or "
                                  "torch could not be imported; see the message above")

    def _stderr_tail(self) -> str:
        if self._stderr is None:
            return ""
        self._stderr.seek(0, os.SEEK_END)
        size = self._stderr.tell()
        self._stderr.seek(max(0, size - 4096))
        lines = self._stderr.read().decode(errors="replace").strip().splitlines()[-5:]
        return ":\n" + "\n".join(lines) if lines else ""


def _json_object(line: bytes) -> dict | None:
    if not line.startswith(b"{"):
        return None
    try:
        message = json.loads(line)
    except ValueError:  # printed text that happens to begin with a brace
        return None
    return message if isinstance(message, dict) else None


def _ended(process: subprocess.Popen, kill: bool) -> None:
    """The worker left or killed, and its pipes closed whichever (not left to the garbage
    collector, which warns of them)."""
    try:
        if kill or not _left(process):
            process.kill()
            process.wait()
    finally:
        process.stdin.close()  # unbuffered (bufsize=0): closing flushes nothing, cannot fail
        process.stdout.close()


def _left(process: subprocess.Popen) -> bool:
    """Whether the worker ended within a few seconds of its input closing."""
    try:
        process.stdin.close()
        process.wait(timeout=5)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return True
