"""Default locations: the cache directory, the installed torchgen's packaged spec, and the
configuration file in force.

Standard library only: `gradshard daemon status` finds its daemon through these before
anything heavy is imported.
"""

from __future__ import annotations

import importlib.util
import os
import tomllib
from pathlib import Path

__all__ = ["CONFIG_FILE", "PYPROJECT", "config_file", "default_cache_dir", "installed_torch",
           "installed_torchgen"]

CONFIG_FILE, PYPROJECT = "gradshard.toml", "pyproject.toml"


def default_cache_dir() -> Path:
    """$GRADSHARD_CACHE, else $XDG_CACHE_HOME/gradshard, else ~/.cache/gradshard."""
    if os.environ.get("GRADSHARD_CACHE"):
        return Path(os.environ["GRADSHARD_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "gradshard"


def installed_torchgen() -> Path | None:
    """The installed torchgen's directory, found without importing torch or torchgen."""
    return _installed_package("torchgen")


def installed_torch() -> Path | None:
    """The installed torch's directory, found without importing it."""
    return _installed_package("torch")


def _installed_package(name: str) -> Path | None:
    try:
        found = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if found is None or not found.submodule_search_locations:
        return None
    return Path(list(found.submodule_search_locations)[0])


def config_file(start: Path) -> Path | None:
    """The configuration file in force in `start`: in it or the nearest directory above, a
    gradshard.toml, or a pyproject.toml with a [tool.gradshard] table (one without is passed
    over, as ruff and pytest pass over theirs). One that cannot be read or parsed is the
    file in force: reading it reports why (service/config/files.py)."""
    for directory in (start.absolute(), *start.absolute().parents):
        if (directory / CONFIG_FILE).is_file():
            return directory / CONFIG_FILE
        pyproject = directory / PYPROJECT
        if pyproject.is_file() and _has_table(pyproject):
            return pyproject
    return None


def _has_table(pyproject: Path) -> bool:
    try:  # TOML is UTF-8 whatever the locale
        tool = tomllib.loads(pyproject.read_bytes().decode()).get("tool", {})
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return True
    return isinstance(tool, dict) and "gradshard" in tool
