"""Hostile or unlucky spec input (issue 15, items 12-15, 17, 18): no input may hang, crash or
exhaust memory, every refusal names the file (and line) and a hint, and a CRLF checkout
builds what its LF twin builds.

Every case runs the real console script in a subprocess, with a timeout where the old code
hung and an address-space limit where it ate memory, so that a regression fails fast.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from support.specs import DERIVATIVES, MINI_SPEC, TEMPLATES, installed_torchgen

GRADSHARD = Path(sys.executable).parent / "gradshard"
MEMORY_LIMIT = 2 << 30  # bytes of address space for runs that once took gigabytes


def limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def gradshard(*argv: str, timeout: float = 120, memory_limit: bool = False,
              max_spec_bytes: int | None = None) -> subprocess.CompletedProcess:
    """The console script's result; a hang fails the test at `timeout` seconds."""
    env = dict(os.environ)
    env.pop("GRADSHARD_MAX_SPEC_BYTES", None)
    if max_spec_bytes is not None:
        env["GRADSHARD_MAX_SPEC_BYTES"] = str(max_spec_bytes)
    return subprocess.run([str(GRADSHARD), *argv], capture_output=True, text=True,
                          timeout=timeout, env=env,
                          preexec_fn=limit_memory if memory_limit else None)


@pytest.fixture(scope="module")
def real_spec(tmp_path_factory) -> Path:
    """A copy of the installed torchgen's packaged spec (LF line ends)."""
    spec = tmp_path_factory.mktemp("real") / "spec"
    shutil.copytree(installed_torchgen() / "packaged", spec,
                    ignore=shutil.ignore_patterns("__pycache__"))
    return spec


def written(out: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in out.iterdir()}


@pytest.fixture(scope="module")
def real_outputs(real_spec, tmp_path_factory) -> dict[str, bytes]:
    """What `build --codegen-only` writes for the real spec (checked against torchgen by
    test_differential_render)."""
    scratch = tmp_path_factory.mktemp("real-out")
    done = gradshard("build", "--codegen-only", "--spec", str(real_spec), "--out",
                     str(scratch / "out"), "--cache", str(scratch / "cache"))
    assert_clean_failure(done, 0)
    return written(scratch / "out")


@pytest.fixture
def mini(tmp_path) -> Path:
    spec = tmp_path / "mini"
    shutil.copytree(MINI_SPEC, spec)
    return spec


def edit(path: Path, old: str, new: str) -> int:
    """Replace the first `old` by `new` in the file; the 1-based line where `new` starts."""
    text = path.read_text()
    assert old in text, f"edit anchor not in {path}: {old!r}"
    path.write_text(text.replace(old, new, 1))
    return text.count("\n", 0, text.index(old)) + 1


def assert_clean_failure(done: subprocess.CompletedProcess, code: int) -> None:
    assert done.returncode == code, done.stderr[-3000:]
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr


# --- item 12: only regular files are read, up to a size limit ------------------------------


@pytest.mark.parametrize("command", ["check", "build"])
def test_fifo_or_device_as_spec_file_is_refused(mini, tmp_path, command):
    fifo = mini / TEMPLATES / "Functions.cpp"
    fifo.unlink()
    os.mkfifo(fifo)
    (mini / DERIVATIVES).unlink()
    (mini / DERIVATIVES).symlink_to("/dev/zero")
    extra = ["--codegen-only", "--out", str(tmp_path / "out")] if command == "build" else []
    done = gradshard(command, "--spec", str(mini), *extra, timeout=60, memory_limit=True)
    assert_clean_failure(done, 2)
    assert f"{mini / DERIVATIVES} is not a regular file (a character device)" in done.stderr
    assert "hint:" in done.stderr
    (mini / DERIVATIVES).unlink()
    shutil.copy(MINI_SPEC / DERIVATIVES, mini / DERIVATIVES)
    done = gradshard(command, "--spec", str(mini), *extra, timeout=60, memory_limit=True)
    assert_clean_failure(done, 2)
    assert f"{fifo} is not a regular file (a FIFO)" in done.stderr


def test_affected_against_a_fifo_spec_is_refused(mini, tmp_path):
    other = tmp_path / "other"
    shutil.copytree(MINI_SPEC, other)
    (other / TEMPLATES / "Functions.h").unlink()
    os.mkfifo(other / TEMPLATES / "Functions.h")
    done = gradshard("affected", "--spec", str(mini), "--against", str(other), timeout=60)
    assert_clean_failure(done, 2)
    assert f"{other / TEMPLATES / 'Functions.h'} is not a regular file (a FIFO)" in done.stderr


def test_spec_file_over_the_size_limit_is_refused(mini):
    huge = mini / TEMPLATES / "Functions.h"
    os.truncate(huge, (64 << 20) + 1)  # sparse: nothing is written, and nothing may be read
    done = gradshard("check", "--spec", str(mini), timeout=60, memory_limit=True)
    assert_clean_failure(done, 2)
    assert f"{huge} is larger than the limit of 64 MiB" in done.stderr
    assert "GRADSHARD_MAX_SPEC_BYTES" in done.stderr
    shutil.copy(MINI_SPEC / TEMPLATES / "Functions.h", huge)
    largest = max((p for p in mini.rglob("*") if p.is_file()), key=lambda p: p.stat().st_size)
    size = largest.stat().st_size
    done = gradshard("check", "--spec", str(mini), max_spec_bytes=size - 1)
    assert_clean_failure(done, 2)
    assert f"{largest} is larger than the limit of {size - 1} bytes" in done.stderr
    assert gradshard("check", "--spec", str(mini), max_spec_bytes=size).returncode == 0


# --- item 13: alias bombs ------------------------------------------------------------------


def alias_bomb(levels: int) -> str:
    """A mapping of aliases nested `levels` deep: 9**levels values once expanded."""
    lines = ["  x0: &x0 {" + ", ".join(f"{k}: lol" for k in "abcdefghi") + "}"]
    for i in range(1, levels + 1):
        lines.append(f"  x{i}: &x{i} {{" + ", ".join(f"{k}: *x{i - 1}" for k in "abcdefghi") + "}")
    return "\n".join(lines) + "\n"


def test_alias_bomb_is_refused_within_bounded_memory(mini):
    formula = "  self: at::sum_to(grad, self.sym_sizes())\n"
    line = edit(mini / DERIVATIVES, formula, formula + alias_bomb(8))
    done = gradshard("check", "--spec", str(mini), timeout=60, memory_limit=True)
    assert_clean_failure(done, 1)
    [first] = [l for l in done.stderr.splitlines() if "[yaml.alias-expansion]" in l]
    # x4 (line + 5) is the first value over the limit: 376,435 nodes and characters expanded
    assert first.startswith(f"{mini / DERIVATIVES}:{line + 5}:7: error: ")
    assert "in entry: expand" in done.stderr and "hint:" in done.stderr
    assert len(done.stderr) < 5000  # no expanded value is quoted


def test_small_anchors_and_aliases_still_work(real_spec, real_outputs, tmp_path):
    """Formulas sharing one value through an anchor build what the spelled-out spec builds
    (the real spec, which the suite checks against torchgen)."""
    aliased = tmp_path / "aliased"
    shutil.copytree(real_spec, aliased)
    edit(aliased / DERIVATIVES, '''  grad: not_implemented("_cdist_backward")
  x1: not_implemented("_cdist_backward")
  x2: not_implemented("_cdist_backward")
  cdist: not_implemented("_cdist_backward")
''', '''  grad: &missing not_implemented("_cdist_backward")
  x1: *missing
  x2: *missing
  cdist: *missing
''')
    out = tmp_path / "out"
    done = gradshard("build", "--codegen-only", "--spec", str(aliased), "--out", str(out),
                     memory_limit=True)
    assert_clean_failure(done, 0)
    assert written(out) == real_outputs


# --- item 14: deep nesting -----------------------------------------------------------------


@pytest.mark.parametrize("shape", ["flow", "block"])
def test_deep_nesting_is_refused_before_the_loader(mini, shape):
    old = "  output_differentiability: [True, True]\n"
    if shape == "flow":
        new, too_deep = "  output_differentiability: " + "[" * 100_000 + "\n", 0
    else:
        deep = "".join("  " * (i + 2) + f"k{i}:\n" for i in range(3000))
        # levels: the list, the entry's mapping, then k0's mapping at depth 3: k98's is 101
        new, too_deep = "  output_differentiability:\n" + deep + "  " * 3002 + "v\n", 99
    line = edit(mini / DERIVATIVES, old, new)
    started = time.perf_counter()
    done = gradshard("check", "--spec", str(mini), timeout=60, memory_limit=True)
    assert time.perf_counter() - started < 30
    assert_clean_failure(done, 1)
    [first] = [l for l in done.stderr.splitlines() if "[yaml.nesting-too-deep]" in l]
    assert first.startswith(f"{mini / DERIVATIVES}:{line + too_deep}:")
    assert "deeper than 100 levels" in first
    assert "in entry: minmax" in done.stderr and "hint:" in done.stderr


# --- item 15: error reports in linear time, and capped ----------------------------------------


def test_many_errors_are_reported_in_linear_time_and_capped(mini):
    count = 30_000
    with open(mini / DERIVATIVES, "a") as out:
        out.writelines(f"\n- self: grad  # {i}\n" for i in range(count))
    started = time.perf_counter()
    done = gradshard("check", "--spec", str(mini), timeout=120)
    seconds = time.perf_counter() - started
    assert_clean_failure(done, 1)
    printed = [l for l in done.stderr.splitlines() if ": error: " in l]
    assert len(printed) == 50
    assert f"… and {count - 50} more errors" in done.stderr
    assert done.stderr.rstrip().endswith(f"gradshard: {count} errors in the spec")
    assert seconds < 30, f"{count} errors took {seconds:.1f} s"
    as_json = gradshard("check", "--spec", str(mini), "--json", timeout=120)
    assert len(json.loads(as_json.stdout)["problems"]) == count  # --json lists every problem


# --- item 17: control characters -------------------------------------------------------------


@pytest.mark.parametrize("place", ["comment between entries", "comment in an entry", "formula"])
def test_nul_byte_is_refused_at_its_line_and_column(mini, place):
    path = mini / DERIVATIVES
    old, new = {
        "comment between entries": ("\n- name: mul.Tensor", "\n# a\0comment\n- name: mul.Tensor"),
        "comment in an entry": ("  result: auto_linear\n", "  result: auto_linear  # a\0b\n"),
        "formula": ("self: at::sum_to(grad, self.sym_sizes())", "self: at::sum_to(grad,\0 self.sym_sizes())"),
    }[place]
    line = edit(path, old, new) + (1 if place == "comment between entries" else 0)
    with open(path) as f, pytest.raises(yaml.YAMLError):  # torchgen rejects the whole file
        from torchgen.yaml_utils import YamlLoader
        yaml.load(f, Loader=YamlLoader)
    done = gradshard("check", "--spec", str(mini), timeout=60)
    assert_clean_failure(done, 1)
    source_line = path.read_text().split("\n")[line - 1]
    column = source_line.index("\0") + 1
    [first] = [l for l in done.stderr.splitlines() if "[yaml.control-character]" in l]
    assert first.startswith(f"{path}:{line}:{column}: error: ")
    assert "U+0000" in first and "hint:" in done.stderr


# --- item 18: CRLF checkouts -----------------------------------------------------------------


def to_crlf(root: Path) -> None:
    for path in root.rglob("*"):
        if path.is_file() and path.suffix in (".yaml", ".cpp", ".h", ".in"):
            data = path.read_bytes()
            assert b"\r" not in data
            path.write_bytes(data.replace(b"\n", b"\r\n"))


def test_crlf_spec_builds_what_its_lf_twin_builds(real_spec, real_outputs, tmp_path):
    crlf = tmp_path / "crlf"
    shutil.copytree(real_spec, crlf)
    to_crlf(crlf)
    out = tmp_path / "out"
    done = gradshard("build", "--codegen-only", "--spec", str(crlf), "--out", str(out))
    assert_clean_failure(done, 0)
    assert not [name for name, data in written(out).items() if b"\r" in data]
    assert written(out) == real_outputs
    done = gradshard("affected", "--spec", str(crlf), "--against", str(real_spec), "--json")
    assert_clean_failure(done, 0)
    report = json.loads(done.stdout)
    changed = {key: value for key, value in report.items()
               if isinstance(value, list) and value}
    assert not changed, changed
