"""Shared fixtures: the installed torch's packaged spec and the torchgen oracle."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from gradshard.service.spec_location import locate_spec

TESTS = Path(__file__).parent
ORACLE = TESTS / "torchgen_oracle.py"
MINI_SPEC = TESTS / "fixtures" / "mini"


@pytest.fixture(scope="session")
def packaged_spec() -> Path:
    """The real 2.13 spec shipped inside the installed torchgen (the dev extra installs it)."""
    return locate_spec(None).root


def run_oracle(command: str, spec_dir: Path) -> dict:
    """torchgen's answer for a spec directory, computed in a fresh process."""
    done = subprocess.run([sys.executable, str(ORACLE), command, str(spec_dir)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise AssertionError(f"torchgen failed on {spec_dir}:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout)


@pytest.fixture(scope="session")
def torchgen_facts(packaged_spec: Path) -> dict:
    return run_oracle("facts", packaged_spec)
