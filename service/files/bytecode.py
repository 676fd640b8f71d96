"""gradshard's bytecode written ahead, as `pip install` writes an installed package's: a fresh
process then loads .pyc files instead of compiling every module it imports (~0.9 s of a
`check` or a build's start), even where PYTHONDONTWRITEBYTECODE keeps Python from writing
them itself. The test suite (which starts thousands of gradshard processes from an editable
install) and the benchmarks call it first.

    python -m gradshard.service.files.bytecode
"""

from __future__ import annotations

import compileall
import importlib

__all__ = ["PACKAGES", "compile_bytecode"]

PACKAGES = ("gradshard.pipeline", "gradshard.cache", "gradshard.service",
            "gradshard.templates")


def compile_bytecode() -> bool:
    """Every module of gradshard's packages compiled (an up-to-date .pyc is left as it is);
    False when one does not compile."""
    done = True
    for package in PACKAGES:
        for directory in importlib.import_module(package).__path__:
            done = compileall.compile_dir(directory, quiet=1) and done
    return done


if __name__ == "__main__":
    raise SystemExit(0 if compile_bytecode() else 1)
