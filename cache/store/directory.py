"""The cache directory on disk: every file in it, what it belongs to, and removing entries.

    CACHE/
      gradshard.sqlite3 (-wal, -shm), .lock       the store (cache/store/database.py)
      gradshard.sqlite3.damaged-<stamp>(-wal…)    set aside: damaged, never read again
      objects/<key[:2]>/<key>.o .d .sum           compiled objects and splices (object_cache)
      objects/merged/<identity>.json              merged units' baselines (service/compile/plan.py)
      pch/<key>/<kind>.h .h.gch .h.gch.sum …      precompiled headers, one directory each
      headers.json                                the header fingerprint memo
      logs/                                       the daemon's logs
      .<name>.<random>(.tmp)                      a write that did not finish (beside its file)

Anything else under objects/ and pch/ is a leftover (no entry names it); anything else
elsewhere is not gradshard's and is never removed.

What gc and stats count is the files themselves (their sizes as `lstat` gives them: a
symbolic link is a small file, never followed), so a limit holds for the directory as `du`
would see it. An entry is the files one key names: `objects/ab/<key>` (its .o, .d and .sum),
`pch/<key>` (the directory), a baseline, the memo. Names read from the directory or the store
are data: they are classified by their shape, and removed only through `path_inside`.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import stat
from dataclasses import dataclass
from pathlib import Path

from gradshard.cache.store.database import DB_FILE, path_inside

__all__ = ["BASELINES", "BASELINE_FILES", "CACHE_MAX_VARIABLE", "CATEGORIES", "CacheFile",
           "DAMAGED", "HEADER_MEMO", "LEFTOVER", "MEMO", "OBJECTS", "OBJECT_FILES", "PCHS",
           "PCH_FILES", "STORE", "cache_files", "directory_bytes", "entry_kind_matches",
           "object_entry", "pch_entry", "remove_entry", "total_bytes"]

# The automatic limit on the cache directory applied after each build (maintenance.py:
# apply_cache_limit), read before anything heavy is imported (service/build.py).
CACHE_MAX_VARIABLE = "GRADSHARD_CACHE_MAX"

OBJECTS = "objects"
BASELINES = "objects/merged"
PCHS = "pch"
HEADER_MEMO = "headers.json"

# What a file is part of; one category per line of `gradshard stats`.
STORE, DAMAGED, OBJECT_FILES, PCH_FILES, BASELINE_FILES, MEMO, LOGS, LEFTOVER, OTHER = (
    "store", "damaged", "objects", "pchs", "baselines", "header memo", "logs", "leftovers",
    "other")
CATEGORIES = (STORE, OBJECT_FILES, PCH_FILES, BASELINE_FILES, MEMO, DAMAGED, LEFTOVER, LOGS,
              OTHER)

_OBJECT_ENTRY = re.compile(r"objects/([0-9a-f]{2})/(\1[0-9a-f]{30})")
_OBJECT_FILE = re.compile(_OBJECT_ENTRY.pattern + r"\.(?:o|d|sum)")
_BASELINE_FILE = re.compile(r"objects/merged/[0-9a-f]{32}\.json")
_PCH_ENTRY = re.compile(r"pch/[0-9a-f]{32}")
_PCH_FILE = re.compile(r"(pch/[0-9a-f]{32})/[^/]+")
# an entry path of each kind the store records (cache/objects/entries.py)
ENTRY_PATHS = {"object": _OBJECT_ENTRY, "splice": _OBJECT_ENTRY, "pch": _PCH_ENTRY,
               "baseline": _BASELINE_FILE, "header_memo": re.compile(re.escape(HEADER_MEMO))}
_STORE_FILES = frozenset({DB_FILE, f"{DB_FILE}-wal", f"{DB_FILE}-shm", f"{DB_FILE}-journal",
                          ".lock"})


@dataclass(frozen=True)
class CacheFile:
    path: str  # relative to the cache directory, with '/'
    size: int
    mtime: float
    category: str
    entry: str  # the entry it belongs to (an entry path), or its own path


def object_entry(key: str) -> str:
    """The entry path of a stored object or splice: its files add .o, .d and .sum."""
    return f"{OBJECTS}/{key[:2]}/{key}"


def pch_entry(key: str) -> str:
    return f"{PCHS}/{key}"


def classify(path: str) -> tuple[str, str]:
    """The category of a file (a relative path) and the entry it belongs to."""
    found = _OBJECT_FILE.fullmatch(path)
    if found:
        return OBJECT_FILES, object_entry(found[2])
    if _BASELINE_FILE.fullmatch(path):
        return BASELINE_FILES, path
    found = _PCH_FILE.fullmatch(path)
    if found:
        return PCH_FILES, found[1]
    if path in _STORE_FILES:
        return STORE, path
    if path.startswith(f"{DB_FILE}.damaged-") and "/" not in path:
        return DAMAGED, path
    if path == HEADER_MEMO:
        return MEMO, path
    if path.startswith("logs/"):
        return LOGS, path
    if path.startswith((f"{OBJECTS}/", f"{PCHS}/", f".{HEADER_MEMO}.")):
        return LEFTOVER, path  # a write a killed process left; a file no entry names
    return OTHER, path


def entry_kind_matches(kind: str, path: object) -> bool:
    """Whether a path read from the store is the entry path an entry of this kind has: only
    such paths are ever measured or removed."""
    shape = ENTRY_PATHS.get(kind)
    return isinstance(path, str) and shape is not None and shape.fullmatch(path) is not None


def cache_files(directory: Path) -> list[CacheFile]:
    """Every file under the directory (symbolic links as links: never followed)."""
    found = []
    for root, dirs, files in os.walk(directory):
        dirs.sort()
        base = os.path.relpath(root, directory)
        prefix = "" if base == "." else base.replace(os.sep, "/") + "/"
        # a link to a directory is listed among dirs, and not walked: it is a file here
        for name in [*sorted(files), *(d for d in dirs if os.path.islink(os.path.join(root, d)))]:
            with contextlib.suppress(FileNotFoundError):  # removed meanwhile
                info = os.lstat(os.path.join(root, name))
                category, entry = classify(prefix + name)
                found.append(CacheFile(prefix + name, info.st_size, info.st_mtime, category,
                                       entry))
    return found


def total_bytes(files: list[CacheFile]) -> int:
    return sum(f.size for f in files)


def directory_bytes(directory: Path) -> int:
    """What the cache directory takes: the sizes of all its files."""
    return total_bytes(cache_files(directory))


def remove_entry(directory: Path, entry: str) -> None:
    """Remove an entry's files, its sums first (a reader then sees no entry, never half of
    one). Only inside the directory: a path through a link leading out is left alone."""
    path = path_inside(directory, entry)
    if path is None:
        return
    if _OBJECT_ENTRY.fullmatch(entry):
        for suffix in (".sum", ".o", ".d"):
            _unlink(Path(f"{path}{suffix}"))
    elif _PCH_ENTRY.fullmatch(entry) and _is_real_directory(path):
        for sums in sorted(path.glob("*.sum")):
            _unlink(sums)
        shutil.rmtree(path, ignore_errors=True)  # removes links inside, never follows them
    else:
        _unlink(path)


def _is_real_directory(path: Path) -> bool:
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


def _unlink(path: Path) -> None:
    """A file or a link (never what it points to); gone already is fine, and a file that
    cannot be removed stays: gc reports what the directory holds after it."""
    with contextlib.suppress(FileNotFoundError, IsADirectoryError, PermissionError):
        path.unlink()
