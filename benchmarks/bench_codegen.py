#!/usr/bin/env python3
"""Code generation benchmark against torchgen 2.13, both timed in this process and run.

1. Every file gradshard produces (what generate_code's autograd part writes) into a fresh
   directory. torchgen = gen_autograd_python + gen_autograd + gen_annotated_fn_args
   (generate_code's order);
   gradshard = read + the build graph without a store (every task runs) + write.
2. The Python binding files alone: torchgen's gen_python_functions.gen (its native parse
   included) against gradshard's read + the graph's native side and bindings groups (the
   same three files; no store) + write.

Module caches are cleared before every torchgen run. Goal: ratios <= 1.0x.

    python benchmarks/bench_codegen.py [--spec DIR] [--repeat N]
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path

from _common import benchmark_args, clear_torchgen_caches, torchgen_generate_code

from gradshard.cache.engine.core import Engine
from gradshard.cache.graph.build_graph import binding_outputs
from gradshard.cache.version import code_version
from gradshard.pipeline.problems import SpecFile
from gradshard.pipeline.records import Text
from gradshard.service.files.outputs import write_outputs
from gradshard.service.files.placement import Placement, placed_files
from gradshard.service.files.spec_location import SpecLocation
from gradshard.service.graph_run import run_graph
from gradshard.service.query.analysis import prepare


def paths(location: SpecLocation) -> dict[str, str]:
    return {"native": str(location.path_of(SpecFile.NATIVE_FUNCTIONS)),
            "tags": str(location.path_of(SpecFile.TAGS)),
            "derivatives": str(location.path_of(SpecFile.DERIVATIVES)),
            "deprecated": str(location.path_of(SpecFile.DEPRECATED)),
            "templates": str(location.templates)}


def torchgen_all(location: SpecLocation, out: Path) -> float:
    return torchgen_generate_code(location, out)


def gradshard_all(location: SpecLocation, out: Path) -> float:
    started = time.perf_counter()
    result = run_graph(prepare(location), None)
    write_outputs(out, result.load(sorted(placed_files(result.files, Placement()))))
    return time.perf_counter() - started


def torchgen_bindings(location: SpecLocation, out: Path) -> float:
    from torchgen.packaged.autograd import gen_python_functions as gpf

    clear_torchgen_caches()
    p = paths(location)
    started = time.perf_counter()
    gpf.gen(str(out), p["native"], p["tags"], p["deprecated"], p["templates"])
    return time.perf_counter() - started


def gradshard_bindings(location: SpecLocation, out: Path) -> float:
    started = time.perf_counter()
    engine = Engine(None, code_version())
    outputs = binding_outputs(engine, prepare(location).inputs)
    assert not outputs.failures
    texts = engine.records([engine.ref(h, Text) for _, h in outputs.files])
    write_outputs(out, {name: t.text for (name, _), t in zip(outputs.files, texts)})
    return time.perf_counter() - started


def compare(label: str, theirs: list[float], ours: list[float]) -> None:
    t, g = statistics.median(theirs), statistics.median(ours)
    print(f"{label}:")
    print(f"  torchgen   {t:.3f} s")
    print(f"  gradshard  {g:.3f} s")
    print(f"  ratio      {g / t:.2f}x  (goal <= 1.0x)")


def main() -> None:
    location, repeat, _ = benchmark_args(__doc__.split("\n")[0])
    timings: dict[str, list[float]] = {k: [] for k in ("ta", "ga", "tb", "gb")}
    with tempfile.TemporaryDirectory() as scratch:
        for i in range(repeat):
            timings["ta"].append(torchgen_all(location, Path(scratch) / f"ta{i}"))
            timings["ga"].append(gradshard_all(location, Path(scratch) / f"ga{i}"))
            timings["tb"].append(torchgen_bindings(location, Path(scratch) / f"tb{i}"))
            timings["gb"].append(gradshard_bindings(location, Path(scratch) / f"gb{i}"))
    compare(f"all 23 files, median of {repeat}", timings["ta"], timings["ga"])
    compare(f"Python binding files (gen_python_functions), median of {repeat}",
            timings["tb"], timings["gb"])


if __name__ == "__main__":
    main()
