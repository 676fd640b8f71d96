"""Writing generated files: atomically, and never touching a file whose content is unchanged.

A file is written to a temporary name in the same directory and renamed over the old one, so
readers (compilers, editors) see either the old or the new content, never a part. A file
whose bytes would not change keeps its mtime, so make and ninja see nothing to rebuild.
"""

from __future__ import annotations

import os
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

from gradshard.cache.store import blob_hash
from gradshard.pipeline.errors import UsageError


@dataclass
class WriteReport:
    written: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)


def write_atomic(path: Path, data: bytes) -> None:
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as f:
            f.write(data)
        os.chmod(temporary, 0o644)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def write_outputs(out_dir: Path, files: dict[str, str]) -> WriteReport:
    """Write every file into out_dir (created if needed); report which changed."""
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise UsageError(f"cannot create the output directory {out_dir}: {e.strerror}",
                         "choose another --out") from None
    report = WriteReport()
    for name in sorted(files):
        path = out_dir / name
        data = files[name].encode("utf-8")
        try:
            if path.is_file() and path.read_bytes() == data:
                report.unchanged.append(name)
                continue
            write_atomic(path, data)
        except OSError as e:
            raise UsageError(f"cannot write {path}: {e.strerror}", "check the output directory") from None
        report.written.append(name)
    return report


def file_hash(path: Path) -> str | None:
    """The hash a file on disk has as a text blob, as builds record their files (None when it
    cannot be read)."""
    try:
        return blob_hash("text", path.read_bytes())
    except OSError:
        return None


def outputs_match(out_dir: Path, files: dict[str, str]) -> bool:
    return all(file_hash(out_dir / name) == digest for name, digest in files.items())


def sync_outputs(out_dir: Path, files: dict[str, str], load: Callable[[list[str]], dict[str, str]],
                 previous: Iterable[str] = ()) -> WriteReport:
    """Make out_dir hold exactly these files (name → content hash): a file already holding
    its content is left alone, the others are loaded (`load`) and written atomically; files
    an earlier build wrote that this one does not produce are removed, as are temporary
    files a killed build left behind."""
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise UsageError(f"cannot create the output directory {out_dir}: {e.strerror}",
                         "choose another --out") from None
    stale = sorted(n for n in files if file_hash(out_dir / n) != files[n])
    report = WriteReport(unchanged=sorted(n for n in files if n not in stale))
    texts = load(stale) if stale else {}
    for name in stale:
        path = out_dir / name
        try:
            write_atomic(path, texts[name].encode("utf-8"))
        except OSError as e:
            raise UsageError(f"cannot write {path}: {e.strerror}", "check the output directory") from None
        report.written.append(name)
    for name in sorted(set(previous) - set(files)):
        path = out_dir / name
        if path.is_file():
            path.unlink()
            report.removed.append(name)
    _remove_leftovers(out_dir, set(files) | set(previous))
    return report


def _remove_leftovers(out_dir: Path, names: set[str]) -> None:
    """Temporary files of writes that never finished (the writer was killed): any older than
    a minute, since a live write takes milliseconds and may belong to a concurrent build."""
    horizon = time.time() - 60
    for leftover in out_dir.glob(".*.tmp"):
        owner = leftover.name[1:].rsplit(".", 2)[0]
        try:
            if owner in names and leftover.stat().st_mtime < horizon:
                leftover.unlink()
        except OSError:
            pass
