"""Spec directories: the mini spec, the packaged spec's file names, staged copies of it."""

from __future__ import annotations

import contextlib
import shutil
import subprocess
from pathlib import Path
from typing import Iterator

from gradshard.service.files.spec_location import locate_spec

TESTS = Path(__file__).resolve().parent.parent
MINI_SPEC = TESTS / "fixtures" / "mini"
# A directory name as a user might write one, with what ninja and the shell read their own
# way (a space, `$`, quotes): the session's try workspace and the path tests use it. Not a
# `|`: ninja's depfile reader cuts a path there, so an edge under it builds again every time
# (docs/usage.md, Compiling); test_paths_with_spaces.py's HOSTILE names hold one.
SPACED = "with space $HOME 'q'"
# `gradshard build`'s flat output of any spec: Functions.h/.cpp, python_functions.h,
# Everything and _0..4, 14 binding files, VariableType.h, Everything and _0..9, TraceType
# Everything and _0..9, ADInplaceOrViewType Everything and _0..1, ViewFuncs.h/.cpp,
# variable_factories.h and annotated_fn_args.py
FLAT_FILES = 2 + 7 + 14 + 12 + 11 + 3 + 2 + 1 + 1

# Spec files relative to a packaged spec directory.
NATIVE = "ATen/native/native_functions.yaml"
TAGS = "ATen/native/tags.yaml"
DERIVATIVES = "autograd/derivatives.yaml"
DEPRECATED = "autograd/deprecated.yaml"
TEMPLATES = "autograd/templates"

# mul.Tensor's formula for other, in the mini spec as in the real one: the edits' anchor.
MUL_OTHER = "other: mul_tensor_backward(grad, self, other.scalar_type())"


def mini_spec_pair(root: Path, old: str, new: str) -> tuple[Path, Path]:
    """Two copies of the mini spec under root: as it is, and with `old` replaced by `new` in
    its derivatives.yaml."""
    base, edited = root / "mini", root / "mini-edited"
    shutil.copytree(MINI_SPEC, base)
    shutil.copytree(MINI_SPEC, edited)
    path = edited / DERIVATIVES
    text = path.read_text()
    assert old in text, f"edit anchor not in the mini spec: {old!r}"
    path.write_text(text.replace(old, new, 1))
    return base, edited


def installed_torchgen() -> Path:
    return locate_spec(None).root.parent


def stage_packaged_spec(root: Path, source: Path | None = None) -> tuple[Path, Path]:
    """A copy of the packaged spec inside a torchgen package of symlinks, under root: the
    installed torchgen's, or that of the torchgen package `source` (another release's).

    torchgen prints each file's template path relative to its own package, so to print
    `packaged/autograd/templates/...` for an edited spec it must run from beside it, as it
    does inside PyTorch. The copy keeps its generator (the same sources, so the same hash).
    Returns (the PYTHONPATH entry, the spec directory)."""
    source = source or installed_torchgen()
    torchgen = root / "torchgen"
    torchgen.mkdir(parents=True)
    for child in source.iterdir():
        if child.name not in ("packaged", "__pycache__"):
            (torchgen / child.name).symlink_to(child)
    # with its bytecode (copies keep the sources' times, so it stays valid until an edit)
    shutil.copytree(source / "packaged", torchgen / "packaged")
    return root, torchgen / "packaged"


def stage_checkout_spec(root: Path) -> tuple[Path, Path]:
    """The packaged spec laid out as a PyTorch checkout with torchgen at its top, under root.
    Returns (the PYTHONPATH entry, the checkout)."""
    packaged = installed_torchgen() / "packaged"
    root.mkdir(parents=True)
    (root / "torchgen").symlink_to(installed_torchgen())
    native = root / "aten" / "src" / "ATen" / "native"
    native.mkdir(parents=True)
    for name in ("native_functions.yaml", "tags.yaml"):
        shutil.copy(packaged / "ATen" / "native" / name, native / name)
    autograd = root / "tools" / "autograd"
    autograd.mkdir(parents=True)
    for name in ("derivatives.yaml", "deprecated.yaml"):
        shutil.copy(packaged / "autograd" / name, autograd / name)
    shutil.copytree(packaged / "autograd" / "templates", autograd / "templates")
    return root, root


@contextlib.contextmanager
def edited_derivatives(spec: Path, old: str, new: str) -> Iterator[int]:
    """derivatives.yaml with old replaced by new for the block (the spec copy is the session's:
    restored whatever happens); yields the line where new starts."""
    path = spec / "autograd" / "derivatives.yaml"
    text = path.read_text()
    assert text.count(old) == 1
    path.write_text(text.replace(old, new))
    try:
        yield text[:text.index(old)].count("\n") + 1
    finally:
        path.write_text(text)


def commit_all(repository: Path) -> str:
    """A git repository made of the directory's files, all in one commit: its id."""
    for args in (["init", "-q"], ["add", "-A"],
                 ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "base"]):
        subprocess.run(["git", "-C", str(repository), *args], check=True)
    return subprocess.run(["git", "-C", str(repository), "rev-parse", "HEAD"], check=True,
                          capture_output=True, text=True).stdout.strip()
