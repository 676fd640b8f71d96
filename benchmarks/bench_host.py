#!/usr/bin/env python3
"""The host path (`--generator-path host`) against the spec's own generator's full run, both
run as commands in this process's run, on the generator beside the spec.

The spec's torchgen package is copied whole (its generator with it) and the copy is built:

  cold         empty cache, empty output directory, fresh process   goal <= 1.3x
  no-op        nothing changed since the last build                  goal <= 0.03x
  one formula  a derivatives.yaml formula edited, fresh process      goal <= 0.7x
  daemon edit  the same, saved under `gradshard daemon start`: save
               → Functions.cpp rewritten (the worker kept warm)      goal <= 0.15x

against that generator's generate_code (its autograd part, in a fresh process, its torchgen
first on PYTHONPATH), run once before each round. Medians of --repeat rounds. With the
installed torch's spec (2.13.0, which the ported path reproduces), the ported path's cold,
no-op and one-formula figures are printed beside.

    python benchmarks/bench_host.py [--spec DIR] [--repeat N]

--spec is a torchgen package's `packaged` directory (another release's, or an edited copy):
its generator is the one measured.
"""

from __future__ import annotations

import compileall
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

from _common import (GENERATE_CODE, benchmark_args, compile_gradshard_bytecode, edit_formula,
                     generate_code_arguments, through_daemon, timed)

from gradshard.service.files.spec_location import locate_spec

# without the net (a generator's first host build on a machine runs it whole once, to check
# the host path: its cost is the generator's own run, reported apart by the build)
HOST = ["--codegen-only", "--generator-path", "host", "--generator-check", "skip"]


def staged(spec: Path, root: Path) -> Path:
    """The spec's torchgen package copied under root (its generator with it): the copy's
    packaged spec."""
    torchgen = root / "torchgen"
    shutil.copytree(spec.parent, torchgen, ignore=shutil.ignore_patterns("__pycache__"))
    compileall.compile_dir(torchgen, quiet=1)  # as installed: both sides load bytecode
    return torchgen / "packaged"


def generator_run(spec: Path, out: Path) -> float:
    """The spec's generator's generate_code, fresh process, its torchgen first on the path."""
    out.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PYTHONPATH": str(spec.parent.parent)}
    arguments = generate_code_arguments(locate_spec(str(spec)), out)
    return timed([sys.executable, "-c", GENERATE_CODE, *arguments], env)


def build(spec: Path, out: Path, cache: Path, *options: str) -> float:
    return timed([sys.executable, "-m", "gradshard.service.cli", "build", "--spec", str(spec),
                  "--out", str(out), "--cache", str(cache), *options])


def rounds(spec: Path, root: Path, repeat: int, options: list[str], label: str) -> dict:
    figures: dict[str, list[float]] = {"cold": [], "no-op": [], "one formula": []}
    for i in range(repeat):
        cache, out = root / f"cache-{label}{i}", root / f"out-{label}{i}"
        figures["cold"].append(build(spec, out, cache, *options))
        figures["no-op"].append(build(spec, out, cache, *options))
        edit_formula(spec, 2 + i)
        figures["one formula"].append(build(spec, out, cache, *options))
    return figures


GOALS = {"cold": 1.3, "no-op": 0.03, "one formula": 0.7, "daemon edit": 0.15}


def main() -> None:
    location, repeat, _ = benchmark_args(__doc__.split("\n")[0])
    compile_gradshard_bytecode()
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        spec = staged(location.root, root)
        theirs = [generator_run(spec, root / f"generator{i}") for i in range(repeat)]
        host = rounds(spec, root, repeat, HOST, "host")
        host["daemon edit"] = through_daemon(root, spec, repeat, HOST)
        ported = (rounds(spec, root, repeat, ["--codegen-only", "--generator-path", "ported"],
                         "ported") if location.root == locate_spec(None).root else None)
    median = statistics.median(theirs)
    print(f"the spec's generator (generate_code, fresh process): {median:.3f} s, "
          f"median of {repeat}")
    print(f"{'':14}{'host':>10}{'ratio':>9}{'goal':>8}" + (f"{'ported':>10}{'ratio':>9}"
                                                           if ported else ""))
    for name, goal in GOALS.items():
        ours = statistics.median(host[name])
        line = f"  {name:12}{ours:9.3f}s{ours / median:8.3f}x{'<= ' + str(goal):>8}"
        if ported and name in ported:
            other = statistics.median(ported[name])
            line += f"{other:9.3f}s{other / median:8.3f}x"
        print(line)


if __name__ == "__main__":
    main()
