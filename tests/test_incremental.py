"""The cached build against a clean one and against torchgen.

Every edit is built incrementally on a cache that already holds the real spec's build (and
the other edits' builds), built again from no cache at all, and compared with torchgen run
on the same edited spec: the three must agree byte for byte. Edits that change little must
also cost little (early cutoff).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gradshard.cache.engine import EngineStats
from gradshard.cache.store import Store
from gradshard.service.incremental import Generation
from gradshard.service.inputs import read_inputs
from gradshard.service.spec_location import locate_spec
from support.oracle import file_digests, torchgen_files
from support.spec_edits import ALL_EDITS, apply_edits
from support.specs import stage_packaged_spec


def engine_build(spec_dir: Path, cache: Path | None) -> tuple[dict[str, str], EngineStats]:
    """The build graph on a spec (no output directory): its files, and what ran."""
    generation = Generation.prepare(read_inputs(locate_spec(str(spec_dir))))
    warnings: list[str] = []
    store = Store.open(cache, warnings.append) if cache is not None else None
    try:
        result = generation.run(store, 1)
        files = result.load(sorted(result.files))
    finally:
        if store is not None:
            store.close()
    assert not warnings
    return files, result.stats


def ran(stats: EngineStats) -> list[str]:
    """The tasks that ran, groups left out: `task ident`."""
    return [f"{r.task} {r.ident}" for r in stats.runs if not r.task.startswith("group.")]


@pytest.fixture(scope="module")
def warm_cache(tmp_path_factory, packaged_spec) -> Path:
    cache = tmp_path_factory.mktemp("warm") / "cache"
    engine_build(packaged_spec, cache)
    return cache


# What an edit may make run, at most (early cutoff stops the rest).
BOUNDED_WORK = {
    "blank-lines-and-comments": lambda tasks: tasks == [],
    "tag-description-edited": lambda tasks: {t.split()[0] for t in tasks} <= {"parse.tag",
                                                                                "parse.tag_names"},
    # sinh's node, and the foreach node synthesized from it
    "formula-edited-twice": lambda tasks: not any(t.startswith(("bindings.", "parse.native"))
                                                  for t in tasks)
    and {t.split()[1] for t in tasks if t.startswith("render.node ")} == {
        "SinhBackward0", "ForeachSinhBackward0"},
    "templates-edited": lambda tasks: {t.split()[0] for t in tasks} <= {
        "assemble.functions", "assemble.python_functions"},
}


@pytest.mark.parametrize("name", list(ALL_EDITS))
def test_incremental_equals_clean_equals_torchgen(name, tmp_path, warm_cache):
    pythonpath, spec_dir = stage_packaged_spec(tmp_path / "stage")
    apply_edits(spec_dir, ALL_EDITS[name])
    incremental, stats = engine_build(spec_dir, warm_cache)
    clean, _ = engine_build(spec_dir, None)
    assert file_digests(incremental) == file_digests(clean)
    assert file_digests(clean) == torchgen_files(spec_dir, pythonpath, tmp_path)
    assert sum(stats.reused.values()) > 0, "the warm cache was not used"
    if name in BOUNDED_WORK:
        assert BOUNDED_WORK[name](ran(stats)), f"more work than the edit needs: {ran(stats)[:20]}"


def test_rebuilding_the_same_spec_runs_nothing(warm_cache, packaged_spec):
    _, stats = engine_build(packaged_spec, warm_cache)
    assert stats.runs == [] and sum(stats.reused.values()) == 1  # the whole build, by its key
