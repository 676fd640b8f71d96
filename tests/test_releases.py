"""The three releases gradshard reproduces (pipeline/releases.py), each against its own
torchgen: every file of generate_code byte for byte, and for 2.12.0 and 2.14.1 clean and
incremental over a chain of the differential edits (support/spec_edits.py, those that fit
the release's spec, applied in turn, then the edits aimed at what the release generates
differently: RELEASE_EDITS), with `affected` exact at each step. 2.13.0's edits, one by one,
are tests/test_incremental.py's and tests/test_affected.py's.

Each release's torchgen is unpacked once from its wheel (support/releases.py); its spec is
staged inside a copy of it, so the copy keeps its generator (known by its hash).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from support.graph_run import diff, engine_build, generated_units
from support.oracle import TreeOfTorchgen, file_digests
from support.releases import release_generator, release_torchgen
from support.spec_edits import ALL_EDITS, RELEASE_EDITS, Edit, apply_edits, chain
from support.specs import (DEPRECATED, DERIVATIVES, NATIVE, TAGS, commit_all, installed_torchgen,
                           stage_packaged_spec)

from gradshard.pipeline.problems import SpecFile
from gradshard.pipeline.releases import release_series
from gradshard.service.cli import main
from gradshard.service.files.spec_location import locate_spec
from gradshard.service.generator.identity import identify_generator
from gradshard.service.query.affected import affected_command
from gradshard.service.session import Session

# version → the release its generator is known as (2.14.0 and 2.14.1 are one generator)
RELEASES = {"2.12.0": "2.12.0", "2.13.0": "2.13.0", "2.14.1": "2.14.x"}


def torchgen_of(version: str) -> Path:
    return installed_torchgen() if version == "2.13.0" else release_torchgen(version)


def edits_of(version: str) -> dict[str, list[Edit]]:
    """The edits a release's chain may take: every release's, then those aimed at its own
    rules (support/spec_edits.py: RELEASE_EDITS)."""
    return {**ALL_EDITS, **RELEASE_EDITS.get(version, {})}


def snapshot(spec: Path, root: Path, source: Path) -> Path:
    """A copy of the spec as it now is, inside its own torchgen copy (so `affected` reads
    it with the same release's rules)."""
    _, copy = stage_packaged_spec(root, source)
    shutil.rmtree(copy)
    shutil.copytree(spec, copy)
    return copy


def affected_changes(spec: Path, against: Path, cache: Path) -> dict:
    session = Session(cache)
    try:
        result = affected_command(locate_spec(str(spec)), session, str(against), None)
    finally:
        session.close()
    return {"nodes": result.nodes, "bindings": result.bindings, "files": result.files,
            "kernels": {(k.name, k.key, k.file): k.change for k in result.kernels},
            "derivatives": {e.name: e.change for e in result.entries
                            if e.file is SpecFile.DERIVATIVES}}


def truth(before: dict, after: dict) -> dict:
    return {part: diff(before[part], after[part]) for part in before}


# The chain runs for the releases other than the installed one: 2.13.0's every edit is built
# incrementally and clean in test_incremental.py, its chain of them by torchgen there, and
# each is checked by `affected` in test_affected.py; what a chain adds (a cache that saw the
# steps before) is the engine's, the same for every release, and the other two chains walk
# it on the real spec.
CHAINED = [version for version in RELEASES if version != "2.13.0"]


@pytest.mark.releases
@pytest.mark.slow
@pytest.mark.parametrize("version", CHAINED)
def test_each_release_is_its_generate_code_clean_and_over_a_chain_of_edits(version, tmp_path):
    source = torchgen_of(version)
    pythonpath, spec = stage_packaged_spec(tmp_path / "stage", source)
    identity = identify_generator(locate_spec(str(spec)))
    assert identity.release == RELEASES[version] and identity.known
    assert identity.rules_release == RELEASES[version]
    cache = tmp_path / "cache"
    theirs = TreeOfTorchgen(spec, pythonpath, tmp_path / "torchgen-0")  # runs meanwhile
    files, _ = engine_build(spec, cache)
    assert file_digests(files) == theirs.flat_files()
    candidates = edits_of(version)
    steps = chain(spec, candidates)
    chosen = [name for names in steps for name in names]
    assert len(set(chosen) & set(ALL_EDITS)) >= 30, steps  # of 39; the rest lack anchors here
    assert set(RELEASE_EDITS.get(version, {})) <= set(chosen), steps
    before, before_units = snapshot(spec, tmp_path / "step-0", source), generated_units(spec)
    for number, names in enumerate(steps, 1):
        for name in names:
            apply_edits(spec, candidates[name])
        theirs = TreeOfTorchgen(spec, pythonpath, tmp_path / f"torchgen-{number}")
        incremental, stats = engine_build(spec, cache)
        units = generated_units(spec)
        clean = units["files"]
        assert sum(stats.reused.values()) > 0, "the cache was not used"
        assert file_digests(incremental) == file_digests(clean), names
        assert file_digests(clean) == theirs.flat_files(), names
        assert affected_changes(spec, before, cache) == truth(before_units, units), names
        before, before_units = snapshot(spec, tmp_path / f"step-{number}", source), units


# version → the units compiled, and what in its files only that release writes (file, text)
RELEASE_UNITS = {
    # 2.14's creation hooks in the kernels
    "2.14.1": (["VariableType_merged-00"],
               [("VariableType_0.cpp", "fire_node_creation_hooks(")]),
    # 2.12's std::shared_ptr nodes in the kernels, saved outputs unpacked with
    # shared_from_this() in the formulas
    "2.12.0": (["VariableType_merged-00", "Functions_formulas_00-11"],
               [("VariableType_0.cpp", ", deleteNode)"),
                ("Functions.cpp", ".unpack(shared_from_this())")]),
}


@pytest.mark.releases
@pytest.mark.compiler
@pytest.mark.slow
@pytest.mark.parametrize("version", list(RELEASE_UNITS))
def test_a_release_compiles_against_its_own_headers_only(version, tmp_path, capsys):
    """A release's generated C++ (what only it writes among it) compiles against its own
    headers, unpacked beside its torchgen as in site-packages; the installed 2.13.0 headers
    are refused before any compile, with the files written."""
    spec = release_torchgen(version) / "packaged"
    names, spellings = RELEASE_UNITS[version]
    units = [word for name in names for word in ("--units", name)]
    code = main(["build", "--spec", str(spec), "--out", str(tmp_path / "out"), "--cache",
                 str(tmp_path / "cache"), "--json", *units])
    report = json.loads(capsys.readouterr().out)
    assert code == 0 and sorted(report["compile"]["compiled"]) == sorted(names)
    for name, text in spellings:
        assert text in (tmp_path / "out" / name).read_text(), (name, text)
    headers = installed_torchgen().parent / "torch" / "include"
    code = main(["build", "--spec", str(spec), "--out", str(tmp_path / "out2"), "--cache",
                 str(tmp_path / "cache"), "--include", str(headers), *units])
    err = capsys.readouterr().err
    series = release_series(version)
    assert code == 2 and f"compiles only against torch {series}'s headers" in err
    assert "torch 2.13.0's" in err and (tmp_path / "out2" / "VariableType_0.cpp").exists()
    assert not (tmp_path / "out2" / "compile" / "obj").exists()


# The releases whose generator the suite fetches alone (support/releases.py:
# release_generator); those before 2.12 are generators gradshard does not know.
GENERATORS = ("2.9.1", "2.10.0", "2.11.0", *RELEASES)


@pytest.mark.releases
def test_each_releases_smallest_wheel_holds_its_generator():
    """torchgen is pure Python: the smallest wheel's (macOS arm64) is, by the hash of its
    generator's sources, the one the Linux wheel and the installed torch hold (known.py's
    three), and the releases before 2.12 each have a generator of their own."""
    identities = {version: identify_generator(locate_spec(str(release_generator(version)
                                                             / "packaged")))
                  for version in GENERATORS}
    for version, release in RELEASES.items():
        assert identities[version].release == release and identities[version].known, version
    installed = identify_generator(locate_spec(str(installed_torchgen() / "packaged")))
    assert identities["2.13.0"].hash == installed.hash
    assert len({identity.hash for identity in identities.values()}) == len(GENERATORS)
    assert all(identities[v].release is None for v in GENERATORS if v not in RELEASES)


@pytest.mark.releases
def test_try_refuses_a_spec_of_another_release_than_the_installed_torch(capsys):
    spec = release_torchgen("2.12.0") / "packaged"
    code = main(["try", "sin", "--spec", str(spec)])
    err = capsys.readouterr().err
    assert code == 2 and "torchgen 2.12.0" in err and "installed torch is 2.13.0" in err


@pytest.mark.releases
@pytest.mark.slow
def test_one_cache_never_serves_a_release_anothers_files(tmp_path):
    """2.13.0's spec data staged in 2.14.1's torchgen (their templates are the same, so only
    the generator differs: packaged/autograd's gen_*.py) builds into the cache that holds the
    same spec under 2.13.0's own: its files are 2.14.1's torchgen's, the release-free tasks
    are shared, and 2.13.0's build is answered whole from the cache after."""
    _, own = stage_packaged_spec(tmp_path / "own")
    pythonpath, foreign = stage_packaged_spec(tmp_path / "foreign", release_torchgen("2.14.1"))
    for name in (NATIVE, TAGS, DERIVATIVES, DEPRECATED):  # the data; the generator stays
        shutil.copyfile(own / name, foreign / name)
    assert identify_generator(locate_spec(str(foreign))).release == "2.14.x"
    theirs = TreeOfTorchgen(foreign, pythonpath, tmp_path / "torchgen")  # runs meanwhile
    cache = tmp_path / "cache"
    first, _ = engine_build(own, cache)
    files, stats = engine_build(foreign, cache)
    again, stats_again = engine_build(own, cache)
    assert file_digests(files) == theirs.flat_files()
    differing = {name for name in files if files[name] != first[name]}
    assert differing == {f"VariableType{s}.cpp" for s in [*map("_{}".format, range(10)),
                                                          "Everything"]}
    assert stats.reused["parse"] > 0 and stats.run["render"] > 0
    assert again == first and sum(stats_again.run.values()) == 0, stats_again.run


def replace_python_files(torchgen: Path, source: Path) -> None:
    """torchgen's .py files (its packaged autograd generators among them) made `source`'s,
    its spec data and templates left as they are: a checkout's torchgen upgraded."""
    for path in list(torchgen.rglob("*.py")):
        path.unlink()
    for path in source.rglob("*.py"):
        if "__pycache__" not in path.parts:
            target = torchgen / path.relative_to(source)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, target)


@pytest.mark.releases
def test_since_a_revision_before_a_torchgen_upgrade_reads_it_with_that_release(tmp_path, capsys):
    """A repository holding torchgen 2.13.0 whole (its spec inside) at HEAD, upgraded to
    2.14.1's generator in the working tree with the spec data unchanged: `affected --since
    HEAD` reads HEAD's spec as 2.13.0 generated it, so the upgrade's creation hooks are what
    changed (2.14.1's torchgen on 2.13.0's spec differs from 2.13.0's in exactly the 11
    VariableType files: ../docs/usage.md's table)."""
    repository = tmp_path / "repository"
    torchgen = repository / "torchgen"
    shutil.copytree(installed_torchgen(), torchgen, ignore=shutil.ignore_patterns("__pycache__"))
    commit_all(repository)
    replace_python_files(torchgen, release_torchgen("2.14.1"))
    spec = torchgen / "packaged"
    assert identify_generator(locate_spec(str(spec))).release == "2.14.x"
    code = main(["affected", "--spec", str(spec), "--since", "HEAD", "--cache",
                 str(tmp_path / "cache"), "--json"])
    report = json.loads(capsys.readouterr().out)
    assert code == 0 and report["derivatives"] == [] and report["native_functions"] == []
    assert sorted(report["files"]) == sorted(f"VariableType{s}.cpp" for s in [
        *map("_{}".format, range(10)), "Everything"])
    assert report["kernels"] and report["autograd_nodes"] == []
    assert "its generator: torchgen 2.13.0" in report["against"]
