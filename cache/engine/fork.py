"""Work done by a forked child, so that a build uses a second processor.

Tasks are pure functions of records, so a forked copy of the process computes exactly what
the process itself would. A child gets its work as a function, runs it, writes the bytes it
returns into an anonymous file made before the fork, and exits without running any exit
handler or flushing any buffer it shares with its parent. Its parent reads those bytes once
the child is gone: nothing read here comes from the cache directory. A child that raised,
or died, hands back nothing; the caller then does the work itself.
"""

from __future__ import annotations

import contextlib
import gc
import os
import signal
import tempfile
import threading
from typing import Callable

__all__ = ["Child", "can_fork", "processors"]


def can_fork() -> bool:
    """Whether a child can be forked: only the calling thread goes on in a child, so a
    process running other threads (the daemon's watcher, a server) never forks."""
    return hasattr(os, "fork") and threading.active_count() == 1


def processors() -> int:
    """The processors this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


class Child:
    """A forked child doing some work; `collect` waits for it and reads what it gave."""

    def __init__(self, pid: int, file: int) -> None:
        self.pid = pid
        self.file = file
        self.status: int | None = None  # its exit status, once it is known to be gone

    @classmethod
    def start(cls, work: Callable[[], bytes]) -> Child | None:
        """Fork a child that runs `work()`; None if none could be made."""
        try:
            file = _anonymous_file()
        except OSError:
            return None
        try:
            pid = os.fork()
        except OSError:
            os.close(file)
            return None
        if pid == 0:
            _child_main(work, file)  # never returns
        return cls(pid, file)

    def running(self) -> bool:
        """Whether the child still works (without waiting: it is reaped once done)."""
        if self.pid and self.status is None:
            try:
                done, status = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:
                done, status = self.pid, -1
            if done:
                self.status = status
        return bool(self.pid) and self.status is None

    def collect(self) -> bytes | None:
        """Wait for the child: what its work returned, or None if it raised or died."""
        try:
            status = self.status if self.status is not None else _wait(self.pid)
            self.pid = 0
            if not (os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0):
                return None
            return _read_all(self.file)
        finally:
            self.stop()

    def stop(self) -> None:
        """End the child if it still runs (its parent failed or was interrupted)."""
        if self.pid and self.status is None:  # a reaped child's pid may be another's now
            with contextlib.suppress(OSError):
                os.kill(self.pid, signal.SIGKILL)
            _wait(self.pid)
        self.pid = 0
        if self.file >= 0:
            os.close(self.file)
            self.file = -1


def _child_main(work: Callable[[], bytes], file: int) -> None:
    """A child's whole life. Its garbage collector stays off: a collection would write to
    every object's header, copying each page it shares with the parent."""
    code = 1
    try:
        gc.disable()
        signal.signal(signal.SIGINT, signal.SIG_DFL)  # ^C ends the child; the parent reports
        data = work()
        view = memoryview(data)
        while view:
            view = view[os.write(file, view):]
        code = 0
    except BaseException:  # the parent does the work itself, raising its error there
        code = 1
    finally:
        os._exit(code)


def _anonymous_file() -> int:
    if hasattr(os, "memfd_create"):
        return os.memfd_create("gradshard-child", os.MFD_CLOEXEC)
    with tempfile.TemporaryFile() as handle:  # unlinked already: only its descriptor names it
        return os.dup(handle.fileno())


def _wait(pid: int) -> int:
    try:
        return os.waitpid(pid, 0)[1]
    except ChildProcessError:
        return -1


def _read_all(file: int) -> bytes:
    size = os.fstat(file).st_size
    os.lseek(file, 0, os.SEEK_SET)
    chunks = []
    while size > 0:
        chunk = os.read(file, min(size, 1 << 24))
        if not chunk:
            break
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)
