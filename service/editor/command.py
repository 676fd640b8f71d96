"""`gradshard lsp`: the language server started over stdin and stdout, ended with the
editor (its `exit`, or stdin closed), leaving no process behind: the server leads a process
group of its own (when the editor started it), so that what it started (a `try`'s worker and
compiles, the tests' observers) ends with it."""

from __future__ import annotations

import argparse
import os
import signal
import sys
from pathlib import Path

from gradshard.cache.errors import UsageError
from gradshard.service.defaults import default_cache_dir
from gradshard.service.exit_codes import EXIT_OK
from gradshard.service.editor.settings import EditorSettings

__all__ = ["serve"]


def serve(args: argparse.Namespace) -> int:
    _check_installed()
    from gradshard.service.editor.server import build_server

    if args.debounce < 0:
        raise UsageError(f"--debounce {args.debounce:g}: a wait cannot be negative",
                         "pass milliseconds, such as --debounce 50")
    cache = Path(args.cache).absolute() if args.cache else default_cache_dir().absolute()
    settings = EditorSettings(cache, args.debounce / 1000, use_daemon=not args.no_daemon)
    leader = _lead_a_group()
    server = build_server(settings)
    try:
        server.start_io(sys.stdin.buffer, sys.stdout.buffer)
    finally:
        _end_group(leader)
    # the threads may still be at work (an analysis, a try's wait, the tests' index): the
    # editor is gone, so nothing waits for them; the cache commits each run as it ends (the
    # protocol closed stdout already)
    sys.stderr.flush()
    os._exit(EXIT_OK)


def _check_installed() -> None:
    import importlib.util

    missing = [name for name in ("pygls", "lsprotocol") if importlib.util.find_spec(name) is None]
    if missing:
        raise UsageError(f"`gradshard lsp` needs {', '.join(missing)}, which are not installed",
                         "pip install 'gradshard[lsp]'")


def _lead_a_group() -> bool:
    """Whether this process now leads a process group of its own: not when it reads a
    terminal (a background group could not read it)."""
    if sys.stdin.isatty():
        return False
    try:
        os.setpgid(0, 0)
    except OSError:  # already a session leader, or not allowed: nothing to end after
        return False
    return True


def _end_group(leader: bool) -> None:
    """End what the server started (its group), the server itself aside."""
    if not leader:
        return
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    try:
        os.killpg(os.getpgrp(), signal.SIGTERM)
    except OSError:
        pass
