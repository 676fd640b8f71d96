#!/usr/bin/env python3
"""Parse-stage benchmark against torchgen 2.13, both timed in this process and run.

1. Full parse: torchgen's load_derivatives + parse_native_yaml (its module caches cleared
   before every run) against gradshard's decode + the build graph's native and autograd sides
   without a store (every task runs; the autograd side matches too). Goal: ratio <= 1.0x.
2. Re-parse after editing one derivatives.yaml entry, the others unchanged: the file is split
   again whole (as the build's split task does), only the changed entry is parsed and
   derived again (earlier results are kept by entry hash, as the cache engine will keep
   them), and op names are renumbered. Goal: <= 5 ms.

    python benchmarks/bench_parse.py [--spec DIR] [--repeat N]
"""

from __future__ import annotations

import gc
import statistics
import time
from pathlib import Path

from _common import benchmark_args, clear_torchgen_caches

from gradshard.cache.engine.core import Engine
from gradshard.cache.graph.build_graph import spec_sides
from gradshard.cache.version import code_version
from gradshard.pipeline.parse.differentiability import (assign_op_names, bucket_infos,
                                                        derivative_buckets, view_copy_infos,
                                                        with_op_names)
from gradshard.pipeline.parse.native import NativeFunction
from gradshard.pipeline.parse.source import split_entries
from gradshard.pipeline.parse.spec import decode_spec, parse_derivatives_entry
from gradshard.pipeline.problems import YAML_FILES, SpecFile
from gradshard.pipeline.releases import DEFAULT_RELEASE, release_named
from gradshard.service.query.analysis import analyze, prepare


def time_torchgen(paths: dict[SpecFile, Path]) -> float:
    import torchgen.gen as gen
    from torchgen.packaged.autograd import load_derivatives as ld

    clear_torchgen_caches()
    native, tags = str(paths[SpecFile.NATIVE_FUNCTIONS]), str(paths[SpecFile.TAGS])
    started = time.perf_counter()
    ld.load_derivatives(str(paths[SpecFile.DERIVATIVES]), native, tags)
    gen.parse_native_yaml(native, tags)
    return time.perf_counter() - started


def release_torchgen() -> None:
    """Drop torchgen's cached parse so the next timings don't pay GC for its objects."""
    clear_torchgen_caches()
    gc.collect()


def time_gradshard(paths: dict[SpecFile, Path]) -> float:
    started = time.perf_counter()
    spec_sides(Engine(None, code_version()),
               decode_spec({f: p.read_bytes() for f, p in paths.items()}),
               release_named(DEFAULT_RELEASE))
    return time.perf_counter() - started


class EntryMemo:
    """What the cache engine keeps between builds: per-entry results by entry hash (and op
    names), so only a changed entry is parsed and derived again."""

    def __init__(self, ordered: tuple[NativeFunction, ...]) -> None:
        lookup = derivative_buckets(ordered, range(len(ordered)))
        self.buckets = {schema: tuple(ordered[p] for p in lookup.buckets[bucket])
                        for schema, _, bucket in lookup.schemas}
        self.infos_by_digest: dict[str, object] = {}
        self.numbered: dict[tuple, object] = {}

    def infos(self, entry, digest):
        if digest not in self.infos_by_digest:
            parsed = parse_derivatives_entry(entry)
            self.infos_by_digest[digest] = bucket_infos(parsed, self.buckets[parsed.name])
        return self.infos_by_digest[digest]

    def with_ops(self, digest, infos, ops):
        key = (digest, ops)
        if key not in self.numbered:
            self.numbered[key] = with_op_names(infos, ops)
        return self.numbered[key]


def reparse(text: str, memo: EntryMemo, groups) -> int:
    entries = split_entries(SpecFile.DERIVATIVES, text)
    digests = [e.digest for e in entries]
    infos = [memo.infos(e, d) for e, d in zip(entries, digests)]
    numbered = [memo.with_ops(d, i, ops) for d, i, ops in zip(digests, infos, assign_op_names([i.op_prefixes for i in infos]))]
    return len(numbered + view_copy_infos(numbered, groups))


def main() -> None:
    location, repeat, _ = benchmark_args(__doc__.split("\n")[0])
    paths = {f: location.path_of(f) for f in YAML_FILES}

    theirs, ours = [], []
    for _ in range(repeat):
        theirs.append(time_torchgen(paths))
        ours.append(time_gradshard(paths))
    t, g = statistics.median(theirs), statistics.median(ours)
    print(f"full parse, median of {repeat} ({location.root}):")
    print(f"  torchgen   load_derivatives + parse_native_yaml  {t:.3f} s")
    print(f"  gradshard  decode + native and autograd sides   {g:.3f} s")
    print(f"  ratio      {g / t:.2f}x  (goal <= 1.0x)")

    release_torchgen()
    grouping = analyze(prepare(location)).view_grouping
    memo = EntryMemo(grouping.ordered)
    text = paths[SpecFile.DERIVATIVES].read_text()
    before = "self: mul_tensor_backward(grad, other, self.scalar_type())"
    assert before in text, "the benchmark edits mul.Tensor's self formula"
    reparse(text, memo, grouping.groups)  # warm: every entry known
    times = []
    for i in range(50):
        edited = text.replace(before, f"self: mul_tensor_backward(grad, other, self.scalar_type()) * {i + 2}")
        started = time.perf_counter()
        count = reparse(edited, memo, grouping.groups)
        times.append(time.perf_counter() - started)
    print("re-parse after editing one derivatives entry (mul.Tensor), others unchanged, median of 50:")
    print(f"  gradshard  {statistics.median(times) * 1000:.2f} ms for {count} info schemas "
          f"(goal <= 5 ms)")


if __name__ == "__main__":
    main()
