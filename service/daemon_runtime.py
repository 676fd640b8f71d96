"""Where a daemon lives and how to reach it: the private runtime directory, its socket and
lock, and the one request a client sends.

One daemon serves one (spec, cache) pair. Its files are named by a hash of the two paths:

    $XDG_RUNTIME_DIR/gradshard/        (else /tmp/gradshard-<uid>/), mode 0700, owned by us
      <key>.sock   the unix socket (0600): newline-delimited JSON requests and answers
      <key>.lock   held (flock) while the daemon runs; holds its pid, spec, out and cache
    <cache>/logs/daemon-<key>.log      its log, rotated

Imports nothing heavy: `gradshard daemon status` and the CLI's "is a daemon running?" check
go through here and must answer in milliseconds.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import json
import os
import socket
import stat
from dataclasses import dataclass
from pathlib import Path

from gradshard.pipeline.errors import UsageError


@dataclass(frozen=True)
class DaemonPaths:
    key: str
    socket: Path
    lock: Path
    log: Path


def runtime_dir() -> Path:
    """The private per-user directory of sockets and locks, created 0700; refused when someone
    else owns it or others may enter it (a socket there could be someone else's)."""
    base = os.environ.get("XDG_RUNTIME_DIR")
    directory = Path(base) / "gradshard" if base else Path(f"/tmp/gradshard-{os.getuid()}")
    try:
        directory.mkdir(mode=0o700, parents=bool(base), exist_ok=True)
        info = directory.lstat()
    except OSError as error:
        raise UsageError(f"cannot create the runtime directory {directory}: {error.strerror}",
                         "set XDG_RUNTIME_DIR to a directory of yours") from None
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
        raise UsageError(f"the runtime directory {directory} is not a directory owned by you",
                         "remove it, or set XDG_RUNTIME_DIR to a directory of yours")
    if info.st_mode & 0o077:
        raise UsageError(f"the runtime directory {directory} is open to other users "
                         f"(mode {stat.S_IMODE(info.st_mode):o})",
                         f"chmod 700 {directory}")
    return directory


def daemon_paths(spec_root: Path, cache: Path) -> DaemonPaths:
    """The daemon's files for a spec and a cache (absolute paths)."""
    identity = f"{spec_root}\0{cache}".encode()
    key = hashlib.sha1(identity).hexdigest()[:16]
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


def request(paths: DaemonPaths, message: dict, timeout: float | None = 5.0) -> dict | None:
    """Send one request and read its answer; None when no daemon answers on the socket."""
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
            connection.settimeout(timeout)
            connection.connect(str(paths.socket))
            connection.sendall(json.dumps(message).encode() + b"\n")
            answer = b""
            while not answer.endswith(b"\n"):
                chunk = connection.recv(1 << 16)
                if not chunk:
                    break
                answer += chunk
    except (FileNotFoundError, ConnectionRefusedError):
        return None
    except OSError as error:
        raise UsageError(f"the daemon at {paths.socket} did not answer: {error}",
                         "gradshard daemon logs shows what it is doing") from None
    return json.loads(answer) if answer.strip() else None
