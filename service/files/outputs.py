"""Writing generated files: all or nothing, atomically, and never touching a file whose
content is unchanged.

Each file is first written to a temporary name in its directory; only when every temporary
is written are they renamed over the old files. Readers (compilers, editors) see either the
old or the new content of a file, never a part, and a write that fails (a full disk) removes
its temporaries and leaves the previous files as they were. A file whose bytes would not
change keeps its mtime, so make and ninja see nothing to rebuild.

The names come from the cache (a build's index, the last build's manifest) or from a file a
build keeps beside its outputs, so they are data: a name is used only once
cache/store/database.py's `path_inside` places it inside its directory. What is found at a name is
read only if it is a regular file of a generated file's size (cache/store/regular_files.py): a
FIFO or a link to /dev/zero there is a file to write again, never waited on or read.
"""

from __future__ import annotations

import os
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

from gradshard.cache.errors import EnvironmentFailure
from gradshard.cache.store.database import (NO_SPACE, Store, StoreDamaged, blob_hash, disk_full,
                                            paths_inside)
from gradshard.cache.store.regular_files import read_regular
from gradshard.pipeline.problems import InternalError

__all__ = ["KnownHashes", "OutputSync", "UnsafeOutputName", "WriteReport", "cache_damage",
           "file_hash", "files_left", "outputs_match", "stat_signature", "sync_outputs",
           "write_atomic", "write_changed", "write_outputs"]

# The most of a file on disk read to compare it: far more than any generated file holds.
OUTPUT_BYTES = 256 << 20


@dataclass
class WriteReport:
    written: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)


class UnsafeOutputName(Exception):
    """A file name that would leave the directory it is written into: whatever gave it (a
    cached index) is damaged or crafted. Raised before anything is written."""

    def __init__(self, name: str, directory: Path) -> None:
        super().__init__(f"names an output file outside {directory} ({name!r})")
        self.name = name
        self.directory = directory


def write_atomic(path: Path, data: bytes) -> None:
    """One file, atomically (an OSError, e.g. ENOSPC, propagates; nothing is left behind)."""
    temporary = _write_temporary(path, data)
    try:
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


def write_changed(path: Path, data: bytes) -> None:
    """write_atomic, unless the file holds `data` already (its mtime then stays as it was)."""
    if not holds(path, data):
        write_atomic(path, data)


def write_all(directory: Path, contents: dict[Path, bytes]) -> None:
    """Write every file or none: all temporaries first, then the renames. A failure while
    writing (a full disk, the usual one) removes the temporaries and leaves the old files as
    they were; renames need no space and are not undone should one fail (EIO). Either is
    reported as an EnvironmentFailure naming the directory (and, when full, what it needed)."""
    temporaries: dict[Path, Path] = {}
    try:
        for path, data in contents.items():
            temporaries[path] = _write_temporary(path, data)
        for path, temporary in list(temporaries.items()):
            os.replace(temporary, path)
            del temporaries[path]
    except OSError as error:
        _discard(temporaries.values())
        raise _write_failure(directory, error, sum(map(len, contents.values()))) from None
    except BaseException:
        _discard(temporaries.values())
        raise


def _write_temporary(path: Path, data: bytes) -> Path:
    handle, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    temporary = Path(name)
    try:
        with os.fdopen(handle, "wb") as f:
            f.write(data)
        os.chmod(temporary, 0o644)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    return temporary


def _discard(temporaries: Iterable[Path]) -> None:
    for temporary in temporaries:
        try:
            temporary.unlink(missing_ok=True)
        except OSError:
            pass  # the next build removes leftovers (see _remove_leftovers)


def _write_failure(directory: Path, error: OSError, needed: int) -> EnvironmentFailure:
    if error.errno in NO_SPACE:
        message = disk_full(f"cannot write the generated files into {directory}", directory,
                            needed)
        hint = "free space there, or write elsewhere (--out, --compile-dir)"
    else:
        where = f" ({error.filename})" if error.filename else ""
        message = (f"cannot write the generated files into {directory}: "
                   f"{error.strerror or error}{where}")
        hint = "check that directory, or write elsewhere (--out, --compile-dir)"
    return EnvironmentFailure(message + "; the files there were left as they were", hint,
                              str(directory))


def _make_directory(directory: Path) -> None:
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        message = (disk_full(f"cannot create the output directory {directory}", directory.parent)
                   if e.errno in NO_SPACE
                   else f"cannot create the output directory {directory}: {e.strerror}")
        raise EnvironmentFailure(message, "choose another --out", str(directory)) from None


def _paths_inside(directory: Path, names: Iterable[str]) -> dict[str, Path]:
    """Each name's path in directory; any name that would leave it stops everything."""
    names = list(names)
    paths = {}
    for name, path in zip(names, paths_inside(directory, names)):
        if path is None:
            raise UnsafeOutputName(name, directory)
        paths[name] = path
    return paths


def holds(path: Path, data: bytes) -> bool:
    """Whether the file holds exactly `data` (a file that cannot be read does not)."""
    try:
        return read_regular(path, len(data)) == data
    except OSError:
        return False  # missing, unreadable, no regular file or longer: rewritten


def write_outputs(out_dir: Path, files: dict[str, str]) -> WriteReport:
    """Write every file into out_dir (created if needed), all or none; report which changed."""
    _make_directory(out_dir)
    paths = _paths_inside(out_dir, files)
    contents = {name: files[name].encode("utf-8") for name in sorted(files)}
    changed = [name for name, data in contents.items() if not holds(paths[name], data)]
    write_all(out_dir, {paths[name]: contents[name] for name in changed})
    return WriteReport(written=changed, unchanged=[n for n in contents if n not in changed])


def stat_signature(path: Path) -> tuple[int, ...] | None:
    """What any write to the file changes (its change time among them); None without one.
    The path's own (a symbolic link is not followed)."""
    try:
        found = path.lstat()
    except OSError:
        return None
    return (found.st_dev, found.st_ino, found.st_size, found.st_mtime_ns, found.st_ctime_ns)


class KnownHashes:
    """The content hashes of files a long-lived session wrote or read, each with the stat
    signature the file had then: a file whose signature is unchanged still holds what was
    hashed (a write changes its change time at least), so a daemon's build does not read and
    hash its whole output and compile directory again (~20 MB and ~2000 files) to find the
    few files an edit changed. What it cannot see: a write keeping the size within the same
    timestamp tick (a few milliseconds) as the one recorded."""

    def __init__(self) -> None:
        self._known: dict[str, tuple[tuple[int, ...], str]] = {}  # by str(path): hashed fast

    def hash_of(self, path: Path) -> str | None:
        signature = stat_signature(path)
        known = self._known.get(str(path))
        if signature is not None and known is not None and known[0] == signature:
            return known[1]
        digest = file_hash(path)
        self.note(path, digest, signature)
        return digest

    def note(self, path: Path, digest: str | None,
             signature: tuple[int, ...] | None = None) -> None:
        """Remember what `path` holds now (its signature read again unless given)."""
        signature = signature if signature is not None else stat_signature(path)
        if digest is None or signature is None:
            self._known.pop(str(path), None)
        else:
            self._known[str(path)] = (signature, digest)


def file_hash(path: Path) -> str | None:
    """The hash a file on disk has as a text blob, as builds record their files (None when it
    cannot be read, or is no regular file: it is written again)."""
    try:
        return blob_hash("text", read_regular(path, OUTPUT_BYTES))
    except OSError:
        return None


def files_left(out_dir: Path, names: Iterable[str]) -> dict[str, str]:
    """The files among `names` (an earlier build's, read from the cache: each checked to stay
    inside out_dir) still there, with their hashes now: what a build leaves to another
    selection goes on being recorded, so that a later build may remove it."""
    names = list(names)
    hashes = {name: file_hash(path) for name, path in zip(names, paths_inside(out_dir, names))
              if path is not None}
    return {name: h for name, h in hashes.items() if h is not None}


def outputs_match(out_dir: Path, files: dict[str, str]) -> bool:
    names = list(files)
    return all(path is not None and file_hash(path) == files[name]
               for name, path in zip(names, paths_inside(out_dir, names)))


@dataclass(frozen=True)
class OutputSync:
    """Making out_dir hold exactly some files (name → content hash), in two steps with the
    caller between them (it loads the texts itself: nothing here calls back into it):
    `sync_outputs` checks every name and finds the files that do not hold their content
    (`stale`); `write` writes those, all or none, and removes what an earlier build wrote
    that this one does not produce."""

    out_dir: Path
    files: dict[str, str]
    paths: dict[str, Path]
    stale: list[str]
    known: KnownHashes

    def write(self, texts: dict[str, str], previous: Iterable[str] = ()) -> WriteReport:
        """Write the stale files (`texts`: theirs, by name), then remove the files of
        `previous` this one does not produce (a name leaving out_dir is ignored) and the
        temporary files a killed build left behind."""
        paths, files, stale = self.paths, self.files, set(self.stale)
        write_all(self.out_dir, {paths[name]: texts[name].encode("utf-8") for name in self.stale})
        for name in self.stale:
            self.known.note(paths[name], files[name])
        report = WriteReport(written=self.stale,
                             unchanged=sorted(n for n in files if n not in stale))
        gone = set(previous) - set(files)
        report.removed = _remove_previous(self.out_dir, sorted(gone))
        earlier = [path for path in paths_inside(self.out_dir, gone) if path is not None]
        _remove_leftovers([*paths.values(), *earlier])
        return report


def sync_outputs(out_dir: Path, files: dict[str, str], known: KnownHashes | None = None
                 ) -> OutputSync:
    """The first step of making out_dir hold exactly these files: a name that would leave
    out_dir raises UnsafeOutputName before anything is written; the directories are made
    (names may have them: `pch/formulas.h`); the files already holding their content are
    left alone. `known`: the session's hashes of files it wrote or read (a one-shot build
    reads each)."""
    known = known if known is not None else KnownHashes()
    _make_directory(out_dir)
    paths = _paths_inside(out_dir, files)
    top = str(out_dir)
    for parent in sorted({os.path.dirname(path) for path in map(str, paths.values())} - {top}):
        _make_directory(Path(parent))
    stale = sorted(n for n in files if known.hash_of(paths[n]) != files[n])
    return OutputSync(out_dir, files, paths, stale, known)


def _remove_previous(out_dir: Path, names: list[str]) -> list[str]:
    """Remove these files of an earlier build; a name outside out_dir is never acted on."""
    removed = []
    for name, path in zip(names, paths_inside(out_dir, names)):
        if path is None or not path.is_file():
            continue
        try:
            path.unlink()
        except FileNotFoundError:
            continue  # a concurrent build removed it
        except OSError as error:
            raise EnvironmentFailure(f"cannot remove {path}: {error.strerror}",
                                     "check the output directory", str(path)) from None
        removed.append(name)
    return removed


def _remove_leftovers(owners: list[Path]) -> None:
    """Temporary files of writes to these paths that never finished (the writer was killed):
    any older than a minute, since a live write takes well under that and may belong to a
    concurrent build."""
    horizon = time.time() - 60
    known = {str(owner) for owner in owners}  # strings: hashing thousands of Paths is slow
    for directory in {os.path.dirname(owner) for owner in known}:
        for leftover in Path(directory).glob(".*.tmp"):
            try:
                if (os.path.join(directory, leftover.name[1:].rsplit(".", 2)[0]) in known
                        and leftover.stat().st_mtime < horizon):
                    leftover.unlink()
            except OSError:
                pass


def cache_damage(unsafe: UnsafeOutputName, store: Store | None) -> Exception:
    """A build's index naming a file outside --out came from a damaged (or crafted) cache:
    the cache is set aside and the build runs again (service/build.py: build_and_compile). Without a cache the
    names are the pipeline's own, so this is a bug."""
    if store is None:
        return InternalError(f"the build {unsafe}")
    return StoreDamaged(str(unsafe), store.path)
