"""The programs the launcher and compiler tests run, installed by the suite when missing."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest
from support.locks import machine_lock

# Debian packages of the programs the launcher tests run.
APT_PACKAGES = {"ccache": "ccache", "distcc": "distcc", "distccd": "distcc", "clang++": "clang",
                "ld.lld": "lld", "redis-server": "redis-server", "node": "nodejs", "npm": "npm",
                "nvim": "neovim"}

APT_TIMEOUT = 900  # seconds per apt-get command: a mirror that does not answer fails the test


def install_programs(*programs: str) -> None:
    """Install the programs' Debian packages when they are missing (the suite installs what it
    needs itself: CI starts from a bare image). Fails, never skips, when that is impossible."""
    if all(shutil.which(p) for p in programs):
        return
    with machine_lock("apt-get"):  # dpkg takes one apt-get at a time: the other worker waits
        _install(programs)


def _install(programs: tuple[str, ...]) -> None:
    missing = sorted({APT_PACKAGES[p] for p in programs if shutil.which(p) is None})
    if not missing:
        return  # the other worker installed them meanwhile
    prefix = [] if os.geteuid() == 0 else ["sudo", "-n"]
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    for command in (["apt-get", "update", "-q"],
                    ["apt-get", "install", "-y", "-q", "--no-install-recommends", *missing]):
        try:
            done = subprocess.run(prefix + command, capture_output=True, text=True, env=env,
                                  timeout=APT_TIMEOUT)
        except subprocess.TimeoutExpired as expired:
            pytest.fail(f"cannot install {', '.join(missing)}: {' '.join(command)} did not "
                        f"finish within {APT_TIMEOUT} s:\n{expired.stdout!r}{expired.stderr!r}")
        if done.returncode != 0:
            pytest.fail(f"cannot install {', '.join(missing)}: {' '.join(command)} failed:\n"
                        f"{done.stdout[-2000:]}{done.stderr[-2000:]}")
    still = [p for p in programs if shutil.which(p) is None]
    assert not still, f"installed {missing} but {still} are still not on PATH"
