"""`gradshard affected --tests` on the mini spec against itself unedited: the changed ops'
gradient tests from the installed torch's op_db, as pytest ids and a -k expression that
selects exactly them (sin's selects no asin); forward tests only where forward code
changed; an op no OpInfo names is listed with the reason."""

from __future__ import annotations

import json
import re
import sys

import pytest
from support.specs import MUL_OTHER, mini_spec_pair

from gradshard.service.cli import main
from gradshard.service.live.gradient_tests import gradient_tests
from gradshard.service.query.affected import OpChange

pytest.importorskip("torch")

MUL_FORWARD = "  result: other_t * self_p + self_t * other_p"


def affected_tests(capsys, tmp_path, old: str, new: str) -> dict:
    base, edited = mini_spec_pair(tmp_path, old, new)
    code = main(["affected", "--spec", str(edited), "--cache", str(tmp_path / "cache"),
                 "--against", str(base), "--tests", "--json"])
    assert code == 0
    return json.loads(capsys.readouterr().out)["tests"]


def test_a_backward_edit_lists_the_backward_tests_of_its_op(tmp_path, capsys):
    tests = affected_tests(capsys, tmp_path, MUL_OTHER, MUL_OTHER.replace("grad,", "grad * 2,"))
    (mul,) = tests["ops"]
    assert mul["op"] == "mul" and "mul" in mul["opinfos"]
    assert "test/test_ops_gradients.py::TestBwdGradientsCPU::test_fn_grad_mul_cpu_float64" \
        in tests["ids"]
    assert "test/test_ops_gradients.py::TestBwdGradientsCPU::test_fn_gradgrad_mul_cpu_complex128" \
        in tests["ids"]
    forward = {t.rsplit("::", 1)[1] for t in tests["ids"] if "fwd_gradients" in t}
    # its kernels are the same: of the forward tests, the backward formula under forward mode
    assert forward == {"test_fn_fwgrad_bwgrad_mul_cpu_float64",
                       "test_fn_fwgrad_bwgrad_mul_cpu_complex128"}
    assert tests["k"].split(" or ") == [t.rsplit("::", 1)[1] for t in tests["ids"]]


def test_a_forward_edit_adds_the_forward_tests(tmp_path, capsys):
    tests = affected_tests(capsys, tmp_path, MUL_FORWARD,
                           MUL_FORWARD.replace("other_t * self_p", "other_t * self_p * 2"))
    ids = tests["ids"]
    forward = "test/test_ops_fwd_gradients.py::TestFwdGradientsCPU::"
    assert f"{forward}test_forward_mode_AD_mul_cpu_float64" in ids
    assert any(t.startswith("test/test_ops_gradients.py::") for t in ids)


def test_the_keyword_expression_selects_exactly_the_ids():
    """pytest -k matches a term anywhere in a test's name: over every gradient test of every
    op_db OpInfo, sin's expression selects sin's tests and no asin's, sinh's or sinc's."""
    from torch.testing._internal.common_methods_invocations import op_db

    from gradshard.service.live.worker import opinfo_names

    ops = sorted({n for info in op_db for n in opinfo_names(info)})
    everything = gradient_tests([OpChange(op, True, True) for op in ops])
    names = {t.rsplit("::", 1)[1] for t in everything.ids}
    sin = gradient_tests([OpChange("sin", True, True)])
    terms = sin.keyword().split(" or ")
    selected = {name for name in names if any(term in name for term in terms)}
    assert selected == {t.rsplit("::", 1)[1] for t in sin.ids} and selected
    assert any(re.search(r"_asin_cpu", n) for n in names)  # the trap is there


def test_an_op_without_an_opinfo_says_why():
    tests = gradient_tests([OpChange("_foreach_sin", True, True),
                            OpChange("no_such_op_anywhere", True, False)])
    foreach, missing = tests.ops
    assert foreach.tests == () and "foreach" in foreach.reason
    assert missing.tests == () and "no OpInfo" in missing.reason


def test_without_torchs_opinfos_it_says_what_to_install(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "torch.testing._internal.common_methods_invocations", None)
    base, edited = mini_spec_pair(tmp_path, MUL_OTHER, MUL_OTHER.replace("grad,", "grad * 2,"))
    code = main(["affected", "--spec", str(edited), "--cache", str(tmp_path / "cache"),
                 "--against", str(base), "--tests"])
    assert code == 2 and "gradshard[try]" in capsys.readouterr().err
