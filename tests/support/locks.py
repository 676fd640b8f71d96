"""A lock held by one process of the machine at a time: the suite runs in two workers
(pytest-xdist, README), and what changes the machine (apt-get, an unpacked release) is done by
one of them while the other waits, then finds it done."""

from __future__ import annotations

import fcntl
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def machine_lock(name: str) -> Iterator[None]:
    """Exclusive across processes (flock: released when its holder dies, so a killed run
    never leaves it held)."""
    path = Path(tempfile.gettempdir()) / f"gradshard-tests-{name}.lock"
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
