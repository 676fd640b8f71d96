"""The cached build against a clean one and against torchgen.

Every edit is built incrementally on a cache that holds the real spec's build, built again
from no cache at all, and compared with torchgen run on the same edited spec: the three must
agree byte for byte. The cached build runs exactly the tasks support/spec_edits.py's RERUNS
lists for the edit (early cutoff stops the rest).
"""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path

import pytest
from support.graph_run import clean_build, engine_build
from support.oracle import TreeOfTorchgen, file_digests
from support.spec_edits import ALL_EDITS, REACHES, RERUNS, apply_edits, table_of
from support.specs import stage_packaged_spec

from gradshard.service.cli import main


@pytest.fixture(scope="module")
def warm_cache(tmp_path_factory, packaged_spec) -> Path:
    """A cache holding the build of the spec as shipped (each edit builds on a copy)."""
    cache = tmp_path_factory.mktemp("warm") / "cache"
    engine_build(packaged_spec, cache)
    return cache


@pytest.mark.parametrize("name", list(ALL_EDITS))
def test_incremental_equals_clean_equals_torchgen(name, tmp_path, warm_cache):
    pythonpath, spec_dir = stage_packaged_spec(tmp_path / "stage")
    apply_edits(spec_dir, ALL_EDITS[name])
    theirs = TreeOfTorchgen(spec_dir, pythonpath, tmp_path)  # torchgen runs meanwhile
    cache = shutil.copytree(warm_cache, tmp_path / "cache")
    incremental, stats = engine_build(spec_dir, cache)
    clean = clean_build(spec_dir).files  # built once a session: test_affected's truth
    assert file_digests(incremental) == clean
    assert clean == theirs.flat_files()
    if name in REACHES:
        REACHES[name](incremental)  # the clean build's files, as the line above says
    assert sum(stats.reused.values()) > 0, "the warm cache was not used"
    ran = [f"{run.task} {run.ident}" for run in stats.runs]
    assert len(ran) == len(set(ran)), "a task ran twice"
    differences = RERUNS[name].differences(ran)
    assert not differences, "\n".join([f"{name} re-ran other tasks than RERUNS lists:",
                                        *differences, "it ran:", table_of(ran)])


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
