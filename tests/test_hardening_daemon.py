"""The daemon under a hostile or unlucky client (issue 15, items 16 and 10, and the daemon's
side of item 14): a stopped or dead daemon, bursts of connections, huge and unfinished
request lines, a builder that crashes, and readers that close our output. Real daemon
processes, real unix sockets, real SIGSTOP/SIGCONT/SIGKILL."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from support.compile import COMPILING, ESCAPED, name_a_file_outside_the_compile_dir
from support.daemon import Running, daemon  # noqa: F401  (daemon: a fixture)
from support.specs import MINI_SPEC, MUL_OTHER

# A compiler that takes 3 s to name itself (the toolchain probe every build starts with) and
# fails any compile: a build request the daemon works on for seconds, at no compile's cost.
SLOW_CXX = textwrap.dedent("""\
    #!/bin/sh
    if [ "$1" = --version ]; then sleep 3; echo "slow c++ 1.0"; exit 0; fi
    exit 1
""")

# An unreadable templates directory, for a root test process as for anyone: while the flag
# file exists, an audit hook (sitecustomize on PYTHONPATH, so the daemon process has it too)
# refuses every listing of and open inside the directory, with the kernel's error.
UNREADABLE_WHILE_FLAGGED = textwrap.dedent('''
    import errno, os, sys

    _DENIED = os.environ["GRADSHARD_TEST_UNREADABLE"]
    _FLAG = os.environ["GRADSHARD_TEST_UNREADABLE_FLAG"]
    _EVENTS = ("open", "os.listdir", "os.scandir")


    def _hook(event, args):
        if event in _EVENTS and args and isinstance(args[0], (str, bytes, os.PathLike)):
            path = os.fsdecode(args[0])
            if (path == _DENIED or path.startswith(_DENIED + os.sep)) and os.path.exists(_FLAG):
                raise PermissionError(errno.EACCES, "Permission denied", path)


    sys.addaudithook(_hook)
''')


def connect(path: str, timeout: float) -> socket.socket:
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    connection.settimeout(timeout)
    connection.connect(path)
    return connection


def lines_until_answer(connection: socket.socket) -> list[tuple[float, dict]]:
    """Every line the daemon sends for one request, with when it arrived; the last one is
    the answer (the first line without "progress")."""
    received = []
    with connection.makefile("rb") as lines:
        for line in lines:
            received.append((time.monotonic(), json.loads(line)))
            if "progress" not in received[-1][1]:
                break
    return received


def build_here_or_there(running: Running) -> subprocess.Popen:
    """`gradshard build` with the daemon's options (so it asks the daemon first)."""
    return subprocess.Popen([sys.executable, "-m", "gradshard.service.entry", "build",
                             "--codegen-only", "--out", str(running.out), *running.where()],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=running.env)


def high_water_mark(pid: int) -> int:
    """The process's peak resident memory in kB (VmHWM)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise AssertionError(f"no VmHWM for pid {pid}")


def closed_pipe_run(running: Running, *argv: str) -> subprocess.CompletedProcess:
    """gradshard with its stdout a pipe whose reader has already gone away."""
    read, write = os.pipe()
    os.close(read)
    try:
        return subprocess.run([sys.executable, "-m", "gradshard.service.entry", *argv],
                              stdout=write, stderr=subprocess.PIPE, text=True,
                              env=running.env, timeout=120)
    finally:
        os.close(write)


@contextlib.contextmanager
def stopped(pid: int):
    """The process stopped (SIGSTOP) for the block, resumed after it whatever happens."""
    os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        os.kill(pid, signal.SIGCONT)


# ---------------------------------------------------------------------------------------------
# A daemon that works long, falls silent or dies


def test_a_long_request_gets_a_progress_line_at_least_every_2_s(tmp_path):
    slow = tmp_path / "slow-cxx"
    slow.write_text(SLOW_CXX)
    slow.chmod(0o755)
    (tmp_path / "no-headers").mkdir()
    spec = tmp_path / "spec"
    subprocess.run(["cp", "-r", str(MINI_SPEC), str(spec)], check=True)
    running = Running(tmp_path, spec, "--cxx", str(slow), "--include",
                      str(tmp_path / "no-headers"))
    started = running.start()
    assert started.returncode == 0, started.stderr
    try:
        running.wait(timeout=120)
        connection = connect(running.status()["socket"], timeout=10)
        with connection:
            asked = time.monotonic()
            connection.sendall(b'{"request": "build"}\n')
            received = lines_until_answer(connection)
        times = [asked] + [when for when, _ in received]
        gaps = [later - earlier for earlier, later in zip(times, times[1:])]
        assert times[-1] - asked >= 3, received
        assert max(gaps) <= 2.0, gaps
        progress = [line for _, line in received[:-1]]
        assert progress and all(line["progress"] == "building" for line in progress), received
        assert received[-1][1]["ok"] is False  # the slow compiler fails: an answer all the same
    finally:
        running.cli("daemon", "stop", *running.where(), check=False)


def test_a_stopped_daemon_is_given_up_after_10_s_of_silence(daemon):
    from gradshard.service.daemon.runtime import SILENCE_LIMIT

    status = daemon.status()
    asked = time.monotonic()
    with stopped(status["pid"]):
        build = build_here_or_there(daemon)
        out, err = build.communicate(timeout=SILENCE_LIMIT + 40)
    waited = time.monotonic() - asked
    assert build.returncode == 0, err
    assert SILENCE_LIMIT <= waited < SILENCE_LIMIT + 30, waited
    assert f"sent nothing for {SILENCE_LIMIT:g} s" in err, err
    assert f"pid {status['pid']}" in err and status["socket"] in err, err
    assert "built by the daemon" not in out and "Traceback" not in err
    assert daemon.status()["pid"] == status["pid"]  # resumed, it serves again


def test_a_daemon_that_dies_during_a_request_is_noticed(daemon):
    """The daemon dies (a segfault, the OOM killer: here SIGKILL) with `gradshard build`
    waiting for its answer: the build notices the closed connection at once and builds
    itself."""
    status = daemon.status()
    asked = time.monotonic()
    with stopped(status["pid"]):
        build = build_here_or_there(daemon)
        time.sleep(2)  # the build has connected and sent its request by now
        os.kill(status["pid"], signal.SIGKILL)
    out, err = build.communicate(timeout=60)
    assert build.returncode == 0, err
    assert time.monotonic() - asked < 10, "the build waited for the dead daemon's silence"
    assert "closed the connection without answering" in err, err
    assert f"pid {status['pid']}" in err and "building here" in err, err
    assert "built by the daemon" not in out and "Traceback" not in err
    assert (daemon.out / "Functions.cpp").is_file()


# ---------------------------------------------------------------------------------------------
# Connections: bursts, huge lines, silent clients


def test_a_burst_of_connections_is_queued_not_refused(daemon):
    status = daemon.status()
    connections, refused = [], []
    try:
        with stopped(status["pid"]):  # nothing is accepted: every connection waits in the queue
            for _ in range(64):
                try:
                    connections.append(connect(status["socket"], timeout=5))
                except OSError as error:
                    refused.append(error)
        assert not refused, f"{len(refused)} of 64 refused: {refused[0]}"
        for connection in connections:
            connection.sendall(b'{"request": "status"}\n')
        answers = [lines_until_answer(c)[-1][1] for c in connections]
        assert all(a["ok"] and a["pid"] == status["pid"] for a in answers)
    finally:
        for connection in connections:
            connection.close()


def test_an_oversized_request_line_is_refused_unread(daemon):
    status = daemon.status()
    before = high_water_mark(status["pid"])
    padding = "x" * (32 << 20)
    with connect(status["socket"], timeout=20) as connection:
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # it stopped reading
            connection.sendall(json.dumps({"request": "status", "padding": padding}).encode()
                               + b"\n")
        answer = lines_until_answer(connection)[-1][1]
    assert answer["ok"] is False and "over 1 MiB" in answer["error"], answer
    assert high_water_mark(status["pid"]) - before < 8 << 10  # kB: the line was never held
    assert daemon.status()["pid"] == status["pid"]


def test_a_connection_that_never_finishes_its_line_is_closed(daemon):
    from gradshard.service.daemon.protocol import REQUEST_TIMEOUT

    status = daemon.status()
    with connect(status["socket"], timeout=REQUEST_TIMEOUT + 10) as silent:
        silent.sendall(b'{"request": "sta')  # and nothing more
        opened = time.monotonic()
        assert daemon.status()["pid"] == status["pid"]  # others are served meanwhile
        assert time.monotonic() - opened < 5
        said = b""
        while chunk := silent.recv(4096):
            said += chunk
        closed = time.monotonic() - opened
    assert REQUEST_TIMEOUT - 1 <= closed <= REQUEST_TIMEOUT + 5, closed
    answer = json.loads(said)
    assert answer["ok"] is False and "no complete request line" in answer["error"], answer


# ---------------------------------------------------------------------------------------------
# A builder that crashes


def test_a_crashing_builder_leaves_the_daemon_serving(tmp_path, monkeypatch):
    """The templates directory turns unreadable under a running daemon (an exception where
    the builder itself works, not only inside a build): the build request gets an error
    answer, the daemon keeps serving, and the next build after the fix succeeds."""
    from gradshard.service.daemon.runtime import daemon_paths, request

    spec = tmp_path / "spec"
    subprocess.run(["cp", "-r", str(MINI_SPEC), str(spec)], check=True)
    hooks, flag = tmp_path / "hooks", tmp_path / "unreadable"
    hooks.mkdir()
    (hooks / "sitecustomize.py").write_text(UNREADABLE_WHILE_FLAGGED)
    running = Running(tmp_path, spec, "--codegen-only")
    running.env.update(PYTHONPATH=os.pathsep.join(filter(None, [str(hooks),
                                                                os.environ.get("PYTHONPATH")])),
                       GRADSHARD_TEST_UNREADABLE=str(spec / "autograd" / "templates"),
                       GRADSHARD_TEST_UNREADABLE_FLAG=str(flag))
    monkeypatch.setenv("XDG_RUNTIME_DIR", running.env["XDG_RUNTIME_DIR"])
    started = running.start()
    assert started.returncode == 0, started.stderr
    try:
        pid = running.wait()["pid"]
        paths = daemon_paths(spec.resolve(), running.cache.resolve())
        flag.touch()
        time.sleep(1.5)  # the builder's periodic checks meet the unreadable directory
        crashed = request(paths, {"request": "build"}, timeout=30)
        assert crashed is not None, "the daemon died"
        assert crashed["ok"] is False and "Permission denied" in "\n".join(crashed["errors"])
        assert request(paths, {"request": "status"})["pid"] == pid
        flag.unlink()
        rebuilt = request(paths, {"request": "build"}, timeout=30)
        assert rebuilt["ok"], rebuilt
    finally:
        flag.unlink(missing_ok=True)
        running.cli("daemon", "stop", *running.where(), check=False)


@pytest.mark.compiler
@pytest.mark.slow
def test_cache_damage_found_by_the_compile_step_is_recovered(tmp_path, monkeypatch,
                                                             seeded_pchs):
    """The cache a daemon starts on names a file outside the compile directory in its
    compile layout (damaged or crafted between two builds): the compile step finds it, the
    store is set aside and the build runs again; later builds succeed on the new store."""
    from gradshard.service.daemon.runtime import daemon_paths, request

    spec = tmp_path / "spec"
    subprocess.run(["cp", "-r", str(MINI_SPEC), str(spec)], check=True)
    running = Running(tmp_path, spec, *COMPILING)
    seeded_pchs(running.cache)
    running.cli("build", "--out", str(running.out), *running.where(), *COMPILING)
    name_a_file_outside_the_compile_dir(running.cache)
    monkeypatch.setenv("XDG_RUNTIME_DIR", running.env["XDG_RUNTIME_DIR"])
    started = running.start()
    assert started.returncode == 0, started.stderr
    try:
        first = running.wait(timeout=300)["last"]
        assert first["ok"] or first["exit"] == 2, first
        warnings = "\n".join(first.get("warnings", []) + first.get("errors", []))
        assert ESCAPED in warnings and "internal error" not in warnings, first
        assert any(".damaged-" in p.name for p in running.cache.iterdir())
        paths = daemon_paths(spec.resolve(), running.cache.resolve())
        again = request(paths, {"request": "build"}, timeout=300)
        assert again["ok"] and again["compile"]["failed"] == [], again
        assert again["warnings"] == [], again  # the last build's warnings are not repeated
    finally:
        running.cli("daemon", "stop", *running.where(), check=False)


# ---------------------------------------------------------------------------------------------
# A request whose work raises what the daemon does not survive


class Escaping(BaseException):
    """Neither an Exception nor SystemExit: passes every handler the daemon has."""


def _escape() -> dict:
    raise Escaping("out of the request thread")


def test_a_failed_request_future_is_always_resolved():
    from concurrent.futures import Future

    from gradshard.service.daemon.protocol import resolve

    answer: Future = Future()
    resolve(answer, _escape)
    assert answer.done() and isinstance(answer.exception(), Escaping)


def test_a_request_whose_work_escapes_is_answered_with_an_error(tmp_path):
    """Not progress lines forever (the client would never hit its silence limit)."""
    import threading
    from types import SimpleNamespace

    from gradshard.service.compile.driver import CompileOptions
    from gradshard.service.daemon.runtime import DaemonPaths
    from gradshard.service.daemon.protocol import RequestHandler
    from gradshard.service.daemon.server import Daemon, DaemonConfig
    from gradshard.service.files.spec_location import locate_spec

    paths = DaemonPaths("k", tmp_path / "k.sock", tmp_path / "k.lock", tmp_path / "k.log")
    daemon = Daemon(DaemonConfig(locate_spec(str(MINI_SPEC)), tmp_path / "out",
                                 tmp_path / "cache", True, CompileOptions()), paths, print)
    daemon.answer = lambda request: _escape()
    ours, theirs = socket.socketpair()
    handler = RequestHandler.__new__(RequestHandler)  # its socket, without serving it
    handler.server, handler.request = SimpleNamespace(daemon=daemon), ours
    answers: list[dict] = []
    worker = threading.Thread(target=lambda: answers.append(
        handler._answer_with_progress({"request": "status"})), daemon=True)
    with ours, theirs:
        worker.start()
        worker.join(timeout=10)
        assert not worker.is_alive(), "no answer: progress lines forever"
    assert answers[0]["ok"] is False and "Escaping" in answers[0]["error"], answers
    assert "Escaping" in paths.log.read_text()  # logged with its traceback


# ---------------------------------------------------------------------------------------------
# Readers that close our output


def test_daemon_commands_on_a_closed_pipe_stop_quietly(daemon):
    """`gradshard daemon status | head -c 10`: exit 141 (as a shell tool killed by SIGPIPE
    reports), nothing on stderr; `watch` likewise when its reader goes away later."""
    commands = [["daemon", "status", *daemon.where()],
                ["daemon", "status", "--json", *daemon.where()],
                ["daemon", "logs", *daemon.where()],
                ["build", "--codegen-only", "--out", str(daemon.out), *daemon.where()],
                ["watch", "--codegen-only", "--out", str(daemon.root / "watched"),
                 "--spec", str(daemon.spec), "--cache", str(daemon.root / "other")]]
    for argv in commands:
        done = closed_pipe_run(daemon, *argv)
        assert (done.returncode, done.stderr) == (141, ""), argv
    watch = subprocess.Popen([sys.executable, "-m", "gradshard.service.entry", *commands[-1]],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=daemon.env)
    try:
        assert watch.stdout.readline().startswith(b"gradshard watch: ")
        watch.stdout.close()  # `gradshard watch | head -1`
        daemon.edit(MUL_OTHER, MUL_OTHER.replace("grad,", "grad * 2,"))  # a line to print
        assert watch.wait(timeout=60) == 141
        assert watch.stderr.read() == b""
    finally:
        watch.kill()
        watch.stderr.close()
    assert len(daemon.files()) == 2  # the daemon's socket and lock: watch left nothing
