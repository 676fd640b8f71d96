"""The benchmark scripts run and print their ratios (their goals are not asserted here)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).parent.parent / "benchmarks"


def test_parse_benchmark_runs():
    done = subprocess.run([sys.executable, str(BENCHMARKS / "bench_parse.py"), "--repeat", "1"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "ratio" in done.stdout and "(goal <= 1.0x)" in done.stdout
    assert "ms for 724 info schemas" in done.stdout


@pytest.mark.slow
def test_codegen_benchmark_runs():
    done = subprocess.run([sys.executable, str(BENCHMARKS / "bench_codegen.py"), "--repeat", "1"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "ratio" in done.stdout and "(goal <= 1.0x)" in done.stdout


@pytest.mark.slow
def test_build_benchmark_runs():
    done = subprocess.run([sys.executable, str(BENCHMARKS / "bench_build.py"), "--repeat", "1"],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    for label in ("cold", "no-op", "one formula", "warm CI", "daemon"):
        assert label in done.stdout
    # the four fresh-process situations, the daemon's edit and the warm-process formula
    assert done.stdout.count("ratio") == 6
