"""The try directory: where `gradshard try` builds and keeps its patches
(service/live/patch_build.py), per user, on this machine, never in the cache directory (a
library built there is loaded and run; nothing read from a restorable cache is executed),
and how it is kept bounded.

It lives on disk, in gradshard's state directory (state_directory() / "try"), not on a tmpfs:
a precompiled header takes 135 MB (clang) to 515 MB (g++), which on $XDG_RUNTIME_DIR is
memory, and a tmpfs is emptied at logout, so every login rebuilt it. $GRADSHARD_TRY_DIR overrides it.

Its entries are what its kind directories (KEEP) hold, grouped by name up to the first dot: a
pch/<h> set with a pch/<h>.o beside it, a lib/<h> directory, an obj/<h>.cpp with its .o and any
sidecar. Each is remade on demand, so after every build the least recently used go until the
directory fits its byte limit ($GRADSHARD_TRY_MAX_SIZE, default 1 GiB) and each kind its count;
what the build used stays, over the limit if need be (the caller is told once). When an entry
was last used is recorded in USAGE_FILE, never in the files' times: ninja compares mtimes (a
source made newer than its object is recompiled), and atimes are the kernel's to change too
(relatime updates a directory's on a listing, such as measuring it). An entry the file does
not name counts as used when it was last modified.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import stat
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator, Sequence

from gradshard.cache.errors import EnvironmentFailure, UsageError
from gradshard.cache.maintenance import parse_size, size_text
from gradshard.cache.objects.object_cache import RECORD_BYTES
from gradshard.cache.store.regular_files import read_regular
from gradshard.service.defaults import (GRADSHARD_TRY_DIR, GRADSHARD_TRY_MAX_SIZE,
                                      default_cache_dir, standard_cache_dir, state_directory,
                                      value_of)
from gradshard.service.files.outputs import write_atomic

__all__ = ["DEFAULT_MAX_SIZE", "KEEP", "TRY_DIRECTORY_VARIABLE", "TRY_MAX_SIZE_VARIABLE",
           "TryDirectoryUse", "collect_try_directory", "locked", "prune_try_directory",
           "read_memo", "try_directory", "try_directory_path", "try_limit"]

TRY_DIRECTORY_VARIABLE = GRADSHARD_TRY_DIR.variable
TRY_MAX_SIZE_VARIABLE = GRADSHARD_TRY_MAX_SIZE.variable
DEFAULT_MAX_SIZE = parse_size(GRADSHARD_TRY_MAX_SIZE.default)
# What a try directory keeps at most, by kind, the most recently used first: two PCH sets (and
# the include directories they were made for), the patches of the last 50 builds (their
# libraries and their structs' headers), the objects of about as many, the hidden-symbol
# lists their links read and the libraries they link against (stubs: one set per compiler).
# The byte limit usually binds first; the counts bound the small files.
KEEP = {"pch": 2, "include": 2, "lib": 50, "src": 50, "obj": 400, "symbols": 50, "stubs": 2}
LOCK_FILE = "lock"
USAGE_FILE = "usage.json"


@dataclass(frozen=True)
class TryDirectoryUse:
    """A try directory measured and pruned: its sizes (its entries and its own files: the
    lock, build.ninja, ninja's log, the usage file), its limit, what went, and why it is
    still over the limit or was left alone (None when neither)."""

    path: Path
    before_bytes: int
    after_bytes: int
    limit: int
    removed_entries: int
    note: str | None = None


def try_directory_path() -> Path:
    """$GRADSHARD_TRY_DIR, else <state directory>/try (service/defaults.py:
    state_directory), without making or checking it."""
    explicit = value_of(GRADSHARD_TRY_DIR)
    # absolute: ninja runs in it, and build.ninja names its files by these paths
    return (Path(explicit) if explicit else state_directory() / "try").absolute()


def try_directory(cache: Path | None = None) -> Path:
    """try_directory_path(), made 0700 (with its parents), and refused unless this user owns
    it and nobody else may write there, or when it is inside a cache directory (the default
    one, $GRADSHARD_CACHE's, or `cache`: a --cache the caller was given), or when its path
    holds a `"`. Any other character is fine (service/ninja_manifest.py quotes it)."""
    path = try_directory_path()
    _refuse_inside_caches(path, cache)
    if '"' in str(path):  # a patch's unit includes its parts by path: #include "PATH"
        raise UsageError(f"the try directory {path} has a '\"' in its path, which a C++ "
                         "#include of a file in it cannot hold",
                         f"set {TRY_DIRECTORY_VARIABLE} to a directory whose path has none")
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        status = path.lstat()
    except OSError as e:
        raise EnvironmentFailure(f"cannot make the try directory {path}: {e.strerror}",
                                 f"set {TRY_DIRECTORY_VARIABLE} to a directory of yours") from None
    if not path.is_dir() or path.is_symlink() or status.st_uid != os.getuid() \
            or status.st_mode & 0o022:
        raise EnvironmentFailure(
            f"the try directory {path} is not a private directory of this user",
            f"remove it, or set {TRY_DIRECTORY_VARIABLE} to a directory only you can write")
    return path


def _refuse_inside_caches(path: Path, cache: Path | None) -> None:
    # the XDG default too when $GRADSHARD_CACHE names another: CI jobs restore ~/.cache
    resolved = path.resolve()
    for directory in (default_cache_dir(), standard_cache_dir(), *((cache,) if cache else ())):
        inside = directory.resolve()
        if resolved == inside or inside in resolved.parents:
            raise EnvironmentFailure(
                f"the try directory {path} is inside the cache directory {directory}: a "
                "restored cache must never hold code that is loaded",
                f"unset {TRY_DIRECTORY_VARIABLE} (the default is in gradshard's state "
                "directory), or set it outside the cache")


def try_limit() -> int:
    """$GRADSHARD_TRY_MAX_SIZE (500M, 2G… as gc's --max-size), else DEFAULT_MAX_SIZE."""
    text = (value_of(GRADSHARD_TRY_MAX_SIZE) or "").strip()
    if not text:
        return DEFAULT_MAX_SIZE
    try:
        return parse_size(text)
    except ValueError as e:
        raise UsageError(f"{TRY_MAX_SIZE_VARIABLE}: {e}", "write a size such as 500M or 2G, "
                         f"or unset {TRY_MAX_SIZE_VARIABLE} (the limit is then "
                         f"{GRADSHARD_TRY_MAX_SIZE.default})") from None


@contextlib.contextmanager
def locked(root: Path, wait: bool = True) -> Iterator[bool]:
    """An exclusive flock on the try directory (its LOCK_FILE): builds are serialized, and gc
    prunes under it. Yields whether it is held: always, when waiting for it; without waiting,
    False while another process holds it."""
    with open(root / LOCK_FILE, "a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
            held = True
        except BlockingIOError:
            held = False
        yield held  # closing the file releases the lock


def prune_try_directory(root: Path, used: Sequence[Path], limit: int | None = None) -> str | None:
    """After a build, under its lock: record the entries of `used` (any path inside an entry)
    as just used, then remove the least recently used entries until each kind is within its
    count and the directory within `limit` (else try_limit()). What the build used stays:
    when that alone is over the limit, returns a note saying so, for the caller to print
    once; else None. A library a running worker holds stays mapped after its file is gone."""
    keys = {key for key in (_entry_key(root, path) for path in used) if key}
    _record_use(root, keys)
    return _prune(root, keys, try_limit() if limit is None else limit, "this build").note


def collect_try_directory(drop_all: bool = False) -> TryDirectoryUse | None:
    """For `gradshard gc`: the try directory pruned to its limit as after a build, what the
    last build used kept (`drop_all`: every entry goes), unless a build holds it now (then
    measured only). None when there is none: gc makes none."""
    if not try_directory_path().is_dir():
        return None
    root = try_directory()
    limit = try_limit()
    with locked(root, wait=False) as held:
        if not held:
            size = _directory_bytes(root)
            return TryDirectoryUse(root, size, size, limit, 0,
                                   "a `gradshard try` build is using it: left as it is")
        if drop_all:
            return _prune(root, set(), limit, "", everything=True)
        return _prune(root, set(_read_usage(root).get("last", ())), limit, "the last build")


@dataclass(frozen=True)
class _Entry:
    key: str  # <kind>/<name up to its first dot>
    paths: tuple[Path, ...]
    size: int
    last_used: int  # ns


def _prune(root: Path, kept: set[str], limit: int, whose: str,
           everything: bool = False) -> TryDirectoryUse:
    """Remove entries, the least recently used first, but `kept`: each kind's beyond its
    count, then any until the directory fits `limit` (`everything`: all)."""
    entries = sorted(_entries(root), key=lambda entry: (entry.last_used, entry.key))
    own = _own_bytes(root)
    before = own + sum(entry.size for entry in entries)
    doomed = _beyond_counts(entries, kept)
    size = before - sum(entry.size for entry in entries if entry.key in doomed)
    for entry in entries:
        if size <= limit and not everything:
            break
        if entry.key not in kept and entry.key not in doomed:
            doomed.add(entry.key)
            size -= entry.size
    for entry in entries:
        if entry.key in doomed:
            _remove(entry.paths)
    after = _directory_bytes(root)
    return TryDirectoryUse(root, before, after, limit, len(doomed),
                           _over_note(root, after, limit, own + sum(
                               entry.size for entry in entries if entry.key in kept), whose))


def _over_note(root: Path, size: int, limit: int, held: int, whose: str) -> str | None:
    if size <= limit:
        return None
    over = (f"the try directory {root} holds {size_text(size)}, over its limit of "
            f"{size_text(limit)}: ")
    if held <= limit:  # a file that could not be removed
        return over + "some of its files could not be removed"
    return over + (f"what {whose} used takes {size_text(held)} (precompiled headers alone "
                   f"take hundreds of MB), kept; set {TRY_MAX_SIZE_VARIABLE} above that")


def _beyond_counts(entries: list[_Entry], kept: set[str]) -> set[str]:
    """The least recently used of each kind beyond its KEEP count (`entries` are oldest
    first); kept ones count, and stay."""
    doomed = set()
    for kind, keep in KEEP.items():
        of_kind = [entry for entry in entries if entry.key.split("/")[0] == kind]
        excess = len(of_kind) - keep
        for entry in of_kind:
            if excess <= 0:
                break
            if entry.key not in kept:
                doomed.add(entry.key)
                excess -= 1
    return doomed


def _groups(root: Path) -> dict[str, list[Path]]:
    """Each entry's paths, by its key."""
    groups: dict[str, list[Path]] = {}
    for kind in KEEP:
        directory = root / kind
        if _is_real_directory(directory):  # a link is never followed out of the directory
            for child in sorted(directory.iterdir()):
                groups.setdefault(f"{kind}/{_stem(child.name)}", []).append(child)
    return groups


def _entries(root: Path) -> list[_Entry]:
    used = _read_usage(root).get("used", {})
    return [_Entry(key, tuple(paths), sum(map(_tree_bytes, paths)),
                   used.get(key) or max(map(_mtime_ns, paths)))
            for key, paths in _groups(root).items()]


def _stem(name: str) -> str:
    # a temporary a killed write left (service/files/outputs.py: .<name>.<random>.tmp) goes
    # with the entry it was written for
    return name.lstrip(".").split(".")[0]


def _entry_key(root: Path, path: Path) -> str | None:
    parts = path.relative_to(root).parts if path.is_relative_to(root) else ()
    return f"{parts[0]}/{_stem(parts[1])}" if len(parts) >= 2 and parts[0] in KEEP else None


def _record_use(root: Path, keys: set[str]) -> None:
    """USAGE_FILE: when each entry was last used, and which the last build used (gc keeps
    those). Names of entries gone are dropped, so it stays as small as the directory."""
    now = time.time_ns()
    present = _groups(root)
    used = {key: when for key, when in _read_usage(root).get("used", {}).items()
            if key in present}
    used.update((key, now) for key in keys)
    usage = {"used": dict(sorted(used.items())), "last": sorted(keys)}
    write_atomic(root / USAGE_FILE, json.dumps(usage, indent=0).encode())


def read_memo(path: Path) -> object:
    """A JSON file the try directory keeps (usage.json, the memos of service/live/patch_build.py and
    compiler.py); None when it is missing, not a regular file, too large or not JSON: each
    reader checks its shape, and makes it again when it is not what it writes."""
    try:
        return json.loads(read_regular(path, RECORD_BYTES))
    except (OSError, ValueError):  # RefusedFile is an OSError
        return None


def _read_usage(root: Path) -> dict:
    # unreadable or damaged: every entry then counts as used when it was last modified
    usage = read_memo(root / USAGE_FILE)
    if isinstance(usage, dict) and isinstance(usage.get("used", {}), dict) \
            and isinstance(usage.get("last", []), list):
        return {"used": {k: v for k, v in usage.get("used", {}).items() if isinstance(v, int)},
                "last": [k for k in usage.get("last", []) if isinstance(k, str)]}
    return {}


def _directory_bytes(root: Path) -> int:
    return _own_bytes(root) + sum(entry.size for entry in _entries(root))


def _own_bytes(root: Path) -> int:
    """The directory's own files: the lock, build.ninja, ninja's log, the usage file."""
    total = 0
    with os.scandir(root) as found:
        for item in found:
            try:  # a build may replace its temporary files meanwhile (gc does not wait)
                if not item.is_dir(follow_symlinks=False):
                    total += item.stat(follow_symlinks=False).st_size
            except FileNotFoundError:
                continue
    return total


def _tree_bytes(path: Path) -> int:
    """The st_size of the files (and links, as links) at or under `path`: their lengths, as
    gc measures the cache directory (cache/store/directory.py: cache_files)."""
    if not _is_real_directory(path):
        return _lstat_size(path)
    total = 0
    for base, dirs, files in os.walk(path):
        links = [d for d in dirs if os.path.islink(os.path.join(base, d))]
        total += sum(_lstat_size(Path(base, name)) for name in (*files, *links))
    return total


def _lstat_size(path: Path) -> int:
    with contextlib.suppress(FileNotFoundError):
        return path.lstat().st_size
    return 0


def _mtime_ns(path: Path) -> int:
    with contextlib.suppress(FileNotFoundError):
        return path.lstat().st_mtime_ns
    return 0


def _is_real_directory(path: Path) -> bool:
    try:
        return stat.S_ISDIR(path.lstat().st_mode)
    except OSError:
        return False


def _remove(paths: Iterable[Path]) -> None:
    for path in paths:
        if _is_real_directory(path):
            shutil.rmtree(path, ignore_errors=True)  # removes links inside, never follows them
        else:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
