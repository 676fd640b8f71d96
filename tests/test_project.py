"""Promises the repository makes about itself."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).parent.parent


def readme_commands() -> list[str]:
    return re.findall(r"^    (python3 -m venv .*)$", (ROOT / "README.md").read_text(), re.MULTILINE)


def test_readme_has_the_two_commands():
    main_job, tests = readme_commands()
    assert "gradshard" in main_job and "[torch]" in main_job
    assert "pytest" in tests and "[dev]" in tests


def test_ci_runs_exactly_the_readme_test_command():
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    assert readme_commands()[1] in ci
