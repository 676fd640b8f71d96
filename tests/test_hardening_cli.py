"""Environment failures end as usage errors (exit 2, what failed, a hint), never as "internal
error … this is a bug"; a reader that closes our output stops us quietly."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from support.specs import MINI_SPEC

# Root reads every directory, and this suite runs as root: the unreadable-directory tests run
# gradshard in a user namespace that maps us to an unprivileged owner of our own files, so
# the kernel refuses what a mode of 000 refuses (as an ordinary user, as they are).
WITHOUT_PRIVILEGES = (["unshare", "--user", "--map-user=1000", "--map-group=1000"]
                      if os.geteuid() == 0 else [])


def gradshard(*argv: str, env: dict | None = None, prefix: tuple[str, ...] = (),
              **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([*prefix, sys.executable, "-m", "gradshard.service.entry", *argv],
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, **(env or {})}, **kwargs)


def closed_pipe_run(*argv: str) -> tuple[int, str]:
    """Run gradshard with its stdout a pipe whose reader has already gone away."""
    read, write = os.pipe()
    os.close(read)
    try:
        process = subprocess.Popen([sys.executable, "-m", "gradshard.service.entry", *argv],
                                   stdout=write, stderr=subprocess.PIPE, text=True)
    finally:
        os.close(write)
    _, err = process.communicate(timeout=300)
    return process.returncode, err


@pytest.fixture
def mini_build(tmp_path) -> tuple[Path, Path]:
    cache = tmp_path / "cache"
    done = gradshard("build", "--codegen-only", "--spec", str(MINI_SPEC),
                     "--out", str(tmp_path / "out"), "--cache", str(cache))
    assert done.returncode == 0, done.stderr
    return tmp_path / "out", cache


@pytest.mark.parametrize("command", ["affected", "stats", "show"])
def test_a_closed_pipe_stops_quietly(mini_build, command):
    out, cache = mini_build
    argv = {"affected": ["affected", "--spec", str(MINI_SPEC), "--cache", str(cache)],
            "stats": ["stats", "--cache", str(cache)],
            "show": ["show", "mul", "--spec", str(MINI_SPEC)]}[command]
    code, err = closed_pipe_run(*argv)
    assert code == 141, err
    assert "Traceback" not in err and "internal error" not in err and "Exception" not in err, err


def test_daemon_status_on_a_closed_pipe_stops_quietly(tmp_path):
    code, err = closed_pipe_run("daemon", "status", "--spec", str(MINI_SPEC),
                                "--cache", str(tmp_path / "cache"))
    assert code == 141, err
    assert "Traceback" not in err and "Exception" not in err, err


@pytest.mark.parametrize("command", ["check", "build"])
def test_an_unreadable_spec_directory_is_a_usage_error(tmp_path, command):
    spec = tmp_path / "spec"
    shutil.copytree(MINI_SPEC, spec)
    denied = spec / "autograd"
    argv = ["check", "--spec", str(spec)] if command == "check" else [
        "build", "--codegen-only", "--spec", str(spec), "--out", str(tmp_path / "out"),
        "--cache", str(tmp_path / "cache")]
    denied.chmod(0)
    try:
        done = gradshard(*argv, prefix=tuple(WITHOUT_PRIVILEGES))
    finally:
        denied.chmod(0o755)
    assert done.returncode == 2, done.stderr
    assert "internal error" not in done.stderr and "Traceback" not in done.stderr
    assert "Permission denied" in done.stderr and str(denied) in done.stderr, done.stderr
    assert "hint:" in done.stderr
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())
