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


def test_every_rule_is_documented():
    rules = set()
    for path in (ROOT / "pipeline").rglob("*.py"):
        rules |= set(re.findall(r'"((?:yaml|schema|native|tags|deprecated|derivatives|views|cpp|'
                                r'match|foreach|render|templates|python)\.[a-z0-9-]+)"', path.read_text()))
    rules -= {"derivatives.yaml", "deprecated.yaml", "tags.yaml"}  # file names, not rules
    usage = (ROOT / "docs" / "usage.md").read_text()
    missing = sorted(r for r in rules if f"`{r}`" not in usage)
    assert not missing, f"rules missing from docs/usage.md: {missing}"
