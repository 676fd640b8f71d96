"""Default locations: the cache directory and the installed torchgen's packaged spec.

Standard library only: `gradshard daemon status` finds its daemon through these before
anything heavy is imported.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

__all__ = ["default_cache_dir", "installed_torchgen"]


def default_cache_dir() -> Path:
    """$GRADSHARD_CACHE, else $XDG_CACHE_HOME/gradshard, else ~/.cache/gradshard."""
    if os.environ.get("GRADSHARD_CACHE"):
        return Path(os.environ["GRADSHARD_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "gradshard"


def installed_torchgen() -> Path | None:
    """The installed torchgen's directory, found without importing torch or torchgen."""
    try:
        found = importlib.util.find_spec("torchgen")
    except (ImportError, ValueError):
        return None
    if found is None or not found.submodule_search_locations:
        return None
    return Path(list(found.submodule_search_locations)[0])
