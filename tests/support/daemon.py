"""A daemon started with `gradshard daemon start` on a copy of a spec, in real processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support.specs import DERIVATIVES, MINI_SPEC


class Running:
    """A daemon started with `gradshard daemon start` on a spec copy; stopped after the test."""

    def __init__(self, root: Path, spec: Path, *options: str) -> None:
        self.root, self.spec = root, spec
        self.out, self.cache = root / "out", root / "cache"
        self.options = options
        self.env = dict(os.environ, XDG_RUNTIME_DIR=str(root / "run"))
        (root / "run").mkdir(mode=0o700, exist_ok=True)

    def cli(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        done = subprocess.run([sys.executable, "-m", "gradshard.service.entry", *args],
                              capture_output=True, text=True, env=self.env, timeout=300)
        if check:
            assert done.returncode == 0, done.stdout + done.stderr
        return done

    def where(self) -> list[str]:
        return ["--spec", str(self.spec), "--cache", str(self.cache)]

    def start(self) -> subprocess.CompletedProcess:
        return self.cli("daemon", "start", *self.where(), "--out", str(self.out),
                        *self.options, check=False)

    def status(self) -> dict:
        done = self.cli("daemon", "status", "--json", *self.where(), check=False)
        return json.loads(done.stdout)

    def wait(self, timeout: float = 120) -> dict:
        """The status once the daemon is idle with nothing pending."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            answer = self.status()
            if answer.get("state") == "idle" and answer.get("builds"):
                return answer
            time.sleep(0.05)
        raise AssertionError(f"the daemon did not settle: {self.status()}")

    def files(self) -> list[Path]:
        return sorted((self.root / "run" / "gradshard").glob("*"))

    def edit(self, old: str, new: str) -> None:
        path = self.spec / DERIVATIVES
        text = path.read_text()
        assert old in text, old
        write_atomically(path, text.replace(old, new, 1))


def mtime(path: Path) -> int | None:
    try:
        return path.stat().st_mtime_ns
    except FileNotFoundError:
        return None


def write_atomically(path: Path, text: str) -> None:
    """As editors save: a temporary file renamed over the original."""
    temporary = path.with_name(f".{path.name}.swp")
    temporary.write_text(text)
    os.replace(temporary, path)


@pytest.fixture
def daemon(tmp_path):
    spec = tmp_path / "spec"
    subprocess.run(["cp", "-r", str(MINI_SPEC), str(spec)], check=True)
    running = Running(tmp_path, spec, "--codegen-only")
    started = running.start()
    assert started.returncode == 0, started.stderr
    running.wait()
    yield running
    running.cli("daemon", "stop", *running.where(), check=False)
