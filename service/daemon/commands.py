"""`gradshard watch` and `gradshard daemon start|stop|status|logs`.

How a command reaches a daemon (its paths, socket and lock, and `gradshard build` handing
its work to it) is service/daemon/runtime.py; the service itself is service/daemon/server.py
(with its rooms watcher.py and protocol.py), imported by `watch` and by the daemon process.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections import deque
from pathlib import Path

from gradshard.cache.errors import UsageError
from gradshard.service.daemon.runtime import (cache_of, paths_of, print_status, request,
                                              resolved, running_daemon)
from gradshard.service.exit_codes import EXIT_NO_DAEMON, EXIT_OK
from gradshard.service.files.spec_location import SpecLocation
from gradshard.service.options import (compile_options, forwarded_options,
                                       generator_check_of, jobs_of, match_words, placement_of)

__all__ = ["daemon_config"]

START_TIMEOUT = 60.0  # seconds for a started daemon to listen (it imports the pipeline first)
STOP_TIMEOUT = 60.0  # a build under way finishes before the daemon stops


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
