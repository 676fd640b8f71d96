"""The daemon's socket protocol: newline-delimited JSON over a local socket, and the table of
request kinds the daemon answers (REQUESTS).

    socket clients ──► a request line ──► REQUESTS[kind] ──► progress lines …, one answer line

Clients are untrusted in their timing and size: a request line is at most REQUEST_LIMIT bytes
(never buffered beyond that) and must arrive whole within REQUEST_TIMEOUT; while a request is
being worked on, a progress line goes out every PROGRESS_INTERVAL, so that a client can tell
a daemon at work (a cold compile takes minutes) from a stopped or dead one. Whatever a
request's work raises becomes an error answer (and a bug is logged), never a thread's end.

The daemon (server.py: Daemon) is reached only through `Served`, so that this room imports
no builder and the builder no socket.
"""

from __future__ import annotations

import json
import os
import socket
import socketserver
import threading
import time
from concurrent.futures import Future
from concurrent.futures import wait as wait_for_futures
from functools import partial
from typing import TYPE_CHECKING, Callable, Protocol

from gradshard.pipeline.problems import GradshardError

if TYPE_CHECKING:
    from gradshard.service.files.spec_location import SpecLocation
    from gradshard.service.session import Session

__all__ = ["DaemonServer", "LineReader", "PROGRESS_INTERVAL", "REQUESTS", "REQUEST_LIMIT",
           "REQUEST_TIMEOUT", "RefusedLine", "RequestHandler", "SEND_TIMEOUT", "SURVIVED",
           "Served", "answer_request", "guarded", "resolve"]

# Seconds between progress lines while a request is worked on. The documented promise is one
# at least every 2 s (clients give up after service/daemon/runtime.py: SILENCE_LIMIT of
# silence); half of it leaves room for a loaded machine's scheduling.
PROGRESS_INTERVAL = 1.0
REQUEST_LIMIT = 1 << 20  # bytes in one request line (1 MiB): a request is a small JSON object
REQUEST_TIMEOUT = 5.0  # seconds for a request line to arrive whole (idle connections included)
SEND_TIMEOUT = 5.0  # seconds one answer or progress line may wait for a client that reads
# What the builder and the request threads survive: any exception, and SystemExit (a library
# calling sys.exit() inside a build must not end the daemon). KeyboardInterrupt cannot reach
# them (SIGINT is handled), and a BrokenPipeError from `watch`'s output is meant to end it.
SURVIVED = (Exception, SystemExit)


class Served(Protocol):
    """What the protocol asks of the daemon it serves: its answer to a request (by
    answer_request, unless a test puts another in its place), what it is doing, where a
    failure is logged, and what REQUESTS' entries call."""

    def answer(self, request: dict) -> dict: ...

    def activity(self) -> str: ...

    def log_failure(self, what: str, error: BaseException) -> None: ...

    def status(self) -> dict: ...

    def wait_for_build(self) -> dict: ...

    def wait_idle(self) -> dict: ...

    def on_builder(self, job: Callable[[SpecLocation, Session], dict]) -> dict: ...

    def stop(self) -> None: ...


# ---------------------------------------------------------------------------------------------
# The requests


def _shutdown(daemon: Served, request: dict) -> dict:
    # stopping waits on the builder's locks: the answer goes out without waiting for them
    threading.Thread(target=daemon.stop, daemon=True).start()
    return {"ok": True, "state": "stopping"}


def _affected(daemon: Served, request: dict) -> dict:
    return daemon.on_builder(_affected_now)


def _affected_now(location: SpecLocation, session: Session) -> dict:
    from gradshard.service.query.affected import affected, affected_json

    return affected_json(affected(location, session, None, None), location)


def _editor(kind: str) -> Callable[[Served, dict], dict]:
    """The language server's question `kind` (service/editor/queries.py), answered on the
    builder's thread by the daemon's warm session: the request carries the editor's buffers."""
    return lambda daemon, request: daemon.on_builder(partial(_editor_now, kind, request))


def _editor_now(kind: str, request: dict, location: SpecLocation, session: Session) -> dict:
    from gradshard.service.editor.queries import answer_query

    return answer_query(kind, request, session, location.root)


# Every kind of request and what answers it, given the daemon and the request: a new kind is
# one entry here. Work that reads the cache is a job for the builder's thread
# (Served.on_builder: SQLite connections stay on one thread). The order is the one an unknown
# request's hint lists.
REQUESTS: dict[str, Callable[[Served, dict], dict]] = {
    "status": lambda daemon, request: daemon.status(),
    "build": lambda daemon, request: daemon.wait_for_build(),  # the next build's result
    "wait": lambda daemon, request: daemon.wait_idle(),  # the result once nothing is pending
    "affected": _affected,  # what the spec's changes since the recorded build reach
    # the editor's (service/editor/queries.py): a buffer checked, an entry's hover, the lenses
    "analyse": _editor("analyse"),
    "hover": _editor("hover"),
    "lenses": _editor("lenses"),
    "shutdown": _shutdown,
}


def answer_request(daemon: Served, request: dict) -> dict:
    kind = request.get("request")
    answer = REQUESTS.get(kind) if isinstance(kind, str) else None
    if answer is None:
        return {"ok": False, "error": f"unknown request {kind!r}",
                "hint": f"requests: {', '.join(REQUESTS)}"}
    return answer(daemon, request)


def guarded(work: Callable[[], dict], what: str,
            log_failure: Callable[[str, BaseException], None]) -> dict:
    """work()'s answer; a failure becomes an answer too (and a bug is logged), never the
    end of a thread."""
    try:
        return work()
    except GradshardError as error:
        return {"ok": False, "error": str(error)}
    except SURVIVED as error:
        log_failure(what, error)
        return _internal_error(error)


def _internal_error(error: BaseException) -> dict:
    return {"ok": False, "error": f"internal error: {type(error).__name__}: {error}"}


# ---------------------------------------------------------------------------------------------
# The socket


class DaemonServer(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True
    # The system's largest accept queue: a burst of clients (an editor, a build farm's jobs)
    # waits for the daemon instead of being refused.
    request_queue_size = socket.SOMAXCONN

    def __init__(self, path: str, daemon: Served) -> None:
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
        daemon: Served = self.server.daemon  # type: ignore[attr-defined]
        answer: Future = Future()
        what = f"a {str(request.get('request'))!r:.60} request"
        work = partial(guarded, partial(daemon.answer, request), what, daemon.log_failure)
        threading.Thread(target=resolve, args=(answer, work), name="request",
                         daemon=True).start()
        started = time.monotonic()
        while not wait_for_futures([answer], timeout=PROGRESS_INTERVAL).done:
            self._send({"progress": daemon.activity(),
                        "seconds": round(time.monotonic() - started, 1)})
        failure = answer.exception()
        if failure is None:
            return answer.result()
        # what the work raised past `guarded`: a BaseException that is neither an Exception
        # nor SystemExit
        daemon.log_failure(what, failure)
        return _internal_error(failure)

    def _send(self, message: dict) -> None:
        self.request.settimeout(SEND_TIMEOUT)
        self.request.sendall(json.dumps(message).encode() + b"\n")

    def _send_last(self, message: dict) -> None:
        """The answer before closing; a client that went away meanwhile misses nothing."""
        try:
            self._send(message)
        except OSError:
            pass


def resolve(answer: Future, work: Callable[[], dict]) -> None:
    """work()'s answer, or whatever it raised, into `answer`: never left unset, or the
    request's handler would send progress lines forever. Nothing is raised again: this
    thread ends here, and the handler answers and logs the failure."""
    try:
        answer.set_result(work())
    except BaseException as error:
        answer.set_exception(error)
