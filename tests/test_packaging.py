"""The wheel ships every module and template of the four rooms, under the gradshard
namespace (setup.py finds the sub-packages and maps them there; pyproject.toml holds the
rest), with the console script and the pytest plugin's entry point."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
ROOMS = ("pipeline", "cache", "service", "templates")


def source_files() -> set[str]:
    """What the wheel must hold: gradshard/<room>/... for every module and template."""
    return {f"gradshard/{path.relative_to(ROOT).as_posix()}"
            for room in ROOMS for path in (ROOT / room).rglob("*")
            if path.suffix in (".py", ".j2") and "__pycache__" not in path.parts}


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> zipfile.ZipFile:
    """The wheel built from a copy of the repository (a build writes build/ and egg-info
    beside the sources), with the setuptools this environment has (no download)."""
    work = tmp_path_factory.mktemp("wheel")
    source = work / "source"
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(
        ".git", ".venv", "__pycache__", "*.egg-info", "build", "gradshard-out", ".pytest_cache"))
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                    "-q", "-w", str(work / "dist"), str(source)], check=True,
                   capture_output=True)
    (built,) = (work / "dist").glob("gradshard-*.whl")
    return zipfile.ZipFile(built)


def test_every_module_and_template_is_in_the_wheel(wheel):
    names = set(wheel.namelist())
    expected = source_files()
    assert "gradshard/pipeline/render/python/files.py" in expected  # sub-packages are seen
    assert "gradshard/templates/live/patch.j2" in expected
    missing = sorted(expected - names)
    assert not missing, f"not in the wheel: {missing}"


def test_the_wheel_holds_nothing_but_the_rooms(wheel):
    """No test, benchmark or setup.py is installed as a package."""
    packaged = {n for n in wheel.namelist() if not n.startswith("gradshard-")}
    stray = sorted(n for n in packaged if not n.startswith(tuple(f"gradshard/{r}/" for r in ROOMS)))
    assert not stray, f"outside the rooms: {stray}"


def test_the_entry_points_name_modules_that_ship(wheel):
    (entry_points,) = [n for n in wheel.namelist() if n.endswith("entry_points.txt")]
    text = wheel.read(entry_points).decode()
    assert "gradshard = gradshard.service.entry:run" in text
    assert "gradshard = gradshard.service.live.pytest_plugin" in text
    names = set(wheel.namelist())
    assert "gradshard/service/entry.py" in names
    assert "gradshard/service/live/pytest_plugin.py" in names
    assert "gradshard/service/patching.py" in names  # the Python API's first home, a shim
