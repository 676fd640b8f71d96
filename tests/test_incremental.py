"""The cached build against a clean one, and both against torchgen.

Every edit is built incrementally on a cache that holds the real spec's build and built again
from no cache at all: the two must agree byte for byte, and the cached build runs exactly the
tasks support/spec_edits.py's RERUNS lists for the edit (early cutoff stops the rest).
torchgen runs on the edits applied in turn (support/spec_edits.py: chain, in CHAIN_STEPS
steps, each step's spec holding every edit before it) and on each edit that cannot follow the
others alone: the clean build of each of those specs must be torchgen's, byte for byte. So
every edit's effect is compared with torchgen's in a spec that holds it, at 9 torchgen runs
rather than one per edit (39 runs: ~330 CPU-seconds on 2 cores, 2026-12-02); a step that
fails names its edits, and the one to blame is the first whose spec, built alone, differs.
"""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path

import pytest
from support.graph_run import clean_build, engine_build
from support.oracle import TreeOfTorchgen, file_digests
from support.spec_edits import (ALL_EDITS, CHAIN_STEPS, OUT_OF_THE_CHAIN, REACHES, RERUNS,
                                apply_edits, chain, table_of)
from support.specs import stage_packaged_spec

from gradshard.service.cli import main
from gradshard.service.files.spec_location import locate_spec

IN_TURN = chain(locate_spec(None).root, ALL_EDITS)
# each torchgen run: its edits, applied in order
TORCHGEN_RUNS = {
    **{f"step-{k}": [name for step in IN_TURN[:k] for name in step]
       for k in range(1, len(IN_TURN) + 1)},
    **{name: [name] for name in ALL_EDITS if not any(name in step for step in IN_TURN)}}


@pytest.fixture(scope="module")
def warm_cache(tmp_path_factory, packaged_spec) -> Path:
    """A cache holding the build of the spec as shipped (each edit builds on a copy)."""
    cache = tmp_path_factory.mktemp("warm") / "cache"
    engine_build(packaged_spec, cache)
    return cache


@pytest.mark.parametrize("name", list(ALL_EDITS))
def test_incremental_equals_clean(name, tmp_path, warm_cache):
    _, spec_dir = stage_packaged_spec(tmp_path / "stage")
    apply_edits(spec_dir, ALL_EDITS[name])
    cache = shutil.copytree(warm_cache, tmp_path / "cache")
    incremental, stats = engine_build(spec_dir, cache)
    clean = clean_build(spec_dir).files  # built once a session: test_affected's truth
    assert file_digests(incremental) == clean
    if name in REACHES:
        REACHES[name](incremental)  # the clean build's files, as the line above says
    assert sum(stats.reused.values()) > 0, "the warm cache was not used"
    ran = [f"{run.task} {run.ident}" for run in stats.runs]
    assert len(ran) == len(set(ran)), "a task ran twice"
    differences = RERUNS[name].differences(ran)
    assert not differences, "\n".join([f"{name} re-ran other tasks than RERUNS lists:",
                                        *differences, "it ran:", table_of(ran)])


@pytest.mark.parametrize("run", list(TORCHGEN_RUNS))
def test_the_edits_built_clean_equal_torchgen(run, tmp_path):
    pythonpath, spec_dir = stage_packaged_spec(tmp_path / "stage")
    for name in TORCHGEN_RUNS[run]:
        apply_edits(spec_dir, ALL_EDITS[name])
    theirs = TreeOfTorchgen(spec_dir, pythonpath, tmp_path)  # torchgen runs meanwhile
    assert clean_build(spec_dir).files == theirs.flat_files(), TORCHGEN_RUNS[run]


def test_torchgen_sees_every_edit():
    """Each edit is in a torchgen run; the chain holds most (those left out run alone:
    OUT_OF_THE_CHAIN's, and those whose anchor an edit before them took)."""
    assert {name for names in TORCHGEN_RUNS.values() for name in names} == set(ALL_EDITS)
    alone = set(TORCHGEN_RUNS) - {f"step-{k}" for k in range(1, CHAIN_STEPS + 1)}
    assert set(OUT_OF_THE_CHAIN) <= alone and len(alone) <= len(ALL_EDITS) // 4, alone


def test_every_edit_lists_what_it_reruns():
    assert list(RERUNS) == list(ALL_EDITS)


def test_rebuilding_the_same_spec_runs_nothing(warm_cache, packaged_spec):
    _, stats = engine_build(packaged_spec, warm_cache)
    assert stats.runs == [] and sum(stats.reused.values()) == 1  # the whole build, by its key


def test_backward_edit_saving_the_same_values_renders_no_kernel(tmp_path, warm_cache, capsys):
    """expand's backward formula edited to save what it saved before: its kernels' records
    are computed again and come out equal, so no kernel is rendered, no VariableType file is
    assembled, and none is written."""
    _, spec_dir = stage_packaged_spec(tmp_path / "stage")
    cache = shutil.copytree(warm_cache, tmp_path / "cache")
    out = tmp_path / "out"
    build = ["build", "--codegen-only", "--spec", str(spec_dir), "--out", str(out),
             "--cache", str(cache)]
    assert main(build) == 0
    written = {p.name: p.stat().st_mtime_ns for p in out.glob("VariableType*")}
    assert len(written) == 12
    apply_edits(spec_dir, ALL_EDITS["view-formula-edited"])
    _, stats = engine_build(spec_dir, cache)
    tasks = Counter(run.task for run in stats.runs)
    assert tasks["variable_type.kernels"] == 2  # expand, expand_copy: their matches changed
    assert tasks["render.kernel"] == 0 and tasks["assemble.variable_type"] == 0
    assert tasks["assemble.functions"] == 1  # the edit itself reached Functions.cpp
    capsys.readouterr()
    assert main(build) == 0
    assert {p.name: p.stat().st_mtime_ns for p in out.glob("VariableType*")} == written
