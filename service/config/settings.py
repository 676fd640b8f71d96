"""Every key a configuration file may set, as data: what it sets (a command-line option's
value, or an environment variable's), the variable that beats the file, and its kind.

A key that sets an option fills it only when the command line did not give the option and
the variable (if any) is unset; a key that sets a variable (the size limits, which have no
flag) fills the variable only when it is unset. So: file < environment < flags.
"""

from __future__ import annotations

from typing import NamedTuple

from gradshard.service.options import BUILDING, TRY

__all__ = ["BOOLEAN", "LIST", "PATH", "PATHS", "SETTINGS", "SIZE", "Setting", "TEXT", "WHOLE",
           "setting_of"]

# the kinds of values: a path (relative to the file's directory), several paths, a text,
# a whole number, a size (500M, 2G), true or false (an on/off flag's)
PATH, PATHS, TEXT, WHOLE, SIZE, LIST = "path", "paths", "text", "whole number", "size", "texts"
BOOLEAN = "boolean"


class Setting(NamedTuple):
    key: str  # as written in the file
    kind: str
    help: str
    dest: str | None = None  # the option it fills (None: it fills `variable` only)
    variable: str | None = None  # the environment variable that beats the file
    commands: frozenset[str] | None = None  # the commands whose option it fills (None: all)


SETTINGS: tuple[Setting, ...] = (
    Setting("spec", PATH, "the spec directory (--spec)", "spec"),
    Setting("out", PATH, "where the generated files go (--out)", "out"),
    Setting("tree", TEXT, "flat or pytorch (--tree)", "tree"),
    Setting("codegen-only", BOOLEAN, "generate the files without compiling them "
            "(--codegen-only)", "codegen_only"),
    Setting("cache", PATH, "the cache directory (--cache)", "cache", "GRADSHARD_CACHE"),
    Setting("cache-max-size", SIZE, "the cache directory's limit after each build",
            variable="GRADSHARD_CACHE_MAX"),
    Setting("cxx", TEXT, "the C++ compiler of builds (--cxx)", "cxx", "CXX", BUILDING),
    Setting("cxxflags", LIST, "extra compiler flags (--cxxflags)", "cxxflags", "CXXFLAGS"),
    Setting("include", PATHS, "include directories (--include)", "include"),
    Setting("launcher", TEXT, "ccache, sccache, distcc or a command (--launcher)", "launcher",
            "CXX_LAUNCHER"),
    Setting("jobs", WHOLE, "parallel compiles (-j)", "jobs"),
    Setting("try-cxx", TEXT, "the C++ compiler of `try`'s patches (try --cxx)", "cxx",
            "GRADSHARD_TRY_CXX", frozenset({TRY})),
    Setting("try-max-size", SIZE, "the try directory's limit", variable="GRADSHARD_TRY_MAX_SIZE"),
)


def setting_of(key: str) -> Setting | None:
    return next((s for s in SETTINGS if s.key == key), None)
