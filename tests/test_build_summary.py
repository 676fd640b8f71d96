"""What `gradshard build` prints: a cold build's summary counts its thousands of tasks in a
few lines; an edit's names the tasks that re-ran."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

from support.specs import DERIVATIVES

SINH = "  self: grad * self.cosh().conj()\n"


def build(spec: Path, out: Path, cache: Path) -> list[str]:
    done = subprocess.run([sys.executable, "-m", "gradshard.service.cli", "build",
                           "--codegen-only", "--spec", str(spec), "--out", str(out),
                           "--cache", str(cache)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def test_a_cold_build_counts_its_tasks_and_an_edit_names_what_reran(tmp_path, packaged_spec):
    spec, out, cache = tmp_path / "spec", tmp_path / "out", tmp_path / "cache"
    shutil.copytree(packaged_spec, spec, ignore=shutil.ignore_patterns("__pycache__", "*.py"))
    cold = build(spec, out, cache)
    assert len(cold) <= 6, "\n".join(cold)
    ran = int(re.search(r"tasks: ([\d,]+) run", cold[1]).group(1).replace(",", ""))
    assert ran > 20_000
    assert f"  why:   {ran:,} new" in cold
    assert not any(re.search(r"\b(parse|render|bindings)\.\w+ ", line) for line in cold), cold

    derivatives = spec / DERIVATIVES
    text = derivatives.read_text()
    assert SINH in text
    derivatives.write_text(text.replace(SINH, SINH.rstrip("\n") + " * 2\n", 1))
    edited = build(spec, out, cache)
    why = next(k for k, line in enumerate(edited) if line.startswith("  why:"))
    assert re.fullmatch(r"  why:   \d+ changed", edited[why]), edited
    assert "parse.derivative sinh (changed: entry)" in edited[why + 1]
