#!/usr/bin/env python3
"""The host path (`--generator-path host`) against each generator's own full run, and `try` on
the host path against the ported path, all in this one run.

The generators, each measured on a copy of its torchgen package (the copy's packaged spec):

  2.14.1          that release's torchgen (--release; the suite's download, else pip's)
  2.14.1 edited   the same with one kernel statement of gen_variable_type written otherwise
                  (`auto _any_requires_grad` → `const bool _any_requires_grad`): a generator
                  no release has
  2.13.0          the installed torch's, which the ported path reproduces: its figures beside

Per generator, against that generator's generate_code (its autograd part, in a fresh process,
its torchgen first on PYTHONPATH), run once before each round; medians of --repeat rounds:

  cold         empty cache, empty output directory, fresh process   goal <= 1.3x
  no-op        nothing changed since the last build                  goal <= 0.03x
  one formula  a derivatives.yaml formula edited, fresh process      goal <= 0.7x
  daemon edit  the same, saved under `gradshard daemon start`: save
               → Functions.cpp rewritten (the worker kept warm)      goal <= 0.15x

(without the net: a generator's first host build on a machine runs it whole once, to check
the host path, reported apart by the build).

Then `try sin` in a fresh process (--json, its precompiled header built by a first run), sin's
backward formula edited anew before each run: on the installed spec's copy (the ported path)
and on the edited 2.13.0 generator's copy (the host path: its own nodes and kernels); goal:
host <= 1.5x ported.

    python benchmarks/bench_host.py [--repeat N] [--release VERSION] [--skip-pristine]
"""

from __future__ import annotations

import argparse
import compileall
import os
import subprocess
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from _common import (GENERATE_CODE, compile_bytecode, edit_formula,
                     generate_code_arguments, release_generator, through_daemon, timed)

from gradshard.service.files.spec_location import locate_spec

HOST = ["--codegen-only", "--generator-path", "host", "--generator-check", "skip"]
PORTED = ["--codegen-only", "--generator-path", "ported"]
GOALS = {"cold": 1.3, "no-op": 0.03, "one formula": 0.7, "daemon edit": 0.15}
TRY_GOAL = 1.5
# gen_variable_type's SETUP_ANY_REQUIRES_GRAD as 2.9.1 to 2.14.1 write it, and the same
# statement written otherwise (tests/test_try_host.py edits it the same way)
STATEMENT = "[[maybe_unused]] auto _any_requires_grad = compute_requires_grad("
CHANGED = "[[maybe_unused]] const bool _any_requires_grad = compute_requires_grad("
SIN = "- name: sin(Tensor self) -> Tensor\n  self: grad * self.cos().conj()\n"


def staged(torchgen: Path, root: Path, edited: bool = False) -> Path:
    """The torchgen package copied to root (its generator with it), the kernel statement
    changed if `edited`: the copy's packaged spec."""
    copy = root / "torchgen"
    shutil.copytree(torchgen, copy, ignore=shutil.ignore_patterns("__pycache__"))
    if edited:
        generator = copy / "packaged" / "autograd" / "gen_variable_type.py"
        text = generator.read_text()
        if text.count(STATEMENT) != 1:
            raise SystemExit(f"{generator} does not hold the statement the edit changes")
        generator.write_text(text.replace(STATEMENT, CHANGED))
    compileall.compile_dir(copy, quiet=1)  # as installed: both sides load bytecode
    return copy / "packaged"


def generator_run(spec: Path, out: Path) -> float:
    """The spec's generator's generate_code, fresh process, its torchgen first on the path."""
    out.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PYTHONPATH": str(spec.parent.parent)}
    arguments = generate_code_arguments(locate_spec(str(spec)), out)
    return timed([sys.executable, "-c", GENERATE_CODE, *arguments], env)


def gradshard(command: str, spec: Path, *options: str) -> float:
    return timed([sys.executable, "-m", "gradshard.service.cli", command, "--spec", str(spec),
                  *options])


def rounds(spec: Path, root: Path, repeat: int, options: list[str], label: str) -> dict:
    """cold, no-op and one formula, each round after a run of the generator itself."""
    figures: dict[str, list[float]] = {"generator": [], "cold": [], "no-op": [],
                                       "one formula": []}
    for i in range(repeat):
        figures["generator"].append(generator_run(spec, root / f"generator-{label}{i}"))
        where = ["--out", str(root / f"out-{label}{i}"),
                 "--cache", str(root / f"cache-{label}{i}")]
        figures["cold"].append(gradshard("build", spec, *where, *options))
        figures["no-op"].append(gradshard("build", spec, *where, *options))
        edit_formula(spec, 2 + i)
        figures["one formula"].append(gradshard("build", spec, *where, *options))
    figures["daemon edit"] = through_daemon(root / f"daemon-{label}", spec, repeat, options)
    return figures


def measured(name: str, torchgen: Path, root: Path, repeat: int, edited: bool = False,
             ported: bool = False) -> dict[str, dict]:
    spec = staged(torchgen, root / name, edited)
    (root / name / "daemon-host").mkdir()
    found = {"host": rounds(spec, root / name, repeat, HOST, "host")}
    if ported:
        (root / name / "daemon-ported").mkdir()
        found["ported"] = rounds(spec, root / name, repeat, PORTED, "ported")
    return found


def print_generator(name: str, found: dict[str, dict]) -> None:
    paths = list(found)
    print(f"{name}: {', '.join(paths)} against its generator's run")
    print(f"  {'':12}" + "".join(f"{p:>10}{'ratio':>9}" for p in paths) + f"{'goal':>9}")
    for row, goal in GOALS.items():
        line = f"  {row:12}"
        for path in paths:
            ours = statistics.median(found[path][row])
            anchor = statistics.median(found[path]["generator"])
            line += f"{ours:9.3f}s{ours / anchor:8.3f}x"
        ratio = (statistics.median(found["host"][row])
                 / statistics.median(found["host"]["generator"]))
        print(line + f"{'<= ' + str(goal):>9} {'ok' if ratio <= goal else 'MISSED'}")
    print(f"  {'generator':12}" + "".join(
        f"{statistics.median(found[p]['generator']):9.3f}s{'':9}" for p in paths))


def try_rows(root: Path, repeat: int) -> None:
    """`try sin` on the ported path (the installed spec's copy) and the host path (the edited
    installed generator's copy), alternating, each after a new edit of sin's formula."""
    import torchgen

    installed = Path(torchgen.__file__).parent
    specs = {"ported": staged(installed, root / "try-ported"),
             "host": staged(installed, root / "try-host", edited=True)}
    caches = {path: root / f"try-cache-{path}" for path in specs}
    times: dict[str, list[float]] = {path: [] for path in specs}
    for i in range(repeat + 1):  # the first run of each builds its PCH and its worker's memo
        for path, spec in specs.items():
            derivatives = spec / "autograd" / "derivatives.yaml"
            text = derivatives.read_text()
            current = next(line for line in text.split("\n")
                           if line.startswith("  self: grad * self.cos().conj()"))
            new = f"  self: grad * self.cos().conj() * {3 + i}"
            derivatives.write_text(text.replace(current, new, 1))
            started = time.perf_counter()
            _try(spec, caches[path])
            if i:
                times[path].append(time.perf_counter() - started)
    host, ported = (statistics.median(times[p]) for p in ("host", "ported"))
    print(f"try sin, fresh process (PCH built), median of {repeat}: ported {ported:.3f} s, "
          f"host {host:.3f} s: {host / ported:.2f}x (goal <= {TRY_GOAL}x) "
          f"{'ok' if host / ported <= TRY_GOAL else 'MISSED'}")


def _try(spec: Path, cache: Path) -> None:
    """One `try sin` (its verdict FAIL: the formula is wrong, exit code 5)."""
    done = subprocess.run([sys.executable, "-m", "gradshard.service.entry", "try", "sin",
                           "--spec", str(spec), "--cache", str(cache), "--json"],
                          capture_output=True, text=True)
    if done.returncode not in (0, 5):
        raise SystemExit(f"try on {spec} failed ({done.returncode}):\n{done.stderr[-2000:]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=3, help="rounds; the median is printed")
    parser.add_argument("--release", default="2.14.1", help="the release whose generator is "
                        "measured, pristine and edited (default 2.14.1)")
    parser.add_argument("--skip-pristine", action="store_true", help="leave out the pristine "
                        "release's rows (the edited one runs the same host path)")
    args = parser.parse_args()
    compile_bytecode()
    release = args.release
    import torchgen

    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        generators = {} if args.skip_pristine else {
            release: measured(release, release_generator(release), root, args.repeat)}
        generators |= {
            f"{release} edited": measured(f"{release} edited", release_generator(release),
                                          root, args.repeat, edited=True),
            "2.13.0 (installed)": measured("2.13.0", Path(torchgen.__file__).parent, root,
                                           args.repeat, ported=True)}
        for name, found in generators.items():
            print_generator(name, found)
        try_rows(root, args.repeat)


if __name__ == "__main__":
    main()
