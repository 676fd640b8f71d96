#!/usr/bin/env python3
"""The cached build against torchgen, both run as commands in this process's run.

torchgen: a fresh `python` process that generates every file gradshard generates, in
generate_code's order (load_derivatives, gen_autograd_functions_python,
gen_python_functions.gen, parse_native_yaml, match_differentiability_info, gen_variable_type,
gen_autograd_functions_lib) — what a PyTorch build reruns on every spec edit. gradshard: `gradshard build --codegen-only` in a fresh process, in four
situations:

  cold        empty cache, empty output directory            goal <= 0.7x
  no-op       nothing changed since the last build            goal <= 0.05x
  one formula one derivatives.yaml formula edited              goal <= 0.05x
  warm CI     cache restored, empty output directory          goal <= 0.3x

Each figure is the median of --repeat runs (wall time, interpreter start included), with
both tools' bytecode compiled beforehand, as an installed package has it. torchgen runs once
before each round of gradshard's runs, so that both see the machine as loaded as it is then
(a shared machine's load changes within minutes); the cold ratio is also given per round.

A fresh Python process costs ~0.2 s before any work (interpreter start and imports, for
torchgen and gradshard alike), which is most of an edited formula's build. So the edited
formula is also timed in one warm process, as `gradshard daemon` and IDE integrations run
it: torchgen's generation (its caches cleared) against Session.build, both imported already.

    python benchmarks/bench_build.py [--spec DIR] [--repeat N]
"""

from __future__ import annotations

import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from gradshard.pipeline.errors import SpecFile
from gradshard.service.cli import collector_for
from gradshard.service.session import Session
from gradshard.service.spec_location import SpecLocation, locate_spec

from _common import benchmark_args, compile_gradshard_bytecode, copy_spec

TORCHGEN = """
import sys
import torchgen.gen as gen
from torchgen.api import cpp
from torchgen.api.autograd import match_differentiability_info
from torchgen.packaged.autograd import gen_autograd_functions as gaf
from torchgen.packaged.autograd import gen_python_functions as gpf
from torchgen.packaged.autograd import gen_variable_type as gvt
from torchgen.packaged.autograd import load_derivatives as ld
native, tags, derivatives, deprecated, templates, out = sys.argv[1:]
infos, keys = ld.load_derivatives(derivatives, native, tags)
gaf.gen_autograd_functions_python(out, infos, templates)
gpf.gen(out, native, tags, deprecated, templates)
functions = gen.parse_native_yaml(native, tags).native_functions
matched = match_differentiability_info(sorted(functions, key=lambda f: cpp.name(f.func)), infos)
gvt.gen_variable_type(out, native, tags, matched, templates, keys)
gaf.gen_autograd_functions_lib(out, infos, templates)
"""
FORMULA = "  self: grad * self.cosh().conj()\n"


def timed(command: list[str]) -> float:
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{command[:3]} failed:\n{done.stderr[-2000:]}")
    return seconds


def torchgen(location: SpecLocation, out: Path) -> float:
    out.mkdir(parents=True, exist_ok=True)
    paths = [str(location.path_of(f)) for f in (SpecFile.NATIVE_FUNCTIONS, SpecFile.TAGS,
                                                  SpecFile.DERIVATIVES, SpecFile.DEPRECATED)]
    return timed([sys.executable, "-c", TORCHGEN, *paths, str(location.templates), str(out)])


def gradshard(spec: Path, out: Path, cache: Path) -> float:
    return timed([sys.executable, "-m", "gradshard.service.cli", "build", "--codegen-only",
                  "--spec", str(spec), "--out", str(out), "--cache", str(cache)])


def edit_formula(spec: Path, times: int) -> None:
    path = spec / "autograd" / "derivatives.yaml"
    text = path.read_text()
    current = next(line for line in text.split("\n") if line.startswith(FORMULA.rstrip("\n")))
    path.write_text(text.replace(current + "\n", FORMULA.rstrip("\n") + f" * {times}\n", 1))


def torchgen_in_process(location: SpecLocation, out: Path) -> float:
    from bench_codegen import torchgen_all

    return torchgen_all(location, out)


def gradshard_in_process(session: Session, spec: Path, out: Path) -> float:
    """One build on a session kept open between builds, as the daemon keeps its own, with
    the daemon's collector settings (service/cli.py: collector_for)."""
    with collector_for("daemon"):
        started = time.perf_counter()
        session.build(locate_spec(str(spec)), out)
        return time.perf_counter() - started


def report(label: str, goal: float, ours: list[float], theirs: float) -> None:
    median = statistics.median(ours)
    print(f"  {label:12} {median:7.3f} s   ratio {median / theirs:6.3f}x  (goal <= {goal}x)")


def main() -> None:
    location, repeat = benchmark_args(__doc__.split("\n")[0])
    compile_gradshard_bytecode()
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
            session.settle()  # what the daemon does once it has published a build
            edit_formula(spec, 100 + i)
            ours.append(gradshard_in_process(session, spec, out))
    finally:
        session.close()
    median = statistics.median(theirs)
    print(f"one warm process (imports done): torchgen {median:.3f} s, median of {repeat}")
    report("one formula", 0.05, ours, median)


if __name__ == "__main__":
    main()
