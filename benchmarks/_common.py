"""What the benchmarks share: their command line and a cold torchgen."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path
from typing import NamedTuple, Sequence

from gradshard.pipeline.problems import SpecFile
from gradshard.service.files.bytecode import compile_bytecode
from gradshard.service.files.spec_location import SpecLocation, locate_spec


class BenchmarkArgs(NamedTuple):
    location: SpecLocation
    repeat: int
    flags: frozenset[str]  # the benchmark's own switches that were given (`cold_only`)


def benchmark_args(description: str, flags: Sequence[tuple[str, str]] = ()) -> BenchmarkArgs:
    """The command line: --spec, --repeat, and the benchmark's own switches (flag, help)."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--spec", help="spec directory (default: the installed torch's)")
    ap.add_argument("--repeat", type=int, default=5, help="runs per tool; the median is printed")
    for flag, help_text in flags:
        ap.add_argument(flag, action="store_true", help=help_text)
    args = vars(ap.parse_args())
    given = frozenset(f[0].lstrip("-").replace("-", "_") for f in flags)
    return BenchmarkArgs(locate_spec(args["spec"]), args["repeat"],
                         frozenset(name for name in given if args[name]))


def copy_spec(location: SpecLocation, root: Path) -> Path:
    """The spec copied to root/spec, its Python files left out: the benchmarks edit the copy."""
    spec = root / "spec"
    shutil.copytree(location.root, spec, ignore=shutil.ignore_patterns("__pycache__", "*.py"))
    return spec


# PyTorch's build: tools/setup_helpers/generate_code.py's autograd part (its three
# generators, in its order, the nop selector), into one directory
GENERATE_CODE = """
import sys
from torchgen.packaged.autograd.gen_annotated_fn_args import gen_annotated
from torchgen.packaged.autograd.gen_autograd import gen_autograd, gen_autograd_python
from torchgen.selective_build.selector import SelectiveBuilder
native, tags, autograd_dir, out = sys.argv[1:]
gen_autograd_python(native, tags, out, autograd_dir)
gen_autograd(native, tags, out, autograd_dir, operator_selector=SelectiveBuilder.get_nop_selector())
gen_annotated(native, tags, out, autograd_dir)
"""


def generate_code_arguments(location: SpecLocation, out: Path) -> list[str]:
    """GENERATE_CODE's arguments for a spec: native_functions.yaml, tags.yaml, the directory
    of derivatives.yaml (and deprecated.yaml and templates/), the output directory."""
    return [str(location.path_of(SpecFile.NATIVE_FUNCTIONS)), str(location.path_of(SpecFile.TAGS)),
            str(location.path_of(SpecFile.DERIVATIVES).parent), str(out)]


def torchgen_generate_code(location: SpecLocation, out: Path) -> float:
    """GENERATE_CODE in this process, its caches cleared first: seconds."""
    from torchgen.packaged.autograd.gen_annotated_fn_args import gen_annotated
    from torchgen.packaged.autograd.gen_autograd import gen_autograd, gen_autograd_python
    from torchgen.selective_build.selector import SelectiveBuilder

    clear_torchgen_caches()
    native, tags, autograd_dir, target = generate_code_arguments(location, out)
    started = time.perf_counter()
    gen_autograd_python(native, tags, target, autograd_dir)
    gen_autograd(native, tags, target, autograd_dir,
                 operator_selector=SelectiveBuilder.get_nop_selector())
    gen_annotated(native, tags, target, autograd_dir)
    return time.perf_counter() - started


def clear_torchgen_caches() -> None:
    """torchgen keeps parse results in module globals; clear them so each run starts cold."""
    import torchgen.gen as gen
    import torchgen.utils as utils
    from torchgen.packaged.autograd import load_derivatives as ld

    gen._GLOBAL_PARSE_NATIVE_YAML_CACHE.clear()
    gen._GLOBAL_PARSE_TAGS_YAML_CACHE.clear()
    gen.parse_tags_yaml.cache_clear()
    ld._GLOBAL_LOAD_DERIVATIVE_CACHE.clear()
    utils._read_template.cache_clear()  # VariableType's first stage is read back by path


def compiler_benchmark(description: str, flags: Sequence[tuple[str, str]] = ()):
    """A compiling benchmark's start: its arguments (spec, repeat, its switches), gradshard's
    bytecode, and the toolchain both sides compile with, printed."""
    from gradshard.service.compile.toolchain import find_toolchain

    location, repeat, given = benchmark_args(description, flags)
    compile_bytecode()
    toolchain = find_toolchain(location, None, (), (), "")
    print(f"compiler: {toolchain.cxx} ({toolchain.version}); flags: {' '.join(toolchain.flags)}")
    return location, repeat, toolchain, given


def timed(command: list[str], env: dict[str, str] | None = None) -> float:
    """Seconds a command takes (it must succeed: else its error output ends the benchmark)."""
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=env)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{command[:4]} failed:\n{done.stderr[-2000:]}")
    return seconds


def wait_idle(cli: list[str], where: list[str], env: dict[str, str], builds: int = 1) -> None:
    """Until the daemon is idle with at least `builds` builds done."""
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        done = subprocess.run([*cli, "status", "--json", *where], env=env, capture_output=True,
                              text=True)
        status = json.loads(done.stdout or "{}")
        if status.get("state") == "idle" and status.get("builds", 0) >= builds:
            return
        time.sleep(0.1)
    raise SystemExit("the daemon did not finish its first build")


def mtime(path: Path) -> int | None:
    """None while the file is being replaced."""
    try:
        return path.stat().st_mtime_ns
    except FileNotFoundError:
        return None


def stamps(paths: list[Path]) -> dict[Path, int | None]:
    return {p: mtime(p) for p in paths}


def until_rewritten(before: dict[Path, int | None], started: float, what: str) -> float:
    """Seconds from `started` until one of the files (with their mtimes `before`) is
    rewritten."""
    while not any(mtime(p) not in (t, None) for p, t in before.items()):
        if time.perf_counter() - started > 300:
            raise SystemExit(f"the daemon rewrote no {what} within 300 s")
        time.sleep(0.005)
    return time.perf_counter() - started


# where the suite keeps each release's torchgen (tests/support/releases.py: generator-only
# wheels), so a benchmark after the suite downloads nothing
RELEASES = Path(os.environ.get("GRADSHARD_TEST_RELEASES")
                or Path.home() / ".cache" / "gradshard-tests" / "releases") / "generators"


def release_generator(version: str) -> Path:
    """The torchgen package of torch==version, from its smallest wheel (macOS arm64's, ~80 MB:
    torchgen/ only is unpacked), downloaded the first time."""
    target = RELEASES / version
    if (target / "torchgen" / "packaged" / "autograd" / "derivatives.yaml").is_file():
        return target / "torchgen"
    with tempfile.TemporaryDirectory() as scratch:
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-input",
                        "--only-binary=:all:", "--platform", "macosx_15_0_arm64",
                        "--python-version", "3.11", f"torch=={version}", "-d", scratch],
                       check=True, capture_output=True)
        wheel = next(Path(scratch).glob("torch-*.whl"))
        with zipfile.ZipFile(wheel) as archive:
            archive.extractall(Path(scratch) / "unpacked",
                               [n for n in archive.namelist() if n.startswith("torchgen/")])
        target.mkdir(parents=True, exist_ok=True)
        shutil.move(Path(scratch) / "unpacked" / "torchgen", target / "torchgen")
    return target / "torchgen"


FORMULA = "  self: grad * self.cosh().conj()\n"


def edit_formula(spec: Path, times: int) -> None:
    path = spec / "autograd" / "derivatives.yaml"
    text = path.read_text()
    current = next(line for line in text.split("\n") if line.startswith(FORMULA.rstrip("\n")))
    path.write_text(text.replace(current + "\n", FORMULA.rstrip("\n") + f" * {times}\n", 1))


def through_daemon(root: Path, spec: Path, repeat: int, options: list[str]) -> list[float]:
    """Seconds from saving each formula edit to Functions.cpp rewritten by a daemon started
    (and idle) before the first save, with `options`; each save waits for it to be idle
    again."""
    cache, out, run = root / "cache-daemon", root / "out-daemon", root / "run"
    run.mkdir(mode=0o700)
    where = ["--spec", str(spec), "--cache", str(cache)]
    env = {**os.environ, "XDG_RUNTIME_DIR": str(run)}
    cli = [sys.executable, "-m", "gradshard.service.cli", "daemon"]
    subprocess.run([*cli, "start", *where, "--out", str(out), *options], env=env,
                   check=True, capture_output=True)
    try:
        wait_idle(cli, where, env)
        seconds = []
        for i in range(repeat):
            time.sleep(1.0)  # the daemon settles its memory once idle (Session.settle)
            before = stamps([out / "Functions.cpp"])
            saved = time.perf_counter()
            edit_formula(spec, 200 + i)
            seconds.append(until_rewritten(before, saved, "Functions.cpp"))
            wait_idle(cli, where, env, builds=i + 2)
        return seconds
    finally:
        subprocess.run([*cli, "stop", *where], env=env, capture_output=True)
