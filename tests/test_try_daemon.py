"""`watch --try`: after each save, one line per op whose code changed, from a warm worker;
`daemon status` carries the last verdicts. Real processes: the watch process, its worker, the
compiles of the patch, the installed torch."""

from __future__ import annotations

import queue
import subprocess
import sys
import threading
import time

import pytest
from support.daemon import Running, write_atomically

SIN = "- name: sin(Tensor self) -> Tensor\n  self: grad * self.cos().conj()\n"
WRONG = SIN.replace("conj()\n", "conj() * 2\n")
RIGHT_AGAIN = SIN.replace("conj()\n", "conj() * 1\n")  # other code, the same derivative


class Watching:
    """`gradshard watch --try` in a process of its own; its output lines in a queue."""

    def __init__(self, running: Running) -> None:
        self.running = running
        command = [sys.executable, "-m", "gradshard.service.entry", "watch",
                   *running.where(), "--out", str(running.out), *running.options]
        self.process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                        text=True, env=running.env)
        self.lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self.seen: list[str] = []

    def _read(self) -> None:
        for line in self.process.stdout:
            self.lines.put(line.rstrip("\n"))

    def until(self, wanted: str, timeout: float = 300) -> list[str]:
        """The lines printed up to the first containing `wanted`."""
        deadline = time.monotonic() + timeout
        lines = []
        while time.monotonic() < deadline:
            try:
                line = self.lines.get(timeout=0.5)
            except queue.Empty:
                assert self.process.poll() is None, "\n".join(self.seen)
                continue
            lines.append(line)
            self.seen.append(line)
            if wanted in line:
                return lines
        raise AssertionError(f"no line with {wanted!r} in {timeout} s:\n" + "\n".join(self.seen))

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()


def edit(running: Running, old: str, new: str) -> None:
    path = running.spec / "autograd" / "derivatives.yaml"
    text = path.read_text()
    assert text.count(old) == 1
    write_atomically(path, text.replace(old, new))


@pytest.mark.compiler
@pytest.mark.slow
def test_watch_try_checks_each_save(try_workspace, tmp_path):
    spec, cache = try_workspace
    running = Running(tmp_path, spec, "--codegen-only", "--try", "--try-dtype", "float64")
    running.cache = cache
    watching = Watching(running)
    try:
        watching.until("(start)")
        running.wait()
        first = running.status()["checks"]
        assert first["ops"] == [] and not first["error"]  # the installed spec: nothing differs
        assert "no op's code differs" in running.cli("daemon", "status", *running.where()).stdout

        edit(running, SIN, WRONG)
        # each op's verdict line as soon as the worker has it (the foreach op, reached through
        # sin, comes first), then the failing samples with their errors located
        lines = watching.until("try: FAIL sin ")
        assert any(line.startswith("try: FAIL _foreach_sin ") and "first failing sample" in line
                   for line in lines)
        assert "first failing sample" in lines[-1]
        assert not any("largest error" in line for line in lines)
        lines = watching.until("try: FAIL sin  0/")  # sin's located samples, after the foreach's
        assert any("largest error" in line for line in lines)
        running.wait()
        checks = running.status()["checks"]
        verdicts = {op["op"]: {s["verdict"] for s in op["samples"]} for op in checks["ops"]}
        assert verdicts == {"sin": {"FAIL"}, "_foreach_sin": {"FAIL"}}
        assert "FAIL sin " in running.cli("daemon", "status", *running.where()).stdout

        # another edit of sin's code, right again: both ops are checked again and pass
        edit(running, WRONG, RIGHT_AGAIN)
        lines = watching.until("try: PASS sin ")
        running.wait()
        verdicts = {op["op"]: {s["verdict"] for s in op["samples"]}
                    for op in running.status()["checks"]["ops"]}
        assert verdicts == {"sin": {"PASS"}, "_foreach_sin": {"PASS"}}

        # back to the installed code: the ops leave the patch and the status
        edit(running, RIGHT_AGAIN, SIN)
        watching.until("try: sin: back to the installed torch's code")
        running.wait()
        assert running.status()["checks"]["ops"] == []
    finally:
        watching.stop()
        path = spec / "autograd" / "derivatives.yaml"
        text = path.read_text()
        for changed in (WRONG, RIGHT_AGAIN):
            text = text.replace(changed, SIN)
        path.write_text(text)
