"""The benchmark scripts run and print their ratios (their goals are not asserted here; the
call paths are held to their committed ceilings)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).parent.parent / "benchmarks"


def bench(script: str, *words: str, timeout: int) -> str:
    """The benchmark's output; it must succeed."""
    done = subprocess.run([sys.executable, str(BENCHMARKS / script), *words],
                          capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_parse_benchmark_runs():
    stdout = bench("bench_parse.py", "--repeat", "1", timeout=300)
    assert "ratio" in stdout and "(goal <= 1.0x)" in stdout
    assert "ms for 724 info schemas" in stdout


@pytest.mark.slow
def test_codegen_benchmark_runs():
    stdout = bench("bench_codegen.py", "--repeat", "1", timeout=300)
    assert "ratio" in stdout and "(goal <= 1.0x)" in stdout


@pytest.mark.slow
def test_check_benchmark_runs():
    """It fails itself when a cached check finds otherwise than a cold one."""
    stdout = bench("bench_check.py", "--repeat", "1", timeout=600)
    for label in ("cold", "first", "warm", "one formula"):
        assert f"  {label} " in stdout
    assert stdout.count("goal <= 0.1x") == 2
    assert "findings: 1 (the same cold, warm and after each edit)" in stdout


@pytest.mark.slow
def test_build_benchmark_runs():
    stdout = bench("bench_build.py", "--repeat", "1", timeout=600)
    for label in ("cold", "no-op", "one formula", "warm CI", "daemon"):
        assert label in stdout
    # the four fresh-process situations, the daemon's edit and the warm-process formula
    assert stdout.count("ratio") == 6


@pytest.mark.slow
def test_lsp_benchmark_runs():
    """It fails itself when a keystroke's diagnostics or a hover are not what they should."""
    stdout = bench("bench_lsp.py", "--repeat", "1", timeout=600)
    for label in ("server start", "first diagnostics", "keystroke", "hover"):
        assert f"  {label} " in stdout
    assert [line.count("goal <= ") for line in stdout.splitlines()[1:]] == [0, 1, 1, 1]
    assert "debounce 50 ms (included)" in stdout


def test_try_benchmark_names_its_rows():
    """bench_try.py (minutes per run: a Functions.cpp compile per compiler) is run by hand;
    here its options parse and its rows are documented as it prints them."""
    stdout = bench("bench_try.py", "--help", timeout=120)
    for option in ("--repeat", "--compilers", "--skip-build-rows"):
        assert option in stdout
    doc = (BENCHMARKS / "bench_try.py").read_text()
    for row in ("first try", "CLI", "daemon", "try directory", "backward", "forward",
                "GCC's floor"):
        assert row in doc


@pytest.mark.slow
def test_host_benchmark_runs():
    # the pristine 2.14.1's rows left out: the edited one runs the same host path
    stdout = bench("bench_host.py", "--repeat", "1", "--skip-pristine", timeout=900)
    for label in ("cold", "no-op", "one formula", "daemon edit"):
        assert label in stdout
    # the host path's four figures per generator (an edited 2.14.1, the installed 2.13), the
    # ported path's beside the last, and try on both paths
    assert stdout.count("x") >= 12 and "ported" in stdout
    assert "2.14.1 edited" in stdout
    assert "try sin" in stdout and "host" in stdout.split("try sin")[1]


# Each path of benchmarks/call_paths.py, as committed: the modules it passes through (issue
# 50's goals: build <= 9 to its first file and <= 14 to ninja, try <= 14 to its worker, on
# both paths) and those it enters. A path that grows fails here; a figure comes down as its
# path shrinks.
CALL_PATH_GOALS = {"build → first file (ported)": 9, "build → first file (host)": 9,
                   "build → ninja (ported)": 14, "build → ninja (host)": 14,
                   "try → worker (ported)": 14, "try → worker (host)": 14}
CALL_PATH_THROUGH = {"build → first file (ported)": 8, "build → first file (host)": 9,
                     "build → ninja (ported)": 13, "build → ninja (host)": 14,
                     "try → worker (ported)": 12, "try → worker (host)": 14}
CALL_PATH_ENTERED = {"build → first file (ported)": 26, "build → first file (host)": 28,
                     "build → ninja (ported)": 40, "build → ninja (host)": 46,
                     "try → worker (ported)": 35, "try → worker (host)": 39}


def test_the_committed_figures_meet_the_goals():
    assert set(CALL_PATH_THROUGH) == set(CALL_PATH_GOALS) == set(CALL_PATH_ENTERED)
    assert all(CALL_PATH_THROUGH[name] <= goal for name, goal in CALL_PATH_GOALS.items())


@pytest.mark.slow
def test_call_paths_reach_their_events_without_calling_back_and_grow_no_longer():
    """Every path reaches its event (its first file written, ninja started, the patch handed
    to the try worker), no callee calls back into a module of its callers, and none passes
    through or enters more modules than committed."""
    results = json.loads(bench("call_paths.py", "--json", timeout=1200))
    assert set(results) == set(CALL_PATH_THROUGH)
    for name, result in results.items():
        assert result["reached"], f"{name}: the event never happened"
        assert result["back_calls"] == [], f"{name}: {result['back_calls']}"
        assert result["through_count"] <= CALL_PATH_THROUGH[name], (
            f"{name}: through {result['through_count']} modules, more than "
            f"{CALL_PATH_THROUGH[name]}: " + " → ".join(result["through"]))
        assert result["count"] <= CALL_PATH_ENTERED[name], (
            f"{name}: {result['count']} modules entered, more than "
            f"{CALL_PATH_ENTERED[name]}: " + " → ".join(result["files"]))
