"""Where the language server's questions go: to the daemon of the spec when one runs and is
free (its warm build answers), else to the server's own session on the same cache, on one
thread of its own (a session's SQLite connection stays on the thread that opened it).

A daemon busy building (a save's compile takes minutes) says so in its first progress line;
the question is then answered here instead of waiting behind the build.
"""

from __future__ import annotations

import json
import socket
import sys
import traceback
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from gradshard.pipeline.problems import GradshardError
from gradshard.service.editor.buffers import SpecBuffers
from gradshard.service.editor.queries import answer_query
from gradshard.service.session import Session

__all__ = ["DAEMON", "EditorBackend", "SESSION"]

# Who answered (each answer's "by"): the spec's daemon, or the server's own session
DAEMON, SESSION = "daemon", "session"

# Seconds a daemon's answer may take before its first progress line says whether it is free
_DAEMON_SILENCE = 10.0


class EditorBackend:
    """The questions' answers (JSON), one at a time, on the backend's own thread."""

    def __init__(self, cache: Path, use_daemon: bool = True) -> None:
        self.cache = cache
        self.use_daemon = use_daemon
        self.thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="analysis")
        self.session: Session | None = None  # opened on the thread, on first use

    def submit(self, kind: str, buffers: SpecBuffers, extra: dict | None = None):
        """The answer's future (its "by" says who answered)."""
        request = {"request": kind, **buffers.to_json(), **(extra or {})}
        return self.thread.submit(self._answer, kind, request, buffers)

    def _answer(self, kind: str, request: dict, buffers: SpecBuffers) -> dict:
        answer = self._daemon_answer(request, buffers) if self.use_daemon else None
        if answer is not None:
            return {**answer, "by": DAEMON}
        if self.session is None:
            self.session = Session(self.cache)
        try:
            return {**answer_query(kind, request, self.session), "by": SESSION}
        except GradshardError as error:
            return {"ok": False, "error": str(error), "hint": getattr(error, "hint", ""),
                    "by": SESSION}
        except Exception as error:  # noqa: BLE001 (a bug: said, logged, never the server's end)
            traceback.print_exc(file=sys.stderr)  # the editor's log of the server
            return {"ok": False, "error": f"internal error (a bug in gradshard): "
                    f"{type(error).__name__}: {error}", "by": SESSION}

    def _daemon_answer(self, request: dict, buffers: SpecBuffers) -> dict | None:
        """The daemon's answer; None when no daemon runs for the spec and cache, or it is
        busy, or it cannot be talked to."""
        from gradshard.service.daemon.runtime import daemon_paths, running_daemon

        try:
            paths = daemon_paths(buffers.location.root.resolve(), self.cache.resolve())
        except (GradshardError, OSError):
            return None
        if running_daemon(paths) is None:
            return None
        try:
            return _exchange(paths.socket, request)
        except (OSError, ValueError):
            return None

    def close(self) -> None:
        self.thread.submit(self._close).result()
        self.thread.shutdown(wait=True)

    def _close(self) -> None:
        if self.session is not None:
            self.session.close()
            self.session = None


def _exchange(path: Path, request: dict) -> dict | None:
    """The daemon's answer to one request; None when its first progress line says it is
    not idle (its builder would answer only after the build), or it answers no object."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
        connection.settimeout(_DAEMON_SILENCE)
        connection.connect(str(path))
        connection.sendall(json.dumps(request).encode() + b"\n")
        with connection.makefile("rb") as lines:
            for line in lines:
                message = json.loads(line)
                if not isinstance(message, dict):
                    return None
                if "progress" not in message:  # an error: the session answers (and says it)
                    return message if message.get("ok") else None
                if message["progress"] != "idle":
                    return None
    return None
