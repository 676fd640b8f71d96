"""The configuration applied to one command: file < environment < flags.

For each key of the file: an option it fills is set only when the command line did not give
it (`given`: the options the words name) and its variable is unset; a variable it fills is
set for the command's time only when unset. `effective_settings` says, for every key, the
value in force and where it came from (`gradshard config`).
"""

from __future__ import annotations

import argparse
import contextlib
import os
from dataclasses import dataclass
from typing import Iterator, Mapping

from gradshard.service.config.files import ConfigFile
from gradshard.service.config.settings import SETTINGS, Setting
from gradshard.service.options import OPTIONS

__all__ = ["Effective", "applied_config", "effective_settings", "given_options"]

FLAG, VARIABLE, FILE, DEFAULT = "flag", "environment", "file", "default"


@dataclass(frozen=True)
class Effective:
    key: str
    value: object
    origin: str  # FLAG, VARIABLE, FILE or DEFAULT
    where: str  # the flag, $VARIABLE, file:line, or ""


def given_options(argv: list[str], command: str) -> set[str]:
    """The dests of the options the words give, as argparse reads them (abbreviations and
    `--name=value` included): a parser of the command without defaults, so only what the
    words set is there."""
    from gradshard.service.cli import build_parser

    parsed = build_parser(defaults=False).parse_args(argv)
    return {o.dest for o in OPTIONS if command in o.commands and hasattr(parsed, o.dest)}


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


def effective_settings(config: ConfigFile | None, environ: Mapping[str, str],
                       args: argparse.Namespace | None = None,
                       given: set[str] = frozenset()) -> list[Effective]:
    """Every key's value in force and its origin (for `gradshard config`)."""
    return [_effective(s, config, environ, args, given) for s in SETTINGS]


def _effective(setting: Setting, config: ConfigFile | None, environ: Mapping[str, str],
               args: argparse.Namespace | None, given: set[str]) -> Effective:
    if setting.dest in given and args is not None:
        return Effective(setting.key, getattr(args, setting.dest), FLAG, _flag(setting))
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
    option = next(o for o in OPTIONS if o.dest == setting.dest)
    if option.parse is None or not isinstance(value, str):
        return value
    return option.parse(value)


def _flag(setting: Setting) -> str:
    return next(o.name for o in OPTIONS if o.dest == setting.dest)


def _default(setting: Setting) -> object:
    if setting.dest is None:
        return None
    return next(o.default for o in OPTIONS if o.dest == setting.dest)
