"""The configuration applied to one command: file < environment < flags.

For each key of the file: an option it fills is set only when the command line did not give
it (`given`: the options the words name, service/cli.py: given_options) and its variable is
unset; a variable it fills is set for the command's time only when unset.
`effective_settings` says, for every key, the value in force and where it came from
(`gradshard config`, which takes no flags of the settings: the file, the environment and the
defaults). The environment is read through service/defaults.py, as everywhere.
"""

from __future__ import annotations

import argparse
import contextlib
from dataclasses import dataclass
from typing import Iterator

from gradshard.service.config.files import KEYS, ConfigFile
from gradshard.service.defaults import Setting, applied_variables, value_of
from gradshard.service.options import option_filled

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
    added: dict[Setting, str] = {}
    for setting in KEYS:
        if setting.key not in config.values or not _applies(setting, command):
            continue
        value = config.values[setting.key]
        if value_of(setting):
            continue
        option = option_filled(setting)
        if option is None:
            added[setting] = str(value)
        elif option.dest not in given:
            setattr(args, option.dest, _parsed(setting, value))
    with applied_variables(added):
        yield


def effective_settings(config: ConfigFile | None) -> list[Effective]:
    """Every key's value in force and its origin (for `gradshard config`)."""
    return [_effective(s, config) for s in KEYS]


def _effective(setting: Setting, config: ConfigFile | None) -> Effective:
    in_environment = value_of(setting)
    if in_environment:
        return Effective(setting.key, in_environment, VARIABLE, f"${setting.variable}")
    if config is not None and setting.key in config.values:
        line = config.lines.get(setting.key)
        return Effective(setting.key, config.values[setting.key], FILE,
                         f"{config.path}:{line}" if line else str(config.path))
    return Effective(setting.key, _default(setting), DEFAULT, "")


def _applies(setting: Setting, command: str) -> bool:
    option = option_filled(setting)
    if option is None:
        return True
    return command in option.commands and (setting.commands is None
                                           or command in setting.commands)


def _parsed(setting: Setting, value: object) -> object:
    """The value as the option holds it once argparse has read it (its type= applied)."""
    option = option_filled(setting)
    if option.parse is None or not isinstance(value, str):
        return value
    return option.parse(value)


def _default(setting: Setting) -> object:
    """What is in force when nothing sets the key: said where the default is a placeholder
    (no --cache: the default directory; -j 0: the machine's cores) or a search; a flag's is
    false (argparse's store_true)."""
    if callable(setting.shown):
        return setting.shown()
    if setting.shown is not None:
        return setting.shown
    if setting.default is not None:
        return setting.default
    option = option_filled(setting)
    if option is None:
        return None
    return False if option.action == "store_true" else option.default
