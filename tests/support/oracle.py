"""torchgen's answers, from tests/torchgen_oracle.py run in a fresh process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import xxhash
from support.specs import TESTS

ORACLE = TESTS / "torchgen_oracle.py"


def run_oracle(command: str, spec_dir: Path, *extra: str, pythonpath: Path | None = None) -> dict:
    """torchgen's answer for a spec directory, computed in a fresh process. With `pythonpath`,
    the torchgen staged there is used (see support.specs.stage_packaged_spec)."""
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


def torchgen_tree(spec_dir: Path, pythonpath: Path, scratch: Path) -> dict[str, str]:
    """What generate_code's autograd part writes under a checkout's root for a staged spec
    (tests/torchgen_oracle.py: tree), as content hashes by path: run once per distinct spec
    in a test session (the differential and incremental tests share edits)."""
    key = spec_digest(spec_dir)
    if key not in _TORCHGEN_FILES:
        out = scratch / "torchgen-out"
        run_oracle("tree", spec_dir, str(out), pythonpath=pythonpath)
        _TORCHGEN_FILES[key] = {str(p.relative_to(out)): xxhash.xxh3_128_hexdigest(p.read_bytes())
                                for p in out.rglob("*") if p.is_file()}
    return _TORCHGEN_FILES[key]


def torchgen_files(spec_dir: Path, pythonpath: Path, scratch: Path) -> dict[str, str]:
    """torchgen's files by name, as `gradshard build` writes them flat (the first stage of
    VariableType.cpp, an intermediate, left out)."""
    return {Path(path).name: digest
            for path, digest in torchgen_tree(spec_dir, pythonpath, scratch).items()
            if "/templates/" not in path}
