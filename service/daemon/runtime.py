"""Where a daemon lives and how to reach it: the private runtime directory, its socket and
lock, the one request a client sends, and `gradshard build` handed to the daemon serving
its spec and cache (build_through_daemon).

One daemon serves one (spec, cache) pair. Its files are named by a hash of the two paths:

    $XDG_RUNTIME_DIR/gradshard/        (else /tmp/gradshard-<uid>/), mode 0700, owned by us
      <key>.sock   the unix socket (0600): newline-delimited JSON requests and answers,
                   progress lines ({"progress": …}) before an answer that takes a while
      <key>.lock   held (flock) while the daemon runs; holds its pid, spec, out and cache
    <cache>/logs/daemon-<key>.log      its log, rotated

Imports nothing heavy (gradshard's error classes only when it has an error to raise):
`gradshard daemon status` and the CLI's "is a daemon running?" check go through here and
must answer in milliseconds.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import socket
import stat
import sys
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

import xxhash

from gradshard.service.defaults import (XDG_RUNTIME_DIR, config_file, default_cache_dir,
                                      installed_torchgen, value_of)
from gradshard.service.exit_codes import (EXIT_COMPILE, EXIT_NO_DAEMON, EXIT_OK, EXIT_SPEC,
                                          Ending, Report)
from gradshard.service.options import CACHE, JSON, SPEC, STATUS, daemon_serves, options_of

if TYPE_CHECKING:
    import argparse

    from gradshard.cache.errors import CompileError
    from gradshard.service.files.spec_location import SpecLocation

__all__ = ["ClosedUnanswered", "DaemonLock", "DaemonPaths", "NoAnswer", "QUICK_STATUS_OPTIONS",
           "SILENCE_LIMIT", "build_through_daemon", "cache_of", "daemon_paths", "exchange",
           "paths_of", "print_status", "quick_status", "report_failure", "request", "resolved",
           "running_daemon"]

# Seconds a client waits for the next line from a daemon working on its request. The daemon
# sends a progress line at least every 2 s while it works (a cold compile takes minutes), so
# this much silence means it is stopped, stuck or gone.
SILENCE_LIMIT = 10.0


class DaemonPaths(NamedTuple):
    key: str
    socket: Path
    lock: Path
    log: Path


def usage_error(message: str, hint: str) -> Exception:
    from gradshard.cache.errors import UsageError

    return UsageError(message, hint)


def runtime_dir() -> Path:
    """The private per-user directory of sockets and locks, created 0700; refused when someone
    else owns it or others may enter it (a socket there could be someone else's)."""
    base = value_of(XDG_RUNTIME_DIR)
    directory = Path(base) / "gradshard" if base else Path(f"/tmp/gradshard-{os.getuid()}")
    try:
        directory.mkdir(mode=0o700, parents=bool(base), exist_ok=True)
        info = directory.lstat()
    except OSError as error:
        raise usage_error(f"cannot create the runtime directory {directory}: {error.strerror}",
                          "set XDG_RUNTIME_DIR to a directory of yours") from None
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
        raise usage_error(f"the runtime directory {directory} is not a directory owned by you",
                          "remove it, or set XDG_RUNTIME_DIR to a directory of yours")
    if info.st_mode & 0o077:
        raise usage_error(f"the runtime directory {directory} is open to other users "
                          f"(mode {stat.S_IMODE(info.st_mode):o})",
                          f"chmod 700 {directory}")
    return directory


def daemon_paths(spec_root: Path, cache: Path) -> DaemonPaths:
    """The daemon's files for a spec and a cache (absolute paths)."""
    identity = f"{spec_root}\0{cache}".encode()
    key = xxhash.xxh64_hexdigest(identity)
    directory = runtime_dir()
    return DaemonPaths(key, directory / f"{key}.sock", directory / f"{key}.lock",
                       cache / "logs" / f"daemon-{key}.log")


class DaemonLock:
    """The lock file held while a daemon runs. The kernel drops it when the process dies,
    so a daemon killed with -9 never blocks the next one."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None

    def acquire(self, description: dict) -> bool:
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as error:
            os.close(fd)
            if error.errno in (errno.EWOULDBLOCK, errno.EACCES):
                return False
            raise
        os.ftruncate(fd, 0)
        os.write(fd, json.dumps(description).encode())
        self._fd = fd
        return True

    def release(self) -> None:
        if self._fd is not None:
            self.path.unlink(missing_ok=True)
            os.close(self._fd)
            self._fd = None


def running_daemon(paths: DaemonPaths) -> dict | None:
    """The description a running daemon wrote into its lock, or None when none holds it."""
    try:
        fd = os.open(paths.lock, os.O_RDONLY)
    except OSError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError:
            return json.loads(os.read(fd, 65536) or b"{}")
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


class NoAnswer(Exception):
    """A daemon took the request (or should have) but gave no answer; says what happened."""


class ClosedUnanswered(NoAnswer):
    """The daemon closed the connection without answering: it died, or is stopping."""


def request(paths: DaemonPaths, message: dict, timeout: float = 5.0) -> dict | None:
    """Send one request and read its answer; None when no daemon answers on the socket (none
    listens, or it closed the connection unanswered). Silence for `timeout` seconds, or any
    other failure to talk to it, is a usage error."""
    try:
        return exchange(paths, message, timeout)
    except ClosedUnanswered:
        return None
    except NoAnswer as failure:
        raise usage_error(f"the daemon at {paths.socket} {failure}",
                          "gradshard daemon logs shows what it is doing") from None


def exchange(paths: DaemonPaths, message: dict, silence: float) -> dict | None:
    """Send one request and return its answer, skipping the progress lines before it; None
    when nothing listens on the socket. NoAnswer when the daemon sends nothing for `silence`
    seconds, closes the connection unanswered, or cannot be talked to."""
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
            connection.settimeout(silence)
            connection.connect(str(paths.socket))
            connection.sendall(json.dumps(message).encode() + b"\n")
            with connection.makefile("rb") as lines:
                return _answer_among(lines)
    except (FileNotFoundError, ConnectionRefusedError):
        return None
    except TimeoutError:
        raise NoAnswer(f"sent nothing for {silence:g} s") from None
    except (ConnectionResetError, BrokenPipeError):
        raise ClosedUnanswered("closed the connection without answering") from None
    except OSError as error:
        raise NoAnswer(f"could not be reached: {error.strerror or error}") from None


def _answer_among(lines) -> dict:
    """The first line that is not progress (`{"progress": …}`), as a JSON object."""
    for line in lines:
        try:
            message = json.loads(line)
        except ValueError:
            raise NoAnswer(f"answered something that is not JSON: {line[:80]!r}") from None
        if not isinstance(message, dict):
            raise NoAnswer(f"answered something that is not a JSON object: {line[:80]!r}")
        if "progress" not in message:
            return message
    raise ClosedUnanswered("closed the connection without answering")


def status_text(answer: dict) -> str:
    last = answer.get("last") or {}
    lines = [f"gradshard daemon: {answer['state']} (pid {answer['pid']}), "
             f"{answer['builds']} build(s)",
             f"  spec: {answer['spec']}", f"  out:  {answer['out']}",
             f"  log:  {answer['log']}", *_config_lines(answer.get("config") or {})]
    if last:
        lines.append(f"  last: {last.get('line', '')}")
        lines += [f"  {line}" for error in last.get("errors", []) for line in error.split("\n")]
    lines.extend(_generator_lines(answer.get("generator") or {}))
    checks = answer.get("checks")
    if checks is not None:
        lines.append(f"  try:  {_checks_head(checks)}")
        lines += [f"    {line}" for line in checks.get("lines", [])]
    return "\n".join(lines)


def _config_lines(settings: dict) -> list[str]:
    """The configuration file the daemon started under, and whether it changed since."""
    if not settings.get("file"):
        return []
    changed = (" (changed since the daemon started: `gradshard daemon stop`, then start it "
               "again to apply it)" if settings.get("changed") else "")
    return [f"  config: {settings['file']}{changed}"]


def _generator_lines(generator: dict) -> list[str]:
    """The spec's generator as the last build found it, and the background check."""
    lines = [f"  {generator['summary']}"] if generator.get("summary") else []
    background = generator.get("background") or {}
    if background.get("checking"):
        lines.append(f"    checking {len(background['checking'])} files against it now")
    last = background.get("last") or {}
    if last:
        lines.append(f"    last check: {last.get('summary') or last.get('error', '')}")
    return lines


def _checks_head(checks: dict) -> str:
    if checks.get("checking"):  # its lines show the verdicts found so far
        found = len(checks.get("verdicts") or {})
        return "checking the last save" + (f": {found} verdict(s) so far" if found else "")
    if "finished" not in checks:
        return "no check yet"
    if checks.get("error"):
        return checks["error"].split("\n")[0]
    return ("the last verdicts" if checks.get("lines") else
            "no op's code differs from the installed torch's")


# `daemon status`'s options in the table, which quick_status reads (in the table's order)
QUICK_STATUS_OPTIONS = (SPEC, CACHE, JSON)


def quick_status(words: list[str]) -> int | None:
    """`gradshard daemon status [--json] [--spec DIR] [--cache DIR]` from the standard library
    alone (editors and prompts poll it); None for anything it cannot read, which the full
    command line then answers, errors included."""
    given = _quick_words(words)
    if given is None or options_of(STATUS) != QUICK_STATUS_OPTIONS:
        return None  # (or an option the table gained that this reader does not know)
    if not (given.get(SPEC.dest) and given.get(CACHE.dest)) and config_file(Path.cwd()):
        return None  # a configuration file may name the spec or the cache: read it fully
    torchgen = installed_torchgen()
    spec = Path(given[SPEC.dest]) if given.get(SPEC.dest) else torchgen and torchgen / "packaged"
    if spec is None or not spec.is_dir():
        return None
    cache = Path(given[CACHE.dest]) if given.get(CACHE.dest) else default_cache_dir()
    try:
        answer = request(daemon_paths(spec.resolve(), cache.resolve()), {"request": "status"})
    except Exception:  # the full command line reports it properly
        return None
    return print_status(answer, bool(given.get(JSON.dest)))


def _quick_words(words: list[str]) -> dict[str, str | bool] | None:
    """The options' values by dest (a flag's: True; `--name value` or `--name=value`), or None
    for a word that is not one of QUICK_STATUS_OPTIONS."""
    flags = {flag: option for option in QUICK_STATUS_OPTIONS for flag in option.flags}
    given: dict[str, str | bool] = {}
    pending = list(words)
    while pending:
        name, equals, value = pending.pop(0).partition("=")
        option = flags.get(name)
        if option is None:
            return None
        if option.action == "store_true":
            if equals:
                return None
            given[option.dest] = True
        elif equals or pending:
            given[option.dest] = value if equals else pending.pop(0)
        else:
            return None
    return given


def print_status(answer: dict | None, as_json: bool) -> int:
    """`gradshard daemon status`'s output and its exit code: a daemon answered, or none runs."""
    if as_json:
        print(json.dumps(answer or {"ok": False, "state": "not running"}, indent=2))
    elif answer is None:
        print("gradshard daemon: not running for this spec and cache")
    else:
        print(status_text(answer))
    return EXIT_OK if answer is not None else EXIT_NO_DAEMON


# ---------------------------------------------------------------------------------------------
# A command's side: the daemon of its spec, and `gradshard build` answered by it


def paths_of(args: argparse.Namespace, location: SpecLocation) -> DaemonPaths:
    """The daemon's paths for this spec and cache (one daemon per resolved spec root)."""
    return daemon_paths(resolved(location).root, cache_of(args))


def resolved(location: SpecLocation) -> SpecLocation:
    """The spec at its resolved root: the daemon's key, and what it watches."""
    from gradshard.service.files.spec_location import SpecLocation  # not on status's fast path

    return SpecLocation(location.root.resolve(), location.layout)


def cache_of(args: argparse.Namespace) -> Path:
    return (Path(args.cache) if args.cache else default_cache_dir()).resolve()




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
    from gradshard.cache.errors import CompileDiagnostic, CompileError

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
