#!/usr/bin/env python3
"""Autograd codegen benchmark against torchgen 2.13, both timed in this process and run.

Both produce Functions.h/.cpp, python_functions.h, python_functions_0..4.cpp and
python_functionsEverything.cpp from the spec into a fresh directory:
torchgen = load_derivatives + parse_native_yaml + match_differentiability_info +
gen_autograd_functions_lib + gen_autograd_functions_python (module caches cleared each run);
gradshard = read + parse + match + render + write (no cache: the engine is not used).
Goal: ratio <= 1.0x.

    python benchmarks/bench_codegen.py [--spec DIR] [--repeat N]
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path

from gradshard.pipeline.errors import SpecFile
from gradshard.service.codegen import load_texts, run_autograd_codegen
from gradshard.service.outputs import write_outputs
from gradshard.service.spec_location import SpecLocation

from _common import benchmark_args, clear_torchgen_caches


def time_torchgen(location: SpecLocation, out: Path) -> float:
    import torchgen.gen as gen
    from torchgen.api import cpp
    from torchgen.api.autograd import match_differentiability_info
    from torchgen.packaged.autograd import gen_autograd_functions as gaf
    from torchgen.packaged.autograd import load_derivatives as ld

    clear_torchgen_caches()
    native = str(location.path_of(SpecFile.NATIVE_FUNCTIONS))
    tags = str(location.path_of(SpecFile.TAGS))
    started = time.perf_counter()
    infos, _ = ld.load_derivatives(str(location.path_of(SpecFile.DERIVATIVES)), native, tags)
    functions = gen.parse_native_yaml(native, tags).native_functions
    match_differentiability_info(sorted(functions, key=lambda f: cpp.name(f.func)), infos)
    gaf.gen_autograd_functions_lib(str(out), infos, str(location.templates))
    gaf.gen_autograd_functions_python(str(out), infos, str(location.templates))
    return time.perf_counter() - started


def time_gradshard(location: SpecLocation, out: Path) -> float:
    started = time.perf_counter()
    result = run_autograd_codegen(location, load_texts(location))
    write_outputs(out, result.files)
    return time.perf_counter() - started


def main() -> None:
    location, repeat = benchmark_args(__doc__.split("\n")[0])
    theirs, ours = [], []
    with tempfile.TemporaryDirectory() as scratch:
        for i in range(repeat):
            theirs.append(time_torchgen(location, Path(scratch) / f"torchgen{i}"))
            ours.append(time_gradshard(location, Path(scratch) / f"gradshard{i}"))
    t, g = statistics.median(theirs), statistics.median(ours)
    print(f"autograd codegen (Functions.*, python_functions*), median of {repeat}:")
    print(f"  torchgen   {t:.3f} s")
    print(f"  gradshard  {g:.3f} s")
    print(f"  ratio      {g / t:.2f}x  (goal <= 1.0x)")


if __name__ == "__main__":
    main()
