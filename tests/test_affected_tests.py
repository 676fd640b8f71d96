"""`gradshard affected --tests`: PyTorch's gradient tests whose samples reach the nodes and
kernels an edit changes, found through the index of what every OpInfo's gradient samples
reach (service/gradient_tests/), as pytest ids that torch's own
instantiate_device_type_tests produces, and a file of them pytest reads as its arguments.

The fast tests index a few OpInfos (SMALL) or drive the index's supervisor with a stand-in
worker; those marked slow build the whole index (about a minute or two on 2 cores) and edit
the packaged spec's `_softmax`, `sin` and `mul.Tensor` formulas."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support.specs import DERIVATIVES, MUL_OTHER, mini_spec_pair, stage_packaged_spec

from gradshard.cache.errors import EnvironmentFailure
from gradshard.cache.store.database import blob_hash
from gradshard.service.cli import main
from gradshard.service.files.spec_location import locate_spec
from gradshard.service.gradient_tests import index as observed_tests
from gradshard.service.gradient_tests.index import (INDEX_DIRECTORY, gradient_index, index_path,
                                                    read_index, torch_identity)
from gradshard.service.gradient_tests.pool import build_index
from gradshard.service.gradient_tests.query import (BACKWARD_FILE, FORWARD_FILE, gradient_tests,
                                                    opinfo_test_ids, write_tests_file)
from gradshard.service.gradient_tests.query import tests_text as text_of
from gradshard.service.gradient_tests.reach import PHASES
from gradshard.service.query.affected import OpChange, affected
from gradshard.service.session import Session

pytest.importorskip("torch")

MUL_FORWARD = "  result: other_t * self_p + self_t * other_p"
# the OpInfos the fast tests index (a few seconds)
SMALL = ("mul", "sin", "cos", "softmax", "nn_functional_softmin", "log_softmax")

# Test classes declared as test/test_ops_gradients.py and test/test_ops_fwd_gradients.py declare
# theirs (methods of these names over op_db, double and cdouble), instantiated for the CPU by
# torch's own instantiate_device_type_tests: the ids they produce are the collection.
BACKWARD_SOURCE = '''
import torch
from torch.testing._internal.common_device_type import instantiate_device_type_tests, ops
from torch.testing._internal.common_methods_invocations import op_db
from torch.testing._internal.common_utils import TestCase

gradient_ops = ops(op_db, allowed_dtypes=[torch.double, torch.cdouble])


class TestBwdGradients(TestCase):
    @gradient_ops
    def test_fn_grad(self, device, dtype, op):
        pass

    @gradient_ops
    def test_inplace_grad(self, device, dtype, op):
        pass

    @gradient_ops
    def test_fn_gradgrad(self, device, dtype, op):
        pass

    @gradient_ops
    def test_fn_fail_gradgrad(self, device, dtype, op):
        pass

    @gradient_ops
    def test_inplace_gradgrad(self, device, dtype, op):
        pass


instantiate_device_type_tests(TestBwdGradients, globals(), only_for="cpu")
'''
FORWARD_SOURCE = '''
import torch
from torch.testing._internal.common_device_type import instantiate_device_type_tests, ops
from torch.testing._internal.common_methods_invocations import op_db
from torch.testing._internal.common_utils import TestCase

gradient_ops = ops(op_db, allowed_dtypes=[torch.double, torch.cdouble])


class TestFwdGradients(TestCase):
    @gradient_ops
    def test_fn_fwgrad_bwgrad(self, device, dtype, op):
        pass

    @gradient_ops
    def test_forward_mode_AD(self, device, dtype, op):
        pass

    @gradient_ops
    def test_inplace_forward_mode_AD(self, device, dtype, op):
        pass


instantiate_device_type_tests(TestFwdGradients, globals(), only_for="cpu")
'''


@pytest.fixture(scope="module")
def collection() -> set[str]:
    """Every id the declared classes' instantiation produces, as pytest names them from the
    checkout's root."""
    ids = set()
    for source, (where, name) in ((BACKWARD_SOURCE, BACKWARD_FILE.rsplit("::", 1)),
                                  (FORWARD_SOURCE, FORWARD_FILE.rsplit("::", 1))):
        scope: dict = {"__name__": "declared_gradient_tests"}
        exec(compile(source, where, "exec"), scope)
        ids |= {f"{where}::{name}::{test}" for test in vars(scope[name])
                if test.startswith("test_")}
    return ids


@pytest.fixture(scope="module")
def small_index(tmp_path_factory) -> Path:
    """A cache directory holding the index of SMALL."""
    cache = tmp_path_factory.mktemp("small-index")
    index = gradient_index(cache, SMALL, [], subset=True, progress=False)
    assert index.built and not index.lost and set(index.opinfos) == set(SMALL)
    return cache


def edited_ops(tmp_path: Path, old: str, new: str) -> tuple:
    """The ops the mini spec's edit changes (as `affected --tests` asks for them)."""
    base, edited = mini_spec_pair(tmp_path, old, new)
    session = Session(tmp_path / "cache")
    try:
        return affected(locate_spec(str(edited)), session, str(base), None, True).ops
    finally:
        session.close()


def names_of(ids) -> set[str]:
    return {test.rsplit("::", 1)[1] for test in ids}


# ---------------------------------------------------------------------------------------------
# Selection by what the samples reach


def test_a_backward_edit_selects_the_tests_that_reach_its_node(tmp_path, small_index):
    (mul,) = edited_ops(tmp_path, MUL_OTHER, MUL_OTHER.replace("grad,", "grad * 2,"))
    assert mul.node_names == ("MulBackward0",) and mul.kernel_functions == ()
    warnings: list[str] = []
    tests = gradient_tests([mul], small_index, warnings, opinfos=SMALL)
    assert not warnings and not tests.index.built  # read from the cache
    names = names_of(tests.ids)
    assert {"test_fn_grad_mul_cpu_float64", "test_fn_gradgrad_mul_cpu_complex128",
            "test_inplace_grad_mul_cpu_float64", "test_fn_fwgrad_bwgrad_mul_cpu_float64"} <= names
    # sin's backward multiplies: its double backward creates a MulBackward0, its first one
    # does not (the node is made only under create_graph)
    assert "test_fn_gradgrad_sin_cpu_float64" in names
    assert "test_fn_grad_sin_cpu_float64" not in names
    # a node's edit: no forward-mode test (its code is in the kernels, which did not change)
    assert not {n for n in names if "forward_mode_AD" in n}
    assert all(t.startswith((BACKWARD_FILE, FORWARD_FILE)) for t in tests.ids)
    assert set(tests.ops[0].opinfos) >= {"mul", "sin", "cos"}


def test_a_forward_edit_adds_the_forward_tests_that_reach_its_kernels(tmp_path, small_index):
    (mul,) = edited_ops(tmp_path, MUL_FORWARD,
                        MUL_FORWARD.replace("other_t * self_p", "other_t * self_p * 2"))
    assert "mul.Tensor" in mul.kernel_functions
    names = names_of(gradient_tests([mul], small_index, [], opinfos=SMALL).ids)
    assert {"test_forward_mode_AD_mul_cpu_float64", "test_fn_grad_mul_cpu_float64"} <= names
    # sin's forward-mode formula multiplies (auto_element_wise: self_t * cos(self))
    assert "test_forward_mode_AD_sin_cpu_float64" in names


def test_an_op_no_sample_reaches_says_why(small_index):
    tests = gradient_tests([OpChange("_foreach_sin", True, True, ("ForeachSinBackward0",),
                                     ("_foreach_sin",)),
                            OpChange("no_such_op", True, False, ("NoSuchBackward0",))],
                           small_index, [], opinfos=SMALL)
    foreach, missing = tests.ops
    assert foreach.tests == () and "test/test_foreach.py" in foreach.reason
    assert missing.tests == () and "no OpInfo's gradient samples reach NoSuchBackward0" \
        == missing.reason


def test_the_reached_and_unreached_parts_of_an_op_are_named(small_index):
    """_foreach_sin_ creates SinBackward0 nodes: their tests are listed, its own node and
    kernels are named as reached by no test, with why."""
    (op,) = gradient_tests([OpChange("_foreach_sin", True, True,
                                     ("ForeachSinBackward0", "SinBackward0"),
                                     ("_foreach_sin", "_foreach_sin_"))],
                           small_index, [], opinfos=SMALL).ops
    assert "sin" in op.opinfos and op.tests and not op.reason
    assert set(op.unreached) == {"ForeachSinBackward0", "_foreach_sin", "_foreach_sin_"}
    assert all("test_foreach.py" in why for why in op.unreached.values())


# ---------------------------------------------------------------------------------------------
# The ids: torch's own, and a file pytest reads as its arguments


def test_every_id_the_rules_give_is_in_torchs_collection(collection):
    """Over every OpInfo of op_db, every test the method and dtype rules can list."""
    from torch.testing._internal.common_methods_invocations import op_db

    listed = {test for info in op_db for test in opinfo_test_ids(info)}
    assert listed and listed <= collection, sorted(listed - collection)[:10]
    assert len(names_of(listed)) == len(listed)  # the class part never tells two apart


def test_an_ids_file_is_pytests_arguments(tmp_path, small_index, collection):
    """`python -m pytest @FILE` from a checkout's root (here: the declared classes in files
    of the real files' names) collects exactly the ids written."""
    (mul,) = edited_ops(tmp_path, MUL_OTHER, MUL_OTHER.replace("grad,", "grad * 2,"))
    tests = gradient_tests([mul], small_index, [], opinfos=SMALL)
    assert tests.ids and set(tests.ids) <= collection
    checkout = tmp_path / "checkout"
    (checkout / "test").mkdir(parents=True)
    (checkout / "pytest.ini").write_text("[pytest]\n")
    (checkout / BACKWARD_FILE.split("::")[0]).write_text(BACKWARD_SOURCE)
    (checkout / FORWARD_FILE.split("::")[0]).write_text(FORWARD_SOURCE)
    write_tests_file(tests, tmp_path / "ids.txt")
    done = subprocess.run([sys.executable, "-m", "pytest", f"@{tmp_path / 'ids.txt'}",
                           "--collect-only", "-q", "-p", "no:cacheprovider"], cwd=checkout,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    collected = [line for line in done.stdout.splitlines() if "::" in line]
    assert sorted(collected) == sorted(tests.ids)


# ---------------------------------------------------------------------------------------------
# The command's edges


def test_a_spec_edit_that_changes_nothing_lists_no_test(tmp_path, capsys):
    base, edited = mini_spec_pair(tmp_path, MUL_OTHER, MUL_OTHER + "  # the same formula")
    ids = tmp_path / "ids.txt"
    code = main(["affected", "--spec", str(edited), "--cache", str(tmp_path / "cache"),
                 "--against", str(base), "--tests-file", str(ids), "--json"])
    assert code == 0
    tests = json.loads(capsys.readouterr().out)["tests"]
    assert tests["ids"] == [] and tests["ops"] == [] and tests["index"] is None
    assert ids.read_text() == ""
    assert not (tmp_path / "cache" / INDEX_DIRECTORY).exists()  # nothing to index for


def test_without_torchs_opinfos_it_says_what_to_install(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "torch.testing._internal.common_methods_invocations", None)
    base, edited = mini_spec_pair(tmp_path, MUL_OTHER, MUL_OTHER.replace("grad,", "grad * 2,"))
    code = main(["affected", "--spec", str(edited), "--cache", str(tmp_path / "cache"),
                 "--against", str(base), "--tests"])
    assert code == 2 and "gradshard[try]" in capsys.readouterr().err


# ---------------------------------------------------------------------------------------------
# The index in the cache: data, checked, rebuilt when damaged or another torch's

# A stand-in worker speaking the index worker's protocol: `crash` kills it, `hang` never
# answers, any other name reaches `<Name>Backward0`.
STAND_IN = r'''
import json, os, signal, sys, time
print(json.dumps({"ready": True}), flush=True)
for line in sys.stdin:
    name = json.loads(line)["opinfo"]
    if name == "crash":
        os.kill(os.getpid(), signal.SIGSEGV)
    if name in HANG:
        time.sleep(600)
    phases = {phase: [] for phase in PHASES}
    phases["nodes"] = [name.capitalize() + "Backward0"]
    print(json.dumps({"opinfo": name, "observed": {"float64": {
        "samples": 1, "skipped": 0, "function": phases}}}), flush=True)
'''


def stand_in_worker(directory: Path, hang: set[str]) -> tuple[str, ...]:
    script = directory / "stand_in.py"
    script.write_text(f"PHASES = {list(PHASES)!r}\nHANG = {hang!r}\n" + STAND_IN)
    return (sys.executable, str(script))


@pytest.fixture
def stand_in(tmp_path) -> tuple[str, ...]:
    return stand_in_worker(tmp_path, {"hang"})


def test_a_sample_that_hangs_or_crashes_loses_only_its_opinfo(stand_in):
    names = ["a", "crash", "b", "hang", "c", "d"]
    index = build_index(names, workers=2, timeout=3, progress=False, command=stand_in)
    assert set(index.opinfos) == {"a", "b", "c", "d"}
    assert "signal" in index.lost["crash"] and "ran past 3 s" in index.lost["hang"]
    assert index.reached("b")[0] == {"BBackward0"}


def test_a_lost_opinfo_is_matched_by_name_and_said_so(tmp_path):
    """sin's samples hang: its index entry is lost, and sin's edit finds sin's tests by name
    (the rule before observation: no forward-mode test for a node's edit)."""
    command = stand_in_worker(tmp_path, {"sin"})
    tests = gradient_tests([OpChange("sin", True, False, ("SinBackward0",))],
                           tmp_path / "cache", [], opinfos=["sin", "mul"], command=command,
                           timeout=2, progress=False)
    (sin,) = tests.ops
    assert "ran past 2 s" in tests.index.lost["sin"] and sin.by_name == ("sin",)
    assert {"test_fn_grad_sin_cpu_float64", "test_fn_fwgrad_bwgrad_sin_cpu_complex128"} \
        <= names_of(sin.tests)
    assert not {n for n in names_of(sin.tests) if "forward_mode_AD" in n}
    text = text_of(tests)
    assert "by name (not observed: lost from the index): sin" in text
    assert "1 OpInfo could not be observed (matched by name instead): sin: it ran past" in text


def test_a_worker_that_cannot_start_is_an_environment_failure(tmp_path):
    script = tmp_path / "broken.py"
    script.write_text("import sys\nsys.exit('no torch here')\n")
    with pytest.raises(EnvironmentFailure, match="could not start"):
        build_index(["a"], progress=False, command=(sys.executable, str(script)))


def kept_index(tmp_path: Path, stand_in, names=("sin", "mul")) -> tuple[Path, Path]:
    cache = tmp_path / "cache"
    index = gradient_index(cache, names, [], subset=True, progress=False, command=stand_in)
    assert index.built and index.path is not None and index.path.is_file()
    return cache, index.path


def crafted(path: Path, body: dict) -> None:
    """An index file as a crafter would write one: a body of their choosing, and its hash."""
    data = json.dumps(body).encode()
    header = json.loads(path.read_bytes().partition(b"\n")[0])
    header["hash"] = blob_hash(observed_tests.CODEC, data)
    path.write_bytes(json.dumps(header).encode() + b"\n" + data)


def body_of(path: Path) -> dict:
    return json.loads(path.read_bytes().partition(b"\n")[2])


def test_a_kept_index_is_read_back(tmp_path, stand_in):
    cache, path = kept_index(tmp_path, stand_in)
    warnings: list[str] = []
    again = gradient_index(cache, ("mul", "sin"), warnings, subset=True, progress=False,
                           command=("false",))  # a worker would fail: none is started
    assert not again.built and not warnings and again.reached("sin")[0] == {"SinBackward0"}


def damage_flipped(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[-5] ^= 0x20
    path.write_bytes(bytes(data))


def damage_truncated(path: Path) -> None:
    path.write_bytes(path.read_bytes()[:-40])


def damage_not_json(path: Path) -> None:
    path.write_bytes(b"\x00\xff garbage")


def damage_crafted_layout(path: Path) -> None:
    body = body_of(path)
    body["opinfos"]["sin"]["float64"]["function"]["nodes"] = [{"$exec": "rm -rf /"}]
    crafted(path, body)


def damage_foreign_torch(path: Path) -> None:
    body = body_of(path)
    body["torch"]["version"] = "0.0.1"
    crafted(path, body)


def damage_deeply_nested(path: Path) -> None:
    body = b"[" * 200_000 + b"]" * 200_000
    header = json.loads(path.read_bytes().partition(b"\n")[0])
    header["hash"] = blob_hash(observed_tests.CODEC, body)
    path.write_bytes(json.dumps(header).encode() + b"\n" + body)


def damage_fifo(path: Path) -> None:
    path.unlink()
    os.mkfifo(path)


def damage_link(path: Path) -> None:
    elsewhere = path.parent.parent.parent / "elsewhere.json"
    shutil.copy(path, elsewhere)
    path.unlink()
    path.symlink_to(elsewhere)


@pytest.mark.parametrize("damage", [damage_flipped, damage_truncated, damage_not_json,
                                    damage_crafted_layout, damage_foreign_torch,
                                    damage_deeply_nested, damage_fifo, damage_link],
                         ids=lambda d: d.__name__)
def test_a_damaged_or_foreign_index_is_refused(tmp_path, stand_in, damage):
    cache, path = kept_index(tmp_path, stand_in)
    key = path.stem
    damage(path)
    warnings: list[str] = []
    assert read_index(path, torch_identity(), key, warnings) is None
    assert len(warnings) == 1 and str(path) in warnings[0]


def test_a_damaged_index_is_built_again_with_a_warning(tmp_path, stand_in):
    cache, path = kept_index(tmp_path, stand_in)
    damage_flipped(path)
    warnings: list[str] = []
    index = gradient_index(cache, ("sin", "mul"), warnings, subset=True, progress=False,
                           command=stand_in)
    assert index.built and len(warnings) == 1 and "damaged" in warnings[0]
    assert not gradient_index(cache, ("sin", "mul"), [], subset=True, progress=False,
                              command=("false",)).built  # kept again, whole


def test_a_crafted_index_adds_no_test(tmp_path, small_index):
    """A crafted index whose hash matches names what it likes: only the live OpInfos' ids
    are ever listed (a name that is no OpInfo's is looked up and not found)."""
    cache = tmp_path / "cache"
    shutil.copytree(small_index, cache)
    (path,) = (cache / INDEX_DIRECTORY).iterdir()
    body = body_of(path)
    reach = {phase: ["MulBackward0"] for phase in PHASES}
    body["opinfos"]["x\n--rootdir=/"] = {"float64": {"samples": 1, "skipped": 0,
                                                     "function": reach}}
    # a lost OpInfo's reason is printed: no line of its own (a CI log's command), no escape
    del body["opinfos"]["log_softmax"]
    body["lost"] = {"log_softmax": "hung\n::error::forged\x1b[31m", "x\n::error::": "forged"}
    crafted(path, body)
    change = OpChange("mul", True, False, ("MulBackward0",))
    tests = gradient_tests([change], cache, [], opinfos=SMALL)
    assert not tests.index.built and tests.ids
    assert all("rootdir" not in test and "\n" not in test for test in tests.ids)
    assert list(tests.index.lost) == ["log_softmax"]  # names only looked up
    text = text_of(tests)
    assert "hung?::error::forged?[31m" in text and "\x1b" not in text
    assert not any(line.startswith("::") for line in text.splitlines())


def test_the_index_stays_inside_the_cache_directory(tmp_path, stand_in):
    outside = tmp_path / "outside"
    outside.mkdir()
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / INDEX_DIRECTORY).symlink_to(outside, target_is_directory=True)
    assert index_path(cache, "0" * 32) is None
    warnings: list[str] = []
    index = gradient_index(cache, ("sin",), warnings, subset=True, progress=False,
                           command=stand_in)
    assert index.built and index.path is None and "outside the cache" in warnings[0]
    assert list(outside.iterdir()) == []


def test_another_torch_builds_its_own_index(tmp_path, stand_in, monkeypatch):
    """The key covers the installed torch: a reinstalled libtorch (another mtime) builds
    anew; older indexes beyond KEPT are removed."""
    cache, first = kept_index(tmp_path, stand_in)
    real = torch_identity()
    for n in range(observed_tests.KEPT + 1):
        identity = {**real, "library": [real["library"][0], real["library"][1], n]}
        monkeypatch.setattr(observed_tests, "torch_identity", lambda: identity)
        index = gradient_index(cache, ("sin", "mul"), [], subset=True, progress=False,
                               command=stand_in)
        assert index.built and index.path != first
        time.sleep(0.01)  # distinct mtimes: the newest are kept
    kept = list((cache / INDEX_DIRECTORY).iterdir())
    assert len(kept) == observed_tests.KEPT and index.path in kept and first not in kept


# ---------------------------------------------------------------------------------------------
# The whole index, and the packaged spec's edits (slow: the index of every OpInfo)

EDITS = {
    "_softmax": ("- name: _softmax(Tensor self, int dim, bool half_to_float) -> Tensor\n"
                 "  self: _softmax_backward_data(grad,", "SoftmaxBackward0",
                 {"softmax", "nn_functional_softmin"}),
    "sin": ("- name: sin(Tensor self) -> Tensor\n  self: grad * self.cos().conj()",
            "SinBackward0", {"sin"}),
    "mul.Tensor": ("  other: mul_tensor_backward(grad, self, other.scalar_type())\n"
                   "  result: other_t * self_p + self_t * other_p", "MulBackward0", {"mul"}),
}


@pytest.fixture(scope="module")
def packaged(tmp_path_factory) -> dict:
    """The packaged spec staged, and a cache in which the whole index is built (timed)."""
    from torch.testing._internal.common_methods_invocations import op_db

    root = tmp_path_factory.mktemp("packaged")
    _, base = stage_packaged_spec(root / "base")
    cache = root / "cache"
    started = time.perf_counter()
    index = gradient_index(cache, [info.formatted_name for info in op_db], [])
    seconds = time.perf_counter() - started
    return {"root": root, "base": base, "cache": cache, "index": index, "seconds": seconds,
            "opinfos": {test: info.formatted_name for info in op_db
                        for test in opinfo_test_ids(info)}}


@pytest.mark.slow
def test_the_whole_index_is_built_and_kept(packaged, capsys):
    index = packaged["index"]
    assert index.built and index.path is not None and not index.lost
    size = index.path.stat().st_size
    samples, skipped = index.counts()
    with capsys.disabled():
        print(f"\nthe whole gradient test index: {len(index.opinfos)} OpInfos, {samples} "
              f"samples ({skipped} skipped) in {packaged['seconds']:.0f} s, {size} bytes")
    assert 600 < len(index.opinfos) and samples > 10 * skipped and size < 8 << 20
    assert index.reached("softmax")[0] >= {"SoftmaxBackward0"}
    started = time.perf_counter()
    again = gradient_index(packaged["cache"], list(index.opinfos), [])
    assert not again.built and again.opinfos == index.opinfos
    assert time.perf_counter() - started < 30


@pytest.mark.slow
@pytest.mark.parametrize("edit", list(EDITS))
def test_an_edit_lists_torchs_ids_that_reach_its_node(edit, packaged, collection, tmp_path,
                                                      capsys):
    old, node, expected = EDITS[edit]
    _, spec = stage_packaged_spec(tmp_path / "stage")
    text = (spec / DERIVATIVES).read_text()
    assert text.count(old) == 1
    new = old.replace("grad,", "grad * 2,") if "grad," in old else old.replace("grad *",
                                                                               "grad * 2 *")
    (spec / DERIVATIVES).write_text(text.replace(old, new))
    ids_file = tmp_path / "ids.txt"
    args = ["affected", "--spec", str(spec), "--cache", str(packaged["cache"]), "--against",
            str(packaged["base"]), "--tests-file", str(ids_file)]
    assert main([*args, "--json"]) == 0
    tests = json.loads(capsys.readouterr().out)["tests"]
    ids = tests["ids"]
    assert ids and set(ids) <= packaged["opinfos"].keys() and set(ids) <= collection
    assert ids_file.read_text().splitlines() == ids
    index = packaged["index"]
    opinfos = {packaged["opinfos"][test] for test in ids}
    assert expected <= opinfos
    # each test's OpInfo was seen to reach the edited node, or a kernel the edit changed
    # (sin's edit changes its kernels' forward-mode formula too: auto_element_wise)
    kernels = {k for op in tests["ops"] for k in op["kernels"]}
    by_kernel = {name for name in opinfos if node not in index.reached(name)[0]}
    assert all(index.reached(name)[1] & kernels for name in by_kernel), by_kernel
    assert not by_kernel or kernels
    assert tests["index"]["built"] is False
    assert main(args) == 0
    text_output = capsys.readouterr().out
    assert f"python -m pytest @{ids_file}" in text_output
    with capsys.disabled():
        print(f"\n{edit}: {len(ids)} tests of {len(opinfos)} OpInfos ({len(by_kernel)} "
              f"reaching a changed kernel only: {sorted(by_kernel)})")
