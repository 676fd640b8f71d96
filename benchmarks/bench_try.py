#!/usr/bin/env python3
"""`gradshard try` against the anchor a PyTorch developer waits for today, all in this run.

The anchor: compiling torchgen's Functions.cpp alone (one file, the same compiler, flags and
torch headers gradshard uses), the first of the steps a PyTorch rebuild takes before an
edited formula can be tested (then a VariableType file, libtorch_cpu's link, the tests).

gradshard's side, on a copy of the installed spec, sin's backward formula edited (the
issue's example: the edit reaches sin, sin_, sin.out and _foreach_sin), with the default
dtypes (float64 and complex128):

  first try       an empty try directory: the three PCHs are built (printed, no goal)
  CLI             `gradshard try` in a fresh process, the PCHs built: save → verdicts
                  printed; goal <= 1/8 of the anchor
  daemon          `gradshard daemon start --codegen-only --try`, started and idle before the
                  clock: save → every changed op's verdicts (the daemon's own record of when
                  its check finished); goal <= 1/17 of the anchor

Each gradshard figure is the median of --repeat edits (default 5), each a formula no earlier
run compiled, and wrong (sin's derivative times 3, 4, …: every check fails, which is the
slower verdict: gradcheck reruns a failing sample in slow mode, and try locates the error).
gradshard's side runs with the compiler `try` uses by default (the build's: $CXX, else g++),
then, when clang++ is installed, with clang++ too (CXX=clang++), against the same anchor.

    python benchmarks/bench_try.py [--spec DIR] [--repeat N]
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

from _common import compiler_benchmark, copy_spec
from bench_build import torchgen
from bench_compile import ninja, replace_line, write_torchgen_ninja

from gradshard.service.daemon.runtime import daemon_paths, request
from gradshard.service.files.spec_location import locate_spec

FORMULA = "  self: grad * self.cos().conj()"
CLI = [sys.executable, "-m", "gradshard.service.cli"]


def edits(first: int, count: int) -> list[str]:
    """Formulas no earlier run compiled: sin's derivative times first, first + 1, …"""
    return [f"{FORMULA} * {n}" for n in range(first, first + count)]


def anchor(spec: Path, root: Path, toolchain) -> float:
    """torchgen's Functions.cpp compiled alone (ninja -j1), in seconds."""
    location = locate_spec(str(spec))
    torchgen(location, root / "torchgen")
    write_torchgen_ninja(location, root / "torchgen", root / "tg", toolchain, ["Functions.cpp"])
    _, seconds = ninja(root / "tg", 1)
    return seconds["Functions.o"]


def cli_try(spec: Path, cache: Path, env: dict[str, str]) -> float:
    """Seconds of one `gradshard try` (a FAIL is its expected verdict: exit 5)."""
    started = time.perf_counter()
    done = subprocess.run([*CLI, "try", "--spec", str(spec), "--cache", str(cache), "--json"],
                          capture_output=True, text=True, env=env)
    seconds = time.perf_counter() - started
    if done.returncode != 5:
        raise SystemExit(f"gradshard try exited with {done.returncode}:\n{done.stderr[-3000:]}")
    return seconds


def through_cli(spec: Path, cache: Path, env: dict[str, str], count: int,
                first_edit: int) -> list[float]:
    seconds, line = [], FORMULA
    for edit in edits(first_edit, count):
        replace_line(spec, line, edit)
        line = edit
        seconds.append(cli_try(spec, cache, env))
    replace_line(spec, line, FORMULA)
    return seconds


def through_daemon(spec: Path, cache: Path, out: Path, env: dict[str, str], count: int,
                   first_edit: int) -> list[tuple[float, float]]:
    """Per edit: save → the daemon's check finished, and the check's own seconds."""
    where = ["--spec", str(spec), "--cache", str(cache)]
    subprocess.run([*CLI, "daemon", "start", *where, "--out", str(out), "--codegen-only",
                    "--try"], env=env, check=True, capture_output=True)
    paths = daemon_paths(spec.resolve(), cache.resolve())
    try:
        status = wait_for_check(paths, 0.0)
        seconds, line = [], FORMULA
        for edit in edits(first_edit, count):
            time.sleep(1.0)  # the daemon settles its memory once idle (Session.settle)
            saved = time.time()
            replace_line(spec, line, edit)
            line = edit
            status = wait_for_check(paths, saved)
            checks = status["checks"]
            if checks.get("error") or not checks["ops"]:
                raise SystemExit(f"the daemon's check failed: {json.dumps(checks)[:3000]}")
            seconds.append((checks["finished"] - saved, checks["seconds"]))
            print(f"    daemon edit {len(seconds)}: {seconds[-1][0]:.2f} s, its check's phases "
                  f"{checks['phases']}", flush=True)
        replace_line(spec, line, FORMULA)
        return seconds
    finally:
        subprocess.run([*CLI, "daemon", "stop", *where], env=env, capture_output=True)


def wait_for_check(paths, after: float) -> dict:
    """The daemon's status once it is idle with a check finished after `after`."""
    deadline = time.monotonic() + 900
    while time.monotonic() < deadline:
        status = request(paths, {"request": "status"}, timeout=5.0) or {}
        checks = status.get("checks") or {}
        if status.get("state") == "idle" and checks.get("finished", 0) > after:
            return status
        # the figure is the daemon's own time of the check's end: polling slowly loses no
        # precision, and leaves the daemon's process (which answers every poll) the CPU
        time.sleep(0.25)
    raise SystemExit("the daemon finished no check within 900 s")


def ratio(label: str, ours: float, theirs: float, goal: float, note: str) -> None:
    print(f"  {label:8} {ours:7.2f} s / {theirs:7.2f} s = {ours / theirs:6.3f}x "
          f"(goal <= {goal:.3f}x = 1/{round(1 / goal)})  {note}", flush=True)


def main() -> None:
    location, repeat, toolchain, _ = compiler_benchmark(__doc__.split("\n")[0])
    count = max(1, repeat)
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        spec = copy_spec(location, root)
        functions = anchor(spec, root, toolchain)
        print(f"anchor: torchgen's Functions.cpp compiled alone {functions:.1f} s", flush=True)
        (root / "run").mkdir(mode=0o700)
        for number, compiler in enumerate(patch_compilers(toolchain.cxx)):
            measure(spec, root, compiler, functions, count, first_edit=3 + 20 * number)


def patch_compilers(default: str) -> list[str]:
    """The compiler `try` uses by default, then clang++ when it is installed and not that one:
    g++ 12 repeats the PCH's pending template instantiations in every unit, clang does them
    once in the PCH (issue 17's measurements), so the two are printed side by side."""
    clang = shutil.which("clang++")
    return [default] + ([clang] if clang and Path(clang).resolve() != Path(default).resolve()
                        else [])


def measure(spec: Path, root: Path, compiler: str, functions: float, count: int,
            first_edit: int) -> None:
    """The first try, the CLI and the daemon with this compiler (its own try directory and
    cache; edits no earlier run made)."""
    name = Path(compiler).name
    private = root / f"try-{name}"
    private.mkdir(mode=0o700)
    # this process finds the daemon's socket under the same runtime directory
    os.environ.update(GRADSHARD_TRY_DIR=str(private), XDG_RUNTIME_DIR=str(root / "run"),
                      CXX=compiler)
    env = dict(os.environ)
    cache = root / f"cache-{name}"
    replace_line(spec, FORMULA, f"{FORMULA} * 2")
    first = cli_try(spec, cache, env)
    replace_line(spec, f"{FORMULA} * 2", FORMULA)
    print(f"{name}: first try (three PCHs built) {first:.1f} s; sin's formula edited "
          f"({count} edits each, median):", flush=True)
    cli = through_cli(spec, cache, env, count, first_edit)
    ratio("CLI", statistics.median(cli), functions, 1 / 8,
          f"save → verdicts, fresh process ({' '.join(f'{s:.2f}' for s in cli)} s)")
    daemon = through_daemon(spec, cache, root / f"out-{name}", env, count, first_edit + count)
    ratio("daemon", statistics.median(s for s, _ in daemon), functions, 1 / 17,
          "save → verdicts, warm daemon (" + " ".join(f"{s:.2f}" for s, _ in daemon)
          + " s; its check " + " ".join(f"{c:.2f}" for _, c in daemon) + " s)")


if __name__ == "__main__":
    main()
