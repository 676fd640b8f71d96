"""`gradshard affected --tests`: PyTorch's gradient tests that exercise the ops an edit
changes, from the installed torch's op_db (the `try` extra), as pytest ids and as one `-k`
expression selecting exactly them.

The tests are those of test/test_ops_gradients.py (TestBwdGradientsCPU) for every changed
op, and of test/test_ops_fwd_gradients.py (TestFwdGradientsCPU) where the op's kernels
(its forward-mode code) changed; where only its nodes changed, of that file only
test_fn_fwgrad_bwgrad (the backward formula under forward mode). Both files instantiate their methods with
`ops(op_db, dtypes=OpDTypes.supported, allowed_dtypes=[double, cdouble])`
(torch/testing/_internal/common_device_type.py: ops, instantiate_device_type_tests), so a
test's name is `<method>_<OpInfo.formatted_name>_cpu_<dtype>` for each of float64 and
complex128 the OpInfo supports; listed here are those whose body does not skip by the
OpInfo's own attributes (common_utils.py: TestGradients._skip_helper, and each method's
conditions), so the list is what runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

from gradshard.cache.errors import UsageError
from gradshard.service.query.affected import OpChange

__all__ = ["BACKWARD_FILE", "FORWARD_FILE", "GradientTests", "OpTests", "gradient_tests",
           "keyword_expression", "tests_json", "tests_text"]

BACKWARD_FILE = "test/test_ops_gradients.py::TestBwdGradientsCPU"
FORWARD_FILE = "test/test_ops_fwd_gradients.py::TestFwdGradientsCPU"
DTYPES = ("float64", "complex128")  # allowed_dtypes of both files, in their order
NO_OPINFO = "no OpInfo of torch's op_db names it (by name, aten name, variant or alias)"


def _runs(info, dtype) -> bool:
    """TestGradients._skip_helper: the dtype has a backward, and the op some autograd."""
    return (dtype in info.supported_backward_dtypes("cpu")
            and (info.supports_autograd or info.supports_forward_ad))


def _inplace(info, dtype) -> bool:
    return _runs(info, dtype) and info.inplace_variant is not None


def _inplace_autograd(info, dtype) -> bool:
    return _inplace(info, dtype) and info.supports_inplace_autograd


# Each file's methods and when one runs for an OpInfo and dtype (their bodies' conditions)
BACKWARD_METHODS: tuple[tuple[str, Callable[[Any, Any], bool]], ...] = (
    ("test_fn_grad", lambda info, dtype: dtype in info.supported_backward_dtypes("cpu")),
    ("test_inplace_grad", _inplace),
    ("test_fn_gradgrad", lambda info, dtype: _runs(info, dtype) and info.supports_gradgrad),
    ("test_fn_fail_gradgrad",
     lambda info, dtype: _runs(info, dtype) and not info.supports_gradgrad),
    ("test_inplace_gradgrad", _inplace_autograd),
)
FORWARD_METHODS: tuple[tuple[str, Callable[[Any, Any], bool]], ...] = (
    ("test_fn_fwgrad_bwgrad", _runs),
    ("test_forward_mode_AD", _runs),
    ("test_inplace_forward_mode_AD", _inplace_autograd),
)
# forward-over-reverse: the backward formula differentiated in forward mode, which a node's
# edit alone can break (a formula calling an op without a forward derivative)
BACKWARD_UNDER_FORWARD = frozenset({"test_fn_fwgrad_bwgrad"})


@dataclass(frozen=True)
class OpTests:
    op: str
    opinfos: tuple[str, ...]  # the OpInfos' formatted names
    tests: tuple[str, ...]  # pytest ids
    reason: str = ""  # why there are none


@dataclass(frozen=True)
class GradientTests:
    ops: tuple[OpTests, ...]

    @property
    def ids(self) -> list[str]:
        return [test for op in self.ops for test in op.tests]

    def keyword(self) -> str:
        return keyword_expression(self.ids)


def gradient_tests(changes: Sequence[OpChange]) -> GradientTests:
    """Each changed op's gradient tests (the installed torch's op_db)."""
    listed = {id(info) for info in _op_db()}  # the OpInfos the gradient test files run
    return GradientTests(tuple(_op_tests(change, listed) for change in changes))


def keyword_expression(ids: Sequence[str]) -> str:
    """A `pytest -k` expression selecting exactly these tests: their whole names, which no
    other test's name contains (a name ends in its dtype, and starts with its method)."""
    return " or ".join(dict.fromkeys(test.rsplit("::", 1)[1] for test in ids))


def tests_json(tests: GradientTests) -> dict:
    """affected --tests' part of --json: the ids, the -k expression, and per op its OpInfos,
    its tests and why it has none."""
    return {"ids": tests.ids, "k": tests.keyword(),
            "ops": [{"op": o.op, "opinfos": list(o.opinfos), "tests": list(o.tests),
                     "reason": o.reason} for o in tests.ops]}


def tests_text(tests: GradientTests) -> str:
    lines = [f"  gradient tests ({len(tests.ids)})"]
    for op in tests.ops:
        lines.append(f"    {op.op}: " + (f"{len(op.tests)} tests of "
                                          f"{', '.join(op.opinfos)}" if op.tests else op.reason))
    if tests.ids:
        lines.append("  run them: pytest test/test_ops_gradients.py "
                     f"test/test_ops_fwd_gradients.py -k '{tests.keyword()}'")
    return "\n".join(lines)


def _op_tests(change: OpChange, listed: set[int]) -> OpTests:
    from gradshard.service.live.worker import opinfos_of

    infos = [info for info in opinfos_of(change.op) if id(info) in listed]
    if not infos:
        return OpTests(change.op, (), (), _no_opinfo_reason(change.op))
    methods = [(BACKWARD_FILE, m) for m in BACKWARD_METHODS]
    methods += [(FORWARD_FILE, m) for m in FORWARD_METHODS
                if change.kernels or (change.nodes and m[0] in BACKWARD_UNDER_FORWARD)]
    tests = [f"{where}::{name}_{info.formatted_name}_cpu_{dtype_name}"
             for info in infos for dtype_name, dtype in _dtypes(info)
             for where, (name, runs) in methods if runs(info, dtype)]
    reason = "" if tests else "its OpInfos' gradient tests all skip (no backward dtype)"
    return OpTests(change.op, tuple(i.formatted_name for i in infos), tuple(tests), reason)


def _no_opinfo_reason(op: str) -> str:
    """Why an op has no gradient test: no OpInfo at all, or only one of the foreach lists,
    which test/test_foreach.py runs instead."""
    from gradshard.service.live.worker import opinfos_of

    if opinfos_of(op):
        return ("its OpInfos are foreach ones, which the gradient test files do not run "
                "(test/test_foreach.py tests their autograd)")
    return NO_OPINFO


def _dtypes(info) -> list[tuple[str, Any]]:
    """OpDTypes.supported within the files' allowed dtypes: the dtypes an id exists for."""
    import torch

    supported = info.supported_dtypes("cpu")
    return [(name, getattr(torch, name)) for name in DTYPES if getattr(torch, name) in supported]


def _op_db() -> list:
    try:
        from torch.testing._internal.common_methods_invocations import op_db
    except ImportError as error:
        raise UsageError(f"affected --tests reads torch's OpInfos, which cannot be imported "
                         f"({error})", "pip install 'gradshard[try]'") from None
    return list(op_db)
