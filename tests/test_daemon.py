"""The daemon with real processes, real watchdog observers and real unix sockets, on copies of
the mini spec (and one latency figure on the full spec). Latencies are printed (run with -s to
see them), not asserted: performance goals live in benchmarks."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import time
from types import SimpleNamespace

import pytest
from support.daemon import (Running, daemon, mtime,  # noqa: F401  (daemon: a fixture)
                            write_atomically)
from support.specs import DERIVATIVES, FLAT_FILES, MINI_SPEC, MUL_OTHER

from gradshard.cache.errors import EnvironmentFailure
from gradshard.service.daemon import server
from gradshard.service.daemon.server import Daemon


def test_a_save_is_rebuilt(daemon):
    functions = daemon.out / "Functions.cpp"
    assert "mul_tensor_backward(grad, self, other_scalar_type)" in functions.read_text()
    saved = time.monotonic()
    daemon.edit(MUL_OTHER, MUL_OTHER.replace("grad,", "grad * 2,"))
    while "grad * 2" not in functions.read_text():
        assert time.monotonic() - saved < 30, "the save was not rebuilt"
        time.sleep(0.005)
    print(f"\nsave → Functions.cpp rewritten: {time.monotonic() - saved:.3f} s (mini spec)")
    status = daemon.wait()
    assert status["last"]["ok"] and status["builds"] == 2
    assert status["last"]["changed"] == [str((daemon.spec / DERIVATIVES).resolve())]
    assert "1 file(s) written" in status["last"]["line"]


def test_events_that_change_nothing_build_nothing(daemon):
    """A spec file opened for writing and closed unchanged reports an event (as does one save
    seen twice under load): the daemon builds no more, and the last result stays the save's."""
    daemon.edit(MUL_OTHER, MUL_OTHER.replace("grad,", "grad * 2,"))
    deadline = time.monotonic() + 60
    while (saved := daemon.wait())["builds"] < 2:
        assert time.monotonic() < deadline, "the save was not rebuilt"
        time.sleep(0.05)
    for _ in range(3):
        with open(daemon.spec / DERIVATIVES, "a"):
            pass  # close_write, the file as it was
        time.sleep(0.3)  # settled: six times the daemon's quiet time
    status = daemon.wait()
    assert status["builds"] == 2 and status["last"] == saved["last"]
    assert "1 file(s) written" in status["last"]["line"]
    daemon.edit("grad * 2,", "grad * 3,")  # a real change still builds
    while daemon.wait()["builds"] < 3:
        assert time.monotonic() < deadline, "the second save was not rebuilt"
        time.sleep(0.05)


def test_a_signature_that_cannot_be_taken_is_left_to_the_build(monkeypatch):
    """The check before a build never ends the builder's thread: when the spec's signature
    raises (its generator's tree cannot be hashed), the burst builds, and the build reports
    the failure as every build failure is reported."""
    def unreadable(location):
        raise EnvironmentFailure("a generator tree too deep to hash", "a hint", "torchgen")

    monkeypatch.setattr(server, "spec_signature", unreadable)
    daemon = SimpleNamespace(builds=1, config=SimpleNamespace(location=None), _signature=())
    assert Daemon._nothing_changed(daemon, ["derivatives.yaml"]) is False
    assert Daemon._nothing_changed(daemon, ["(rescan)"]) is False


SETTLE = 0.25  # the quiet time the burst test's daemon is given (--settle 250)


@pytest.fixture
def patient_daemon(tmp_path):
    """A daemon with a quiet time well above the saves' 18 ms: the daemon's own watcher
    thread, starved for tens of milliseconds on a busy 2-core machine, sees no gap the saver
    did not make (the default 50 ms left a margin of 32 ms, which CI's load ate)."""
    spec = tmp_path / "spec"
    subprocess.run(["cp", "-r", str(MINI_SPEC), str(spec)], check=True)
    running = Running(tmp_path, spec, "--codegen-only", "--settle", str(int(SETTLE * 1000)))
    started = running.start()
    assert started.returncode == 0, started.stderr
    running.wait()
    yield running
    running.cli("daemon", "stop", *running.where(), check=False)


def test_a_burst_of_saves_builds_at_most_twice(patient_daemon):
    """Saves 18 ms apart are one burst: at most a build once the first settles and one at
    the end. A gap the saving process itself took longer than the settle (this machine was
    busy: 2 cores, a daemon building beside it) ends a burst, and may add one build."""
    daemon = patient_daemon
    before = daemon.status()["builds"]
    saved = []
    for k in range(50):
        daemon.edit(MUL_OTHER if k == 0 else f"grad * {k + 1},", "grad * {},".format(k + 2)
                    if k else MUL_OTHER.replace("grad,", "grad * 2,"))
        saved.append(time.monotonic())
        time.sleep(0.018)
    time.sleep(0.3)  # the last events reach the daemon
    status = daemon.wait()
    pauses = sum(1 for a, b in zip(saved, saved[1:]) if b - a >= SETTLE)
    assert status["builds"] - before <= 2 + pauses, (status, pauses)
    assert "grad * 51," in (daemon.out / "Functions.cpp").read_text()


def test_a_bad_edit_keeps_the_outputs_until_fixed(daemon):
    functions = daemon.out / "Functions.cpp"
    before = functions.read_text()
    bad = MUL_OTHER.replace("other:", "othr:")  # no input named othr
    daemon.edit(MUL_OTHER, bad)
    time.sleep(0.3)
    status = daemon.wait()
    assert not status["last"]["ok"]
    error = status["last"]["errors"][0]
    line = (daemon.spec / DERIVATIVES).read_text().split("\n").index(f"  {bad}") + 1
    assert f"{(daemon.spec / DERIVATIVES).resolve()}:{line}: error: 'othr'" in error
    assert "in entry: mul.Tensor" in error and "did you mean 'other'?" in error
    assert functions.read_text() == before
    shown = daemon.cli("daemon", "status", *daemon.where(), check=False).stdout
    assert "1 error" in shown and "'othr' is neither an argument" in shown
    # `gradshard build` of the bad spec by the daemon and by itself (--no-cache never asks a
    # daemon): the same problems, `1 error in the spec` and exit code; the daemon's says it built
    build = ("build", "--codegen-only", "--out", str(daemon.out), *daemon.where())
    there = daemon.cli(*build, check=False)
    here = daemon.cli(*build, "--no-cache", check=False)
    assert (there.returncode, here.returncode) == (1, 1)
    assert here.stderr.endswith("gradshard: 1 error in the spec\n"), here.stderr
    assert "'othr' is neither an argument" in here.stderr and "by the daemon" not in here.stderr
    assert there.stderr == here.stderr + f"  (built by the daemon, pid {status['pid']})\n"
    daemon.edit(bad, MUL_OTHER.replace("grad,", "grad * 3,"))
    time.sleep(0.3)
    status = daemon.wait()
    assert status["last"]["ok"] and "grad * 3" in functions.read_text()


def test_socket_and_lock_are_private_and_a_second_daemon_is_refused(daemon):
    directory = daemon.root / "run" / "gradshard"
    assert stat.S_IMODE(directory.stat().st_mode) == 0o700
    sockets = [p for p in daemon.files() if p.suffix == ".sock"]
    assert len(sockets) == 1 and stat.S_IMODE(sockets[0].stat().st_mode) == 0o600
    pid = daemon.status()["pid"]
    second = daemon.start()
    assert second.returncode == 2 and f"pid {pid}" in second.stderr
    assert daemon.status()["pid"] == pid


def test_build_is_answered_by_the_daemon(daemon):
    done = daemon.cli("build", "--codegen-only", "--out", str(daemon.out), *daemon.where())
    assert "built by the daemon" in done.stdout
    done = daemon.cli("build", "--codegen-only", "--out", str(daemon.root / "elsewhere"),
                      *daemon.where())
    assert "built by the daemon" not in done.stdout  # another output directory: built here
    done = daemon.cli("build", "--codegen-only", "--out", str(daemon.out), "--units", "x*",
                      *daemon.where())
    assert "built by the daemon" not in done.stdout  # other options: built here


# What `daemon status` (editors and prompts poll it) must not load to answer: the pipeline,
# the cache (its store opens SQLite), a build session, the full command line, and the
# third-party modules a build needs.
HEAVY = ("gradshard.pipeline", "gradshard.cache", "gradshard.service.session",
         "gradshard.service.cli", "gradshard.service.open_cache", "sqlite3", "yaml", "jinja2",
         "watchdog", "torch")


def test_status_answers_from_the_socket_alone(daemon):
    """`gradshard daemon status` of a running daemon answers with the daemon's own state (its
    pid, its builds, its last result: what a session of its own could not know) and imports
    nothing that opens the cache or builds (-X importtime lists every import)."""
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "gradshard.service.entry",
                           "daemon", "status", "--json", *daemon.where()],
                          capture_output=True, text=True, env=daemon.env, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    answer = json.loads(done.stdout)
    pid = answer["pid"]
    assert answer["ok"] and answer["state"] == "idle" and answer["last"]["ok"], answer
    assert answer["builds"] == 1 and answer["spec"] == str(daemon.spec.resolve())
    os.kill(pid, 0)  # the daemon's process: alive
    imported = {line.split("|")[-1].strip() for line in done.stderr.splitlines()
                if line.startswith("import time:")}
    assert "gradshard.service.daemon.runtime" in imported  # the list is the real one
    heavy = sorted(m for m in imported if m.startswith(HEAVY))
    assert not heavy, heavy


def test_sigterm_leaves_no_socket_or_lock(daemon):
    pid = daemon.status()["pid"]
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 30
    while daemon.files() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert daemon.files() == []
    assert daemon.cli("daemon", "status", *daemon.where(), check=False).returncode == 11


def test_a_daemon_killed_with_9_is_replaced_cleanly(daemon):
    pid = daemon.status()["pid"]
    os.kill(pid, signal.SIGKILL)
    time.sleep(0.2)
    assert any(p.suffix == ".sock" for p in daemon.files())  # left behind
    restarted = daemon.start()
    assert restarted.returncode == 0, restarted.stderr
    status = daemon.wait()
    assert status["pid"] != pid and status["last"]["ok"]


def test_a_runtime_directory_open_to_others_is_refused(tmp_path):
    run = tmp_path / "run"
    (run / "gradshard").mkdir(parents=True)
    (run / "gradshard").chmod(0o755)
    running = Running(tmp_path, MINI_SPEC, "--codegen-only")
    done = running.start()
    assert done.returncode == 2
    assert "open to other users" in done.stderr and "chmod 700" in done.stderr


def test_a_replaced_directory_is_watched_anew(daemon):
    """A checkout switching branches replaces directories: the daemon rescans and follows
    the new ones."""
    autograd = daemon.spec / "autograd"
    before = daemon.status()["builds"]
    autograd.rename(daemon.spec / "autograd.old")
    subprocess.run(["cp", "-r", str(daemon.spec / "autograd.old"), str(autograd)], check=True)
    deadline = time.monotonic() + 30
    while daemon.status()["builds"] == before:
        assert time.monotonic() < deadline, "the replaced directory was not rescanned"
        time.sleep(0.05)
    daemon.wait()
    daemon.edit(MUL_OTHER, MUL_OTHER.replace("grad,", "grad * 7,"))
    deadline = time.monotonic() + 30
    while "grad * 7" not in (daemon.out / "Functions.cpp").read_text():
        assert time.monotonic() < deadline, "an edit in the new directory was not seen"
        time.sleep(0.05)


def test_requests_over_the_socket(daemon):
    from gradshard.service.daemon.runtime import daemon_paths, request

    os.environ["XDG_RUNTIME_DIR"] = daemon.env["XDG_RUNTIME_DIR"]
    try:
        paths = daemon_paths(daemon.spec.resolve(), daemon.cache.resolve())
        assert request(paths, {"request": "wait"})["ok"]
        affected = request(paths, {"request": "affected"})
        assert affected["ok"] and affected["autograd_nodes"] == [], affected
        built = request(paths, {"request": "build"}, timeout=60)
        assert built["ok"] and built["changed"] == ["(build request)"]
        assert request(paths, {"request": "no-such"})["error"].startswith("unknown request")
    finally:
        del os.environ["XDG_RUNTIME_DIR"]


@pytest.mark.compiler
@pytest.mark.slow
def test_a_saved_formula_is_recompiled(tmp_path, seeded_pchs):
    """With compiling on (the formula units of the mini spec, against the session's PCH):
    a saved formula's object is rebuilt by the warm daemon; the latency is printed."""
    spec = tmp_path / "spec"
    subprocess.run(["cp", "-r", str(MINI_SPEC), str(spec)], check=True)
    running = Running(tmp_path, spec, "--shard-nodes", "2,4", "--units", "Functions_formulas_*")
    seeded_pchs(running.cache)
    started = running.start()
    assert started.returncode == 0, started.stderr
    try:
        first = running.wait(timeout=600)
        assert first["last"]["ok"], first
        # 6 shards, 3 holding nodes, compiled cold as one merged unit
        assert first["last"]["compile"]["compiled"] == ["Functions_formulas_0-2"]
        objects = {p: p.stat().st_mtime_ns for p in (running.out / "compile/obj").glob("*.o")}
        saved = time.monotonic()
        running.edit(MUL_OTHER, MUL_OTHER.replace("grad,", "grad * 2,"))
        while True:  # an object being compiled is absent until the compiler writes it
            changed = [p for p, t in objects.items() if mtime(p) not in (t, None)]
            if changed:
                break
            assert time.monotonic() - saved < 120, "no object was recompiled"
            time.sleep(0.01)
        print(f"\nsave → formula object recompiled: {time.monotonic() - saved:.2f} s "
              "(warm daemon, mini spec)")
        status = running.wait()
        compiled = status["last"]["compile"]
        assert status["last"]["ok"] and len(compiled["compiled"]) == 1  # the edited unit
        assert [p.stem for p in changed] == compiled["spliced"] == ["Functions_formulas_0-2"]
        assert "1 unit(s) compiled" in status["last"]["line"]
    finally:
        running.cli("daemon", "stop", *running.where(), check=False)


def test_a_failing_build_never_stops_the_daemon(daemon):
    """An output the build cannot write (a directory where Functions.cpp goes): the error is
    the result, the daemon keeps serving, and the next save after the fix builds."""
    functions = daemon.out / "Functions.cpp"
    functions.unlink()
    functions.mkdir()
    daemon.edit(MUL_OTHER, MUL_OTHER.replace("grad,", "grad * 4,"))
    time.sleep(0.3)
    status = daemon.wait()
    assert not status["last"]["ok"] and status["last"]["errors"], status["last"]
    functions.rmdir()
    daemon.edit("grad * 4,", "grad * 5,")
    time.sleep(0.3)
    status = daemon.wait()
    assert status["last"]["ok"] and "grad * 5," in functions.read_text()


def test_a_change_without_events_is_found(tmp_path):
    """Events the observer lost (an inotify queue overflow drops them silently) are caught by
    the periodic check of the spec files' signatures: here the observer watches nothing."""
    from watchdog.observers import Observer

    from gradshard.service.compile.driver import CompileOptions
    from gradshard.service.daemon.runtime import DaemonPaths
    from gradshard.service.daemon.server import Daemon, DaemonConfig
    from gradshard.service.daemon.watcher import identity_of, spec_signature
    from gradshard.service.files.spec_location import locate_spec

    spec = tmp_path / "spec"
    subprocess.run(["cp", "-r", str(MINI_SPEC), str(spec)], check=True)
    location = locate_spec(str(spec))
    paths = DaemonPaths("k", tmp_path / "k.sock", tmp_path / "k.lock", tmp_path / "k.log")
    daemon = Daemon(DaemonConfig(location, tmp_path / "out", tmp_path / "cache", True,
                                 CompileOptions()), paths, announce=print)
    deaf = Observer()
    deaf.start()
    try:
        daemon._observer = deaf
        daemon._watched = {spec: identity_of(spec)}
        daemon._signature = spec_signature(location)
        daemon._check_watches()
        assert not daemon.changes.paths  # nothing changed: no rescan
        path = spec / DERIVATIVES
        path.write_text(path.read_text().replace(MUL_OTHER, MUL_OTHER.replace("grad,", "g,")))
        daemon._check_watches()
        assert daemon.changes.paths == {"(rescan)"}
    finally:
        deaf.stop()
        deaf.join()


def test_the_log_rotates(tmp_path):
    from gradshard.service.daemon.server import LOG_BYTES, daemon_logger

    log = daemon_logger(tmp_path / "logs" / "daemon.log")
    for _ in range(3 * LOG_BYTES // 1000):
        log.info("x" * 1000)
    names = sorted(p.name for p in (tmp_path / "logs").iterdir())
    assert names == ["daemon.log", "daemon.log.1", "daemon.log.2", "daemon.log.3"]
    assert all(p.stat().st_size <= LOG_BYTES + 2000 for p in (tmp_path / "logs").iterdir())


def test_watch_prints_a_line_per_rebuild_and_the_errors(tmp_path):
    spec = tmp_path / "spec"
    subprocess.run(["cp", "-r", str(MINI_SPEC), str(spec)], check=True)
    running = Running(tmp_path, spec)
    watch = subprocess.Popen([sys.executable, "-m", "gradshard.service.entry", "watch",
                              *running.where(), "--out", str(running.out), "--codegen-only"],
                             stdout=subprocess.PIPE, text=True, env=running.env)
    try:
        assert watch.stdout.readline().startswith("gradshard watch: ")
        assert f"(start): {FLAT_FILES} file(s) written" in watch.stdout.readline()
        running.edit(MUL_OTHER, MUL_OTHER.replace("other:", "othr:"))
        line = watch.stdout.readline()
        assert "autograd/derivatives.yaml: 1 error" in line and "outputs kept" in line
        assert "error: 'othr' is neither an argument" in watch.stdout.readline()
        watch.send_signal(signal.SIGINT)
        assert watch.wait(timeout=30) == 0
        assert running.files() == []
    finally:
        watch.kill()


def test_a_deleted_then_recreated_file_is_followed(daemon):
    path = daemon.spec / DERIVATIVES
    text = path.read_text()
    path.unlink()
    time.sleep(0.5)
    missing = daemon.wait()
    assert not missing["last"]["ok"] and "derivatives.yaml" in missing["last"]["errors"][0]
    path.write_text(text.replace(MUL_OTHER, MUL_OTHER.replace("grad,", "grad * 8,")))
    time.sleep(0.3)
    status = daemon.wait()
    assert status["last"]["ok"] and "grad * 8," in (daemon.out / "Functions.cpp").read_text()


def test_a_template_edit_is_rebuilt(daemon):
    template = daemon.spec / "autograd" / "templates" / "Functions.cpp"
    write_atomically(template, template.read_text() + "\n// a template edit\n")
    deadline = time.monotonic() + 30
    while "// a template edit" not in (daemon.out / "Functions.cpp").read_text():
        assert time.monotonic() < deadline, "the template edit was not rebuilt"
        time.sleep(0.02)


def test_a_forward_formula_edit_regenerates_variable_type(daemon):
    """A forward formula reaches only VariableType: the daemon rebuilds its files, and
    Functions.cpp does not hold the formula."""
    path = daemon.spec / DERIVATIVES
    forward = "  result: other_t * self_p + self_t * other_p\n"
    path.write_text(path.read_text().replace(forward, forward.replace("self_t * other_p",
                                                                      "self_t * other_p * 2")))
    deadline = time.monotonic() + 30
    while "self_t * other_p * 2" not in (daemon.out / "VariableTypeEverything.cpp").read_text():
        assert time.monotonic() < deadline, "the forward formula edit was not rebuilt"
        time.sleep(0.02)
    status = daemon.wait()
    assert status["last"]["ok"]
    assert "self_t * other_p * 2" not in (daemon.out / "Functions.cpp").read_text()


NEW_OPS = """
- func: zz_bump(Tensor self, int k=1) -> Tensor
  variants: function, method
  dispatch:
    CPU: zz_bump

- func: zz_bump_(Tensor(a!) self, int k=1) -> Tensor(a!)
  variants: method
  dispatch:
    CPU: zz_bump_
"""


def test_a_native_edit_regenerates_the_rest_of_the_autograd_codegen(tmp_path):
    """A daemon writing generate_code's tree: an op added to native_functions.yaml reaches
    TraceType, ADInplaceOrViewType and annotated_fn_args.py, each at its place in the tree;
    derivatives.yaml, untouched, leaves Functions.cpp as it was."""
    spec = tmp_path / "spec"
    subprocess.run(["cp", "-r", str(MINI_SPEC), str(spec)], check=True)
    running = Running(tmp_path, spec, "--codegen-only", "--tree", "pytorch")
    assert running.start().returncode == 0
    try:
        running.wait()
        generated = running.out / "torch" / "csrc" / "autograd" / "generated"
        annotated = running.out / "torch/testing/_internal/generated/annotated_fn_args.py"
        functions = mtime(generated / "Functions.cpp")
        assert functions is not None and "zz_bump" not in annotated.read_text()
        native = spec / "ATen" / "native" / "native_functions.yaml"
        write_atomically(native, native.read_text() + NEW_OPS)
        deadline = time.monotonic() + 60
        while "zz_bump" not in annotated.read_text():
            assert time.monotonic() < deadline, "the native edit was not rebuilt"
            time.sleep(0.02)
        status = running.wait()
        assert status["last"]["ok"] and status["builds"] == 2
        assert 'm.impl("zz_bump_",' in (generated / "TraceTypeEverything.cpp").read_text()
        assert "increment_version(self);" in \
            (generated / "ADInplaceOrViewTypeEverything.cpp").read_text().split("zz_bump_(")[1]
        assert mtime(generated / "Functions.cpp") == functions
        assert not (running.out / "TraceTypeEverything.cpp").exists()  # nothing flat
    finally:
        running.cli("daemon", "stop", *running.where(), check=False)
