"""What the benchmarks share: their command line and a cold torchgen."""

from __future__ import annotations

import argparse
import compileall
import importlib
import shutil
from pathlib import Path

from gradshard.service.spec_location import SpecLocation, locate_spec


def benchmark_args(description: str) -> tuple[SpecLocation, int]:
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--spec", help="spec directory (default: the installed torch's)")
    ap.add_argument("--repeat", type=int, default=5, help="runs per tool; the median is printed")
    args = ap.parse_args()
    return locate_spec(args.spec), args.repeat


def copy_spec(location: SpecLocation, root: Path) -> Path:
    """The spec copied to root/spec, its Python files left out: the benchmarks edit the copy."""
    spec = root / "spec"
    shutil.copytree(location.root, spec, ignore=shutil.ignore_patterns("__pycache__", "*.py"))
    return spec


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


def compile_gradshard_bytecode() -> None:
    """Write gradshard's .pyc files, as `pip install` does (torch's wheel ships torchgen's), so
    that fresh processes of both tools load bytecode, even under PYTHONDONTWRITEBYTECODE."""
    for package in ("pipeline", "cache", "service"):
        for directory in importlib.import_module(f"gradshard.{package}").__path__:
            compileall.compile_dir(directory, quiet=1)


def compiler_benchmark(description: str):
    """A compiling benchmark's start: its arguments (spec, repeat), gradshard's bytecode, and
    the toolchain both sides compile with, printed."""
    from gradshard.service.toolchain import find_toolchain

    location, repeat = benchmark_args(description)
    compile_gradshard_bytecode()
    toolchain = find_toolchain(location, None, (), (), "")
    print(f"compiler: {toolchain.cxx} ({toolchain.version}); flags: {' '.join(toolchain.flags)}")
    return location, repeat, toolchain
