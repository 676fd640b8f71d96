#!/usr/bin/env python3
"""The cached build against torchgen, both run as commands in this process's run.

torchgen: a fresh `python` process that runs the autograd part of PyTorch's generate_code
(gen_autograd_python, gen_autograd, gen_annotated_fn_args: every file gradshard generates) —
what a PyTorch build reruns on every spec edit. gradshard: `gradshard build --codegen-only` in
a fresh process, in four situations:

  cold        empty cache, empty output directory            goal <= 0.7x
  no-op       nothing changed since the last build            goal <= 0.05x
  one formula one derivatives.yaml formula edited              goal <= 0.05x
  warm CI     cache restored, empty output directory          goal <= 0.3x

and one formula edited through a daemon (`gradshard daemon start --codegen-only`, started and
idle before the first save): save → Functions.cpp rewritten, median of --repeat edits,
against the same torchgen run (goal <= 0.05x).

Each figure is the median of --repeat runs (wall time, interpreter start included), with
both tools' bytecode compiled beforehand, as an installed package has it. torchgen runs once
before each round of gradshard's runs, so that both see the machine as loaded as it is then
(a shared machine's load changes within minutes); the cold ratio is also given per round.

A fresh Python process costs ~0.2 s before any work (interpreter start and imports, for
torchgen and gradshard alike), which is most of an edited formula's build. So the edited
formula is also timed in one warm process, as `gradshard daemon` and IDE integrations run
it: torchgen's generation (its caches cleared) against service/build.py's build_and_compile,
both imported already.

    python benchmarks/bench_build.py [--spec DIR] [--repeat N]
"""

from __future__ import annotations

import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from _common import (GENERATE_CODE, benchmark_args, compile_bytecode, copy_spec,
                     edit_formula, generate_code_arguments, through_daemon, timed,
                     torchgen_generate_code)

from gradshard.service.build import build_and_compile
from gradshard.service.cli import collector_for
from gradshard.service.files.spec_location import SpecLocation, locate_spec
from gradshard.service.session import Session

def torchgen(location: SpecLocation, out: Path) -> float:
    out.mkdir(parents=True, exist_ok=True)
    return timed([sys.executable, "-c", GENERATE_CODE, *generate_code_arguments(location, out)])


def gradshard(spec: Path, out: Path, cache: Path) -> float:
    return timed([sys.executable, "-m", "gradshard.service.cli", "build", "--codegen-only",
                  "--spec", str(spec), "--out", str(out), "--cache", str(cache)])


def torchgen_in_process(location: SpecLocation, out: Path) -> float:
    return torchgen_generate_code(location, out)


def gradshard_in_process(session: Session, spec: Path, out: Path) -> float:
    """One build on a session kept open between builds, as the daemon keeps its own, with
    the daemon's collector settings (service/cli.py: collector_for)."""
    with collector_for("daemon"):
        started = time.perf_counter()
        build_and_compile(locate_spec(str(spec)), out, session)
        return time.perf_counter() - started


def report(label: str, goal: float, ours: list[float], theirs: float) -> None:
    median = statistics.median(ours)
    print(f"  {label:12} {median:7.3f} s   ratio {median / theirs:6.3f}x  (goal <= {goal}x)")


def main() -> None:
    location, repeat, _ = benchmark_args(__doc__.split("\n")[0])
    compile_bytecode()
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        spec = copy_spec(location, root)
        theirs, cold, noop, formula, warm = [], [], [], [], []
        for i in range(repeat):
            theirs.append(torchgen(location, root / f"torchgen{i}"))
            cache, out = root / f"cache{i}", root / f"out{i}"
            cold.append(gradshard(spec, out, cache))
            noop.append(gradshard(spec, out, cache))
            edit_formula(spec, 2 + i)
            formula.append(gradshard(spec, out, cache))
            shutil.rmtree(out)
            warm.append(gradshard(spec, out, cache))
        median = statistics.median(theirs)
        print(f"torchgen (every file, fresh process): {median:.3f} s, median of {repeat}")
        print(f"gradshard build --codegen-only, fresh process, median of {repeat}:")
        report("cold", 0.7, cold, median)
        report("no-op", 0.05, noop, median)
        report("one formula", 0.05, formula, median)
        report("warm CI", 0.3, warm, median)
        print("  cold, each round: " + " ".join(f"{c / t:.3f}x" for c, t in zip(cold, theirs)))
        report("daemon edit", 0.05, through_daemon(root, spec, repeat, ["--codegen-only"]), median)
        warm_process(location, spec, root, repeat)


def warm_process(location: SpecLocation, spec: Path, root: Path, repeat: int) -> None:
    """One edited formula in one warm process, torchgen's run before each of ours; one
    session for all of ours (the daemon's shape: its engine memory stays warm)."""
    cache, out = root / "cache-warm", root / "out-warm"
    session = Session(cache)
    try:
        gradshard_in_process(session, spec, out)
        edit_formula(spec, 99)  # the first edit in a process also loads what edits use
        gradshard_in_process(session, spec, out)
        theirs, ours = [], []
        for i in range(repeat):
            theirs.append(torchgen_in_process(location, root / f"tg-warm{i}"))
            session.freeze_survivors()  # what the daemon does once it has published a build
            edit_formula(spec, 100 + i)
            ours.append(gradshard_in_process(session, spec, out))
    finally:
        session.close()
    median = statistics.median(theirs)
    print(f"one warm process (imports done): torchgen {median:.3f} s, median of {repeat}")
    report("one formula", 0.05, ours, median)


if __name__ == "__main__":
    main()
