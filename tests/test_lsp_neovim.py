"""`gradshard lsp` in a real editor: Neovim headless (installed by the suite when missing),
its built-in LSP client driven by tests/data/neovim_lsp.lua: a typo in sin's formula shows as
Neovim's diagnostic at the typo's columns, hover on the formula shows SinBackward0 and its
C++, the fix clears it, and the server ends with Neovim."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest
from support.lsp import gradshard_command
from support.programs import install_programs
from support.specs import DERIVATIVES, stage_packaged_spec

pytestmark = pytest.mark.slow

SCRIPT = Path(__file__).parent / "data" / "neovim_lsp.lua"


def test_neovim_shows_the_diagnostics_and_the_hover(tmp_path):
    install_programs("nvim")
    _, spec = stage_packaged_spec(tmp_path / "stage")
    cache, out = tmp_path / "nvim-cache", tmp_path / "report.json"
    environment = dict(os.environ, GRADSHARD_NVIM_FILE=str(spec / DERIVATIVES),
                       GRADSHARD_NVIM_OUT=str(out),
                       GRADSHARD_NVIM_COMMAND=json.dumps(gradshard_command(
                           "lsp", "--cache", str(cache), "--no-daemon")),
                       XDG_STATE_HOME=str(tmp_path / "state"),
                       XDG_DATA_HOME=str(tmp_path / "data"))
    done = subprocess.run(["nvim", "--headless", "--clean", "-u", "NONE", "-c",
                           f"luafile {SCRIPT}"], env=environment, capture_output=True,
                          text=True, timeout=600, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    report = json.loads(out.read_text())
    assert "error" not in report, report["error"]
    assert report["initialized"] and report["diagnosed"] and report["cleared"], report
    typo = "  self: grad * sef.cos().conj()"
    [found] = report["diagnostics"]
    assert (found["lnum"], found["col"], found["end_col"]) == (
        report["row"], typo.index("sef"), typo.index("sef") + 3)
    assert found["source"] == "gradshard" and "'sef'" in found["message"]
    assert found["severity"] == 1  # vim.diagnostic.severity.ERROR
    assert "SinBackward0" in report["hover"]
    assert "SinBackward0_apply_functional" in report["hover"]
    # the server ended with the editor, leaving no process behind
    for _ in range(100):
        left = processes_naming(str(cache))
        if not left:
            break
        time.sleep(0.1)
    assert not left, left


def processes_naming(word: str) -> list[str]:
    """The command lines of the processes running with `word` among their arguments (read
    from /proc: a bare image has no pgrep)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            words = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:  # not a process, or gone meanwhile
            continue
        if word.encode() in words:
            found.append(b" ".join(words).decode(errors="replace"))
    return found
