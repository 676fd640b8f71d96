"""What the benchmarks share: their command line and a cold torchgen."""

from __future__ import annotations

import argparse
import compileall
import importlib

from gradshard.service.spec_location import SpecLocation, locate_spec


def benchmark_args(description: str) -> tuple[SpecLocation, int]:
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--spec", help="spec directory (default: the installed torch's)")
    ap.add_argument("--repeat", type=int, default=5, help="runs per tool; the median is printed")
    args = ap.parse_args()
    return locate_spec(args.spec), args.repeat


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
