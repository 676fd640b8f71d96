"""Shared fixtures: the installed torch's packaged spec and the torchgen oracle."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import xxhash

from gradshard.service.spec_location import locate_spec

TESTS = Path(__file__).parent
ORACLE = TESTS / "torchgen_oracle.py"
MINI_SPEC = TESTS / "fixtures" / "mini"

# Spec files relative to a packaged spec directory.
NATIVE = "ATen/native/native_functions.yaml"
TAGS = "ATen/native/tags.yaml"
DERIVATIVES = "autograd/derivatives.yaml"
DEPRECATED = "autograd/deprecated.yaml"
TEMPLATES = "autograd/templates"


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch) -> Path:
    """Every test gets its own gradshard cache; the user's is never touched."""
    cache = tmp_path / "gradshard-cache"
    monkeypatch.setenv("GRADSHARD_CACHE", str(cache))
    return cache


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


@pytest.fixture(scope="session")
def packaged_spec() -> Path:
    """The real 2.13 spec shipped inside the installed torchgen (the dev extra installs it)."""
    return locate_spec(None).root


def run_oracle(command: str, spec_dir: Path, *extra: str, pythonpath: Path | None = None) -> dict:
    """torchgen's answer for a spec directory, computed in a fresh process. With `pythonpath`,
    the torchgen staged there is used (see stage_packaged_spec)."""
    env = dict(os.environ)
    if pythonpath is not None:
        env["PYTHONPATH"] = str(pythonpath)
    done = subprocess.run([sys.executable, str(ORACLE), command, str(spec_dir), *extra],
                          capture_output=True, text=True, env=env)
    if done.returncode != 0:
        raise AssertionError(f"torchgen failed on {spec_dir}:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout) if command == "facts" else {}


_TORCHGEN_FILES: dict[str, dict[str, str]] = {}


def file_digests(files: dict[str, str]) -> dict[str, str]:
    return {name: xxhash.xxh3_128_hexdigest(text.encode()) for name, text in files.items()}


def spec_digest(spec_dir: Path) -> str:
    """One hash over every file of a spec directory (names and contents)."""
    digest = xxhash.xxh3_128()
    for path in sorted(p for p in spec_dir.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
        digest.update(str(path.relative_to(spec_dir)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def torchgen_files(spec_dir: Path, pythonpath: Path, scratch: Path) -> dict[str, str]:
    """torchgen's output files for a staged spec, as content hashes: run once per distinct
    spec in a test session (the differential and incremental tests share edits)."""
    key = spec_digest(spec_dir)
    if key not in _TORCHGEN_FILES:
        out = scratch / "torchgen-out"
        run_oracle("render", spec_dir, str(out), pythonpath=pythonpath)
        _TORCHGEN_FILES[key] = {p.name: xxhash.xxh3_128_hexdigest(p.read_bytes())
                                for p in out.iterdir()}
    return _TORCHGEN_FILES[key]


def installed_torchgen() -> Path:
    return locate_spec(None).root.parent


def stage_packaged_spec(root: Path) -> tuple[Path, Path]:
    """A copy of the packaged spec inside a torchgen package of symlinks, under root.

    torchgen prints each file's template path relative to its own package, so to print
    `packaged/autograd/templates/...` for an edited spec it must run from beside it, as it
    does inside PyTorch. Returns (the PYTHONPATH entry, the spec directory)."""
    torchgen = root / "torchgen"
    torchgen.mkdir(parents=True)
    for child in installed_torchgen().iterdir():
        if child.name not in ("packaged", "__pycache__"):
            (torchgen / child.name).symlink_to(child)
    shutil.copytree(installed_torchgen() / "packaged", torchgen / "packaged",
                    ignore=shutil.ignore_patterns("__pycache__"))
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


@pytest.fixture(scope="session")
def torchgen_facts(packaged_spec: Path) -> dict:
    return run_oracle("facts", packaged_spec)


# Debian packages of the programs the launcher tests run.
APT_PACKAGES = {"ccache": "ccache", "distcc": "distcc", "distccd": "distcc"}


def install_programs(*programs: str) -> None:
    """Install the programs' Debian packages when they are missing (the suite installs what it
    needs itself: CI starts from a bare image). Fails, never skips, when that is impossible."""
    missing = sorted({APT_PACKAGES[p] for p in programs if shutil.which(p) is None})
    if not missing:
        return
    prefix = [] if os.geteuid() == 0 else ["sudo", "-n"]
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    for command in (["apt-get", "update", "-q"],
                    ["apt-get", "install", "-y", "-q", "--no-install-recommends", *missing]):
        done = subprocess.run(prefix + command, capture_output=True, text=True, env=env)
        if done.returncode != 0:
            pytest.fail(f"cannot install {', '.join(missing)}: {' '.join(command)} failed:\n"
                        f"{done.stdout[-2000:]}{done.stderr[-2000:]}")
    still = [p for p in programs if shutil.which(p) is None]
    assert not still, f"installed {missing} but {still} are still not on PATH"
