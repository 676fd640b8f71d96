"""torchgen's answers, from tests/torchgen_oracle.py run in a fresh process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import xxhash
from support.specs import TESTS

ORACLE = TESTS / "torchgen_oracle.py"


def run_oracle(command: str, spec_dir: Path, *extra: str, pythonpath: Path | None = None) -> dict:
    """torchgen's answer for a spec directory, computed in a fresh process. With `pythonpath`,
    the torchgen staged there is used (see support.specs.stage_packaged_spec)."""
    return OracleRun(command, spec_dir, extra, pythonpath).answer()


class OracleRun:
    """tests/torchgen_oracle.py started in a process of its own at once: the test does its own
    work meanwhile (gradshard's build, on the other core), then `answer` waits for it. Its
    output goes to files, so that it never waits on a pipe nobody reads."""

    def __init__(self, command: str, spec_dir: Path, extra: tuple[str, ...] = (),
                 pythonpath: Path | None = None) -> None:
        self.command, self.spec_dir = command, spec_dir
        env = dict(os.environ)
        if pythonpath is not None:
            env["PYTHONPATH"] = str(pythonpath)
        self.output, self.errors = tempfile.TemporaryFile(), tempfile.TemporaryFile()
        self.process = subprocess.Popen(
            [sys.executable, str(ORACLE), command, str(spec_dir), *extra],
            stdout=self.output, stderr=self.errors, env=env)

    def answer(self) -> dict:
        code = self.process.wait()
        self.output.seek(0)
        self.errors.seek(0)
        output, errors = self.output.read().decode(), self.errors.read().decode()
        self.output.close()
        self.errors.close()
        if code != 0:
            raise AssertionError(f"torchgen failed on {self.spec_dir}:\n{errors[-3000:]}")
        return json.loads(output) if self.command == "facts" else {}


_TORCHGEN_FILES: dict[tuple[str, str], dict[str, str]] = {}


def file_digests(files: dict[str, str]) -> dict[str, str]:
    return {name: xxhash.xxh3_128_hexdigest(text.encode()) for name, text in files.items()}


def spec_digest(spec_dir: Path) -> str:
    """One hash over every file of a spec directory (names and contents)."""
    digest = xxhash.xxh3_128()
    for path in sorted(p for p in spec_dir.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
        digest.update(str(path.relative_to(spec_dir)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def generator_origin(pythonpath: Path) -> str:
    """Which torchgen a staged spec's PYTHONPATH runs: the package its symlinks lead to (two
    releases may be run on one spec, and their answers must not be taken for each other)."""
    return str((pythonpath / "torchgen" / "__init__.py").resolve())


def torchgen_tree(spec_dir: Path, pythonpath: Path, scratch: Path) -> dict[str, str]:
    """What generate_code's autograd part writes under a checkout's root for a staged spec
    (tests/torchgen_oracle.py: tree), as content hashes by path: run once per distinct spec
    in a test session (the differential and incremental tests share edits)."""
    return TreeOfTorchgen(spec_dir, pythonpath, scratch).files()


class TreeOfTorchgen:
    """torchgen_tree started now and answered by `files` (or `flat_files`), so that the test
    can build gradshard's side while torchgen runs."""

    def __init__(self, spec_dir: Path, pythonpath: Path, scratch: Path) -> None:
        self.key = (spec_digest(spec_dir), generator_origin(pythonpath))
        self.out = scratch / "torchgen-out"
        self.run = (None if self.key in _TORCHGEN_FILES else
                    OracleRun("tree", spec_dir, (str(self.out),), pythonpath))

    def files(self) -> dict[str, str]:
        if self.run is not None:
            self.run.answer()
            _TORCHGEN_FILES[self.key] = {
                str(p.relative_to(self.out)): xxhash.xxh3_128_hexdigest(p.read_bytes())
                for p in self.out.rglob("*") if p.is_file()}
            self.run = None
        return _TORCHGEN_FILES[self.key]

    def flat_files(self) -> dict[str, str]:
        """Its files by name, as `gradshard build` writes them flat (the first stage of
        VariableType.cpp, an intermediate, left out)."""
        return {Path(path).name: digest for path, digest in self.files().items()
                if "/templates/" not in path}
