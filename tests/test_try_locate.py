"""Locating a failing sample's error (service/live/worker.py: largest_error): the Jacobians
computed at once under vmap, or element by element when the function cannot run batched,
give the same largest difference at the same place. Plain torch, no patch: the formulas
made wrong here are autograd Functions'."""

from __future__ import annotations

import sys
from functools import partial

import pytest

torch = pytest.importorskip("torch")

from gradshard.service.live import worker  # noqa: E402  (after the skip: it needs torch)


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
    assert batched[1] == single[1] and batched[1]["element"][-1] in (0, 1)
    assert batched[0] == pytest.approx(single[0], rel=1e-9) and batched[0] > 0.1


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
