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
def test_check_benchmark_runs():
    """It fails itself when a cached check finds otherwise than a cold one."""
    done = subprocess.run([sys.executable, str(BENCHMARKS / "bench_check.py"), "--repeat", "1"],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    for label in ("cold", "first", "warm", "one formula"):
        assert f"  {label} " in done.stdout
    assert done.stdout.count("goal <= 0.1x") == 2
    assert "findings: 1 (the same cold, warm and after each edit)" in done.stdout


@pytest.mark.slow
def test_build_benchmark_runs():
    done = subprocess.run([sys.executable, str(BENCHMARKS / "bench_build.py"), "--repeat", "1"],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    for label in ("cold", "no-op", "one formula", "warm CI", "daemon"):
        assert label in done.stdout
    # the four fresh-process situations, the daemon's edit and the warm-process formula
    assert done.stdout.count("ratio") == 6


def test_try_benchmark_names_its_rows():
    """bench_try.py (minutes per run: a Functions.cpp compile per compiler) is run by hand;
    here its options parse and its rows are documented as it prints them."""
    done = subprocess.run([sys.executable, str(BENCHMARKS / "bench_try.py"), "--help"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    for option in ("--repeat", "--compilers", "--skip-build-rows"):
        assert option in done.stdout
    doc = (BENCHMARKS / "bench_try.py").read_text()
    for row in ("first try", "CLI", "daemon", "try directory", "backward", "forward",
                "GCC's floor"):
        assert row in doc


@pytest.mark.slow
def test_host_benchmark_runs():
    done = subprocess.run([sys.executable, str(BENCHMARKS / "bench_host.py"), "--repeat", "1"],
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr
    for label in ("cold", "no-op", "one formula", "daemon edit"):
        assert label in done.stdout
    # the host path's four figures per generator (2.14.1, an edited 2.14.1, the installed
    # 2.13), the ported path's beside the last, and try on both paths
    assert done.stdout.count("x") >= 16 and "ported" in done.stdout
    assert "2.14.1 edited" in done.stdout
    assert "try sin" in done.stdout and "host" in done.stdout.split("try sin")[1]
