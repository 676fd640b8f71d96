"""The try directory: where `gradshard try` builds and keeps its patches (service/live/build.py),
per user, on this machine, never in the cache directory (a library built there is loaded and
run; nothing read from a restorable cache is executed), and how it is kept bounded.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from pathlib import Path
from typing import Sequence

from gradshard.cache.errors import EnvironmentFailure

__all__ = ["TRY_DIRECTORY_VARIABLE", "prune_try_directory", "try_directory"]

TRY_DIRECTORY_VARIABLE = "GRADSHARD_TRY_DIR"
# What a try directory keeps, by kind, the most recently used first: two PCH sets (and the
# include directories they were made for), the patches of the last 50 builds (their libraries
# and their structs' headers) and the objects of about as many (each unit's .cpp and .o).
KEEP = {"pch": 2, "include": 2, "lib": 50, "src": 50, "obj": 400}


def try_directory() -> Path:
    """$GRADSHARD_TRY_DIR, else $XDG_RUNTIME_DIR/gradshard-try, else /tmp/gradshard-try-<uid>:
    made 0700, and refused unless this user owns it and nobody else may write there."""
    explicit = os.environ.get(TRY_DIRECTORY_VARIABLE)
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    path = Path(explicit) if explicit else (
        Path(runtime) / "gradshard-try" if runtime else Path(f"/tmp/gradshard-try-{os.getuid()}"))
    try:
        path.mkdir(mode=0o700, parents=bool(explicit), exist_ok=True)
        status = path.lstat()
    except OSError as e:
        raise EnvironmentFailure(f"cannot make the try directory {path}: {e.strerror}",
                                 f"set {TRY_DIRECTORY_VARIABLE} to a directory of yours") from None
    if not path.is_dir() or path.is_symlink() or status.st_uid != os.getuid() \
            or status.st_mode & 0o022:
        raise EnvironmentFailure(
            f"the try directory {path} is not a private directory of this user",
            f"remove it, or set {TRY_DIRECTORY_VARIABLE} to a directory only you can write")
    return path


def prune_try_directory(root: Path, used: Sequence[Path]) -> None:
    """Mark what this build used as just used, then remove the least recently used beyond
    the bounds: everything in a try directory is remade on demand, but PCH sets (~1 GB each
    with g++; a new one per toolchain and per edit of a checkout's FunctionsManual.h) and a
    patch per edit would otherwise fill the disk of a daemon that runs all day. A library a
    running worker holds stays mapped after its file is gone."""
    for path in used:
        with contextlib.suppress(FileNotFoundError):
            os.utime(path)
    for kind, keep in KEEP.items():
        _keep_newest(root / kind, keep)


def _keep_newest(directory: Path, keep: int) -> None:
    entries = sorted(directory.iterdir() if directory.is_dir() else (),
                     key=lambda entry: entry.lstat().st_mtime_ns, reverse=True)
    for entry in entries[keep:]:
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            entry.unlink(missing_ok=True)
