#!/usr/bin/env python3
"""`gradshard check` from the cache against torchgen, both run as commands in this run.

torchgen: a fresh `python` process that runs the autograd part of PyTorch's generate_code
(every file gradshard generates), the anchor of every benchmark. gradshard: `gradshard check
--json` in a fresh process (interpreter start included) on a copy of the spec, in four
situations:

  cold         --no-cache: every task runs, in memory         (what `check` was: no goal)
  first        empty cache: every task runs, kept              (no goal)
  warm         the spec the cache has seen                     goal <= 0.1x
  one formula  one derivatives.yaml formula edited since       goal <= 0.1x

Each figure is the median of --repeat runs, both tools' bytecode compiled beforehand; the
warm and edited checks must report the same findings as the cold one (the edit puts a
misspelled name in the formula, so there is one to report), or the benchmark fails.

    python benchmarks/bench_check.py [--spec DIR] [--repeat N]
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import (benchmark_args, compile_bytecode, copy_spec,
                     torchgen_generate_code)

from gradshard.service.files.spec_location import locate_spec

GOALS = {"warm": 0.1, "one formula": 0.1}
ANCHOR = "  self: grad * self.cos().conj()\n"  # sin's backward formula


def check(spec: Path, cache: Path, *words: str) -> tuple[float, dict]:
    """One `gradshard check --json` in a fresh process: its wall time and its report."""
    script = Path(sys.executable).with_name("gradshard")  # the console script, as users run it
    launcher = [str(script)] if script.exists() else [sys.executable, "-m",
                                                      "gradshard.service.cli"]
    command = [*launcher, "check", "--spec", str(spec), "--cache", str(cache), "--json",
               *words]
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True,
                          env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    seconds = time.perf_counter() - started
    if done.returncode not in (0, 1):
        sys.exit(f"{' '.join(command)} exited {done.returncode}:\n{done.stderr[-2000:]}")
    return seconds, json.loads(done.stdout)


def findings(report: dict) -> list:
    return [(p["line"], p["column"], p["rule"]) for p in report.get("problems", [])]


def edit(spec: Path, count: int) -> None:
    """sin's formula with a misspelled name and `count` factors: a new edit every time."""
    path = spec / "autograd" / "derivatives.yaml"
    text = path.read_text()
    start = text.index("- name: sin(Tensor self)")
    line_start = text.index("\n", start) + 1
    line_end = text.index("\n", line_start) + 1
    path.write_text(text[:line_start] + ANCHOR.replace("self.cos()", "slef.cos()").rstrip()
                    + " * 2" * count + "\n" + text[line_end:])


def main() -> None:
    args = benchmark_args(__doc__.splitlines()[1])
    compile_bytecode()
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        spec = copy_spec(args.location, root)
        text = (spec / "autograd" / "derivatives.yaml").read_text()
        if ANCHOR not in text:
            sys.exit(f"sin's formula is not {ANCHOR.strip()!r} in this spec")
        anchor = statistics.median(torchgen_generate_code(locate_spec(str(spec)),
                                                          root / f"torchgen{k}")
                                   for k in range(args.repeat))
        edit(spec, 0)
        cold_seconds, cold = check(spec, root / "none", "--no-cache")
        first_seconds, first = check(spec, root / "cache")
        rows = {"cold": [cold_seconds], "first": [first_seconds], "warm": [],
                "one formula": []}
        for k in range(args.repeat):
            seconds, warm = check(spec, root / "cache")
            rows["warm"].append(seconds)
            if findings(warm) != findings(cold) or findings(first) != findings(cold):
                sys.exit("a cached check found otherwise than a cold one")
            edit(spec, k + 1)
            seconds, edited = check(spec, root / "cache")
            rows["one formula"].append(seconds)
            if findings(edited) != findings(check(spec, root / "none", "--no-cache")[1]):
                sys.exit("a check after an edit found otherwise than a cold one")
    print(f"torchgen generate_code (autograd part): {anchor:.2f} s (median of {args.repeat})")
    for name, times in rows.items():
        seconds = statistics.median(times)
        goal = GOALS.get(name)
        verdict = ("" if goal is None else
                   f"  goal <= {goal}x: {'ok' if seconds / anchor <= goal else 'MISSED'}")
        print(f"  {name:12} {seconds:6.2f} s  {seconds / anchor:5.3f}x{verdict}")
    print(f"  findings: {len(findings(cold))} (the same cold, warm and after each edit)")


if __name__ == "__main__":
    main()
