"""`gradshard affected` against the brute-force truth: every node's and binding's generated
text and every file, generated without a cache before and after each edit."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from support.graph_run import clean_build, diff
from support.spec_edits import ALL_EDITS, MUL_TENSOR, apply_edits
from support.specs import DERIVATIVES, commit_all, installed_torchgen, stage_packaged_spec

from gradshard.pipeline.problems import SpecFile
from gradshard.service.cli import main
from gradshard.service.files.spec_location import locate_spec
from gradshard.service.generator.identity import Origin, identify_generator
from gradshard.service.query.affected import Affected, affected_command
from gradshard.service.query.revision import generator_at
from gradshard.service.session import Session


@pytest.fixture(scope="module")
def base(tmp_path_factory) -> tuple[Path, dict, Path]:
    root = tmp_path_factory.mktemp("base")
    _, spec_dir = stage_packaged_spec(root / "stage")
    return spec_dir, clean_build(spec_dir).units, root / "cache"


@pytest.mark.parametrize("name", list(ALL_EDITS))
def test_affected_is_exact(name, tmp_path, base):
    base_dir, truth_before, cache = base
    _, spec_dir = stage_packaged_spec(tmp_path / "stage")
    apply_edits(spec_dir, ALL_EDITS[name])
    truth_after = clean_build(spec_dir).units  # built once: test_incremental's clean side
    session = Session(cache)
    try:
        result = affected_command(locate_spec(str(spec_dir)), session, str(base_dir), None)
    finally:
        session.close()
    assert result.nodes == diff(truth_before["nodes"], truth_after["nodes"])
    assert result.bindings == diff(truth_before["bindings"], truth_after["bindings"])
    assert result.files == diff(truth_before["files"], truth_after["files"])
    assert {(k.name, k.key, k.file): k.change for k in result.kernels} == \
        diff(truth_before["kernels"], truth_after["kernels"])
    entries = {e.name: e.change for e in result.entries if e.file is SpecFile.DERIVATIVES}
    assert entries == diff(truth_before["derivatives"], truth_after["derivatives"])


def test_mul_edit_reports_its_node_and_the_foreach_nodes_made_from_it(tmp_path, capsys):
    _, spec_dir = stage_packaged_spec(tmp_path / "stage")
    out = tmp_path / "out"
    assert main(["build", "--codegen-only", "--spec", str(spec_dir), "--out", str(out)]) == 0
    apply_edits(spec_dir, ALL_EDITS["saved-variable-changed"])
    capsys.readouterr()
    assert main(["affected", "--spec", str(spec_dir), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert set(report) >= {"derivatives", "native_functions", "autograd_nodes",
                           "python_bindings", "files"}
    assert "MulBackward0" in report["autograd_nodes"]
    assert {n for n in report["autograd_nodes"] if n.startswith("ForeachMul")}
    assert report["native_functions"] == [] and report["python_bindings"] == []
    # the saved variable's kernels: mul, mul_ and the foreach ops borrowing mul's formulas
    kernels = {(k["name"], k["key"]) for k in report["kernels"]}
    assert {("mul_Tensor", "Autograd"), ("mul__Tensor", "Autograd")} <= kernels
    assert {name for name, _ in kernels if name.startswith("_foreach_mul")}
    assert all(k["file"].startswith("VariableType_") for k in report["kernels"])
    changed = [e for e in report["derivatives"] if e["name"] == "mul.Tensor"]
    assert changed and changed[0]["file"] == str(spec_dir / DERIVATIVES)
    text = (spec_dir / DERIVATIVES).read_text().split("\n")
    assert text[changed[0]["line"] - 1].startswith("- name: mul.Tensor(")


def test_since_a_git_revision(tmp_path, capsys):
    _, spec_dir = stage_packaged_spec(tmp_path / "stage")
    if shutil.which("git") is None:
        pytest.fail("git is required (the machine image has it)")
    commit_all(spec_dir)
    (spec_dir / DERIVATIVES).write_text((spec_dir / DERIVATIVES).read_text().replace(
        MUL_TENSOR, MUL_TENSOR.replace("self.scalar_type())\n", "self.scalar_type()) * 2\n", 1)))
    assert main(["affected", "--spec", str(spec_dir), "--since", "HEAD", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert [e["name"] for e in report["derivatives"]] == ["mul.Tensor"]
    assert report["files"] == ["Functions.cpp"]
    assert main(["affected", "--spec", str(spec_dir), "--since", "no-such-rev"]) == 2
    assert "no-such-rev" in capsys.readouterr().err


def test_without_a_recorded_build_says_what_to_do(tmp_path, capsys):
    _, spec_dir = stage_packaged_spec(tmp_path / "stage")
    assert main(["affected", "--spec", str(spec_dir)]) == 2
    err = capsys.readouterr().err
    assert "no build of the spec" in err and "gradshard build" in err


def affected_by(tmp_path: Path, base: tuple[Path, dict, Path], edit: str) -> Affected:
    """`affected` of an edit of the staged spec, against the base spec's build."""
    base_dir, _, cache = base
    _, spec_dir = stage_packaged_spec(tmp_path / "stage")
    apply_edits(spec_dir, ALL_EDITS[edit])
    session = Session(cache)
    try:
        return affected_command(locate_spec(str(spec_dir)), session, str(base_dir), None)
    finally:
        session.close()


def test_a_foreach_only_edit_touches_no_python_functions_file(tmp_path, base):
    """A foreach op added with no entry of its own gets a node from its reference: Functions.*
    change, python_functions* do not (the build binds the infos as loaded)."""
    result = affected_by(tmp_path, base, "foreach-op-only")
    assert result.nodes == {"ForeachSincBackward0": "added"}
    assert {"Functions.h", "Functions.cpp"} <= set(result.files)
    assert not [name for name in result.files if name.startswith("python_functions")]


def test_the_rest_of_the_codegen_names_its_kernels_and_files(tmp_path, base):
    """New ops with in-place and out= forms, a factory and named returns: their tracer and
    ADInplaceOrView kernels, each at its key and in its file, and the files beside them."""
    result = affected_by(tmp_path, base, "traced-ops-added")
    kernels = {(k.name, k.key): (k.file, k.change) for k in result.kernels}
    assert kernels[("zz_trace_", "Tracer")][1] == "added"
    assert kernels[("zz_trace_", "Tracer")][0] in {f"TraceType_{i}.cpp" for i in range(10)}
    assert kernels[("zz_trace_", "ADInplaceOrView")][0].startswith("ADInplaceOrViewType_")
    assert ("zz_range", "Tracer") in kernels and ("zz_range", "ADInplaceOrView") not in kernels
    assert {"TraceTypeEverything.cpp", "ADInplaceOrViewTypeEverything.cpp",
            "variable_factories.h", "annotated_fn_args.py"} <= set(result.files)
    assert "ViewFuncs.h" not in result.files  # no view among them


# ---------------------------------------------------------------------------------------------
# --since: the revision's generator (service/query/revision.py)


def checkout_with_generator(root: Path, with_torchgen: bool) -> Path:
    """A PyTorch checkout's layout of real files (git keeps a symbolic link as a link): the
    spec, tools/autograd's generators and, `with_torchgen`, torchgen/ at the top."""
    packaged = installed_torchgen() / "packaged"
    if with_torchgen:
        shutil.copytree(installed_torchgen(), root / "torchgen",
                        ignore=shutil.ignore_patterns("__pycache__", "packaged"))
    shutil.copytree(packaged / "ATen" / "native", root / "aten" / "src" / "ATen" / "native",
                    ignore=shutil.ignore_patterns("*.py", "__pycache__"))
    shutil.copytree(packaged / "autograd", root / "tools" / "autograd",
                    ignore=shutil.ignore_patterns("__pycache__"))
    return root


@pytest.mark.parametrize("layout", ["checkout", "checkout-installed-torchgen", "packaged",
                                    "packaged-torchgen-is-the-repository"])
def test_a_revisions_generator_hashes_as_its_files_do(tmp_path, layout):
    """The same generator, read from a commit's blobs and from the files: one hash, in each
    place a generator is found (a checkout's torchgen/ and tools/autograd/, tools/autograd/
    with the installed torchgen, a packaged spec's torchgen/, torchgen/ as the repository)."""
    if layout.startswith("packaged"):
        torchgen = tmp_path / "repository" / "torchgen"
        shutil.copytree(installed_torchgen(), torchgen,
                        ignore=shutil.ignore_patterns("__pycache__"))
        repository = torchgen if layout.endswith("repository") else torchgen.parent
        spec = torchgen / "packaged"
    else:
        repository = spec = checkout_with_generator(tmp_path / "repository",
                                                    layout == "checkout")
    commit = commit_all(repository)
    current = identify_generator(locate_spec(str(spec)))
    assert current.release == "2.13.0" and current.origin != Origin.INSTALLED
    then = generator_at(repository, commit, "HEAD", current)
    assert (then.hash, then.release) == (current.hash, "2.13.0")


@pytest.mark.parametrize("revision, words", [
    ("", "not a git revision"), ("-p", "not a git revision"),
    (":0", "no such commit"), ("HEAD:autograd", "no such commit")])
def test_since_takes_commits_only(tmp_path, capsys, revision, words):
    """An empty revision or `:0` would read git's index, `-p` an option, a tree no commit."""
    _, spec = stage_packaged_spec(tmp_path / "stage")
    commit_all(spec)
    assert main(["affected", "--spec", str(spec), f"--since={revision}"]) == 2
    err = capsys.readouterr().err
    assert words in err and "hint:" in err and "Traceback" not in err
