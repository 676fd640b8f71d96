"""One sample as its gradient test checks it: the function gradcheck differentiates (the
sample's input, args and kwargs recomposed around its tensors that require grad, an in-place
variant on a copy), the test's checks in their order up to the first that fails, and the
failure located: its largest error and where, named by the op's schema where it can be.

The checks are those of PyTorch's gradient tests (torch/testing/_internal/common_utils.py:
TestGradients._check_helper, as test_ops_gradients runs it): for every OpInfo of the op
(by name, aten_name, variant or alias: service/live/samples.py) and every sample it gives,
common_utils.gradcheck with the OpInfo's settings (fast mode, batched grad, nondet_tol,
forward-mode AD where the op supports it), then gradgradcheck where it supports second
derivatives. The foreach ops' OpInfos, which test_ops_gradients does not run, get
test_foreach.py's (TestForeach.test_autodiff): five tensors per list, gradcheck with
forward-mode AD, no batched grads and no gradgradcheck. A failing sample is checked again in
slow mode for the largest error and where it is (in the worker's second phase:
service/live/worker.py; that is what takes the time).

Locating is kept with the checks: it is the second half of a failing sample's check (its
verdict's `error` and `where`), and it names what it finds through the recomposed function's
schema. The recomposition (Recomposed, OnCopy, flat_arguments) is also the gradient test
index's (service/gradient_tests/observer.py), so that the samples it observes are called as
their tests call them.
"""

from __future__ import annotations

import sys
import time
import types
from dataclasses import dataclass
from functools import partial
from typing import Any, Callable

__all__ = ["FAIL", "OnCopy", "PASS", "Recomposed", "SKIP", "SampleCheck", "Verdict",
           "argument_labels", "check_sample", "flat_arguments", "is_foreach", "largest_error",
           "locate", "opinfo_check", "output_labels", "schema_of", "skip_fast_mode_recheck"]

PASS, FAIL, SKIP = "PASS", "FAIL", "SKIP"  # SKIP: an op with no sample to check
# a failing sample's error is located element by element (two calls per input element, one
# backward per output element) only up to this many input elements: beyond, the message of
# the check is the answer
LOCATE_ELEMENTS = 400
# a located difference at most this large is central differences' own noise (gradcheck's
# default atol), not the failure
LOCATED_TOLERANCE = 1e-5
LOCATE_EPS = 1e-6  # the central differences' step, gradcheck's default eps


@dataclass
class Verdict:
    op: str
    opinfo: str
    variant: str
    dtype: str
    sample: int
    verdict: str
    check: str = ""  # gradcheck, gradgradcheck
    error: float | None = None  # the largest |analytical - numerical|
    # where that error is: `input` and `output` numbered from 0 as gradcheck's message numbers
    # them (the tensors that require grad, the differentiable outputs), the input's `element`
    # (a complex input's also its `part`, real or imaginary), and their names in the op's
    # schema where it gives them (`input_name`, `output_name`: locate)
    where: dict | None = None
    message: str = ""
    seconds: float = 0.0


@dataclass(frozen=True)
class SampleCheck:
    """One sample as its test checks it: the names its verdict gives, the function gradcheck
    differentiates, its inputs, and the named checks in their order."""

    op: str
    opinfo: str
    variant: str
    dtype: str
    number: int
    function: Callable
    inputs: tuple
    checks: tuple[tuple[str, Callable], ...]


def opinfo_check(op: str, info, variant: str, call: Callable, dtype, number: int,
                 sample) -> SampleCheck:
    """One OpInfo sample through one variant, as its test checks it."""
    import torch

    function, inputs = _gradcheck_function(info, variant, call, sample, torch)
    return SampleCheck(op, info.name, variant, str(dtype).removeprefix("torch."), number,
                       function, inputs, tuple(_checks(info, variant, function, inputs)))


def is_foreach(info) -> bool:
    """A foreach op's OpInfo: test_foreach.py's, checked as TestForeach.test_autodiff does."""
    return info.name.startswith("_foreach_")


def _checks(info, variant: str, function: Callable,
            inputs: tuple) -> list[tuple[str, Callable]]:
    """The checks of the OpInfo's gradient test, in its order: TestGradients' gradcheck then
    gradgradcheck (contiguous and not); TestForeach.test_autodiff's gradcheck. An in-place
    variant's batched forward grads follow check_inplace_batched_forward_grad
    (TestFwdGradients._forward_grad_helper)."""
    from torch.testing._internal.common_utils import gradcheck, gradgradcheck

    if is_foreach(info):
        return [("gradcheck", partial(
            gradcheck, function, inputs, check_forward_ad=info.supports_forward_ad,
            check_batched_forward_grad=False, check_backward_ad=info.supports_autograd,
            check_batched_grad=False))]
    settings = dict(check_grad_dtypes=True, nondet_tol=info.gradcheck_nondet_tol,
                    fast_mode=info.gradcheck_fast_mode)
    batched_forward = (info.check_inplace_batched_forward_grad if variant == "inplace"
                       else info.check_batched_forward_grad)
    checks = [("gradcheck", partial(
        gradcheck, function, inputs, check_batched_grad=info.check_batched_grad,
        check_forward_ad=info.supports_forward_ad, check_backward_ad=True,
        check_undefined_grad=True,
        check_batched_forward_grad=batched_forward and info.supports_forward_ad, **settings))]
    if info.supports_gradgrad:
        checks += [("gradgradcheck", partial(
            gradgradcheck, function, inputs, gen_non_contig_grad_outputs=non_contiguous,
            check_batched_grad=info.check_batched_gradgrad, **settings))
            for non_contiguous in (False, True)]
    return checks


def check_sample(sample: SampleCheck) -> Verdict:
    """The sample's checks in order up to the first that fails (its error is located
    apart: locate)."""
    started = time.perf_counter()
    verdict = Verdict(sample.op, sample.opinfo, sample.variant, sample.dtype, sample.number,
                      PASS)
    for name, run in sample.checks:
        failure = _failure(run)
        if failure is not None:
            verdict.verdict, verdict.check, verdict.message = FAIL, name, failure
            break
    verdict.seconds = time.perf_counter() - started
    return verdict


def locate(sample: SampleCheck, verdict: Verdict) -> None:
    """A failing sample's largest error and where, its time counted in the sample's."""
    import torch

    started = time.perf_counter()
    verdict.error, verdict.where = _located(verdict.check, verdict.message, sample.function,
                                            sample.inputs, torch)
    if verdict.where is not None:
        verdict.where.update(_names(sample, verdict.where, torch))
    verdict.seconds += time.perf_counter() - started


def _names(sample: SampleCheck, where: dict, torch) -> dict:
    """The located input's and output's names in the op's schema, where the sample's function
    calls an aten op with its arguments in the schema's places (nothing otherwise: an OpInfo
    whose op is a lambda may pass them anywhere)."""
    labels = getattr(sample.function, "labels", None)
    try:
        inputs, outputs = labels(torch) if labels is not None else ((), ())
    except Exception:  # a call torch cannot resolve to one schema: no names, still located
        return {}
    found = {"input_name": _at(inputs, where["input"]), "output_name": _at(outputs,
                                                                          where["output"])}
    return {key: name for key, name in found.items() if name}


def _at(names: tuple[str, ...], index: int) -> str:
    return names[index] if 0 <= index < len(names) else ""


def schema_of(call: Callable, args: tuple, kwargs: dict, torch):
    """The schema of the aten op a call of `call` (torch.mul, Tensor.mul_: a builtin named as
    its op) with these arguments dispatches to; None for any other callable."""
    call = getattr(call, "call", call)  # an in-place variant on a copy (OnCopy)
    name = getattr(call, "__name__", "")
    if not isinstance(call, _BUILTINS) or not name or not hasattr(torch.ops.aten, name):
        return None
    overload = torch._C._jit_resolve_packet(f"aten::{name}", *args, **kwargs)
    return getattr(getattr(torch.ops.aten, name), overload or "default")._schema


_BUILTINS = (types.BuiltinFunctionType, types.MethodDescriptorType)


def argument_labels(schema, parts: list[tuple[int | str, Any]], torch) -> tuple[str, ...]:
    """The name of each tensor that requires grad among the call's arguments (`parts`: each
    argument's position or keyword, and its value; a list's tensors as `name[k]`), in
    gradcheck's order: the schema's name of a positional argument, a keyword's own."""
    arguments = [a.name for a in schema.arguments] if schema is not None else []
    labels = []
    for place, value in parts:
        name = place if isinstance(place, str) else _at(tuple(arguments), place)
        if isinstance(value, (list, tuple)):
            labels += [f"{name}[{k}]" if name else "" for k, x in enumerate(value)
                       if isinstance(x, torch.Tensor) and x.requires_grad]
        elif isinstance(value, torch.Tensor) and value.requires_grad:
            labels.append(name)
    return tuple(labels)


def output_labels(schema, output, torch) -> tuple[str, ...]:
    """The name of each differentiable output (floating or complex tensors, in order: what
    largest_error numbers) where the output is the schema's returns, one for one."""
    items = output if isinstance(output, (list, tuple)) else (output,)
    if schema is None or len(items) != len(schema.returns):
        return ()
    return tuple(r.name for r, x in zip(schema.returns, items)
                 if isinstance(x, torch.Tensor) and (x.is_floating_point() or x.is_complex()))


def skip_fast_mode_recheck() -> None:
    """A failing fast-mode gradcheck recomputes both Jacobians in slow mode, element by
    element, only for the lines of its message after the first (torch/autograd/gradcheck.py:
    _run_slow_mode_and_get_error, which draws nothing from the random streams and decides
    nothing): 98% of a failing check of sin's samples (0.067 s of 0.068 for a float64 one,
    0.165 s for a complex one). A verdict keeps only the first line, and locate finds the
    largest error batched, so in this process the recheck adds nothing to the message. A
    torch without the function is left as it is (its checks are only slower)."""
    gradcheck_module = sys.modules.get("torch.autograd.gradcheck")
    if callable(getattr(gradcheck_module, "_run_slow_mode_and_get_error", None)):
        gradcheck_module._run_slow_mode_and_get_error = _no_slow_mode_lines


def _no_slow_mode_lines(*args, **kwargs) -> str:
    """What replaces the slow-mode recheck's lines of a failing check's message: none."""
    return ""


def _failure(run: Callable) -> str | None:
    """None when the check passes, else its message's first line."""
    try:
        passed = run()
    except Exception as e:  # GradcheckError, or the op raising under the patch
        text = str(e).strip() or type(e).__name__
        return text.splitlines()[0].rstrip(",")
    return None if passed else "the check returned False"


def _gradcheck_function(info, variant: str, call: Callable, sample, torch):
    """TestGradients._check_helper's function of the tensors that require grad (the sample's
    input, args and kwargs recomposed around them); an in-place variant gets a clone."""
    if variant == "inplace":
        call = OnCopy(call)
    tensors = [x for x in flat_arguments(sample) if isinstance(x, torch.Tensor) and x.requires_grad]
    return Recomposed(info, call, sample, torch), tuple(tensors)


class OnCopy:
    """An in-place variant applied to a copy of its first argument (a tensor or a list of
    them), as TestGradients._get_safe_inplace does: a leaf that requires grad is left alone."""

    def __init__(self, call: Callable) -> None:
        self.call = call

    def __call__(self, first, *args, **kwargs):
        copy = [t.clone() for t in first] if isinstance(first, (list, tuple)) else first.clone()
        return self.call(copy, *args, **kwargs)


def flat_arguments(sample) -> list:
    """The sample's input, args and kwargs' values in order, a list's items in its place."""
    parts = [sample.input, *sample.args, *sample.kwargs.values()]
    return [x for part in parts for x in (part if isinstance(part, (list, tuple)) else [part])]


class Recomposed:
    """Calls the variant with the given tensors put back where the sample had them, those
    that require grad (TestGradients._check_helper's fn)."""

    def __init__(self, info, call: Callable, sample, torch) -> None:
        self.info, self.call, self.sample, self.torch = info, call, sample, torch

    def __call__(self, *tensors):
        supply = iter(tensors)
        put = lambda x: self._put(x, supply)  # noqa: E731
        args = [put(self.sample.input), *(put(a) for a in self.sample.args)]
        kwargs = {k: put(v) for k, v in self.sample.kwargs.items()}
        output = self.info.gradcheck_wrapper(self.call, *args, **kwargs)
        process = self.sample.output_process_fn_grad
        return process(output) if process is not None else output

    def labels(self, torch) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """The names of the inputs gradcheck differentiates and of the outputs, from the
        schema the call dispatches to (_names)."""
        sample = self.sample
        args, kwargs = (sample.input, *sample.args), sample.kwargs
        schema = schema_of(self.call, args, kwargs, torch)
        if schema is None:
            return (), ()
        parts = [*enumerate(args), *kwargs.items()]
        with torch.no_grad():
            output = self(*(t.detach() for t in flat_arguments(sample)
                            if isinstance(t, torch.Tensor) and t.requires_grad))
        return argument_labels(schema, parts, torch), output_labels(schema, output, torch)

    def _put(self, value, supply):
        if isinstance(value, (list, tuple)) and all(isinstance(x, self.torch.Tensor)
                                                    for x in value):
            return [next(supply) if x.requires_grad else x for x in value]
        if isinstance(value, self.torch.Tensor) and value.requires_grad:
            return next(supply)
        return value


def _located(check: str, message: str, function: Callable, inputs: tuple,
             torch) -> tuple[float | None, dict | None]:
    """largest_error for a failure of the backward Jacobian (gradcheck's, not its forward-mode
    or gradgradcheck's part, which largest_error does not compare); nothing when the error
    found is within gradcheck's tolerance (it was not the failure), or when the sample cannot
    be differentiated element by element (the op raises: the message says why)."""
    if check != "gradcheck" or "forward mode" in message:
        return None, None
    try:
        error, where = largest_error(function, inputs, torch)
    except Exception:
        return None, None
    return (error, where) if error is not None and error > LOCATED_TOLERANCE else (None, None)


def largest_error(function: Callable, inputs: tuple, torch) -> tuple[float | None, dict | None]:
    """The slow-mode comparison of a failing sample: the analytical Jacobian (autograd) against
    central differences, per input and output element; the largest difference and where
    (the first in input, element, output order when several are as large; inputs and outputs
    numbered as gradcheck's message numbers them). Complex tensors are compared as their real
    views (a trailing dimension of 2: the real and imaginary parts), whose Jacobian is a real
    one; a complex input's element is said as its index and part."""
    if not inputs or sum(t.numel() for t in inputs) > LOCATE_ELEMENTS:
        return None, None
    complex_inputs = tuple(t.is_complex() for t in inputs)
    if any(complex_inputs):
        function = _RealView(function, complex_inputs, torch)
        inputs = tuple(torch.view_as_real(t.detach()).clone() if c else t
                       for t, c in zip(inputs, complex_inputs))
    analytical = _jacobian(_analytical_batched, _analytical, function, inputs, torch)
    worst: tuple[float, dict | None] = (0.0, None)
    for i, tensor in enumerate(inputs):
        if not tensor.numel() or not analytical[i]:  # an empty input, or no output to compare
            continue
        numerical = _jacobian(_numerical_batched, _numerical, function, (inputs, i), torch)
        gaps = torch.stack([_column_gaps(n, a, tensor.numel(), torch)
                            for n, a in zip(numerical, analytical[i])], dim=1)
        gaps = torch.nan_to_num(gaps, nan=-1.0, posinf=float("inf"))  # a NaN gap: none
        if gaps.numel() and gaps.max().item() > worst[0]:
            element, output = divmod(int(gaps.reshape(-1).argmax()), gaps.shape[1])
            worst = (gaps.max().item(), {"input": i, "output": output,
                                         **_element(tensor, element, complex_inputs[i])})
    return worst


def _element(tensor, element: int, is_complex: bool) -> dict:
    """Where a flat element of an input is: its index, and for a complex input (compared as
    its real view, whose last index is the part) its index in the complex tensor and which
    part."""
    index = _index(tensor, element)
    if not is_complex:
        return {"element": index}
    return {"element": index[:-1], "part": ("real", "imaginary")[index[-1]]}


def _jacobian(batched: Callable, one_by_one: Callable, function: Callable, inputs, torch):
    """A Jacobian computed at once under vmap (2 calls of the function, not 2 per element:
    locating sin's six failing samples took 1.3 s one by one), or element by element when
    the op (or its patched formula) cannot run batched."""
    import warnings

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # vmap's "no batching rule: slower" notes
            return batched(function, inputs, torch)
    except Exception:
        return one_by_one(function, inputs, torch)


def _column_gaps(numerical, analytical, elements: int, torch):
    """Per input element, the largest difference over the output's elements (0 for an empty
    output)."""
    if not numerical.numel():
        return torch.zeros(elements, dtype=torch.float64)
    return (numerical - analytical).abs().amax(dim=0).to(torch.float64)


def _analytical(function: Callable, inputs: tuple, torch) -> list[list]:
    """analytical[i][o]: d output o (flattened) / d input i (flattened), a backward pass per
    output element."""
    detached = tuple(t.detach().requires_grad_(True) for t in inputs)
    outputs = _as_tuple(function(*detached), torch)
    per_input = [[torch.zeros(o.numel(), t.numel(), dtype=t.dtype) for o in outputs]
                 for t in detached]
    for o, output in enumerate(outputs):
        flat = output.reshape(-1)
        for k in range(flat.numel()):
            grads = torch.autograd.grad(flat[k], detached, retain_graph=True, allow_unused=True)
            for i, grad in enumerate(grads):
                if grad is not None:
                    per_input[i][o][k] = grad.reshape(-1)
    return per_input


def _analytical_batched(function: Callable, inputs: tuple, torch) -> list[list]:
    """_analytical's Jacobian from one batched backward pass per output (the rows of the
    identity as its grad outputs)."""
    detached = tuple(t.detach().requires_grad_(True) for t in inputs)
    outputs = _as_tuple(function(*detached), torch)
    per_input: list[list] = [[] for _ in detached]
    for output in outputs:
        rows = output.numel()
        identity = torch.eye(rows, dtype=output.dtype).reshape(rows, *output.shape)
        grads = torch.autograd.grad(output, detached, identity, retain_graph=True,
                                    allow_unused=True, is_grads_batched=True)
        for i, (tensor, grad) in enumerate(zip(detached, grads)):
            per_input[i].append(torch.zeros(rows, tensor.numel(), dtype=tensor.dtype)
                                if grad is None else grad.reshape(rows, -1).to(tensor.dtype))
    return per_input


def _numerical(function: Callable, at: tuple, torch) -> list:
    """numerical[o]: central differences of output o (flattened) for each element of input
    i, a column per element (at: the inputs and i)."""
    inputs, i = at
    columns = [_difference(function, inputs, i, element, LOCATE_EPS, torch)
               for element in range(inputs[i].numel())]
    return [torch.stack(per_output, dim=1) for per_output in zip(*columns)]


def _numerical_batched(function: Callable, at: tuple, torch) -> list:
    """_numerical's differences from two calls under vmap, each over a batch of input i with
    one element moved per batch entry (as _difference moves it: that element alone)."""
    inputs, i = at
    base = inputs[i].detach()
    count = base.numel()
    values = []
    for step in (LOCATE_EPS, -LOCATE_EPS):
        batch = base.reshape(1, -1).repeat(count, 1)
        batch.diagonal().add_(step)
        shifted = [t.detach() for t in inputs]
        shifted[i] = batch.reshape(count, *base.shape)
        dims = tuple(0 if j == i else None for j in range(len(inputs)))
        with torch.no_grad():
            values.append(torch.func.vmap(_Outputs(function, torch), dims)(*shifted))
    return [((a - b) / (2 * LOCATE_EPS)).reshape(count, -1).T for a, b in zip(*values)]


class _Outputs:
    """The function's floating-point outputs as a tuple (what vmap returns batched)."""

    def __init__(self, function: Callable, torch) -> None:
        self.function, self.torch = function, torch

    def __call__(self, *tensors):
        return _as_tuple(self.function(*tensors), self.torch)


def _difference(function: Callable, inputs: tuple, i: int, element: int, eps: float,
                torch) -> list:
    """Central differences of every output for one input element."""
    values = []
    for step in (eps, -eps):
        shifted = [t.detach().clone() for t in inputs]
        shifted[i].reshape(-1)[element] += step
        with torch.no_grad():
            values.append(_as_tuple(function(*shifted), torch))
    return [((a - b) / (2 * eps)).reshape(-1) for a, b in zip(*values)]


def _as_tuple(output, torch) -> tuple:
    items = output if isinstance(output, (list, tuple)) else (output,)
    return tuple(x for x in items if isinstance(x, torch.Tensor) and x.is_floating_point())


class _RealView:
    """A function of complex tensors as one of their real views, its complex outputs as
    theirs: autograd differentiates through view_as_complex and view_as_real, so the
    Jacobian largest_error compares is the real one of the real and imaginary parts."""

    def __init__(self, function: Callable, complex_inputs: tuple[bool, ...], torch) -> None:
        self.function, self.complex_inputs, self.torch = function, complex_inputs, torch

    def __call__(self, *tensors):
        view_as_complex, view_as_real = self.torch.view_as_complex, self.torch.view_as_real
        args = [view_as_complex(t) if c else t for t, c in zip(tensors, self.complex_inputs)]
        output = self.function(*args)
        items = output if isinstance(output, (list, tuple)) else (output,)
        return tuple(view_as_real(x) if isinstance(x, self.torch.Tensor) and x.is_complex()
                     else x for x in items)


def _index(tensor, element: int) -> list[int]:
    index = []
    for size in reversed(tensor.shape):
        index.append(element % size)
        element //= size
    return list(reversed(index))

