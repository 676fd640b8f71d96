#!/usr/bin/env python3
"""The compile stage against compiling torchgen's files, all measured in this one run.

torchgen's side: its generation in a fresh process (as bench_build.py runs it), then its
files compiled with the same compiler, flags and torch headers gradshard uses: every file
gradshard compiles (Functions.cpp, VariableType_0..9.cpp, python_functions_0..4.cpp, the
binding files, TraceType_0..9.cpp, ADInplaceOrViewType_0..1.cpp and ViewFuncs.cpp) with
`ninja -j2`, and Functions.cpp and the python_functions files one at a
time, alone on the machine (a VariableType file's seconds are its -j2 run's: ten of them
alone would add ~9 minutes). gradshard's side: `gradshard build -j 2` in a fresh process, in
five situations:

  cold           empty cache: generate, build the PCHs, compile every unit
                 goal <= 1.0x  torchgen's files compiled with -j2
  one formula    a backward formula of erfinv edited (one node; its forward formula is
                 auto_element_wise, so the kernels of erfinv and erfinv_ change too)
                 goal <= 0.05x [torchgen + Functions.cpp + their VariableType file]
  forward formula erfinv's forward formula written out (its kernels' forward unit only)
                 goal <= 0.05x [torchgen + their VariableType file]
  saved variable erfinv's formula rewritten on its result instead of self (the struct
                 changes: one node's formula, Functions and python_functions units, the
                 kernels creating the node)
                 goal <= 0.1x  [torchgen + every file including Functions.h:
                 Functions.cpp, the python_functions files and the VariableType files]
  restored cache empty output directory, the cache of the runs above: zero compiles

and, through a daemon (`gradshard daemon start -j 2` on the restored output, started and idle
before the clock), the forward formula edited four times: save → its merged unit's object
rewritten, against the same anchor as the forward formula's (goal <= 0.05x): the median of
the last three (a daemon serving edits all day), and the first apart (its memory is still
being read from the store then).

Times are wall seconds, interpreter start included. One run of each (a cold compile takes
minutes); the machine should be otherwise idle.

    python benchmarks/bench_compile.py [--spec DIR] [--cold-only]

(--cold-only: torchgen's files with -j2 and gradshard's cold build alone.)
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import compiler_benchmark, copy_spec, stamps, until_rewritten, wait_idle
from bench_build import torchgen

from gradshard.pipeline.problems import SpecFile
from gradshard.service.files.spec_location import SpecLocation, locate_spec

GENERATED = "torch/csrc/autograd/generated"
HEADERS = ("Functions.h", "python_functions.h", "python_return_types.h", "VariableType.h",
           "ViewFuncs.h", "variable_factories.h")
# ADInplaceOrViewType includes it; PyTorch's build has it from ATen's codegen (torchgen/gen.py)
INVERSES = """
import sys
from torchgen.gen import get_grouped_by_view_native_functions, parse_native_yaml
from torchgen.gen_functionalization_type import gen_functionalization_view_inverse_declaration
from torchgen.model import NativeFunctionsViewGroup
from torchgen.selective_build.selector import SelectiveBuilder
from torchgen.utils import FileManager
native, tags, templates, out = sys.argv[1:]
functions = parse_native_yaml(native, tags).native_functions
groups = [g for g in get_grouped_by_view_native_functions(functions)
          if isinstance(g, NativeFunctionsViewGroup)]
selector = SelectiveBuilder.get_nop_selector()
declarations = [d for d in (gen_functionalization_view_inverse_declaration(selector, g)
                            for g in groups) if d is not None]
FileManager(out, templates, False).write("FunctionalInverses.h",
                                         lambda: {"view_inverse_declarations": declarations})
"""
FORMULA = "  self: 0.5 * sqrt(M_PI) * exp(self.erfinv().pow(2)) * grad"
FORMULA_EDIT = FORMULA + " * 2"
FORWARD = "  result: auto_element_wise"
# a formula no earlier build compiled (auto_element_wise of the original backward formula
# would give the cold build's kernel back, which the object cache serves)
FORWARD_EDIT = "  result: (0.5 * sqrt(M_PI) * exp(self_p.erfinv().pow(2)) * self_t.conj() * 3).conj()"
# the daemon's edits: a first one (its memory still being read from the store), then three
# more as a daemon serves them all day
DAEMON_EDITS = [FORWARD_EDIT.replace("* 3", f"* {n}") for n in (5, 6, 7, 8)]
SAVED_EDIT = "  self: 0.5 * sqrt(M_PI) * exp(result.pow(2)) * grad"
ERFINV_FILE = "VariableType_9.o"  # erfinv's and erfinv_'s kernels (SHA-1 of the C++ names)


def torchgen_units(out: Path) -> list[str]:
    """The files of torchgen's that gradshard's units stand for."""
    return sorted(p.name for p in out.glob("*.cpp") if not p.name.endswith("Everything.cpp"))


def write_torchgen_ninja(spec: SpecLocation, out: Path, build: Path, toolchain,
                         units: list[str]) -> None:
    """build.ninja compiling torchgen's files as they are; its generated headers shadow the
    installed torch's, as they do in a PyTorch build, and gen.py's FunctionalInverses.h (not
    timed: ATen's codegen writes it) is beside them."""
    include = build / "include" / GENERATED
    include.mkdir(parents=True, exist_ok=True)
    for name in HEADERS:
        shutil.copy(out / name, include / name)
    write_inverses(spec, build / "include" / "ATen")
    flags = " ".join([*toolchain.flags, f"-I{build / 'include'}",
                      *(f"-I{d}" for d in toolchain.includes)])
    lines = [f"rule cxx\n  command = {toolchain.cxx} {flags} -c $in -o $out\n"]
    lines += [f"build {Path(u).stem}.o: cxx {out / u}\n" for u in units]
    (build / "build.ninja").write_text("".join(lines))


def write_inverses(spec: SpecLocation, directory: Path) -> None:
    """gen.py's FunctionalInverses.h of the spec, from its ATen templates (beside native/)."""
    native = spec.path_of(SpecFile.NATIVE_FUNCTIONS)
    directory.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, "-c", INVERSES, str(native),
                    str(spec.path_of(SpecFile.TAGS)), str(native.parent.parent / "templates"),
                    str(directory)], check=True)


def ninja(build: Path, jobs: int, targets: list[str] = ()) -> tuple[float, dict[str, float]]:
    """Wall seconds, and each object's seconds from .ninja_log."""
    started = time.perf_counter()
    done = subprocess.run(["ninja", "-C", str(build), "-j", str(jobs), *targets],
                          capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if done.returncode:
        raise SystemExit(f"compiling torchgen's files failed:\n{done.stdout[-3000:]}")
    return seconds, unit_seconds(build / ".ninja_log")


def unit_seconds(log: Path) -> dict[str, float]:
    rows = [line.split("\t") for line in log.read_text().splitlines()[1:]]
    return {row[3]: (int(row[1]) - int(row[0])) / 1000 for row in rows}


def gradshard(spec: Path, out: Path, cache: Path) -> tuple[float, dict]:
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "gradshard.service.cli", "build", "-j", "2",
                           "--json", "--spec", str(spec), "--out", str(out), "--cache",
                           str(cache)], capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if done.returncode:
        raise SystemExit(f"gradshard build failed:\n{done.stderr[-3000:]}")
    return seconds, json.loads(done.stdout)["compile"]


def replace_line(spec: Path, old: str, new: str) -> None:
    path = spec / "autograd" / "derivatives.yaml"
    text = path.read_text()
    if f"\n{old}\n" not in text:
        raise SystemExit(f"derivatives.yaml has no line {old!r}")
    path.write_text(text.replace(f"\n{old}\n", f"\n{new}\n", 1))


def ratio(label: str, ours: float, theirs: float, goal: float, note: str) -> None:
    print(f"  {label:15} {ours:8.2f} s  / {theirs:8.2f} s = {ours / theirs:6.3f}x "
          f"(goal <= {goal}x)  {note}")


def main() -> None:
    location, _, toolchain, given = compiler_benchmark(__doc__.split("\n")[0], [(
        "--cold-only", "only the cold build against torchgen's files with -j2 (~25 minutes "
        "instead of ~45)")])
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        spec = copy_spec(location, root)
        generation = torchgen(locate_spec(str(spec)), root / "torchgen")
        units = torchgen_units(root / "torchgen")
        spec_location = locate_spec(str(spec))
        write_torchgen_ninja(spec_location, root / "torchgen", root / "tg-j2", toolchain, units)
        layout, per_unit = ninja(root / "tg-j2", 2)
        print(f"torchgen: generation {generation:.2f} s; its {len(units)} files with -j2 "
              f"{layout:.1f} s wall ({sum(per_unit.values()):.0f} s summed)")
        if "cold_only" in given:
            cold, cold_report = gradshard(spec, root / "out", root / "cache")
            print(f"gradshard build -j 2 ({cold_report['units']} units):")
            ratio("cold", cold, layout, 1.0, f"compile step {cold_report['seconds']:.1f} s")
            return
        alone = [u for u in units if u.startswith(("Functions", "python_functions"))]
        write_torchgen_ninja(spec_location, root / "torchgen", root / "tg-j1", toolchain, alone)
        _, alone_seconds = ninja(root / "tg-j1", 1)
        functions = alone_seconds["Functions.o"]
        python_functions = sum(s for o, s in alone_seconds.items() if o != "Functions.o")
        print(f"torchgen, one file at a time: Functions.cpp {functions:.1f} s, "
              f"python_functions_0..4 {python_functions:.1f} s")

        kernels = {o: s for o, s in per_unit.items() if o.startswith("VariableType_")}
        print(f"torchgen's VariableType files in the -j2 run: {sum(kernels.values()):.1f} s "
              f"summed, {ERFINV_FILE} {kernels[ERFINV_FILE]:.1f} s")

        out, cache = root / "out", root / "cache"
        cold, cold_report = gradshard(spec, out, cache)
        replace_line(spec, FORMULA, FORMULA_EDIT)
        formula, formula_report = gradshard(spec, out, cache)
        replace_line(spec, f"{FORMULA_EDIT}\n{FORWARD}", f"{FORMULA_EDIT}\n{FORWARD_EDIT}")
        forward, forward_report = gradshard(spec, out, cache)
        replace_line(spec, FORMULA_EDIT, SAVED_EDIT)
        saved, saved_report = gradshard(spec, out, cache)
        shutil.rmtree(out)
        restored, restored_report = gradshard(spec, out, cache)

        print(f"gradshard build -j 2 ({cold_report['units']} units):")
        ratio("cold", cold, layout, 1.0,
              f"compile step {cold_report['seconds']:.1f} s, {len(cold_report['compiled'])} "
              "compiled")
        ratio("one formula", formula, generation + functions + kernels[ERFINV_FILE], 0.05,
              recompiled(formula_report))
        ratio("forward formula", forward, generation + kernels[ERFINV_FILE], 0.05,
              recompiled(forward_report))
        ratio("saved variable", saved,
              generation + functions + python_functions + sum(kernels.values()), 0.1,
              recompiled(saved_report))
        print(f"  {'restored cache':15} {restored:8.2f} s, {len(restored_report['compiled'])} "
              f"compiles (goal: 0), {len(restored_report['cached'])} objects from the cache")
        first, *warm = through_daemon(root, spec, out, cache)
        ratio("forward, daemon", statistics.median(warm), generation + kernels[ERFINV_FILE],
              0.05, f"save → object rewritten, median of {len(warm)} edits "
              f"({' '.join(f'{w:.2f}' for w in warm)} s) after a first one")
        ratio("first in daemon", first, generation + kernels[ERFINV_FILE], 0.05,
              "the daemon's first edit (its memory read from the store)")


def through_daemon(root: Path, spec: Path, out: Path, cache: Path) -> list[float]:
    """Seconds from saving each forward-formula edit to the object holding it rewritten, by a
    daemon started (and idle) before the first save; each save waits for the daemon to be
    idle again."""
    where = ["--spec", str(spec), "--cache", str(cache)]
    run = root / "run"
    run.mkdir(mode=0o700)
    env = {**os.environ, "XDG_RUNTIME_DIR": str(run)}
    cli = [sys.executable, "-m", "gradshard.service.cli", "daemon"]
    subprocess.run([*cli, "start", *where, "--out", str(out), "-j", "2"], env=env, check=True,
                   capture_output=True)
    try:
        wait_idle(cli, where, env)
        seconds, line = [], FORWARD_EDIT
        for edit in DAEMON_EDITS:
            time.sleep(1.0)  # the daemon settles its memory once idle (Session.settle)
            seconds.append(save_to_object(spec, out, line, edit))
            line = edit
            wait_idle(cli, where, env, builds=len(seconds) + 1)
        return seconds
    finally:
        subprocess.run([*cli, "stop", *where], env=env, capture_output=True)


def save_to_object(spec: Path, out: Path, old: str, new: str) -> float:
    objects = stamps(list((out / "compile" / "obj").glob("*.o")))
    saved = time.perf_counter()
    replace_line(spec, old, new)
    return until_rewritten(objects, saved, "object")


def recompiled(report: dict) -> str:
    spliced = f", spliced into {report['spliced']}" if report.get("spliced") else ""
    return f"recompiled {report['compiled']}{spliced}"


if __name__ == "__main__":
    main()
