"""The gradient test index built: the OpInfos named handed out one at a time to worker
processes (WORKERS of them, each the observer: `python -m` WORKER_MODULE, an OpInfo's name
in, one JSON line out), never observed in gradshard's own. An OpInfo whose run hangs past
OPINFO_TIMEOUT or kills its worker is recorded as lost (the worker is replaced): `affected
--tests` finds such an OpInfo's tests by name, as before. A worker's answer is checked as the
index file's body is (reach.py) before it is kept.
"""

from __future__ import annotations

import json
import os
import selectors
import subprocess
import sys
import tempfile
import time
from collections import deque
from typing import Callable, Sequence

from gradshard.cache.errors import EnvironmentFailure
from gradshard.service.gradient_tests.reach import DtypeReach, GradientIndex, dtypes_read, words

__all__ = ["OPINFO_TIMEOUT", "WORKERS", "WORKER_MODULE", "build_index"]

WORKERS = 2
OPINFO_TIMEOUT = 180.0  # one OpInfo's samples, every dtype and variant (the slowest: ~5 s)
START_TIMEOUT = 300.0  # a worker importing torch and op_db (~5 s)
STARTS = 3  # workers that may fail to start, one after the other, before the build gives up
WORKER_MODULE = "gradshard.service.gradient_tests.observer"


def build_index(names: Sequence[str], workers: int = WORKERS, timeout: float = OPINFO_TIMEOUT,
                progress: bool = True, command: Sequence[str] | None = None) -> GradientIndex:
    """Every named OpInfo observed by `workers` worker processes (each handed one OpInfo at a
    time): one that overruns `timeout` or dies is lost, and its worker replaced."""
    started = time.perf_counter()
    if not names:
        return GradientIndex({}, {}, {}, 0.0, 0, built=True)
    command = tuple(command or (sys.executable, "-m", WORKER_MODULE))
    pool = _Pool(command, deque(dict.fromkeys(names)), max(1, min(workers, len(names))),
                 timeout)
    with _progress(progress, len(pool.queue)) as advance:
        pool.run(advance)
    return GradientIndex({}, pool.observed, pool.lost, time.perf_counter() - started,
                         pool.size, built=True)


class _Progress:
    def __init__(self, total: int) -> None:
        from rich.console import Console
        from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn,
                                   TimeElapsedColumn)

        self.bar = Progress(TextColumn("observing the OpInfos' gradient samples"), BarColumn(),
                            MofNCompleteColumn(), TimeElapsedColumn(),
                            TextColumn("{task.fields[name]}"), console=Console(stderr=True),
                            transient=True)
        self.task = self.bar.add_task("index", total=total, name="")

    def __call__(self, name: str) -> None:
        self.bar.update(self.task, advance=1, name=name)


class _progress:
    """A rich progress bar on a terminal's stderr; a line before and after elsewhere."""

    def __init__(self, enabled: bool, total: int) -> None:
        self.enabled, self.total, self.bar = enabled, total, None
        self.started = time.perf_counter()

    def __enter__(self) -> Callable[[str], None]:
        if not self.enabled:
            return lambda name: None
        if sys.stderr.isatty():
            self.bar = _Progress(self.total)
            self.bar.bar.start()
            return self.bar
        print(f"gradshard: observing the gradient samples of {self.total} OpInfos (once per "
              "installed torch)", file=sys.stderr, flush=True)
        return lambda name: None

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.bar.stop()
        if self.enabled and exc[0] is None:
            print(f"gradshard: the gradient test index was built in "
                  f"{time.perf_counter() - self.started:.0f} s", file=sys.stderr, flush=True)


class _Worker:
    """One worker process: its pipes, what it was last handed and by when it must answer."""

    def __init__(self, command: tuple[str, ...]) -> None:
        self.stderr = tempfile.TemporaryFile()
        self.process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=self.stderr, bufsize=0)
        self.buffer = b""
        self.ready = False
        self.current: str | None = None
        self.deadline = time.monotonic() + START_TIMEOUT
        self.ended: str | None = None

    def hand(self, name: str, timeout: float) -> bool:
        try:
            self.process.stdin.write((json.dumps({"opinfo": name}) + "\n").encode())
        except OSError:
            return False
        self.current, self.deadline = name, time.monotonic() + timeout
        return True

    def messages(self) -> list[dict] | None:
        """The complete lines read now, as JSON objects (None: it ended)."""
        chunk = os.read(self.process.stdout.fileno(), 1 << 20)
        if not chunk:
            return None
        self.buffer += chunk
        *lines, self.buffer = self.buffer.split(b"\n")
        found = []
        for line in lines:
            try:
                message = json.loads(line)
            except ValueError:
                continue
            if isinstance(message, dict):
                found.append(message)
        return found

    def end(self) -> str:
        """Killed (if still running) and reaped: how it ended, with its stderr's tail (once:
        later calls say the same)."""
        if self.ended is not None:
            return self.ended
        process = self.process
        if process.poll() is None:
            process.kill()
        code = process.wait()
        for pipe in (process.stdin, process.stdout):
            try:
                pipe.close()
            except OSError:
                pass
        how = f"killed by signal {-code}" if code < 0 else f"exited with {code}"
        self.stderr.seek(max(0, self.stderr.seek(0, os.SEEK_END) - 2048))
        tail = self.stderr.read().decode(errors="replace").strip().splitlines()[-3:]
        self.stderr.close()
        self.ended = how + (": " + " | ".join(tail) if tail else "")
        return self.ended

    def stop(self) -> None:
        if self.ended is not None:
            return
        try:
            self.process.stdin.close()
            self.process.wait(timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            pass
        self.end()


class _Pool:
    def __init__(self, command: tuple[str, ...], queue: deque, size: int,
                 timeout: float) -> None:
        self.command, self.queue, self.size, self.timeout = command, queue, size, timeout
        self.observed: dict[str, dict[str, DtypeReach]] = {}
        self.lost: dict[str, str] = {}
        self.failed_starts = 0
        self.workers: list[_Worker] = []

    def run(self, advance: Callable[[str], None]) -> None:
        try:
            self.workers = [_Worker(self.command) for _ in range(self.size)]
            while self.queue or any(w.current is not None for w in self.workers):
                self._hand_out()
                self._wait(advance)
        except BaseException:  # an interrupt, or no worker starts: none is waited for
            for worker in self.workers:
                worker.end()
            raise
        for worker in self.workers:
            worker.stop()

    def _hand_out(self) -> None:
        for index, worker in enumerate(self.workers):
            if worker.ready and worker.current is None and self.queue:
                name = self.queue.popleft()
                if not worker.hand(name, self.timeout):
                    self.queue.appendleft(name)
                    self._replace(index, worker, None)

    def _wait(self, advance: Callable[[str], None]) -> None:
        with selectors.DefaultSelector() as selector:
            for index, worker in enumerate(self.workers):
                selector.register(worker.process.stdout, selectors.EVENT_READ, index)
            deadline = min(w.deadline for w in self.workers)
            ready = selector.select(None if deadline == float("inf")
                                    else max(0.0, deadline - time.monotonic()))
        for key, _ in ready:
            index = key.data
            worker = self.workers[index]
            messages = worker.messages()
            if messages is None:
                self._replace(index, worker, "its worker died")
                continue
            for message in messages:
                self._take(worker, message, advance)
        now = time.monotonic()
        for index, worker in enumerate(self.workers):
            if worker.deadline < now:
                self._replace(index, worker, f"it ran past {self.timeout:.0f} s")

    def _take(self, worker: _Worker, message: dict, advance: Callable[[str], None]) -> None:
        if message.get("ready") is True and not worker.ready:
            worker.ready, worker.deadline = True, float("inf")
            self.failed_starts = 0
            return
        name = message.get("opinfo")
        if name is None or name != worker.current:
            return
        try:
            if "error" in message:
                raise ValueError(str(message["error"])[:500])
            self.observed[name] = dtypes_read(message.get("observed"))
        except (ValueError, TypeError, KeyError) as error:
            self.lost[name] = words(f"its observation failed: {error}")
        worker.current, worker.deadline = None, float("inf")
        advance(name)

    def _replace(self, index: int, worker: _Worker, why: str | None) -> None:
        """The worker ended (killed if running) and another started in its place; the OpInfo
        it had is lost (`why`), or, before it was ready, the start counted as failed."""
        how = worker.end()
        if worker.current is not None and why is not None:
            self.lost[worker.current] = words(f"{why} ({how})")
        elif not worker.ready:
            self.failed_starts += 1
            if self.failed_starts >= STARTS:
                raise EnvironmentFailure(
                    f"the gradient test index's worker could not start ({how})",
                    "check that torch and its OpInfos import: python -c 'import torch."
                    "testing._internal.common_methods_invocations'")
        self.workers[index] = _Worker(self.command)
