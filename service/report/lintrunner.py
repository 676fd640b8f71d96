"""Findings as lintrunner's LintMessages, one JSON object per line (the protocol of
lintrunner's adapters: PyTorch lints through lintrunner, and its .lintrunner.toml runs each
linter as a command printing these lines). docs/usage.md has the [[linter]] block.

A path inside the repository is relative to its root, as lintrunner names the files it
passes; the code is GRADSHARD and the name the finding's rule.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Sequence

from gradshard.service.report.findings import WARNING, Finding
from gradshard.service.report.sarif import root_relative

__all__ = ["LINT_CODE", "lint_lines"]

LINT_CODE = "GRADSHARD"


def lint_lines(findings: Sequence[Finding], root: Path | None) -> list[str]:
    return [json.dumps(_message(f, root)) for f in findings]


def _message(finding: Finding, root: Path | None) -> dict:
    place = finding.place
    related = "".join(f"\n{what}: {_where(p.path, p.line, root)}" for p, what in finding.related)
    return {"path": _path(place.path, root) if place else None,
            "line": place.line if place else None,
            "char": place.column if place else None,
            "code": LINT_CODE,
            "severity": "warning" if finding.level == WARNING else "error",
            "name": finding.rule,
            "original": None, "replacement": None,
            "description": finding.message + (f"\nhint: {finding.hint}" if finding.hint else "")
            + related}


def _path(path: str, root: Path | None) -> str:
    return root_relative(Path(path), root) or path


def _where(path: str, line: int | None, root: Path | None) -> str:
    return _path(path, root) + (f":{line}" if line else "")
