"""What the suite removes of its temporary directories, and when (tests/conftest.py's hooks)."""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path

import pytest


@dataclass
class ModuleTemporaries:
    """The base temporary directory's children are removed at the end of the module that
    made them, except the session fixtures' and those of a module with a failed test (kept
    to be looked at, as pytest keeps a failed test's tmp_path)."""

    KEY = pytest.StashKey["ModuleTemporaries"]()

    root: Path | None = None
    session_owned: set[Path] = field(default_factory=set)
    failed_modules: set[str] = field(default_factory=set)
    kept: set[Path] = field(default_factory=set)

    def module_ended(self, module: str) -> None:
        if self.root is None or not self.root.is_dir():
            return
        made = {child for child in self.root.iterdir() if not child.is_symlink()} - self.kept
        for directory in made - self.session_owned:
            if module in self.failed_modules:
                self.kept.add(directory)
            else:
                shutil.rmtree(directory, ignore_errors=True)
