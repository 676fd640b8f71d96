"""What a patch must keep of torch's autograd semantics, end to end on the real 2.13 spec and
the installed torch (real compiles; the session's try directory, spec copy and cache:
conftest.py's try_workspace): a node that saves its result, a forward-mode formula, a view op,
the stock kernel and node back after the Python API's block, and `--samples` for an op that no
OpInfo covers.

The checks made inside a patched process run in a subprocess (a patch's library stays loaded
in its process); each prints its findings as one JSON line, asserted on here.
"""

from __future__ import annotations

import contextlib
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest
from support.specs import edited_derivatives as edited

from gradshard.service.cli import main

SIN = ("- name: sin(Tensor self) -> Tensor\n"
       "  self: grad * self.cos().conj()\n"
       "  result: auto_element_wise\n")
# the backward also reads the result: SinBackward0 saves it as well (a struct change)
SIN_SAVING_RESULT = SIN.replace("grad * self.cos().conj()",
                                "grad * (self.cos() + 0 * result).conj()")
# the right backward with a wrong explicit forward-mode formula (three times the tangent)
SIN_WRONG_FORWARD = SIN.replace("result: auto_element_wise",
                                "result: (self_t.conj() * self_p.cos().conj() * 3).conj()")
SIN_TWICE = SIN.replace("grad * self.cos().conj()", "grad * self.cos().conj() * 2")
# an op with an autograd kernel of its own that no OpInfo names (neither op_db nor the foreach
# dbs: the worker's opinfos_of finds none), which torch._euclidean_dist calls
EUCLIDEAN_DIST = ("- name: _euclidean_dist(Tensor x1, Tensor x2) -> Tensor\n"
                  "  x1, x2: _euclidean_dist_backward(grad, x1, x2, result)\n")
EUCLIDEAN_DIST_TWICE = EUCLIDEAN_DIST.replace("(grad, x1", "(grad * 2, x1")
SAMPLES = '''
import torch

SAMPLES = {"_euclidean_dist": lambda dtype: [
    (torch.randn(3, 2, dtype=dtype, requires_grad=True),
     torch.randn(4, 2, dtype=dtype, requires_grad=True)),
    (torch.randn(2, 5, dtype=dtype, requires_grad=True),
     torch.randn(1, 5, dtype=dtype, requires_grad=True)),
    # an argument that does not require grad stays in its place, also when locating
    (torch.randn(3, 2, dtype=dtype, requires_grad=True), torch.randn(4, 2, dtype=dtype)),
]}
'''


def run_try(capsys, spec: Path, cache: Path, *args: str) -> tuple[int, dict]:
    code = main(["try", *args, "--spec", str(spec), "--cache", str(cache), "--dtype", "float64",
                 "--json"])
    out = capsys.readouterr().out
    return code, json.loads(out) if out.strip() else {}


def in_a_process(script: str, spec: Path, cache: Path) -> dict:
    """The script run in a fresh Python (argv: spec, cache): its last stdout line, as JSON."""
    done = subprocess.run([sys.executable, "-c", script, str(spec), str(cache)],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.splitlines()[-1])


def verdicts(report: dict, op: str) -> list[dict]:
    (found,) = [o for o in report["ops"] if o["op"] == op]
    return found["samples"]


# ---------------------------------------------------------------------------------------------
# A node that saves its result


SAVED_RESULT = '''
import json, sys, torch
from gradshard.service import patching

x = torch.randn(4, dtype=torch.float64, requires_grad=True)
stock = torch.sin(x).grad_fn
facts = {"stock saves result": hasattr(stock, "_saved_result")}
with patching.patch(spec=sys.argv[1], names=["sin"], cache=sys.argv[2]) as plan:
    y = torch.sin(x)
    node = y.grad_fn
    saved = node._saved_result
    facts.update({
        "patched": [op.name for op in plan.patched],
        "node": type(node).__name__,
        "a type of the patch's": type(node) is not type(stock),
        "saved self is x": node._saved_self is x,
        "saved result equals y": torch.equal(saved, y),
        # saved as an output (torch's SavedVariable(result, true)): unpacked anew, its grad_fn
        # the node itself
        "saved result is saved as an output": saved is not y and saved.grad_fn is node,
        "gradient": torch.allclose(torch.autograd.grad(y.sum(), x)[0], x.cos()),
    })
    try:  # backward without retain_graph released the saved values, the result's included
        node._saved_result
        facts["released"] = False
    except RuntimeError as e:
        facts["released"] = "after they have already been freed" in str(e)
print(json.dumps(facts))
'''


@pytest.mark.compiler
@pytest.mark.slow
def test_a_node_that_saves_its_result_is_patched(try_workspace, capsys):
    """sin's backward rewritten to read `result` too: SinBackward0 gains a saved variable.
    `try` passes, and in a patched process sin's grad_fn is the patch's SinBackward0 with
    both saved values (the result saved as an output), released by backward."""
    spec, cache = try_workspace
    with edited(spec, SIN, SIN_SAVING_RESULT):
        code, report = run_try(capsys, spec, cache, "sin")
        facts = in_a_process(SAVED_RESULT, spec, cache)
    assert code == 0, report
    assert [o["op"] for o in report["ops"]] == ["sin"]
    samples = verdicts(report, "sin")
    assert samples and all(s["verdict"] == "PASS" for s in samples), samples
    assert {s["variant"] for s in samples} == {"function", "inplace"}
    assert facts == {"stock saves result": False, "patched": ["sin"], "node": "SinBackward0",
                     "a type of the patch's": True, "saved self is x": True,
                     "saved result equals y": True, "saved result is saved as an output": True,
                     "gradient": True, "released": True}


# ---------------------------------------------------------------------------------------------
# Forward mode


@pytest.mark.compiler
@pytest.mark.slow
def test_a_wrong_forward_formula_fails_the_forward_mode_check(try_workspace, capsys):
    """sin with the right backward formula and a forward formula three times too large: every
    sample fails, and what fails is gradcheck's forward-mode comparison (torch's message for a
    backward mismatch is "Jacobian mismatch for output …", without "forward mode")."""
    spec, cache = try_workspace
    with edited(spec, SIN, SIN_WRONG_FORWARD) as line:
        code, report = run_try(capsys, spec, cache, "sin")
    assert code == 5, report
    (sin,) = report["ops"]
    assert sin["line"] == line
    samples = sin["samples"]
    assert {s["variant"] for s in samples} == {"function", "inplace"}
    for sample in samples:
        assert sample["verdict"] == "FAIL" and sample["check"] == "gradcheck", sample
        assert sample["message"].startswith(
            "Jacobian computed with forward mode mismatch for output 0 with respect to input 0"), \
            sample
        # the located error compares backward Jacobians: for a forward-mode failure it would
        # be noise at a meaningless place, so there is none
        assert sample["error"] is None and sample["where"] is None, sample


# ---------------------------------------------------------------------------------------------
# A view op


VIEW = '''
import json, os, sys, torch
import torch.autograd.forward_ad as fwAD
from gradshard.service import patching


def autograd_kernel():
    """Where the kernel at the Autograd key of aten::transpose.int was registered."""
    dump = torch._C._dispatch_dump("aten::transpose.int").splitlines()
    return next(line for line in dump if line.startswith("Autograd[alias]:")).split(" :: ")[0]


def view_facts():
    x = torch.randn(2, 3, dtype=torch.float64, requires_grad=True)
    y = torch.transpose(x, 0, 1)
    facts = {"node": type(y.grad_fn).__name__,
             "a view of x": y._base is x and y.data_ptr() == x.data_ptr()}
    weights = torch.randn(3, 2, dtype=torch.float64)
    facts["gradient"] = torch.equal(
        torch.autograd.grad((y * weights).sum(), x, retain_graph=True)[0], weights.t())
    node_type, version = type(y.grad_fn), y._version
    with torch.no_grad():
        x.mul_(2)  # seen through the view, whose version it bumps
    facts["x's change seen in y"] = torch.equal(y, x.detach().t()) and y._version == version + 1
    leaf = torch.randn(2, 3, dtype=torch.float64, requires_grad=True)
    base = leaf.clone()
    view = torch.transpose(base, 0, 1)
    view.mul_(3)  # in place through the view: the base's history is rewritten
    facts["base's node after an in-place change of the view"] = type(base.grad_fn).__name__
    base.sum().backward()
    facts["gradient through it"] = torch.equal(leaf.grad, torch.full((2, 3), 3.0,
                                                                     dtype=torch.float64))
    with fwAD.dual_level():
        primal = torch.randn(2, 3, dtype=torch.float64)
        tangent = torch.randn_like(primal)
        out = fwAD.unpack_dual(torch.transpose(fwAD.make_dual(primal, tangent), 0, 1))
        facts["the tangent is a view of the input's"] = (out.tangent._base is tangent
                                                         and torch.equal(out.tangent, tangent.t()))
    return facts, node_type


stock, stock_type = view_facts()
stock_kernel = autograd_kernel()
with patching.patch(spec=sys.argv[1], names=["transpose.int"], cache=sys.argv[2]) as plan:
    patched, patched_type = view_facts()
    patched_kernel = autograd_kernel()
after, after_type = view_facts()
print(json.dumps({
    "stock": stock, "patched": patched, "after": after,
    "patched ops": [[op.name, list(op.functions), list(op.nodes)] for op in plan.patched],
    "stock kernel from the try directory": os.environ["GRADSHARD_TRY_DIR"] in stock_kernel,
    "patched kernel from the try directory": os.environ["GRADSHARD_TRY_DIR"] in patched_kernel,
    "stock kernel after": autograd_kernel() == stock_kernel,
    "node types": [patched_type is stock_type, after_type is stock_type],
}))
'''
VIEW_FACTS = {"node": "TransposeBackward0", "a view of x": True, "x's change seen in y": True,
              "gradient": True, "base's node after an in-place change of the view": "CopySlices",
              "gradient through it": True, "the tangent is a view of the input's": True}


@pytest.fixture(scope="module")
def transpose_try(try_workspace):
    """`gradshard try transpose.int` (the stock formula), run once for the module's tests."""
    spec, cache = try_workspace
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["try", "transpose.int", "--spec", str(spec), "--cache", str(cache),
                     "--dtype", "float64", "--json"])
    return code, json.loads(out.getvalue())


@pytest.mark.compiler
@pytest.mark.slow
def test_a_view_op_stays_a_view_under_its_patch(try_workspace, transpose_try):
    """transpose.int patched (named: its stock formula): its output is still a view of its
    input (shared storage, _base, versions, in-place changes through it), its gradients are
    right in both modes, and the kernel at its Autograd key is really the patch's (the
    dispatcher names where it was registered: the try directory) with a node type of the
    patch's; after the block, torch's own again."""
    spec, cache = try_workspace
    code, report = transpose_try
    (op,) = report["ops"]
    assert op["op"] == "transpose" and op["functions"] == ["transpose.int", "transpose_"]
    functional = [s for s in op["samples"] if s["variant"] == "function"]
    assert functional and all(s["verdict"] == "PASS" for s in functional), functional
    facts = in_a_process(VIEW, spec, cache)
    assert facts["stock"] == facts["patched"] == facts["after"] == VIEW_FACTS
    assert facts["patched ops"] == [["transpose", ["transpose.int", "transpose_"],
                                     ["TransposeBackward0", "TransposeBackward1"]]]
    assert not facts["stock kernel from the try directory"]
    assert facts["patched kernel from the try directory"]
    assert facts["stock kernel after"]
    assert facts["node types"] == [False, True]


@pytest.mark.compiler
@pytest.mark.slow
def test_a_view_op_with_its_stock_formula_passes(transpose_try):
    """Every verdict of `try transpose.int` on the stock formula passes, the in-place
    variant's (transpose_) included: its batched forward grads are checked as
    TestFwdGradients checks them (check_inplace_batched_forward_grad)."""
    code, report = transpose_try
    failed = [s for s in verdicts(report, "transpose") if s["verdict"] != "PASS"]
    assert code == 0 and not failed, failed


# ---------------------------------------------------------------------------------------------
# Uninstalling


UNINSTALL = '''
import json, sys, torch
from gradshard.service import patching

x = torch.randn(5, dtype=torch.float64, requires_grad=True)


def sin_node_and_gradient():
    y = torch.sin(x)
    return y, type(y.grad_fn), torch.autograd.grad(y.sum(), x, retain_graph=True)[0]


def autograd_kernel():
    dump = torch._C._dispatch_dump("aten::sin").splitlines()
    return next(line for line in dump if line.startswith("Autograd[alias]:"))


_, stock_type, stock = sin_node_and_gradient()
stock_kernel = autograd_kernel()
with patching.patch(spec=sys.argv[1], names=["sin"], cache=sys.argv[2]):
    kept, patched_type, patched = sin_node_and_gradient()
    patched_kernel = autograd_kernel()
_, after_type, after = sin_node_and_gradient()
print(json.dumps({
    "patched: twice the gradient": torch.allclose(patched, 2 * stock),
    "patched: a node type of its own": patched_type is not stock_type,
    "patched: its name": patched_type.__name__,
    "patched: another kernel": patched_kernel != stock_kernel,
    "after: the stock gradient": torch.equal(after, stock),
    "after: the stock node type": after_type is stock_type,
    "after: the stock kernel": autograd_kernel() == stock_kernel,
    # the patch's library stays loaded: a node it made still runs its formula
    "after: a patched node's gradient": torch.allclose(
        torch.autograd.grad(kept.sum(), x)[0], 2 * stock),
}))
'''


@pytest.mark.compiler
@pytest.mark.slow
def test_the_blocks_end_restores_the_stock_kernel_and_node(try_workspace):
    """patching.patch with sin's gradient doubled: inside the block the gradient is twice the
    stock one and grad_fn is a type of the patch's named SinBackward0; after it, torch's own
    kernel (at the dispatcher), gradient and node type are back, while a node made inside
    still runs the patch's formula."""
    spec, cache = try_workspace
    with edited(spec, SIN, SIN_TWICE):
        facts = in_a_process(UNINSTALL, spec, cache)
    assert facts == {"patched: twice the gradient": True, "patched: a node type of its own": True,
                     "patched: its name": "SinBackward0", "patched: another kernel": True,
                     "after: the stock gradient": True, "after: the stock node type": True,
                     "after: the stock kernel": True, "after: a patched node's gradient": True}


# ---------------------------------------------------------------------------------------------
# --samples


@pytest.mark.compiler
@pytest.mark.slow
def test_an_op_without_an_opinfo_is_checked_on_the_samples_given(try_workspace, capsys,
                                                                 tmp_path):
    """_euclidean_dist has an autograd kernel of its own and no OpInfo: with a wrong formula,
    `try` (unnamed: the edit finds it) says it has no samples; with a --samples file its
    samples fail, located; with the right formula they pass."""
    spec, cache = try_workspace
    samples = tmp_path / "samples.py"
    samples.write_text(SAMPLES)
    with edited(spec, EUCLIDEAN_DIST, EUCLIDEAN_DIST_TWICE) as line:
        code = main(["try", "--spec", str(spec), "--cache", str(cache), "--dtype", "float64"])
        text = capsys.readouterr().out
        failing, report = run_try(capsys, spec, cache, "_euclidean_dist",
                                  "--samples", str(samples))
    assert code == 10, text
    # the edit reaches _euclidean_dist only; no OpInfo names it and no file gives it samples
    (op_line,) = text.splitlines()[1:]
    assert op_line.startswith("  SKIP _euclidean_dist  (") and \
        op_line.endswith(f"derivatives.yaml:{line}): no OpInfo in torch.testing._internal's "
                         "op_db names _euclidean_dist, and no --samples file gives it samples"), \
        text
    assert failing == 5, report
    wrong = verdicts(report, "_euclidean_dist")
    assert [(s["opinfo"], s["variant"], s["dtype"], s["sample"]) for s in wrong] == [
        ("--samples", "function", "float64", n) for n in range(3)]
    for sample in wrong:
        assert sample["verdict"] == "FAIL" and sample["check"] == "gradcheck", sample
        assert sample["message"].startswith("Jacobian mismatch for output 0"), sample
        assert sample["error"] > 0.1 and set(sample["where"]) == {"input", "element", "output",
                                                                  "input_name"}
        # _euclidean_dist(Tensor x1, Tensor x2): the schema names torch.<op>'s arguments
        assert sample["where"]["input_name"] == ("x1", "x2")[sample["where"]["input"]], sample
    # the right formula at both default dtypes: the op refuses complex inputs (clamp), which
    # is no verdict, not a FAIL
    code = main(["try", "_euclidean_dist", "--spec", str(spec), "--cache", str(cache),
                 "--samples", str(samples), "--json"])
    report = json.loads(capsys.readouterr().out)
    assert code == 0, report
    right = verdicts(report, "_euclidean_dist")
    assert len(right) == 3 and all(s["verdict"] == "PASS" and s["opinfo"] == "--samples"
                                   and s["dtype"] == "float64" for s in right), right
