"""Locating a failing sample's error (service/live/checks.py: largest_error): the Jacobians
computed at once under vmap, or element by element when the function cannot run batched,
give the same largest difference at the same place. Plain torch, no patch: the formulas
made wrong here are autograd Functions'."""

from __future__ import annotations

import sys
from functools import partial
from types import SimpleNamespace

import pytest

torch = pytest.importorskip("torch")

from gradshard.service.live import checks as worker  # noqa: E402  (after the skip: it needs torch)
from gradshard.service.live.command import op_lines  # noqa: E402


class WrongOnLarge(torch.autograd.Function):
    """sin, whose backward doubles the gradient of the elements above 0.5 (and also runs
    under vmap: its vmap rule is generated)."""

    generate_vmap_rule = True

    @staticmethod
    def forward(x):
        return x.sin()

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * x.cos() * (1 + (x.real > 0.5))


class WrongUnbatched(torch.autograd.Function):
    """The same wrong sin in the old style, which vmap refuses."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.sin()

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * x.cos() * (1 + (x.real > 0.5))


def two_outputs(x, y):
    """Two outputs, the second's gradient wrong for y only: output 1, input 1."""
    return WrongOnLarge.apply(x) * 0 + x, (x.sum() * WrongOnLarge.apply(y))


def inputs() -> tuple:
    x = torch.tensor([[0.1, 0.2, 0.9], [0.3, 0.7, 0.4]], dtype=torch.float64)
    return (x,)


def one_by_one(monkeypatch) -> None:
    """largest_error made to take its element-by-element path."""
    monkeypatch.setattr(worker, "_analytical_batched", worker._analytical)
    monkeypatch.setattr(worker, "_numerical_batched", worker._numerical)


@pytest.mark.parametrize("function", [WrongOnLarge.apply, WrongUnbatched.apply])
def test_the_largest_error_is_found_where_the_formula_is_wrong(function):
    error, where = worker.largest_error(function, inputs(), torch)
    # the largest of the doubled elements: cos(0.7) at [1, 1] against cos(0.9) at [0, 2]
    assert where == {"input": 0, "element": [1, 1], "output": 0}
    assert error == pytest.approx(torch.tensor(0.7, dtype=torch.float64).cos().item(),
                                  rel=1e-6)


def test_batched_and_element_by_element_agree(monkeypatch):
    x = torch.linspace(0.05, 0.95, 6, dtype=torch.float64).reshape(2, 3)
    y = torch.linspace(0.2, 0.8, 4, dtype=torch.float64)
    batched = worker.largest_error(two_outputs, (x, y), torch)
    one_by_one(monkeypatch)
    single = worker.largest_error(two_outputs, (x, y), torch)
    assert batched[1] == single[1] and batched[1]["input"] == 1 and batched[1]["output"] == 1
    assert batched[0] == pytest.approx(single[0], rel=1e-9)


def test_complex_inputs_are_compared_as_real_views(monkeypatch):
    z = torch.tensor([0.3 + 0.2j, 0.9 - 0.1j], dtype=torch.complex128)
    batched = worker.largest_error(WrongOnLarge.apply, (z,), torch)
    one_by_one(monkeypatch)
    single = worker.largest_error(WrongOnLarge.apply, (z,), torch)
    assert batched[1] == single[1]
    assert batched[0] == pytest.approx(single[0], rel=1e-9) and batched[0] > 0.1
    # the element of the complex tensor (its index: one dimension), and which part
    assert batched[1]["element"] == [1] and batched[1]["part"] in ("real", "imaginary")


def test_a_correct_formula_has_no_error_to_locate():
    error, where = worker.largest_error(torch.sin, inputs(), torch)
    assert error < worker.LOCATED_TOLERANCE


def test_too_many_elements_are_not_located():
    x = torch.rand(worker.LOCATE_ELEMENTS + 1, dtype=torch.float64)
    assert worker.largest_error(WrongOnLarge.apply, (x,), torch) == (None, None)


def test_an_empty_input_is_passed_over(monkeypatch):
    """An empty tensor beside a wrong one: the error is still found in the other input, on
    both paths."""
    empty = torch.zeros(0, dtype=torch.float64, requires_grad=True)
    found = worker.largest_error(with_empty, (empty, inputs()[0]), torch)
    one_by_one(monkeypatch)
    assert worker.largest_error(with_empty, (empty, inputs()[0]), torch) == found
    assert found[1] == {"input": 1, "element": [1, 1], "output": 0}


def with_empty(empty, x):
    return WrongOnLarge.apply(x) + empty.sum()


@pytest.mark.parametrize("dtype", [torch.float64, torch.complex128])
def test_a_failing_fast_check_skips_the_slow_recheck_and_keeps_its_first_line(dtype,
                                                                              monkeypatch):
    """skip_fast_mode_recheck: torch's message, first line for first line, and no Jacobian
    computed element by element (the slow mode's), for a failing check; a right formula
    still passes."""
    gradcheck_module = sys.modules["torch.autograd.gradcheck"]
    x = torch.rand(6, 5, dtype=dtype, requires_grad=True)
    wrong = partial(torch.autograd.gradcheck, WrongOnLarge.apply, (x,), fast_mode=True)
    stock = worker._failure(wrong)
    slow_jacobians = []
    recheck = gradcheck_module._run_slow_mode_and_get_error
    monkeypatch.setattr(gradcheck_module, "_run_slow_mode_and_get_error", recheck)  # restored
    monkeypatch.setattr(gradcheck_module, "_get_numerical_jacobian",
                        partial(_counted, slow_jacobians, gradcheck_module._get_numerical_jacobian))
    worker.skip_fast_mode_recheck()
    assert gradcheck_module._run_slow_mode_and_get_error is not recheck
    quick = worker._failure(wrong)
    assert stock is not None and "mismatch for output 0 with respect to input 0" in stock
    assert quick == stock and slow_jacobians == []
    assert worker._failure(partial(torch.autograd.gradcheck, torch.sin, (x,),
                                   fast_mode=True)) is None


def _counted(calls: list, function, *args, **kwargs):
    calls.append(args)
    return function(*args, **kwargs)


# ---------------------------------------------------------------------------------------------
# Where the error is, as `try` says it: gradcheck's numbering, the schema's names, the part


def located_sample(call, sample, wrong=None) -> tuple[dict, str]:
    """A failing sample of `call` located, its `where` and the line `try` prints for it; with
    `wrong`, the function differentiated is that one (a formula made wrong) while the names
    are still the call's."""
    info = SimpleNamespace(name="op", gradcheck_wrapper=lambda op, *a, **k: op(*a, **k))
    function, inputs = worker._gradcheck_function(info, "function", call, sample, torch)
    if wrong is not None:
        function = _Wrong(function, wrong)
    verdict = worker.Verdict("op", "op", "function", "float64", 0, "FAIL", "gradcheck",
                             message="Jacobian mismatch for output 0 with respect to input 0")
    worker.locate(worker.SampleCheck("op", "op", "function", "float64", 0, function, inputs,
                                     ()), verdict)
    op = {"op": "op", "file": "derivatives.yaml", "line": 1, "entry": "op", "reason": "",
          "samples": [{**vars(verdict), "seconds": 0.0}]}
    return verdict.where, op_lines(op)[1]


class _Wrong:
    """A sample's function made wrong (`wrong`), its schema's names still the call's."""

    def __init__(self, recomposed, wrong) -> None:
        self.recomposed, self.wrong = recomposed, wrong

    def __call__(self, *tensors):
        return self.wrong(*tensors)

    def labels(self, torch):
        return self.recomposed.labels(torch)


def test_a_located_error_names_the_input_by_the_schema_and_keeps_gradchecks_numbering():
    """mul(self, other) with other's gradient wrong: input 1 (the second tensor gradcheck
    differentiates, as its `input 0` counts from 0) is `other` in mul.Tensor's schema."""
    x = torch.linspace(0.1, 0.9, 6, dtype=torch.float64).reshape(2, 3).requires_grad_()
    y = torch.linspace(0.2, 0.8, 6, dtype=torch.float64).reshape(2, 3).requires_grad_()
    sample = SimpleNamespace(input=x, args=(y,), kwargs={}, output_process_fn_grad=None)
    where, line = located_sample(torch.mul, sample, lambda a, b: a * WrongOnLarge.apply(b))
    # the largest of the doubled: x * cos(y) at [1, 2] (0.9 * cos(0.8))
    assert where == {"input": 1, "input_name": "other", "element": [1, 2], "output": 0}
    assert line.endswith("with respect to input 0; largest error 0.627 for output 0 with "
                         "respect to input 1 (other) at element [1, 2]"), line


def test_a_located_error_names_the_output_and_a_keyword_argument():
    """A keyword argument is named by its keyword; an output by the schema's return name."""
    a = torch.tensor([[2.0, 0.3], [0.3, 1.0]], dtype=torch.float64, requires_grad=True)
    sample = SimpleNamespace(input=a, args=(), kwargs={}, output_process_fn_grad=None)
    eigh = torch.linalg.eigh
    where, line = located_sample(eigh, sample, lambda m: (eigh(m)[0], WrongOnLarge.apply(
        eigh(m)[1])))
    assert (where["input_name"], where["output"], where["output_name"]) == ("self", 1,
                                                                           "eigenvectors")
    assert "for output 1 (eigenvectors) with respect to input 0 (self) at element" in line
    x = torch.linspace(0.1, 0.9, 4, dtype=torch.float64).requires_grad_()
    y = torch.linspace(0.2, 0.8, 4, dtype=torch.float64).requires_grad_()
    keyword = SimpleNamespace(input=x, args=(), kwargs={"other": y},
                              output_process_fn_grad=None)
    where, _ = located_sample(torch.add, keyword, lambda a, b: a + WrongOnLarge.apply(b))
    assert (where["input"], where["input_name"]) == (1, "other")


def test_a_complex_element_says_its_part_and_a_lambda_names_nothing():
    """A complex input's element is its index in the complex tensor and the part; a call that
    is no aten op's own (an OpInfo's lambda) gives no names, only the numbers."""
    z = torch.tensor([[0.3 + 0.2j, 0.9 - 0.1j], [0.2 + 0.7j, 0.1 + 0.1j]],
                     dtype=torch.complex128, requires_grad=True)
    sample = SimpleNamespace(input=z, args=(), kwargs={}, output_process_fn_grad=None)
    where, line = located_sample(lambda t: WrongOnLarge.apply(t), sample)
    assert set(where) == {"input", "element", "part", "output"} and len(where["element"]) == 2
    assert line.endswith(f"for output 0 with respect to input 0 at element {where['element']} "
                         f"({where['part']} part)"), line
