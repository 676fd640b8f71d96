"""Writing generated files: atomically, and never touching a file whose content is unchanged.

A file is written to a temporary name in the same directory and renamed over the old one, so
readers (compilers, editors) see either the old or the new content, never a part. A file
whose bytes would not change keeps its mtime, so make and ninja see nothing to rebuild.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from gradshard.pipeline.errors import UsageError


@dataclass
class WriteReport:
    written: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)


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
