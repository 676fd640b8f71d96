"""The environment, and the default locations that follow from it: every environment variable
gradshard reads is a record here (Setting: its variable, and its key in a configuration file
where it has one), and this module alone reads them (value_of) and sets them (a file's values
for a command's time: applied_variables). Also the installed torch and torchgen, and the
configuration file in force.

An option falls back to the records it carries (service/options.py: Option.settings; the
keys no variable stands behind are declared there, in their option). The variables' records
are here, not in the options table, because modules the table's functions reach (the
toolchain, the spec's files) read them too: read from the table, they would import it back.
cache/ reads no variable: the service passes it the values.

Standard library only: `gradshard daemon status` finds its daemon through these before
anything heavy is imported, and service/options.py imports them at start.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
from pathlib import Path
from typing import Callable, Iterator, Mapping, NamedTuple

__all__ = ["BOOLEAN", "CONFIG_FILE", "CXX", "CXXFLAGS", "CXX_LAUNCHER", "ENVIRONMENT",
           "GRADSHARD_CACHE", "GRADSHARD_CACHE_MAX", "GRADSHARD_DEBUG",
           "GRADSHARD_MAX_SPEC_BYTES", "GRADSHARD_STATE", "GRADSHARD_TRY_CXX",
           "GRADSHARD_TRY_DIR", "GRADSHARD_TRY_MAX_SIZE", "HOME", "LIST", "PATH", "PATHS",
           "PYPROJECT", "SIZE", "Setting", "TEXT", "WHOLE", "XDG_CACHE_HOME",
           "XDG_RUNTIME_DIR", "XDG_STATE_HOME", "applied_variables", "config_file",
           "default_cache_dir", "home_directory", "installed_torch", "installed_torchgen",
           "standard_cache_dir", "state_directory", "value_of"]

CONFIG_FILE, PYPROJECT = "gradshard.toml", "pyproject.toml"

# The kinds of a configuration file's values: a path (relative to the file's directory),
# several paths, a text, a whole number, a size (500M, 2G), texts (a list of words, or one
# string of them), true or false (an on/off flag's)
PATH, PATHS, TEXT, WHOLE, SIZE, LIST = "path", "paths", "text", "whole number", "size", "texts"
BOOLEAN = "boolean"


class Setting(NamedTuple):
    """One value gradshard takes from the environment or a configuration file, or both (the
    environment beats the file; a flag beats both: service/config_file.py)."""

    variable: str | None  # the environment variable (None: a file's key only)
    key: str | None = None  # its key in a configuration file (None: the environment's only)
    kind: str = TEXT  # its kind of value in the file
    about: str = ""  # what it is (a bad value's hint in a file: `key: about`)
    # the commands whose option its key fills (None: every command that takes the option)
    commands: frozenset[str] | None = None
    default: str | None = None  # its value when nothing sets it (None: its option's default)
    # what `gradshard config` shows when nothing sets it, where its default is a placeholder
    # (no --cache: the default directory) or a search (try's compiler)
    shown: str | Callable[[], object] | None = None


# The variables behind options (service/options.py: Option.settings, which also says which
# commands' options they fill)
GRADSHARD_CACHE = Setting("GRADSHARD_CACHE", "cache", PATH, "the cache directory (--cache)",
                          shown=lambda: str(default_cache_dir()))
CXX = Setting("CXX", "cxx", TEXT, "the C++ compiler of builds (--cxx)", default="g++")
GRADSHARD_TRY_CXX = Setting("GRADSHARD_TRY_CXX", "try-cxx", TEXT,
                            "the C++ compiler of `try`'s patches (try --cxx)",
                            shown="the first clang++ >= 14 with libstdc++, else g++")
CXXFLAGS = Setting("CXXFLAGS", "cxxflags", LIST, "extra compiler flags (--cxxflags)")
CXX_LAUNCHER = Setting("CXX_LAUNCHER", "launcher", TEXT,
                       "ccache, sccache, distcc or a command (--launcher)")
# The variables no flag gives: limits and locations (two with a key in the file), and
# tracebacks
GRADSHARD_CACHE_MAX = Setting("GRADSHARD_CACHE_MAX", "cache-max-size", SIZE,
                              "the cache directory's limit after each build", shown="no limit")
GRADSHARD_TRY_MAX_SIZE = Setting("GRADSHARD_TRY_MAX_SIZE", "try-max-size", SIZE,
                                 "the try directory's limit", default="1G")
GRADSHARD_TRY_DIR = Setting("GRADSHARD_TRY_DIR", about="where `try` builds and keeps its "
                            "patches (default: the state directory's try/)")
GRADSHARD_STATE = Setting("GRADSHARD_STATE", about="this machine's own state: the generator "
                          "verdicts, the try directory (default: $XDG_STATE_HOME/gradshard, "
                          "else ~/.local/state/gradshard)")
GRADSHARD_MAX_SPEC_BYTES = Setting("GRADSHARD_MAX_SPEC_BYTES", about="the size limit of one "
                                   "spec file or template, in bytes (64 MiB: the real ones are "
                                   "below 1 MiB)", default=str(64 << 20))
GRADSHARD_DEBUG = Setting("GRADSHARD_DEBUG", about="an internal error shows its traceback")
XDG_CACHE_HOME = Setting("XDG_CACHE_HOME", about="the user's caches (default: ~/.cache)")
XDG_STATE_HOME = Setting("XDG_STATE_HOME", about="the user's state (default: ~/.local/state)")
XDG_RUNTIME_DIR = Setting("XDG_RUNTIME_DIR", about="the user's sockets and locks: the daemons' "
                          "(default: /tmp/gradshard-UID)")
HOME = Setting("HOME", about="the home directory (Path.home(): unset, the password database's)")

# Every variable gradshard reads (a child process's environment, handed on whole, is not read:
# the compiles', the generator's, git's)
ENVIRONMENT = (GRADSHARD_CACHE, CXX, GRADSHARD_TRY_CXX, CXXFLAGS, CXX_LAUNCHER,
               GRADSHARD_CACHE_MAX, GRADSHARD_TRY_MAX_SIZE, GRADSHARD_TRY_DIR, GRADSHARD_STATE,
               GRADSHARD_MAX_SPEC_BYTES, GRADSHARD_DEBUG, XDG_CACHE_HOME, XDG_STATE_HOME,
               XDG_RUNTIME_DIR, HOME)


def value_of(setting: Setting) -> str | None:
    """The setting's variable as this process's environment holds it now (None: unset), a
    configuration file's value set for the command's time included. Read at each call, never
    kept: a file's values come and go with their command, and tests set variables. An empty
    value is the caller's to read: most take it as unset (`or`); GRADSHARD_MAX_SPEC_BYTES
    refuses it."""
    return os.environ.get(setting.variable) if setting.variable else None


@contextlib.contextmanager
def applied_variables(values: Mapping[Setting, str]) -> Iterator[None]:
    """The variables set to these values while the block runs, then removed: a
    configuration file's values of variables no flag gives (service/config_file.py),
    where the readers below the command, and the processes it starts, find them."""
    os.environ.update({setting.variable: value for setting, value in values.items()})
    try:
        yield
    finally:
        for setting in values:
            os.environ.pop(setting.variable, None)


def home_directory() -> Path:
    return Path.home()  # $HOME; unset, the password database's entry


def default_cache_dir() -> Path:
    """$GRADSHARD_CACHE, else standard_cache_dir()."""
    return Path(value_of(GRADSHARD_CACHE) or standard_cache_dir())


def standard_cache_dir() -> Path:
    """$XDG_CACHE_HOME/gradshard, else ~/.cache/gradshard: the default cache directory when
    $GRADSHARD_CACHE does not name another (CI jobs restore ~/.cache whatever it names)."""
    base = value_of(XDG_CACHE_HOME) or str(home_directory() / ".cache")
    return Path(base) / "gradshard"


def state_directory() -> Path:
    """This machine's own state directory (the generator verdicts' ledger, try's
    directory): $GRADSHARD_STATE, else $XDG_STATE_HOME/gradshard, else
    ~/.local/state/gradshard."""
    explicit = value_of(GRADSHARD_STATE)
    if explicit:
        return Path(explicit)
    return Path(value_of(XDG_STATE_HOME) or str(home_directory() / ".local" / "state")) \
        / "gradshard"


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
    file in force: reading it reports why (service/config_file.py)."""
    for directory in (start.absolute(), *start.absolute().parents):
        if (directory / CONFIG_FILE).is_file():
            return directory / CONFIG_FILE
        pyproject = directory / PYPROJECT
        if pyproject.is_file() and _has_table(pyproject):
            return pyproject
    return None


def _has_table(pyproject: Path) -> bool:
    # tomllib only when a pyproject.toml is read: service/options.py imports this module, and
    # the pytest plugin loads that in every pytest run
    import tomllib

    try:  # TOML is UTF-8 whatever the locale
        tool = tomllib.loads(pyproject.read_bytes().decode()).get("tool", {})
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return True
    return isinstance(tool, dict) and "gradshard" in tool
