"""Other releases' torchgen (2.12.0, 2.14.1), for the tests that run another release's
generator (@pytest.mark.releases): each release's wheel is downloaded once with pip, only its
torchgen/ package and its headers (torch/include/, beside torchgen/ as in site-packages, so a
build of that release's spec compiles against them) unpacked, and kept between runs of the
suite.

The releases live in $GRADSHARD_TEST_RELEASES, else ~/.cache/gradshard-tests/releases, one
directory per version (`2.14.1/torchgen/`). A release is unpacked beside its directory and
renamed into place whole, so an interrupted download never leaves a half package that a later
run would take for one; the wheel (about 500 MB) is deleted once unpacked.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

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


def release_torchgen(version: str) -> Path:
    """The unpacked torchgen/ package of torch==version (downloaded and unpacked the first
    time), with torch/include/ beside it. Fails the test, with pip's output, when it cannot
    be downloaded."""
    target = releases_directory() / version
    if is_unpacked(target):
        return target / "torchgen"
    with machine_lock(f"release-{version}"):  # one download, whichever worker asks first
        if not is_unpacked(target):
            _fetch(version, target)
    return target / "torchgen"


def _fetch(version: str, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=f".{version}-") as scratch:
        wheel = _download(version, Path(scratch) / "wheel")
        unpacked = Path(scratch) / "unpacked"
        _unpack_torchgen(wheel, unpacked)
        wheel.unlink()
        _move_into_place(unpacked, target, Path(scratch) / "stale")


def is_unpacked(release: Path) -> bool:
    torchgen = release / "torchgen"
    return ((torchgen / "__init__.py").is_file()
            and (torchgen / "packaged" / "autograd" / "derivatives.yaml").is_file()
            and (release / HEADERS / "ATen" / "ATen.h").is_file())


def _download(version: str, directory: Path) -> Path:
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-input",
               f"torch=={version}", "-d", str(directory)]
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


def _unpack_torchgen(wheel: Path, directory: Path) -> None:
    """Only the wheel's torchgen/ and torch/include/ (zipfile keeps every member inside
    `directory`)."""
    with zipfile.ZipFile(wheel) as archive:
        members = [name for name in archive.namelist()
                   if name.startswith(("torchgen/", HEADERS + "/"))]
        archive.extractall(directory, members)
    if not is_unpacked(directory):
        pytest.fail(f"{wheel.name} holds no complete torchgen/ package and headers",
                    pytrace=False)


def _move_into_place(unpacked: Path, target: Path, stale: Path) -> None:
    """Rename the unpacked release to its place: an incomplete one there is moved aside (into
    the scratch directory, removed with it); one that another run put there first is kept."""
    if target.exists() and not is_unpacked(target):
        target.rename(stale)
    try:
        unpacked.rename(target)
    except OSError:
        if not is_unpacked(target):
            raise
