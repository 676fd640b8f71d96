"""The observer: what one OpInfo's gradient samples reach, observed in a worker process of
the gradient test index's (pool.py), never in gradshard's own.

    python -m gradshard.service.gradient_tests.observer    a line {"opinfo": name} in, a line
                                                          {"opinfo", "observed" | "error"} out

Built once per installed torch: every OpInfo of torch's op_db
(torch/testing/_internal/common_methods_invocations.py) is run at each dtype its gradient
tests exist for (float64 and complex128 where it supports them: the `allowed_dtypes` of
test/test_ops_gradients.py and test/test_ops_fwd_gradients.py) on its samples as those tests
draw them (`op.sample_inputs("cpu", dtype, requires_grad=True, include_conjugated_inputs=...)`,
through `op.gradcheck_wrapper` and the sample's `output_process_fn_grad`), through its
function variant and, where it has one, its in-place variant (on a clone of the first input,
samples that broadcast it left out: TestGradients._get_safe_inplace, _check_helper). Per
sample, three runs are observed:

- the forward: the nodes of the outputs' graph (from each differentiable output's `grad_fn`
  through `next_functions`, `type(node).__name__`, e.g. `SinBackward0`; the walk stops at a
  sample input's own `grad_fn`, which the test does not differentiate through) and the
  kernels the call reaches;
- one backward with `create_graph=True` (`torch.autograd.grad` of the differentiable outputs
  with random cotangents, `allow_unused=True`): the kernels the backward formulas reach, and
  the nodes of the gradients' graph, which test_fn_gradgrad differentiates again;
- one forward in forward mode (each input a dual tensor with a random tangent): the kernels
  the forward-mode formulas reach.

How kernels are observed: a `TorchDispatchMode` (torch.utils._python_dispatch) is active
around each run. The Python dispatch key sits below the Autograd keys, so every aten op the
mode sees has passed through its autograd kernel (VariableType's, where derivatives.yaml gives
one), by its schema name and overload (`mul.Tensor`, `sin_`: the function names of
native_functions.yaml, which name gradshard's kernel units). A CompositeImplicitAutograd op
has no autograd kernel of its own: it decomposes above the mode and shows as its parts
(`softmax` as `_softmax`), which is what its tests reach. Calls a backend kernel makes are
below Autograd and never reach the mode, nor an autograd kernel.

Its limits: what gradcheck does besides one forward, one backward and one forward-mode
forward is not replayed (its perturbed evaluations reach the same ops; its batched-gradient
checks run under vmap, whose batching rules are not observed; the second backward of
gradgradcheck and the forward-mode formulas of the backward's kernels, which
test_fn_fwgrad_bwgrad reaches, are not observed), the samples are drawn with a fixed seed
(an op that takes data-dependent paths may reach other ops on other values), a sample that
raises is skipped and counted (what it reached before raising is kept: its test reaches that
too), OpInfos' DecorateInfo skips are not read (a selected test may be skipped), and only
op_db is indexed (test_ops_gradients.py also runs hop_db's and custom_op_db's OpInfos, whose
autograd is not derivatives.yaml's). A kernel counts as reached whenever a call passes
through it, also where its autograd part is idle (no input requires grad or has a tangent),
so a changed kernel can select a test that cannot tell the change (polar's forward-mode
formula calls sin on primals: sin's kernel edit selects polar's forward-mode tests).

A sample is called as try's worker calls it (service/live/checks.py: Recomposed, OnCopy), and
the worker process seeds its streams and writes its answers as try's does
(service/live/samples.py).
"""

from __future__ import annotations

import json
import sys
from functools import partial
from pathlib import Path
from typing import Callable, Iterable

import xxhash

from gradshard.service.gradient_tests.reach import DTYPES, PHASES
from gradshard.service.live import checks as live_checks
from gradshard.service.live import samples as live_samples
from gradshard.service.live.checks import OnCopy, Recomposed, flat_arguments
from gradshard.service.live.samples import answer_channel, seed_streams, write_answer

__all__ = ["main", "observe", "observer_digest"]

# each variant's samples are drawn from streams seeded alike (the limits above: a fixed seed)
SEED = 0


def observe(info, dtypes: Iterable[str] = DTYPES) -> dict:
    """The OpInfo's reach at each of the dtypes it supports among `dtypes` (the index body's
    layout of one OpInfo)."""
    import torch

    found = {}
    supported = info.supported_dtypes("cpu")
    for name in dtypes:
        dtype = getattr(torch, name)
        if dtype not in supported:
            continue
        function, samples, skipped = _variant(info, info.get_op(), dtype, False)
        entry = {"samples": samples, "skipped": skipped, "function": function}
        if info.get_inplace() is not None:
            inplace, more, failed = _variant(info, info.get_inplace(), dtype, True)
            entry.update(inplace=inplace, samples=samples + more, skipped=skipped + failed)
        found[name] = entry
    return found


def _variant(info, call: Callable, dtype, inplace: bool) -> tuple[dict, int, int]:
    """One variant's samples at one dtype, as its test draws them (seeded alike)."""
    seed_streams(SEED)
    phases: dict[str, set[str]] = {phase: set() for phase in PHASES}
    samples = skipped = 0
    if inplace:
        call = OnCopy(call)
    try:
        for sample in info.sample_inputs("cpu", dtype, requires_grad=True,
                                         include_conjugated_inputs=info.test_conjugated_samples
                                         and dtype.is_complex):
            if inplace and sample.broadcasts_input:
                continue
            samples += 1
            skipped += not _observe_sample(info, call, sample, phases)
    except Exception:  # the samples themselves could not be made: the rest are not known
        skipped += 1
    return {phase: sorted(names) for phase, names in phases.items()}, samples, skipped


def _observe_sample(info, call: Callable, sample, phases: dict[str, set[str]]) -> bool:
    """The sample's forward, create_graph backward and forward-mode forward; False when one
    of them raised."""
    import torch
    import torch.autograd.forward_ad as fwAD

    function = Recomposed(info, call, sample, torch)
    inputs = tuple(x for x in flat_arguments(sample)
                   if isinstance(x, torch.Tensor) and x.requires_grad)
    stop = {x.grad_fn for x in inputs if x.grad_fn is not None}
    ok = True
    try:
        with _Kernels(phases["kernels"]):
            output = function(*inputs)
    except Exception:
        return False
    outputs = [o for o in _tensors(output) if o.requires_grad and (o.is_floating_point()
                                                                   or o.is_complex())]
    _walk([o.grad_fn for o in outputs], stop, phases["nodes"])
    if outputs and inputs:
        try:
            cotangents = [_random_like(o) for o in outputs]
            with _Kernels(phases["backward_kernels"]):
                grads = torch.autograd.grad(outputs, inputs, cotangents, create_graph=True,
                                            allow_unused=True)
            _walk([g.grad_fn for g in grads if g is not None], stop, phases["backward_nodes"])
        except Exception:
            ok = False
    if inputs:
        try:
            with fwAD.dual_level():
                duals = [fwAD.make_dual(x.detach(), _random_like(x)) for x in inputs]
                with _Kernels(phases["forward_ad_kernels"]):
                    function(*duals)
        except Exception:
            ok = False
    return ok


def _random_like(tensor):
    import torch

    if tensor.layout != torch.strided:
        return torch.ones_like(tensor)
    return torch.randn(tensor.shape, dtype=tensor.dtype)


def _walk(roots: list, stop: set, names: set[str]) -> None:
    """Every node reachable from roots through next_functions (not past `stop`), by class."""
    seen: set = set()
    todo = [r for r in roots if r is not None]
    while todo:
        node = todo.pop()
        if node in seen or node in stop:
            continue
        seen.add(node)
        names.add(type(node).__name__)
        todo.extend(f for f, _ in node.next_functions if f is not None)


def _tensors(value) -> list:
    import torch

    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in _tensors(v)]
    if isinstance(value, dict):
        return [t for v in value.values() for t in _tensors(v)]
    return []


def _kernel_mode():
    from torch.utils._python_dispatch import TorchDispatchMode

    class Kernels(TorchDispatchMode):
        """Names every op that reaches the Python key (below Autograd: each has passed its
        autograd kernel) as native_functions.yaml names its function."""

        def __init__(self, seen: set[str]) -> None:
            super().__init__()
            self.seen = seen

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            schema = func._schema
            name = schema.name.removeprefix("aten::")
            self.seen.add(f"{name}.{schema.overload_name}" if schema.overload_name else name)
            return func(*args, **(kwargs or {}))

    return Kernels


_mode_class: list = []


def _Kernels(seen: set[str]):
    if not _mode_class:
        _mode_class.append(_kernel_mode())
    return _mode_class[0](seen)


def observer_digest() -> str:
    """The digest of the observer's code, which the index's key covers (another observer
    builds anew): this module, the dtypes and phases it observes (reach.py), and try's
    modules whose sample code it runs."""
    sources = (Path(__file__), Path(__file__).with_name("reach.py"), Path(live_checks.__file__),
               Path(live_samples.__file__))
    return xxhash.xxh3_128_hexdigest(b"".join(path.read_bytes() for path in sources))


def main() -> None:
    """The worker: a line {"opinfo": name} in, a line {"opinfo", "observed" | "error"} out."""
    import warnings

    write = partial(write_answer, answer_channel())
    warnings.simplefilter("ignore")
    import torch

    torch.set_num_threads(1)
    from torch.testing._internal.common_methods_invocations import op_db

    by_name = {info.formatted_name: info for info in op_db}
    write({"ready": True})
    for line in sys.stdin:
        if not line.strip():
            continue
        name = json.loads(line).get("opinfo")
        try:
            write({"opinfo": name, "observed": observe(by_name[name])})
        except Exception as error:
            write({"opinfo": name, "error": f"{type(error).__name__}: {error}"})


if __name__ == "__main__":
    main()
