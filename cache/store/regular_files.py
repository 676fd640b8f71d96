"""Reading a file that input names (a spec, a restored cache, --out): a regular file only, and
no more than a limit of it.

A FIFO with no writer blocks whoever opens or reads it, for ever; a device such as /dev/zero
never ends; a sparse file claims any size. None of them is read: the path is checked before
it is opened (a device is never opened), opened without blocking (O_NONBLOCK), and what was
opened is checked again (the path may have changed meanwhile); a file larger than the limit,
or growing past it, is refused.

Standard library only, and cheap to import (not even typing: ~10 ms): cache/objects/object_cache.py,
which reads stored objects with it, starts once per compile unit.
"""

from __future__ import annotations

import io
import os
import stat

__all__ = ["FileTooLarge", "NotRegularFile", "RefusedFile", "open_regular", "read_regular"]

_KINDS = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"),
          (stat.S_ISDIR, "a directory"))


class RefusedFile(OSError):
    """A file that is not read. An OSError, so a reader that takes an unreadable file for
    damaged (or missing) takes this one so too; `reason` says why without the path."""

    def __init__(self, path: object, reason: str) -> None:
        super().__init__(f"{path} {reason}")
        self.path = path
        self.reason = reason


class NotRegularFile(RefusedFile):
    def __init__(self, path: object, kind: str) -> None:
        super().__init__(path, f"is not a regular file ({kind})")
        self.kind = kind


class FileTooLarge(RefusedFile):
    def __init__(self, path: object, size: int, limit: int) -> None:
        super().__init__(path, f"is larger than the limit of {limit} bytes ({size} bytes)")
        self.size = size
        self.limit = limit


def check_regular(path: object, mode: int) -> None:
    """Refuse (NotRegularFile) a file whose mode is not a regular file's."""
    if not stat.S_ISREG(mode):
        raise NotRegularFile(path, next((name for test, name in _KINDS if test(mode)),
                                        "a special file"))


def open_regular(path: str | os.PathLike, limit: int) -> io.BufferedReader:
    """The regular file at path (symbolic links followed), open to read, if it holds at most
    `limit` bytes now. FileNotFoundError when it is missing, a RefusedFile, or the OSError
    of opening it."""
    check_regular(path, os.stat(path).st_mode)  # before opening: a device is never opened
    file = open(os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC), "rb")
    try:
        info = os.fstat(file.fileno())  # what was opened, if the path changed since
        check_regular(path, info.st_mode)
        if info.st_size > limit:
            raise FileTooLarge(path, info.st_size, limit)
    except BaseException:
        file.close()
        raise
    return file


def read_regular(path: str | os.PathLike, limit: int) -> bytes:
    """The bytes of the regular file at path, at most `limit` of them (see open_regular for
    what it raises; FileTooLarge too for a file that grew past the limit while read)."""
    with open_regular(path, limit) as file:
        size = os.fstat(file.fileno()).st_size
        data = file.read(size + 1)  # a byte more shows that it is growing
        if len(data) > size:
            data += file.read(limit + 1 - len(data))
    if len(data) > limit:
        raise FileTooLarge(path, len(data), limit)
    return data
