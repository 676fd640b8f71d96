"""The code version every task key includes: a hash of gradshard's own stage code.

Any change to the pipeline, the engine or the templates that print C++ yields new keys, so a
cache written by other code is never reused. It is computed from the installed sources, not
from a version string that a developer could forget to bump.
"""

from __future__ import annotations

import functools
import importlib.resources

import xxhash

# What decides a task's output: every stage, the templates, and the engine's task wiring and
# encoding (not the store, gc or reporting, whose changes leave outputs alone).
_SOURCES = (("gradshard.pipeline", None), ("gradshard.templates", None),
            ("gradshard.cache", ("engine.py", "split.py", "graph.py", "graph_records.py",
                                 "tasks.py", "bindings_group.py", "binding_tasks.py",
                                 "manifest.py", "compile_group.py", "variable_type_group.py",
                                 "kernel_family.py", "codegen_group.py")))
_SUFFIXES = (".py", ".j2")


@functools.cache
def code_version() -> str:
    digest = xxhash.xxh3_128()
    for package, only in _SOURCES:
        root = importlib.resources.files(package)
        for entry in sorted(root.iterdir(), key=lambda e: e.name):
            if entry.name.endswith(_SUFFIXES) and (only is None or entry.name in only):
                digest.update(f"{package}/{entry.name}\x00".encode())
                digest.update(entry.read_bytes())
    return digest.hexdigest()
