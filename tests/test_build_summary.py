"""What `gradshard build` prints: a cold build's summary counts its thousands of tasks in a
few lines; an edit's names the tasks that re-ran."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

from support.specs import DERIVATIVES, MINI_SPEC

SINH = "  self: grad * self.cosh().conj()\n"
MUL = "self: mul_tensor_backward(grad, other, self.scalar_type())"


def build(spec: Path, out: Path, cache: Path) -> list[str]:
    done = subprocess.run([sys.executable, "-m", "gradshard.service.cli", "build",
                           "--codegen-only", "--spec", str(spec), "--out", str(out),
                           "--cache", str(cache)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


# The summary's count, the same words for every build: how many tasks the build looked up in
# the cache, how many of those ran and how many were reused (a stage's runs in brackets).
TASKS = re.compile(r"  tasks: ([\d,]+) looked up: ([\d,]+) run(?: \([^)]*\))?, ([\d,]+) reused"
                   r"(; .*)?")


def tasks_of(lines: list[str]) -> tuple[int, int, int]:
    """(looked up, run, reused) from the one tasks line, which must add up."""
    [found] = [m for m in map(TASKS.fullmatch, lines) if m]
    looked, run, reused = (int(found.group(k).replace(",", "")) for k in (1, 2, 3))
    assert run + reused == looked, found.group(0)
    return looked, run, reused


def test_every_build_counts_its_tasks_in_the_same_words(tmp_path):
    """A cold build, an edit, a no-op and a build after `affected` (which ran and cached
    what the edit changed) each say how many tasks were looked up, run and reused, and they
    add up (issue 47: "38,370 tasks", "45 run, 9,711 reused", "0 run, 5 reused" said
    nothing of what they count); the stage times say they overlap."""
    spec, out, cache = tmp_path / "spec", tmp_path / "out", tmp_path / "cache"
    shutil.copytree(MINI_SPEC, spec)
    cold = build(spec, out, cache)
    assert tasks_of(cold)[1:] == (tasks_of(cold)[0], 0)
    derivatives = spec / DERIVATIVES
    text = derivatives.read_text()
    derivatives.write_text(text.replace(MUL, MUL + " * 2", 1))
    edited = build(spec, out, cache)
    looked, run, reused = tasks_of(edited)
    assert 0 < run < looked < tasks_of(cold)[0] and reused > 0
    assert any("a reused group's tasks are not looked up" in line for line in edited)
    assert tasks_of(build(spec, out, cache)) == (0, 0, 0)  # up to date
    derivatives.write_text(text)
    subprocess.run([sys.executable, "-m", "gradshard.service.cli", "affected", "--spec",
                    str(spec), "--cache", str(cache)], capture_output=True, check=True)
    looked, run, reused = tasks_of(after := build(spec, out, cache))
    assert run == 0 and 0 < reused == looked < 10
    time = next(line for line in after if line.startswith("  time:"))
    assert time.endswith("(summed over parallel processes: stages overlap)")


def test_a_cold_build_counts_its_tasks_and_an_edit_names_what_reran(tmp_path, packaged_spec):
    spec, out, cache = tmp_path / "spec", tmp_path / "out", tmp_path / "cache"
    shutil.copytree(packaged_spec, spec, ignore=shutil.ignore_patterns("__pycache__", "*.py"))
    cold = build(spec, out, cache)
    assert len(cold) <= 7, "\n".join(cold)
    assert cold[1].startswith("  generator: torchgen 2.13.0 (")  # every build names it
    looked, ran, reused = tasks_of(cold)
    # a cold build reuses nothing from before; a run whose key an earlier run of the same
    # build made (a kernel section of a VariableType file holding the same kernels as one of
    # Everything's) is made once
    assert ran > 20_000 and looked == ran + reused and reused <= 10
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


def test_every_stage_the_graph_times_is_reported():
    """The reports' one list of stages (service/report/build.py: STAGES) holds every stage a
    task or group of the build graph is timed under, so `build` and `stats` show them all
    (the layout's tasks and the compile among them)."""
    import importlib
    import pkgutil

    import gradshard.cache.graph as graph
    from gradshard.cache.engine.jobs import Group, Task
    from gradshard.service.report.build import STAGES

    stages = set()
    for module in pkgutil.iter_modules(graph.__path__):
        declared = vars(importlib.import_module(f"{graph.__name__}.{module.name}")).values()
        stages |= {job.stage for job in declared if isinstance(job, (Task, Group))}
    assert {"parse", "layout", "assemble"} <= stages
    assert stages <= set(STAGES), sorted(stages - set(STAGES))
    assert {"write", "compile"} <= set(STAGES)


def test_stats_shows_the_layout_and_compile_times():
    from gradshard.cache.maintenance import BuildRow, StoreStats
    from gradshard.service.report.cache import stats_text

    row = BuildRow(3, 0.0, 9.0, "built", "/spec", "/out",
                   {"run": {"layout": 2}, "reused": {},
                    "seconds": {"parse": 0.5, "layout": 0.25, "compile": 8.0}})
    totals = dict.fromkeys(("builds", "up_to_date", "run", "reused", "compiled", "cached",
                            "spliced"), 0)
    text = stats_text(StoreStats("/cache/gradshard.sqlite3", 0, 0, 0, 0, 0, [row], totals,
                                 "/cache"))
    assert "parse 0.50 · layout 0.25 · compile 8.00" in text
