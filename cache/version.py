"""The code version every task key includes: a hash of the code that tasks run.

Any change to what a task computes (a stage, a template that prints C++, the engine and the
build graph's wiring and encoding) yields new keys, so a cache written by other code is
never reused. It is computed from the installed sources, not from a version string that a
developer could forget to bump, by walking whole packages: what no task runs lives outside
them (the store, reports, the CLI, process errors and their hints, `try`'s patch code and
template), so that editing it leaves every cache warm.
"""

from __future__ import annotations

import functools
import importlib.resources
from importlib.resources.abc import Traversable
from typing import Iterator

import xxhash

__all__ = ["HASHED_PACKAGES", "code_version", "hashed_files"]

# The packages whose code decides a task's output, each walked whole.
HASHED_PACKAGES = ("gradshard.pipeline", "gradshard.templates.codegen",
                   "gradshard.cache.engine", "gradshard.cache.graph")
_SUFFIXES = (".py", ".j2")


def hashed_files() -> Iterator[tuple[str, Traversable]]:
    """Every hashed source, as (package-relative name, file), in a stable order."""
    for package in HASHED_PACKAGES:
        yield from _walk(package, importlib.resources.files(package))


def _walk(prefix: str, root: Traversable) -> Iterator[tuple[str, Traversable]]:
    for entry in sorted(root.iterdir(), key=lambda e: e.name):
        if entry.is_dir():
            if entry.name != "__pycache__":
                yield from _walk(f"{prefix}/{entry.name}", entry)
        elif entry.name.endswith(_SUFFIXES):
            yield f"{prefix}/{entry.name}", entry


@functools.cache
def code_version() -> str:
    digest = xxhash.xxh3_128()
    for name, entry in hashed_files():
        digest.update(f"{name}\x00".encode())
        digest.update(entry.read_bytes())
    return digest.hexdigest()
