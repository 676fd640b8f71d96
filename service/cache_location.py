"""Where the cache lives by default (a module of its own: the daemon client needs it and must
not import the build)."""

from __future__ import annotations

import os
from pathlib import Path


def default_cache_dir() -> Path:
    """$GRADSHARD_CACHE, else $XDG_CACHE_HOME/gradshard, else ~/.cache/gradshard."""
    if os.environ.get("GRADSHARD_CACHE"):
        return Path(os.environ["GRADSHARD_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "gradshard"
