"""The configuration applied to one command: file < environment < flags.

For each key of the file: an option it fills is set only when the command line did not give
it (`given`: the options the words name, service/cli.py: given_options) and its variable is
unset; a variable it fills is set for the command's time only when unset.
`effective_settings` says, for every key, the value in force and where it came from
(`gradshard config`, which takes no flags of the settings: the file, the environment and the
defaults).
"""

from __future__ import annotations

import argparse
import contextlib
import os
from dataclasses import dataclass
from typing import Iterator, Mapping

from gradshard.service.config.files import ConfigFile
from gradshard.service.config.settings import SETTINGS, Setting
from gradshard.service.options import OPTIONS, jobs_of, option_of

__all__ = ["Effective", "applied_config", "effective_settings"]

VARIABLE, FILE, DEFAULT = "environment", "file", "default"


@dataclass(frozen=True)
class Effective:
    key: str
    value: object
    origin: str  # VARIABLE, FILE or DEFAULT
    where: str  # $VARIABLE, file:line, or ""


@contextlib.contextmanager
def applied_config(args: argparse.Namespace, config: ConfigFile | None, command: str,
                   given: set[str]) -> Iterator[None]:
    """args filled from the file where neither flags nor variables decide; the variables the
    file fills set while the command runs."""
    if config is None:
        yield
        return
    added: dict[str, str] = {}
    for setting in SETTINGS:
        if setting.key not in config.values or not _applies(setting, command):
            continue
        value = config.values[setting.key]
        if setting.variable and os.environ.get(setting.variable):
            continue
        if setting.dest is None:
            added[setting.variable] = str(value)
        elif setting.dest not in given:
            setattr(args, setting.dest, _parsed(setting, value))
    os.environ.update(added)
    try:
        yield
    finally:
        for variable in added:
            os.environ.pop(variable, None)


def effective_settings(config: ConfigFile | None,
                       environ: Mapping[str, str]) -> list[Effective]:
    """Every key's value in force and its origin (for `gradshard config`)."""
    return [_effective(s, config, environ) for s in SETTINGS]


def _effective(setting: Setting, config: ConfigFile | None,
               environ: Mapping[str, str]) -> Effective:
    if setting.variable and environ.get(setting.variable):
        return Effective(setting.key, environ[setting.variable], VARIABLE,
                         f"${setting.variable}")
    if config is not None and setting.key in config.values:
        line = config.lines.get(setting.key)
        return Effective(setting.key, config.values[setting.key], FILE,
                         f"{config.path}:{line}" if line else str(config.path))
    return Effective(setting.key, _default(setting), DEFAULT, "")


def _applies(setting: Setting, command: str) -> bool:
    if setting.dest is None:
        return True
    takes = any(o.dest == setting.dest and command in o.commands for o in OPTIONS)
    return takes and (setting.commands is None or command in setting.commands)


def _parsed(setting: Setting, value: object) -> object:
    """The value as the option holds it once argparse has read it (its type= applied)."""
    option = option_of(setting.dest)
    if option.parse is None or not isinstance(value, str):
        return value
    return option.parse(value)


def _default(setting: Setting) -> object:
    """What is in force when nothing sets the key: said where the option's default is a
    placeholder (no --cache: the default directory; -j 0: the machine's cores)."""
    described = _DESCRIBED_DEFAULTS.get(setting.key)
    if described is not None:
        return described()
    return option_of(setting.dest).default if setting.dest else None


def _default_cache() -> str:
    from gradshard.service.defaults import default_cache_dir

    return str(default_cache_dir())


def _cores() -> str:
    return f"{jobs_of(0)} (the machine's cores)"


def _try_limit() -> str:
    return "1G"  # service/live/try_directory.py: DEFAULT_MAX_SIZE


_DESCRIBED_DEFAULTS = {
    "spec": lambda: "the installed torch's packaged spec",
    "codegen-only": lambda: False,  # a flag's default (argparse's store_true)
    "cache": _default_cache,
    "cache-max-size": lambda: "no limit",
    "cxx": lambda: "g++",
    "jobs": _cores,
    "try-cxx": lambda: "the first clang++ >= 14 with libstdc++, else g++",
    "try-max-size": _try_limit,
}
