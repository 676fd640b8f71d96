"""Other releases' torchgen, for the tests that run another release's generator
(@pytest.mark.releases). Each release's wheel is downloaded once with pip, only what the tests
read unpacked, and kept between runs of the suite:

- release_torchgen (2.12.0, 2.14.1): the Linux wheel's torchgen/ package and its headers
  (torch/include/, beside torchgen/ as in site-packages, so a build of that release's spec
  compiles against them);
- release_generator (any release): torchgen/ alone, from the release's smallest wheel (macOS
  arm64's: 80 MB for 2.11.0 against about 500 MB). torchgen is pure Python, the same in every
  wheel of a release (tests/test_releases.py checks it against the hashes known.py holds).

The releases live in $GRADSHARD_TEST_RELEASES, else ~/.cache/gradshard-tests/releases, one
directory per version (`2.14.1/torchgen/`; `generators/2.11.0/torchgen/`). A release is
unpacked beside its directory and renamed into place whole, so an interrupted download never
leaves a half package that a later run would take for one; the wheel is deleted once unpacked.
"""

from __future__ import annotations

import compileall
import os
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import NamedTuple

import pytest
from support.locks import machine_lock

RELEASES_VARIABLE = "GRADSHARD_TEST_RELEASES"
HEADERS = "torch/include"  # in the wheel, and under a release's directory
DOWNLOAD_TIMEOUT = 1200  # seconds; pip takes seconds where the wheels are near


def releases_directory() -> Path:
    """$GRADSHARD_TEST_RELEASES, else ~/.cache/gradshard-tests/releases."""
    configured = os.environ.get(RELEASES_VARIABLE)
    if configured:
        return Path(configured)
    return Path.home() / ".cache" / "gradshard-tests" / "releases"


# What each kind of release holds: the wheel pip downloads (its options), the parts unpacked
# (top-level paths in the wheel) and the files that say the unpacking is complete.
class ReleaseKind(NamedTuple):
    directory: str  # under releases_directory(): "" for the version's own directory
    pip_options: tuple[str, ...]
    parts: tuple[str, ...]
    complete: tuple[str, ...]


GENERATOR_FILES = ("torchgen/__init__.py", "torchgen/packaged/autograd/derivatives.yaml")
WITH_HEADERS = ReleaseKind("", (), ("torchgen/", HEADERS + "/"),
                           (*GENERATOR_FILES, f"{HEADERS}/ATen/ATen.h"))
# the platform and Python pip asks for: the smallest wheel, whatever this machine is (macOS
# 15 takes every macOS arm64 tag up to its own: 2.9.1's wheel is macosx_11_0, 2.12.0's 14_0)
# with the formulas' helper header, which the formula check of the release's spec reads
HELPERS_HEADER = f"{HEADERS}/torch/csrc/autograd/FunctionsManual.h"
GENERATOR_ONLY = ReleaseKind("generators", ("--only-binary=:all:", "--platform",
                                            "macosx_15_0_arm64", "--python-version", "3.11"),
                             ("torchgen/", HELPERS_HEADER), (*GENERATOR_FILES, HELPERS_HEADER))


def release_torchgen(version: str) -> Path:
    """The unpacked torchgen/ package of torch==version (downloaded and unpacked the first
    time), with torch/include/ beside it. Fails the test, with pip's output, when it cannot
    be downloaded."""
    return _release(version, WITH_HEADERS) / "torchgen"


def release_generator(version: str) -> Path:
    """The unpacked torchgen/ package of torch==version, from its smallest wheel, without
    headers but FunctionsManual.h (what a test that only generates or checks needs)."""
    return _release(version, GENERATOR_ONLY) / "torchgen"


def _release(version: str, kind: ReleaseKind) -> Path:
    target = releases_directory() / kind.directory / version
    if is_unpacked(target, kind):
        return target
    with machine_lock(f"release-{kind.directory}-{version}"):  # one download, whichever
        if not is_unpacked(target, kind):                     # worker asks first
            _fetch(version, target, kind)
    return target


def _fetch(version: str, target: Path, kind: ReleaseKind) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=f".{version}-") as scratch:
        wheel = _download(version, Path(scratch) / "wheel", kind)
        unpacked = Path(scratch) / "unpacked"
        _unpack(wheel, unpacked, kind)
        wheel.unlink()
        _move_into_place(unpacked, target, Path(scratch) / "stale", kind)


def is_unpacked(release: Path, kind: ReleaseKind) -> bool:
    return all((release / name).is_file() for name in kind.complete)


def _download(version: str, directory: Path, kind: ReleaseKind) -> Path:
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-input",
               *kind.pip_options, f"torch=={version}", "-d", str(directory)]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=DOWNLOAD_TIMEOUT)
    except subprocess.TimeoutExpired as expired:
        pytest.fail(f"{' '.join(command)} did not finish within {DOWNLOAD_TIMEOUT} s:\n"
                    f"{_text(expired.stdout)}{_text(expired.stderr)}", pytrace=False)
    wheels = sorted(directory.glob("torch-*.whl"))
    if done.returncode != 0 or not wheels:
        pytest.fail(f"cannot download torch {version}: {' '.join(command)} exited "
                    f"{done.returncode}:\n{done.stdout[-3000:]}{done.stderr[-3000:]}",
                    pytrace=False)
    return wheels[0]


def _text(output: str | bytes | None) -> str:
    if isinstance(output, bytes):
        return output.decode(errors="replace")[-3000:]
    return (output or "")[-3000:]


def _unpack(wheel: Path, directory: Path, kind: ReleaseKind) -> None:
    """Only the wheel's parts of this kind (zipfile keeps every member inside `directory`)."""
    with zipfile.ZipFile(wheel) as archive:
        members = [name for name in archive.namelist() if name.startswith(kind.parts)]
        archive.extractall(directory, members)
    # as an installed torch has them: each oracle run then loads its generator's bytecode
    compileall.compile_dir(directory, quiet=1)
    if not is_unpacked(directory, kind):
        pytest.fail(f"{wheel.name} holds no complete {' and '.join(kind.parts)}", pytrace=False)


def _move_into_place(unpacked: Path, target: Path, stale: Path, kind: ReleaseKind) -> None:
    """Rename the unpacked release to its place: an incomplete one there is moved aside (into
    the scratch directory, removed with it); one that another run put there first is kept."""
    if target.exists() and not is_unpacked(target, kind):
        target.rename(stale)
    try:
        unpacked.rename(target)
    except OSError:
        if not is_unpacked(target, kind):
            raise
