"""The code version is what tasks run (cache/version.py): whole packages, walked, with nothing
listed by hand. A module added to a stage package changes it; what no task runs (process
errors and their hints, `try`'s patch code and template, reports, the CLI) lives outside
those packages, so editing it leaves every cache warm; and the hashed packages' code reaches
nothing outside them but the store it writes to."""

from __future__ import annotations

import importlib.resources
import json
import shutil
import subprocess
import sys
from pathlib import Path

from support.specs import MINI_SPEC
from test_layering import PACKAGE, import_graph, short

from gradshard.cache import version

ROOT = Path(__file__).resolve().parent.parent
# What hashed code may import outside the hashed packages: the store the engine keeps values
# in (how they are kept, never what they are) and the code version itself.
HASHED_MAY_REACH = {"gradshard.cache.store.database", "gradshard.cache.version"}


def is_hashed(module: str) -> bool:
    return any(module == p or module.startswith(p + ".") for p in version.HASHED_PACKAGES)


def in_copy(root: Path, *argv: str) -> subprocess.CompletedProcess:
    """A fresh interpreter that imports gradshard from the copy at `root` (its own shim,
    root/shim/gradshard/<room>, ahead of the installed package)."""
    return subprocess.run([sys.executable, *argv], env={"PYTHONPATH": str(root / "shim"),
                                                        "PATH": "/usr/bin:/bin"},
                          capture_output=True, text=True, check=True)


def version_of(root: Path) -> str:
    return in_copy(root, "-c", "from gradshard.cache.version import code_version; "
                               "print(code_version())").stdout.strip()


def copy_rooms(tmp_path: Path) -> Path:
    """A copy of the repository's rooms, importable through its own shim."""
    root = tmp_path / "repo"
    shim = root / "shim" / PACKAGE
    shim.mkdir(parents=True)
    for room in ("pipeline", "cache", "service", "templates"):
        shutil.copytree(ROOT / room, root / room,
                        ignore=shutil.ignore_patterns("__pycache__"))
        (shim / room).symlink_to(root / room)
    return root


def build_status(root: Path, spec: Path, tmp_path: Path) -> str:
    done = in_copy(root, "-m", "gradshard.service.entry", "build", "--codegen-only", "--json",
                   "--spec", str(spec), "--out", str(tmp_path / "out"),
                   "--cache", str(tmp_path / "cache"))
    return json.loads(done.stdout)["status"]


def test_every_hashed_package_is_walked_whole():
    names = {name for name, _ in version.hashed_files()}
    assert "gradshard.pipeline/parse/native.py" in names  # a sub-package's module
    assert "gradshard.pipeline/render/python/files.py" in names  # two levels down
    assert "gradshard.templates.codegen/variable_type.j2" in names
    assert "gradshard.cache.graph/tasks.py" in names
    assert "gradshard.cache.engine/fork.py" in names
    on_disk = {f"{package}/{path.relative_to(importlib.resources.files(package)).as_posix()}"
               for package in version.HASHED_PACKAGES
               for path in Path(str(importlib.resources.files(package))).rglob("*")
               if path.suffix in (".py", ".j2") and "__pycache__" not in path.parts}
    assert names == on_disk


def test_what_no_task_runs_is_not_hashed():
    names = {name.split("/")[0] for name, _ in version.hashed_files()}
    for outside in ("gradshard.cache.errors", "gradshard.service.live.patch_sources",
                    "gradshard.templates.live", "gradshard.service.cli",
                    "gradshard.cache.store.database", "gradshard.cache.maintenance"):
        assert not is_hashed(outside), outside
    assert not any(n.startswith("gradshard.templates.live") for n in names)


def test_hashed_code_reaches_nothing_outside_the_hashed_packages():
    """What tasks run is hashed: the hashed packages' modules import (at any depth) only
    hashed modules and the store. A stage importing a module outside them would make the
    code version miss a change of what that stage computes."""
    graph = import_graph()
    escapes = [f"{short(source)} imports {short(target)}"
               for source, targets in graph.items() if is_hashed(source)
               for target in targets
               if not is_hashed(target) and target not in HASHED_MAY_REACH
               and target not in version.HASHED_PACKAGES]
    assert not escapes, "hashed code imports unhashed code:\n" + "\n".join(escapes)


def test_every_module_that_defines_a_task_or_group_is_hashed():
    """Every task_of(...) and group_of(...) definition lives in a hashed package."""
    defining = [path.relative_to(ROOT).as_posix() for path in (ROOT / "cache").rglob("*.py")
                if "= task_of(" in path.read_text() or "= group_of(" in path.read_text()]
    assert len(defining) > 3, "no module defines a task?"
    unhashed = [p for p in defining
                if not is_hashed(PACKAGE + "." + p.removesuffix(".py").replace("/", "."))]
    assert not unhashed, f"tasks defined outside the code version: {unhashed}"


def test_a_new_module_in_a_stage_package_changes_it(tmp_path):
    root = copy_rooms(tmp_path)
    before = version_of(root)
    (root / "pipeline" / "match" / "new_rule.py").write_text("RULE = 1\n")
    assert version_of(root) != before


def test_a_spec_rules_hint_changes_it(tmp_path):
    """A spec rule's hint is a task output (a cached run reports it): editing it must give
    new keys."""
    root = copy_rooms(tmp_path)
    before = version_of(root)
    native = root / "pipeline" / "parse" / "native.py"
    text = native.read_text()
    assert '"native.' in text
    native.write_text(text.replace("hint", "hint ", 1))
    assert version_of(root) != before


def test_a_process_errors_hint_and_the_patch_template_leave_it(tmp_path):
    root = copy_rooms(tmp_path)
    before = version_of(root)
    errors = root / "cache" / "errors.py"
    text = errors.read_text()
    assert "check the disk" in text
    errors.write_text(text.replace("check the disk", "check the disk and its cable"))
    patch = root / "templates" / "live" / "patch.j2"
    patch.write_text(patch.read_text() + "{#- edited -#}\n")
    sources = root / "service" / "live" / "patch_sources.py"
    sources.write_text(sources.read_text() + "\n# edited\n")
    assert version_of(root) == before


def test_a_build_after_editing_what_no_task_runs_reruns_nothing(tmp_path):
    """The mini spec built, then the patch template and a process error's hint edited: the
    next build is up to date (nothing reruns); a stage edit makes it build again."""
    root = copy_rooms(tmp_path)
    assert build_status(root, MINI_SPEC, tmp_path) == "built"
    patch = root / "templates" / "live" / "patch.j2"
    patch.write_text(patch.read_text() + "{#- edited -#}\n")
    errors = root / "cache" / "errors.py"
    errors.write_text(errors.read_text().replace("check the disk", "check the disk again"))
    assert build_status(root, MINI_SPEC, tmp_path) == "up to date"
    (root / "pipeline" / "render" / "new_generator.py").write_text("GENERATOR = 1\n")
    assert build_status(root, MINI_SPEC, tmp_path) == "built"
