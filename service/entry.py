"""The `gradshard` console script. `gradshard daemon status`, which editors and prompts poll,
is answered from the standard library and the daemon's socket (service/daemon_runtime.py);
every other command goes to the full command line (service/cli.py)."""

from __future__ import annotations

import os
import sys
import threading


def run() -> None:
    """The process's whole life: the command, then an exit that skips tearing the heap down
    (freeing a cold build's millions of records one by one takes ~60 ms; mypy's hard_exit
    does the same). Every file is closed and the cache committed by then; only the standard
    streams still hold output. A process whose other threads still run (a daemon stopping)
    exits the usual way, which waits for them."""
    code = main()
    if threading.active_count() > 1:
        sys.exit(code)
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except BrokenPipeError:
        from .cli import closed_pipe

        code = closed_pipe()
    os._exit(code)


def main(argv: list[str] | None = None) -> int:
    words = sys.argv[1:] if argv is None else list(argv)
    if words[:2] == ["daemon", "status"]:
        answered = _quick_status(words[2:])
        if answered is not None:
            return answered
    from .cli import main as full

    return full(words)


def _quick_status(words: list[str]) -> int | None:
    from .daemon_runtime import quick_status

    try:
        answered = quick_status(words)
        sys.stdout.flush()
    except BrokenPipeError:  # `gradshard daemon status | head -c 1`
        from .cli import closed_pipe

        return closed_pipe()
    return answered


if __name__ == "__main__":
    run()
