"""The real lintrunner (PyPI: lintrunner) runs docs/usage.md's [[linter]] block in a git
repository holding a spec laid out as a PyTorch checkout: `lintrunner init --dry-run` prints
the pip command the block's init_command would run, and `lintrunner` reports the spec's
problem at its file and line, through `gradshard check --format lintrunner @{{PATHSFILE}}`."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from support.specs import DERIVATIVES, MINI_SPEC

USAGE = Path(__file__).parent.parent / "docs" / "usage.md"
# where a checkout keeps each file of a packaged spec
CHECKOUT_PLACES = {"ATen/native/native_functions.yaml": "aten/src/ATen/native",
                   "ATen/native/tags.yaml": "aten/src/ATen/native",
                   "autograd/derivatives.yaml": "tools/autograd",
                   "autograd/deprecated.yaml": "tools/autograd"}
GOOD = "  self: mul_tensor_backward(grad, other, self.scalar_type())"


def lintrunner() -> str:
    found = shutil.which("lintrunner") or str(Path(sys.executable).parent / "lintrunner")
    if not Path(found).exists():
        pytest.fail("lintrunner is not installed: pip install -e '.[dev]'")
    return found


def linter_block() -> str:
    """docs/usage.md's [[linter]] block, its python3 this interpreter."""
    found = re.search(r"```toml\n(\[\[linter\]\]\ncode = 'GRADSHARD'.*?)```", USAGE.read_text(),
                      re.S)
    assert found, "docs/usage.md has no GRADSHARD [[linter]] block"
    return found.group(1).replace("'python3'", f"'{sys.executable}'")


@pytest.fixture
def repository(tmp_path) -> tuple[Path, int]:
    """A git repository: the mini spec as a checkout lays it out, mul's formula keyed by a
    name mul has not, the block as its .lintrunner.toml, every file added. Its bad line."""
    root = tmp_path / "pytorch"
    for name, place in CHECKOUT_PLACES.items():
        (root / place).mkdir(parents=True, exist_ok=True)
        shutil.copy(MINI_SPEC / name, root / place)
    shutil.copytree(MINI_SPEC / "autograd" / "templates", root / "tools/autograd/templates")
    derivatives = root / "tools/autograd/derivatives.yaml"
    text = (MINI_SPEC / DERIVATIVES).read_text()
    assert GOOD in text
    derivatives.write_text(text.replace(GOOD, GOOD.replace("self:", "nosuch:"), 1))
    (root / ".lintrunner.toml").write_text(linter_block())
    for command in (["git", "init", "-q"], ["git", "add", "-A"]):
        subprocess.run(command, cwd=root, check=True, capture_output=True)
    return root, text.splitlines().index(GOOD) + 1


def run(root: Path, *words: str) -> subprocess.CompletedProcess:
    return subprocess.run([lintrunner(), "--data-path", str(root.parent / "lintrunner-data"),
                           *words], cwd=root, capture_output=True, text=True, timeout=600)


def test_lintrunner_reports_the_spec_problem_at_its_line(repository):
    root, line = repository
    init = run(root, "init", "--dry-run")
    assert init.returncode == 0, init.stderr
    assert "-m pip install --quiet gradshard[torch]" in init.stdout + init.stderr
    done = run(root, "--all-files", "--output", "json")
    messages = [json.loads(x) for x in done.stdout.splitlines() if x.startswith("{")]
    assert len(messages) == 1, done.stdout + done.stderr
    (message,) = messages
    assert message["code"] == "GRADSHARD" and message["name"] == "derivatives.unknown-formula-key"
    assert message["severity"] == "error" and message["line"] == line
    assert message["path"] == "tools/autograd/derivatives.yaml"  # relative to the root
    assert "nosuch" in message["description"]
    assert done.returncode != 0  # lintrunner's own verdict: an error was found


def test_a_clean_spec_gives_lintrunner_nothing_to_report(repository):
    root, _ = repository
    derivatives = root / "tools/autograd/derivatives.yaml"
    derivatives.write_text((MINI_SPEC / DERIVATIVES).read_text())
    assert run(root, "init", "--dry-run").returncode == 0
    done = run(root, "--all-files", "--output", "json")
    assert done.returncode == 0, done.stdout + done.stderr
    assert not [x for x in done.stdout.splitlines() if x.startswith("{")]
