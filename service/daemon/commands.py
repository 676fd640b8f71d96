"""`gradshard watch`, `gradshard daemon start|stop|status|logs`, and `gradshard build` handing
its work to a running daemon.

Only the client's side lives here (socket, lock, paths); the service itself is
service/daemon/server.py (with its rooms watcher.py and protocol.py), imported by `watch` and
by the daemon process.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import deque
from pathlib import Path

from gradshard.cache.errors import CompileDiagnostic, CompileError, UsageError
from gradshard.service.daemon.runtime import (SILENCE_LIMIT, ClosedUnanswered, DaemonPaths,
                                              NoAnswer, daemon_paths, exchange, print_status,
                                              request, running_daemon)
from gradshard.service.defaults import default_cache_dir
from gradshard.service.exit_codes import (EXIT_COMPILE, EXIT_NO_DAEMON, EXIT_OK, EXIT_SPEC,
                                          Ending, Report)
from gradshard.service.files.spec_location import SpecLocation
from gradshard.service.options import (compile_options, daemon_serves, forwarded_options,
                                       generator_check_of, jobs_of, match_words, placement_of)

__all__ = ["build_through_daemon", "daemon_config", "paths_of", "report_failure", "resolved"]

START_TIMEOUT = 60.0  # seconds for a started daemon to listen (it imports the pipeline first)
STOP_TIMEOUT = 60.0  # a build under way finishes before the daemon stops


def paths_of(args: argparse.Namespace, location: SpecLocation) -> DaemonPaths:
    """The daemon's paths for this spec and cache (one daemon per resolved spec root)."""
    return daemon_paths(resolved(location).root, cache_of(args))


def resolved(location: SpecLocation) -> SpecLocation:
    """The spec at its resolved root: the daemon's key, and what it watches."""
    return SpecLocation(location.root.resolve(), location.layout)


def cache_of(args: argparse.Namespace) -> Path:
    return (Path(args.cache) if args.cache else default_cache_dir()).resolve()


# ---------------------------------------------------------------------------------------------
# The service, in the foreground or as the daemon process


def watch(args: argparse.Namespace, location: SpecLocation) -> int:
    daemon = _daemon(args, location, announce=_print_line)
    print(f"gradshard watch: {daemon.config.location.root} → {daemon.config.out} "
          "(Ctrl-C stops)", flush=True)
    daemon.run()
    return EXIT_OK


def serve(args: argparse.Namespace, location: SpecLocation) -> int:
    _daemon(args, location, announce=lambda line: None).run()
    return EXIT_OK


def _daemon(args: argparse.Namespace, location: SpecLocation, announce):
    from gradshard.service.daemon.server import Daemon

    paths = paths_of(args, location)  # --settle was checked with the other flags (cli)
    return Daemon(daemon_config(args, resolved(location)), paths, announce)


def daemon_config(args: argparse.Namespace, location: SpecLocation):
    """What the daemon builds, from its parsed options; its match words (the options that
    decide what a build produces) go into its lock for clients to compare. The generator is
    checked in the background, but under strict (a difference is an error: a save waits for
    the check, so no build answers with unchecked files)."""
    from gradshard.service.daemon.server import DaemonConfig

    return DaemonConfig(location, Path(args.out).resolve(), cache_of(args), args.codegen_only,
                        compile_options(args), args.settle / 1000, tuple(match_words(args)),
                        try_options(args), placement_of(args),
                        generator_check_of(args, later=args.generator_check != "strict"))


def try_options(args: argparse.Namespace):
    """--try's checks (None without it): every op the spec changes, compiled with the build's
    compiler."""
    if not args.try_checks:
        return None
    from gradshard.service.live.command import DEFAULT_DTYPES, TryOptions

    return TryOptions((), tuple(args.try_dtype) or DEFAULT_DTYPES, None, args.cxx,
                      jobs_of(args.jobs))


def _print_line(line: str) -> None:
    print(line, flush=True)


# ---------------------------------------------------------------------------------------------
# Client commands


def start(args: argparse.Namespace, location: SpecLocation) -> int:
    paths = paths_of(args, location)
    running = running_daemon(paths)
    if running:
        raise UsageError(f"a daemon already serves this spec and cache (pid {running['pid']}, "
                         f"out {running['out']})",
                         "gradshard daemon status shows it; gradshard daemon stop ends it")
    import subprocess

    command = [sys.executable, "-m", "gradshard.service.cli", "daemon", "run",
               *forwarded_options(args)]
    paths.log.parent.mkdir(parents=True, exist_ok=True)
    with open(os.devnull, "rb") as nothing, open(paths.log.with_suffix(".out"), "ab") as output:
        process = subprocess.Popen(command, stdin=nothing, stdout=output, stderr=output,
                                   start_new_session=True, cwd=os.getcwd())
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise UsageError(f"the daemon exited at start (code {process.returncode}): "
                             f"{_tail(paths.log.with_suffix('.out'), 5)}",
                             f"see {paths.log}")
        answer = request(paths, {"request": "status"}, timeout=1.0)
        if answer is not None:
            print(f"gradshard daemon: started (pid {answer['pid']}), watching "
                  f"{answer['spec']} → {answer['out']}\n  socket: {paths.socket}\n"
                  f"  log: {paths.log}")
            return EXIT_OK
        time.sleep(0.05)
    process.terminate()
    raise UsageError(f"the daemon did not answer within {START_TIMEOUT:.0f} s",
                     f"see {paths.log}")


def stop(args: argparse.Namespace, location: SpecLocation) -> int:
    paths = paths_of(args, location)
    if request(paths, {"request": "shutdown"}) is None:
        print("gradshard daemon: none is running for this spec and cache")
        return EXIT_NO_DAEMON
    deadline = time.monotonic() + STOP_TIMEOUT
    while running_daemon(paths) and time.monotonic() < deadline:
        time.sleep(0.05)
    if running_daemon(paths):
        raise UsageError("the daemon did not stop in time", f"see {paths.log}")
    print("gradshard daemon: stopped")
    return EXIT_OK


def status(args: argparse.Namespace, location: SpecLocation) -> int:
    paths = paths_of(args, location)
    return print_status(request(paths, {"request": "status"}), args.json)


def logs(args: argparse.Namespace, location: SpecLocation) -> int:
    paths = paths_of(args, location)
    if not paths.log.is_file():
        print(f"gradshard daemon: no log yet at {paths.log}")
        return EXIT_NO_DAEMON
    print(_tail(paths.log, args.lines))
    return EXIT_OK


def _tail(path: Path, count: int) -> str:
    try:
        with open(path, errors="replace") as lines:
            return "".join(deque(lines, maxlen=max(count, 0))).rstrip("\n")
    except OSError:
        return ""


def build_through_daemon(args: argparse.Namespace, location: SpecLocation) -> int | None:
    """`gradshard build` answered by the daemon serving this spec and cache with the same
    options (the same work, in a warm process); None when none runs or it builds something
    else."""
    paths = paths_of(args, location)
    running = running_daemon(paths)
    if not running or not daemon_serves(running, args):
        return None  # none runs, or it builds something else: build here
    try:
        answer = exchange(paths, {"request": "build"}, SILENCE_LIMIT)
    except NoAnswer as failure:
        return _build_here_instead(paths, running, failure)
    if answer is None:
        return None
    note = f"  (built by the daemon, pid {running['pid']})"
    if args.json:
        print(json.dumps({k: v for k, v in answer.items() if k not in _TEXT_ONLY}, indent=2))
    elif answer.get("ok"):
        print(answer.get("text", answer.get("line", "")) + f"\n{note}")
    if not answer.get("ok"):  # on stderr, --json or not, as the command line prints it
        report_failure(answer, args.raw)
        print(note, file=sys.stderr)
    return EXIT_OK if answer.get("ok") else _exit_code_of(answer)


# What an answer holds for the text it prints, not for --json's document.
_TEXT_ONLY = ("text", "line", "stderr", "compile_error")


def report_failure(answer: dict, raw: bool) -> None:
    """What `gradshard build` prints on stderr for the failure the daemon answered: a compile
    error in the command line's own words (service/report/endings.py: placed, or the
    compiler's output with --raw), else the words the daemon rendered with them (`stderr`; a
    daemon older than that: its errors)."""
    if answer.get("compile_error"):
        from gradshard.service.report.endings import Known, render_ending

        ending = Ending(Report.COMPILE, EXIT_COMPILE, _compile_error(answer["compile_error"]))
        sys.stderr.write(render_ending(ending, Known(raw=raw)).stderr)
    elif "stderr" in answer:
        sys.stderr.write(answer["stderr"])
    else:
        for error in answer.get("errors", []) or [f"gradshard: error: {answer.get('error')}"]:
            print(error, file=sys.stderr)


def _compile_error(given: dict) -> CompileError:
    """server.compile_error_json's CompileError again."""
    return CompileError([CompileDiagnostic.from_json(d) for d in given["diagnostics"]],
                        given["failed"], given["raw"], given["source"], given["directory"])


def _exit_code_of(answer: dict) -> int:
    """The exit code of the daemon's failed build (service/exit_codes.py's, as the daemon
    answered it; a daemon older than "exit": from the kind of failure)."""
    if isinstance(answer.get("exit"), int):
        return answer["exit"]
    return EXIT_COMPILE if answer.get("failed") else EXIT_SPEC


def _build_here_instead(paths: DaemonPaths, running: dict, failure: NoAnswer) -> None:
    """Say why the daemon's build is given up (on stderr: stdout may be --json's); None, so
    that `gradshard build` builds by itself."""
    pid = running.get("pid", "?")
    if isinstance(failure, ClosedUnanswered):
        hint = (f"it may have crashed: its log is {paths.log}, its last words "
                f"{paths.log.with_suffix('.out')}")
    else:
        hint = f"is it stopped (kill -CONT {pid} resumes it) or stuck? its log is {paths.log}"
    print(f"gradshard: warning: the daemon (pid {pid}, socket {paths.socket}) {failure}; "
          f"building here instead\n  hint: {hint}", file=sys.stderr)
    return None
