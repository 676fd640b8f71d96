"""The configuration file: `[tool.gradshard]` in the nearest pyproject.toml (or a
gradshard.toml), found, read, checked, and applied to one command below the environment
and the flags.

Finding and reading the configuration file: the nearest directory at or above the working
directory holding a gradshard.toml (its keys at the top level) or a pyproject.toml with a
[tool.gradshard] table, as ruff and pytest look for theirs. A pyproject.toml without the
table is passed over.

Its keys (KEYS) are the options table's settings that have one (service/options.py:
Option.settings) and those of the variables no flag gives (service/defaults.py), in
ORDER.

Every key is checked before any is used, and every bad one is reported at once (a
ConfigError): an unknown key (with the closest known key: `jobz`, did you mean `jobs`?) or a
value of the wrong kind, each at its line. Paths are relative to the file's directory, made
absolute and normalised (`spec = "../spec"` is the spec beside the project's directory).

The configuration applied to one command: file < environment < flags.

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
import hashlib
import os
import re
import shlex
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from gradshard.cache.errors import UsageError
from gradshard.pipeline.problems import did_you_mean
from gradshard.service.defaults import (BOOLEAN, CONFIG_FILE, ENVIRONMENT, LIST, PATH, PATHS,
                                        SIZE, TEXT, WHOLE, Setting, applied_variables,
                                        config_file, value_of)
from gradshard.service.options import OPTIONS, Option, option_filled

__all__ = ["ConfigError", "ConfigFile", "ConfigProblem", "Effective", "KEYS", "ORDER",
           "applied_config", "effective_settings", "file_digest", "find_config", "read_config",
           "setting_of"]

TABLE = ("tool", "gradshard")
# The keys in `gradshard config`'s order (and the known keys' in a bad file's hint): the
# cache beside its limit, try's compiler and limit last. Every key has its place here
# (tests/test_config.py); the settings themselves are declared once, in the tables.
ORDER = ("spec", "out", "tree", "codegen-only", "cache", "cache-max-size", "cxx", "cxxflags",
         "include", "launcher", "jobs", "try-cxx", "try-max-size")


def _keys() -> tuple[Setting, ...]:
    """Every setting with a key: an option's as its option carries it (with the commands it
    fills the option in), then those no flag gives."""
    found = {s.key: s for o in OPTIONS for s in o.settings if s.key}
    found.update({s.key: s for s in ENVIRONMENT if s.key and s.key not in found})
    return tuple(sorted(found.values(), key=lambda s: ORDER.index(s.key)))


KEYS = _keys()


def setting_of(key: str) -> Setting | None:
    return next((s for s in KEYS if s.key == key), None)


@dataclass(frozen=True)
class ConfigFile:
    path: Path
    values: dict[str, Any]  # key → its value, checked (paths made absolute)
    lines: dict[str, int]  # key → its line in the file
    digest: str  # of the file's bytes: the daemon says when it changed


def find_config(start: Path) -> ConfigFile | None:
    """The configuration in force in `start` (None when no file holds one)."""
    path = config_file(start)
    return read_config(path) if path is not None else None


def file_digest(path: Path | None) -> str:
    """The file's sha256 ("" when there is none, or it cannot be read): the daemon compares
    it with the one it started with."""
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest() if path is not None else ""
    except OSError:
        return ""


def read_config(path: Path) -> ConfigFile | None:
    """The file's gradshard settings, checked (None: a pyproject.toml without the table)."""
    try:
        data = path.read_bytes()
        document = tomllib.loads(data.decode())
    except (OSError, UnicodeDecodeError) as error:
        raise UsageError(f"{path}: cannot read the configuration: {error}",
                         "fix or remove the file") from None
    except tomllib.TOMLDecodeError as error:
        raise UsageError(f"{path}: not valid TOML: {error}", "fix the file's syntax") from None
    tool = document.get(TABLE[0], {})
    table = (document if path.name == CONFIG_FILE
             else tool.get(TABLE[1]) if isinstance(tool, dict) else None)
    if table is None:
        return None
    if not isinstance(table, dict):
        raise UsageError(f"{path}: [tool.gradshard] is not a table", _known_keys())
    lines = _key_lines(data.decode(), path.name == CONFIG_FILE)
    checked = {key: _checked(path, key, value, lines.get(key)) for key, value in table.items()}
    problems = [found for found in checked.values() if isinstance(found, ConfigProblem)]
    if problems:
        raise ConfigError(problems)
    return ConfigFile(path, checked, lines, hashlib.sha256(data).hexdigest())


@dataclass(frozen=True)
class ConfigProblem:
    """One bad key or value of a configuration file."""

    file: Path
    line: int | None  # the key's line (None: not found by _key_lines)
    key: str
    message: str  # what is wrong, after `file:line: `
    hint: str

    def describe(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else str(self.file)
        return f"{where}: {self.message}"


class ConfigError(UsageError):
    """Every bad key and value of a configuration file, each at its line; the message lists
    them in the file's order (the first one's `file:line:` leads it, as a single usage
    error's does), the hint joins their hints."""

    def __init__(self, problems: list[ConfigProblem]) -> None:
        self.problems = tuple(sorted(problems, key=lambda p: p.line or 0))
        hints = dict.fromkeys(p.hint for p in self.problems if p.hint)
        super().__init__("\n  ".join(p.describe() for p in self.problems), "; ".join(hints))


def _checked(path: Path, key: str, value: Any, line: int | None) -> Any:
    """The value as its option takes it, or the ConfigProblem that refuses it."""
    setting = setting_of(key)
    if setting is None:
        close = did_you_mean(key, (s.key for s in KEYS))
        return ConfigProblem(path, line, key, f"unknown key '{key}'"
                             + (f": {close}" if close else ""), _known_keys())
    problem, checked = _value_of(setting.kind, value, path.parent)
    option = option_filled(setting)
    if not problem and option is not None:
        problem = _option_problem(option, checked)
    if problem:
        return ConfigProblem(path, line, key, f"'{key}' {problem}", _setting_hint(setting))
    return checked


def _setting_hint(setting: Setting) -> str:
    return f"{setting.key}: {setting.about}"


def _option_problem(option: Option, value: Any) -> str:
    """What the option's own reading (argparse's type=) refuses in the value."""
    if option.parse is None or not isinstance(value, str):
        return ""
    try:
        option.parse(value)
    except (argparse.ArgumentTypeError, ValueError) as error:
        return f"is not valid: {error}"
    return ""


def _value_of(kind: str, value: Any, base: Path) -> tuple[str, Any]:
    """(what is wrong with the value, "" when nothing; the value as the option takes it)."""
    if kind in (PATH, TEXT, SIZE) and not isinstance(value, str):
        return f"must be a string, not {type(value).__name__}", None
    if kind == PATH:
        return "", _absolute(base, value) if value else value
    if kind == SIZE:
        return _size_problem(value), value
    if kind == WHOLE:
        ok = isinstance(value, int) and not isinstance(value, bool) and value >= 0
        return ("" if ok else "must be a whole number (0 or more)"), value
    if kind in (PATHS, LIST):
        if isinstance(value, str) and kind == LIST:
            return "", value
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            return "must be a list of strings", None
        if kind == PATHS:
            return "", [_absolute(base, v) for v in value]
        return "", shlex.join(value)
    if kind == BOOLEAN and not isinstance(value, bool):
        return "must be true or false", None
    return "", value


def _absolute(base: Path, value: str) -> str:
    """A path of the file, relative to its directory: absolute and `..` removed, so that
    `gradshard config` shows, and a command uses, the directory meant, not `/proj/../spec`.
    Links are kept, as for --spec (service/files/spec_location.py): a spec reached through a
    link keeps the generator beside the link."""
    return os.path.normpath(base / Path(value).expanduser())


def _size_problem(value: str) -> str:
    from gradshard.cache.maintenance import parse_size

    try:
        parse_size(value)
    except (ValueError, IndexError):
        return "must be a size such as 500M or 2G"
    return ""


def _key_lines(text: str, top_level: bool) -> dict[str, int]:
    """Each key's line in the file: within [tool.gradshard] (a pyproject.toml) or before the
    first table (a gradshard.toml). tomllib gives no positions, and a key is `name =` at
    the start of a line of its table, or a table of its own (`[tool.gradshard.name]`)."""
    lines: dict[str, int] = {}
    inside = top_level
    for number, line in enumerate(text.splitlines(), 1):
        header = re.match(r"\s*\[([^\[\]]+)\]\s*(#.*)?$", line)
        if header:
            names = [p.strip().strip('"') for p in header.group(1).split(".")]
            table = [] if top_level else list(TABLE)
            inside = names == list(TABLE)
            if len(names) == len(table) + 1 and names[:-1] == table:  # a key that is a table
                lines.setdefault(names[-1], number)
            continue
        found = re.match(r"\s*\"?([A-Za-z0-9_-]+)\"?\s*=", line)
        if inside and found:
            lines.setdefault(found.group(1), number)
    return lines


def _known_keys() -> str:
    return "known keys: " + ", ".join(s.key for s in KEYS)


# ---------------------------------------------------------------------------------------------
# Applied to one command

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
