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
    assert len(cold) <= 7, "\n".join(cold)
    assert cold[1].startswith("  generator: torchgen 2.13.0 (")  # every build names it
    ran = int(re.search(r"tasks: ([\d,]+) run", cold[2]).group(1).replace(",", ""))
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


def test_every_stage_the_graph_times_is_reported():
    """The reports' one list of stages (service/report/build.py: STAGES) holds every stage a
    task or group of the build graph is timed under, so `build` and `stats` show them all
    (the layout's tasks and the compile among them)."""
    from gradshard.service.report.build import STAGES

    stages = set()
    graph = Path(__file__).resolve().parent.parent / "cache" / "graph"
    for path in graph.glob("*.py"):
        stages |= set(re.findall(r'(?:Task|Group)\("[\w.]+", "(\w+)"', path.read_text()))
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
