"""The `gradshard` console script. `gradshard daemon status`, which editors and prompts poll,
is answered from the standard library and the daemon's socket (service/daemon/runtime.py);
every other command goes to the full command line (service/cli.py)."""

from __future__ import annotations

import sys

from gradshard.service.process_end import closed_pipe, end_process

__all__ = []


def run() -> None:
    """The console script: the command, then an exit that skips the heap's teardown."""
    end_process(main())


def main(argv: list[str] | None = None) -> int:
    words = sys.argv[1:] if argv is None else list(argv)
    if words[:2] == ["daemon", "status"]:
        answered = _quick_status(words[2:])
        if answered is not None:
            return answered
    from gradshard.service.cli import main as full

    return full(words)


def _quick_status(words: list[str]) -> int | None:
    from gradshard.service.daemon.runtime import quick_status

    try:
        answered = quick_status(words)
        sys.stdout.flush()
    except BrokenPipeError:  # `gradshard daemon status | head -c 1`
        return closed_pipe()
    return answered


if __name__ == "__main__":
    run()
