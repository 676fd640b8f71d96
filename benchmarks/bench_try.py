#!/usr/bin/env python3
"""`gradshard try` against what a PyTorch developer waits for today, all in this one run.

The anchor, per compiler: torchgen's Functions.cpp (generated once, from the unedited spec)
compiled alone (ninja -j1, one run) with that compiler and the flags and torch headers
`gradshard build` uses: the first of the steps a PyTorch rebuild takes before an edited
formula can be tested (then a VariableType file, libtorch_cpu's link, the tests).

gradshard's side, per compiler (clang++ when installed, and g++; `--compilers` picks), on a
copy of the installed spec with sin's backward formula edited wrong (`grad *
self.cos().conj() * N`; the edit reaches sin, sin_, sin.out and _foreach_sin; every check
fails, the slower verdict: gradcheck reruns a failing sample in slow mode and try locates
the error), the default dtypes (float64, complex128). The compiler is named to `try` and to
the daemon by $GRADSHARD_TRY_CXX, each compiler with a try directory and a cache of its own:

  first try     an empty try directory and cache: the PCH is built; save → the CLI's end
                goal <= 45 s for the compiler `try` chooses by default (clang++ when
                installed); the other's printed, without a goal
  CLI           `gradshard try` in a fresh process, its PCH built: save → its first verdict
                line printed (no goal), and save → its end (every verdict printed); goal
                <= 1/10 of the anchor
  daemon cold   `gradshard daemon start --codegen-only --try`, just started and idle: its
                first save → its first verdict (no goal: its worker may still be importing
                torch, its templates and patch code are not loaded yet)
  daemon        the same daemon, warm (that first save checked): save → its first verdict
                and save → all its verdicts, from its status
                (the check's wall-clock start plus its phases' first_verdict and
                all_verdicts, seconds from that start); goals, clang++: <= 1/60 and <= 1/30;
                g++: all verdicts <= 1/17
  try directory its size on disk (du) after the runs, each and their sum; goal: the sum
                <= 1 GB (10^9 bytes)

Each CLI and warm daemon figure is the median of --repeat edits (default 5), each a formula no
earlier run compiled.

Then, with clang++ only, the build (`gradshard build --cxx clang++`, default -j) on a warm
output directory (its cold build first, printed: 7-10 minutes on 2 cores) against today's
flow, torchgen's generation (a fresh process, as bench_build.py runs it) plus one file
compiled alone with clang++:

  backward      sin's backward formula edited → objects; against torchgen + Functions.cpp
                goal <= 1/20
  forward       sin's forward formula written out (auto_element_wise's, times 3) →
                objects; against torchgen + the VariableType_N.cpp holding sin's kernel
                (sin_, sin.out and _foreach_sin are in others: one file is the least a
                PyTorch rebuild compiles); goal <= 1/20
  GCC's floor   with g++ also measured: an empty unit compiled by g++ with the build's
                VariableType PCH (its header from the clang++ build's compile directory,
                precompiled by g++ with the build's flags), against g++'s anchor: what every
                g++ unit pays for instantiating the headers' pending templates; no goal

Each row: the figure, its anchor, their ratio, the goal and `ok` or `MISSED`. Times are wall
seconds, interpreter start included; the machine should be otherwise idle.

    python benchmarks/bench_try.py [--spec DIR] [--repeat N] [--compilers clang++,g++]
                                   [--skip-build-rows]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from _common import compile_bytecode, copy_spec
from bench_build import torchgen
from bench_compile import ninja, replace_line, write_torchgen_ninja

from gradshard.pipeline.layout.compile_layout import VARIABLE_TYPE_PCH
from gradshard.service.compile.toolchain import find_toolchain
from gradshard.service.daemon.runtime import daemon_paths, request
from gradshard.service.exit_codes import EXIT_TRY_FAILED  # a wrong formula's expected verdict
from gradshard.service.files.spec_location import SpecLocation, locate_spec
from gradshard.service.live.command import torch_library_dir
from gradshard.service.live.compiler import TRY_CXX_VARIABLE, choose_try_compiler

FORMULA = "  self: grad * self.cos().conj()"
FORWARD = "  result: auto_element_wise"
# the build rows' edits (their cache is their own: any factor is new to it)
BACKWARD_EDIT = f"{FORMULA} * 97"
# auto_element_wise's formula for sin written out, times 3: only the kernels' forward code
# changes, not the node
FORWARD_EDIT = "  result: (self_t.conj() * self_p.cos().conj() * 3).conj()"
CLI = [sys.executable, "-m", "gradshard.service.cli"]
# a verdict line as the CLI prints it when the worker finds it (command.py: verdict_line);
# the SKIP lines printed before any check are not verdicts
VERDICT = re.compile(r"^  (PASS|FAIL) ")
FIRST_TRY_GOAL = 45.0
TRY_DIRECTORIES_GOAL = 10**9
SIN_KERNEL = re.compile(r"^at::Tensor sin\(c10::DispatchKeySet", re.M)
MISSED: list[str] = []  # the rows whose goal was missed, for the last line


@dataclass(frozen=True)
class Compiler:
    name: str  # as --compilers names it
    path: str  # resolved
    chosen: bool  # the one `try` uses by default

    @property
    def clang(self) -> bool:
        return "clang" in self.name


# ---- the command line and the run ----

def parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--spec", help="spec directory (default: the installed torch's)")
    ap.add_argument("--repeat", type=int, default=5, help="edits per figure; the median is "
                    "printed")
    ap.add_argument("--compilers", default="clang++,g++",
                    help="comma-separated compilers to measure (default: clang++,g++; one not "
                    "installed is skipped with a line)")
    ap.add_argument("--skip-build-rows", action="store_true",
                    help="leave out the build rows (their cold build takes ~10 minutes)")
    return ap.parse_args()


def main() -> None:
    args = parse_args()
    location = locate_spec(args.spec)
    compile_bytecode()
    # the default compiler is decided without this benchmark's own naming of one
    os.environ.pop(TRY_CXX_VARIABLE, None)
    compilers = installed(args.compilers.split(","), location)
    count = max(1, args.repeat)
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        spec = copy_spec(location, root)
        copied = locate_spec(str(spec))
        generation = torchgen(copied, root / "torchgen")
        print(f"torchgen: generation {generation:.2f} s (a fresh process)", flush=True)
        (root / "run").mkdir(mode=0o700)
        # the daemons' sockets, which this process's status requests find there too
        os.environ["XDG_RUNTIME_DIR"] = str(root / "run")
        anchors, sizes = {}, {}
        for number, compiler in enumerate(compilers):
            anchors[compiler.name] = anchor(copied, root, compiler, "Functions.cpp")
            print(f"{compiler.name} ({compiler.path}): anchor, torchgen's Functions.cpp "
                  f"compiled alone {anchors[compiler.name]:.1f} s", flush=True)
            sizes[compiler.name] = measure(spec, root, compiler, anchors[compiler.name], count,
                                           first_edit=3 + 40 * number)
        print_sizes(sizes)
        build_section(args, spec, root, compilers, anchors, generation)
    print("all goals met" if not MISSED else f"goals MISSED: {', '.join(MISSED)}")


def installed(names: list[str], location: SpecLocation) -> list[Compiler]:
    """The compilers asked for that are installed (the others printed), and which one `try`
    would choose by default."""
    default = Path(choose_try_compiler(location, None, torch_library_dir()).toolchain.cxx)
    found = []
    for name in (n.strip() for n in names if n.strip()):
        path = shutil.which(name)
        if path is None:
            print(f"{name}: not installed, skipped", flush=True)
            continue
        found.append(Compiler(name, path, Path(path).resolve() == default.resolve()))
    if not found:
        raise SystemExit("none of the compilers asked for is installed")
    return found


# ---- the anchors ----

def anchor(location: SpecLocation, root: Path, compiler: Compiler, unit: str) -> float:
    """torchgen's `unit` compiled alone (ninja -j1) with this compiler and the build's flags:
    seconds."""
    toolchain = find_toolchain(location, compiler.path, (), (), "")
    build = root / f"tg-{compiler.name}-{Path(unit).stem}"
    write_torchgen_ninja(location, root / "torchgen", build, toolchain, [unit])
    _, seconds = ninja(build, 1)
    return seconds[f"{Path(unit).stem}.o"]


# ---- the try rows ----

def measure(spec: Path, root: Path, compiler: Compiler, functions: float, count: int,
            first_edit: int) -> int:
    """The first try, the CLI and the daemon with this compiler (a try directory and a cache
    of its own; edits no earlier run made): the try directory's size on disk after them."""
    private = root / f"try-{compiler.name}"
    private.mkdir(mode=0o700)
    env = {**os.environ, "GRADSHARD_TRY_DIR": str(private), TRY_CXX_VARIABLE: compiler.path}
    cache = root / f"cache-{compiler.name}"
    version = find_toolchain(locate_spec(str(spec)), compiler.path, (), (), "").version
    _, first = cli_try(spec, cache, env, version, FORMULA, f"{FORMULA} * 2")
    replace_line(spec, f"{FORMULA} * 2", FORMULA)
    row(compiler.name, "first try", first, functions, None,
        "empty try directory and cache: PCH built; save → verdicts printed",
        seconds_goal=FIRST_TRY_GOAL if compiler.chosen else None)
    cli = through_cli(spec, cache, env, version, edits(first_edit, count))
    row(compiler.name, "CLI first", statistics.median(f for f, _ in cli), functions, None,
        "save → first verdict line, fresh process (" + listed(f for f, _ in cli) + ")")
    row(compiler.name, "CLI", statistics.median(a for _, a in cli), functions, 1 / 10,
        "save → every verdict printed, process end (" + listed(a for _, a in cli) + ")")
    cold, daemon = through_daemon(spec, cache, root / f"out-{compiler.name}", env, compiler,
                                  edits(first_edit + 2 * count, 1) + edits(first_edit + count,
                                                                           count))
    row(compiler.name, "daemon cold", cold[0], functions, None,
        "save → first verdict, the daemon's first save after its start (all verdicts "
        f"{cold[1]:.2f} s)")
    row(compiler.name, "daemon first", statistics.median(f for f, _, _ in daemon), functions,
        1 / 60 if compiler.clang else None,
        "save → first verdict, warm daemon (" + listed(f for f, _, _ in daemon) + ")")
    row(compiler.name, "daemon", statistics.median(a for _, a, _ in daemon), functions,
        1 / 30 if compiler.clang else 1 / 17,
        "save → all verdicts, warm daemon (" + listed(a for _, a, _ in daemon)
        + "; its check done " + listed(d for _, _, d in daemon) + ")")
    return disk_usage(private)


def edits(first: int, count: int) -> list[str]:
    """Wrong formulas no earlier run compiled: sin's derivative times first, first + 1, …"""
    return [f"{FORMULA} * {n}" for n in range(first, first + count)]


def cli_try(spec: Path, cache: Path, env: dict[str, str], version: str, old: str,
            new: str) -> tuple[float, float]:
    """Save `new` in place of `old`, then one `gradshard try` read line by line as it prints:
    seconds from the save to its first verdict line, and to its end."""
    with tempfile.TemporaryFile("w+") as errors:
        saved = time.perf_counter()
        replace_line(spec, old, new)
        process = subprocess.Popen([*CLI, "try", "--spec", str(spec), "--cache", str(cache)],
                                   stdout=subprocess.PIPE, stderr=errors, text=True, env=env)
        assert process.stdout is not None
        first, lines = None, []
        for line in process.stdout:
            if first is None and VERDICT.match(line):
                first = time.perf_counter() - saved
            lines.append(line)
        code = process.wait()
        ended = time.perf_counter() - saved
        errors.seek(0)
        check_cli(code, first, lines, errors.read(), version)
    return first, ended


def check_cli(code: int, first: float | None, lines: list[str], errors: str,
              version: str) -> None:
    """A wrong formula fails its checks (exit 5), with a verdict line, compiled by the
    compiler named: anything else ends the benchmark."""
    text = "".join(lines)
    if code != EXIT_TRY_FAILED:
        raise SystemExit(f"gradshard try exited with {code} (expected {EXIT_TRY_FAILED}):\n"
                         f"{text[-2000:]}\n{errors[-3000:]}")
    if first is None:
        raise SystemExit(f"gradshard try printed no verdict line:\n{text[-3000:]}")
    if not lines or f"compiled with {version}" not in lines[0]:
        raise SystemExit(f"gradshard try did not compile with {version}:\n{text[:1000]}")


def through_cli(spec: Path, cache: Path, env: dict[str, str], version: str,
                formulas: list[str]) -> list[tuple[float, float]]:
    seconds, line = [], FORMULA
    for formula in formulas:
        seconds.append(cli_try(spec, cache, env, version, line, formula))
        line = formula
    replace_line(spec, line, FORMULA)
    return seconds


def through_daemon(spec: Path, cache: Path, out: Path, env: dict[str, str], compiler: Compiler,
                   formulas: list[str]) -> tuple[tuple[float, float, float],
                                                 list[tuple[float, float, float]]]:
    """Per edit: save → the daemon's first verdict, → all its verdicts, → its check done;
    the first edit's apart (the daemon just started: cold), the others' (warm)."""
    where = ["--spec", str(spec), "--cache", str(cache)]
    started = subprocess.run([*CLI, "daemon", "start", *where, "--out", str(out),
                              "--codegen-only", "--try"], env=env, capture_output=True,
                             text=True)
    if started.returncode:
        raise SystemExit(f"gradshard daemon start failed:\n{started.stderr[-3000:]}")
    paths = daemon_paths(spec.resolve(), cache.resolve())
    try:
        check_daemon_compiler(wait_for_check(paths, 0.0), compiler)
        seconds, line = [], FORMULA
        for formula in formulas:
            time.sleep(1.0)  # the daemon settles its memory once idle (Session.settle)
            saved = time.time()
            replace_line(spec, line, formula)
            line = formula
            checks = wait_for_check(paths, saved)["checks"]
            seconds.append(verdict_times(checks, saved))
            print(f"    daemon edit {len(seconds)}: save → all verdicts {seconds[-1][1]:.2f} s, "
                  f"its check's phases {checks['phases']}", flush=True)
        replace_line(spec, line, FORMULA)
        return seconds[0], seconds[1:]
    finally:
        subprocess.run([*CLI, "daemon", "stop", *where], env=env, capture_output=True)


def check_daemon_compiler(status: dict, compiler: Compiler) -> None:
    cxx = (status["checks"].get("compiler") or {}).get("cxx", "")
    if not cxx or Path(cxx).resolve() != Path(compiler.path).resolve():
        raise SystemExit(f"the daemon's patches compile with {cxx or 'nothing'}, not "
                         f"{compiler.path}")


def verdict_times(checks: dict, saved: float) -> tuple[float, float, float]:
    """From the daemon's record of its check: "started" is the wall clock (time.time()) when
    the check began (the build's files written), and phases' first_verdict and all_verdicts
    are seconds from that start to the first and the last op's verdict; "finished" is the
    wall clock once the check ended (failing samples located, the verdicts recorded)."""
    phases = checks.get("phases") or {}
    if checks.get("error") or not checks.get("ops"):
        raise SystemExit(f"the daemon's check failed: {json.dumps(checks)[:3000]}")
    if "first_verdict" not in phases or "all_verdicts" not in phases or "started" not in checks:
        raise SystemExit("the daemon's status has no started, phases.first_verdict or "
                         f"phases.all_verdicts: {json.dumps(checks)[:3000]}")
    if not any(s["verdict"] == "FAIL" for op in checks["ops"] for s in op["samples"]):
        raise SystemExit(f"the daemon's check of a wrong formula did not fail: "
                         f"{json.dumps(checks['lines'])[:3000]}")
    start = checks["started"] - saved
    return (start + phases["first_verdict"], start + phases["all_verdicts"],
            checks["finished"] - saved)


def wait_for_check(paths, after: float) -> dict:
    """The daemon's status once it is idle with a check finished after `after`."""
    deadline = time.monotonic() + 900
    while time.monotonic() < deadline:
        status = request(paths, {"request": "status"}, timeout=5.0) or {}
        checks = status.get("checks") or {}
        if status.get("state") == "idle" and checks.get("finished", 0) > after:
            return status
        # the figures are the daemon's own wall-clock records: polling slowly loses no
        # precision, and leaves the daemon's process (which answers every poll) the CPU
        time.sleep(0.25)
    raise SystemExit("the daemon finished no check within 900 s")


def disk_usage(directory: Path) -> int:
    done = subprocess.run(["du", "-s", "--block-size=1", str(directory)], capture_output=True,
                          text=True, check=True)
    return int(done.stdout.split()[0])


def print_sizes(sizes: dict[str, int]) -> None:
    print("try directories after the runs (du):", flush=True)
    for name, size in sizes.items():
        print(f"  {name:12} {size / 1e6:8.0f} MB", flush=True)
    total = sum(sizes.values())
    met = total <= TRY_DIRECTORIES_GOAL
    print(f"  {'together':12} {total / 1e6:8.0f} MB (goal <= {TRY_DIRECTORIES_GOAL / 1e6:.0f} "
          f"MB)  {verdict(met, 'try directories')}", flush=True)


# ---- the build rows ----

def build_section(args: argparse.Namespace, spec: Path, root: Path, compilers: list[Compiler],
                  anchors: dict[str, float], generation: float) -> None:
    clang = next((c for c in compilers if c.clang), None)
    if args.skip_build_rows:
        print("build rows: skipped (--skip-build-rows)", flush=True)
    elif clang is None:
        print("build rows: skipped (no clang++ measured: not installed, or not in "
              "--compilers)", flush=True)
    else:
        gxx = next((c for c in compilers if not c.clang), None)
        build_rows(spec, root, clang, anchors[clang.name], generation,
                   (gxx, anchors[gxx.name]) if gxx else None)


def build_rows(spec: Path, root: Path, clang: Compiler, functions: float, generation: float,
               gxx: tuple[Compiler, float] | None) -> None:
    """Sin's backward, then its forward formula edited, through `build --cxx clang++` on a
    warm output directory; then GCC's floor."""
    location = locate_spec(str(spec))
    holder = sin_variable_type(root / "torchgen")
    kernels = anchor(location, root, clang, holder)
    print(f"build rows ({clang.name}): {holder} compiled alone {kernels:.1f} s", flush=True)
    out, cache = root / "build-out", root / "build-cache"
    cold, report = build(spec, out, cache, clang)
    print(f"  cold build (warms the output directory) {cold:.1f} s, {report['units']} units",
          flush=True)
    replace_line(spec, FORMULA, BACKWARD_EDIT)
    backward, backward_report = build(spec, out, cache, clang)
    replace_line(spec, f"{BACKWARD_EDIT}\n{FORWARD}", f"{BACKWARD_EDIT}\n{FORWARD_EDIT}")
    forward, forward_report = build(spec, out, cache, clang)
    replace_line(spec, f"{BACKWARD_EDIT}\n{FORWARD_EDIT}", f"{FORMULA}\n{FORWARD}")
    row(clang.name, "backward", backward, generation + functions, 1 / 20,
        f"save → objects, against torchgen + Functions.cpp; {recompiled(backward_report)}")
    row(clang.name, "forward", forward, generation + kernels, 1 / 20,
        f"save → objects, against torchgen + {holder}; {recompiled(forward_report)}")
    if gxx is None:
        print("  GCC's floor: not measured (g++ not in --compilers)", flush=True)
        return
    compiler, anchor_seconds = gxx
    floor = gcc_floor(location, root, out / "compile", compiler)
    row(compiler.name, "GCC's floor", floor, anchor_seconds, None,
        f"an empty unit, {compiler.name} with the build's VariableType PCH, against "
        f"{compiler.name}'s Functions.cpp")


def sin_variable_type(torchgen_out: Path) -> str:
    """The VariableType_N.cpp torchgen wrote sin's kernel into (by the hash of its name)."""
    for path in sorted(torchgen_out.glob("VariableType_*.cpp")):
        if SIN_KERNEL.search(path.read_text()):
            return path.name
    raise SystemExit("no VariableType file of torchgen's holds sin's kernel")


def build(spec: Path, out: Path, cache: Path, compiler: Compiler) -> tuple[float, dict]:
    """`gradshard build --cxx` in a fresh process: its seconds and its compile report."""
    started = time.perf_counter()
    done = subprocess.run([*CLI, "build", "--json", "--cxx", compiler.path, "--spec",
                           str(spec), "--out", str(out), "--cache", str(cache)],
                          capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if done.returncode:
        raise SystemExit(f"gradshard build failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return seconds, json.loads(done.stdout)["compile"]


def recompiled(report: dict) -> str:
    spliced = f", spliced into {report['spliced']}" if report.get("spliced") else ""
    return f"recompiled {report['compiled']}{spliced}"


def gcc_floor(location: SpecLocation, root: Path, compile_dir: Path, compiler: Compiler) -> float:
    """Seconds of an empty unit compiled by g++ with the build's VariableType PCH: the
    compile directory's header, precompiled by g++ with the build's flags (not timed), then
    forced into an empty unit as the build forces it into each of its units."""
    toolchain = find_toolchain(location, compiler.path, (), (), "")
    floor = root / "gcc-floor"
    floor.mkdir()
    header = floor / f"{VARIABLE_TYPE_PCH}.h"
    shutil.copy(compile_dir / "pch" / header.name, header)
    (floor / "empty.cpp").write_text("")
    common = [toolchain.cxx, *toolchain.flags, *toolchain.include_flags()]
    compiled(common + ["-x", "c++-header", str(header), "-o", f"{header}.gch"], compile_dir)
    started = time.perf_counter()
    # an unusable .gch would silently parse the headers instead: an error here
    compiled(common + ["-Winvalid-pch", "-Werror=invalid-pch", "-include", str(header), "-c",
                       str(floor / "empty.cpp"), "-o", str(floor / "empty.o")], compile_dir)
    return time.perf_counter() - started


def compiled(command: list[str], directory: Path) -> None:
    done = subprocess.run(command, cwd=directory, capture_output=True, text=True)
    if done.returncode or done.stderr.strip():
        raise SystemExit(f"{' '.join(command[:1])} failed ({done.returncode}):\n"
                         f"{done.stderr[-3000:]}")


# ---- the rows ----

def row(who: str, label: str, ours: float, anchor_seconds: float, goal: float | None,
        note: str, seconds_goal: float | None = None) -> None:
    """One figure against its anchor; the goal a ratio of the anchor, or (seconds_goal)
    seconds; none: measured only."""
    if seconds_goal is not None:
        target, met = f"goal <= {seconds_goal:.0f} s", ours <= seconds_goal
    elif goal is not None:
        target, met = f"goal <= {goal:.3f}x = 1/{round(1 / goal)}", ours <= goal * anchor_seconds
    else:
        target, met = "no goal", None
    print(f"  {label:12} {ours:7.2f} s / {anchor_seconds:7.2f} s = "
          f"{ours / anchor_seconds:6.3f}x ({target})  {verdict(met, who + ' ' + label)}  {note}",
          flush=True)


def verdict(met: bool | None, label: str) -> str:
    if met is None:
        return "measured"
    if not met:
        MISSED.append(label)
    return "ok" if met else "MISSED"


def listed(values) -> str:
    return " ".join(f"{v:.2f}" for v in values) + " s"


if __name__ == "__main__":
    main()
