"""The samples an op is checked on, drawn as PyTorch's gradient tests draw them: the OpInfos
that answer to the op (torch.testing._internal's op_db and foreach dbs, by name, aten_name,
variant or alias), each one's samples at each dtype it supports with a backward, through its
function and in-place variants; else those of a --samples file. Each becomes a SampleCheck
(service/live/checks.py) for try's worker (service/live/worker.py).

Also here, what the two processes that draw OpInfo samples share (try's worker and the
gradient test index's observer, service/gradient_tests/observer.py): their random streams
seeded, and their answers written on a channel of their own.
"""

from __future__ import annotations

import functools
import json
import os
import random
import sys
from functools import partial
from pathlib import Path
from typing import IO, Any, Callable, Iterator

from gradshard.service.live.checks import (SampleCheck, argument_labels, is_foreach,
                                           opinfo_check, output_labels, schema_of)

__all__ = ["answer_channel", "backward_dtypes", "file_samples", "opinfo_index", "opinfo_names",
           "opinfo_samples", "opinfos_of", "seed_streams", "write_answer"]

OP_DBS = ("op_db", "foreach_unary_op_db", "foreach_binary_op_db", "foreach_pointwise_op_db",
          "foreach_reduce_op_db", "foreach_other_op_db")
# test_foreach.py (TestForeach.test_autodiff): its ops whose float64 samples must stay in
# their domain get values in [0.5, 1]
FOREACH_DOMAIN = {"_foreach_acos", "_foreach_asin", "_foreach_log10", "_foreach_log1p",
                  "_foreach_log2", "_foreach_log", "_foreach_pow", "_foreach_sqrt",
                  "_foreach_rsqrt"}


def _op_db() -> list:
    from torch.testing._internal import common_methods_invocations as cmi

    return [info for name in OP_DBS for info in getattr(cmi, name, [])]


def opinfos_of(op: str) -> list:
    """The OpInfos whose op is `op`: by name, aten_name, a variant's name or an alias."""
    return opinfo_index().get(op, [])


@functools.lru_cache(maxsize=1)
def opinfo_index() -> dict[str, list]:
    """Every op → its OpInfos, made once per process (a warm worker serves many patches)."""
    from gradshard.pipeline.layout.compile_layout import function_op

    index: dict[str, list] = {}
    for info in _op_db():
        for op in {function_op(n) for n in opinfo_names(info)}:
            index.setdefault(op, []).append(info)
    return index


def opinfo_names(info) -> set[str]:
    """The names an OpInfo answers to: its name, aten_name, aliases and its variants' (the
    rule `try` and `affected --tests` find an op's OpInfos by)."""
    names = {info.name, getattr(info, "aten_name", None) or info.name}
    names |= {a.name for a in getattr(info, "aliases", ()) or ()}
    for variant in (info.op, info.method_variant, info.inplace_variant):
        name = getattr(variant, "__name__", None)
        if name:
            names.add(name)
    return {n.split(".")[-1] for n in names if n}


def backward_dtypes(info, wanted: list[str], torch) -> list:
    """The dtypes asked for that the OpInfo supports with a backward, as torch dtypes."""
    supported = info.supported_backward_dtypes("cpu")
    return [getattr(torch, d) for d in wanted if getattr(torch, d) in supported]


def opinfo_samples(op: str, info, dtype) -> Iterator[SampleCheck]:
    """Every sample of the OpInfo at this dtype, through each variant the patch reaches."""
    variants = [("function", info.get_op())]
    # test_inplace_grad's condition (test_ops_gradients.py)
    if info.get_inplace() is not None and info.supports_inplace_autograd:
        variants.append(("inplace", info.get_inplace()))
    for variant, call in variants:
        samples = info.sample_inputs("cpu", dtype, requires_grad=True,
                                     **_sample_settings(info, dtype))
        for number, sample in enumerate(samples):
            if variant == "inplace" and sample.broadcasts_input:
                continue
            yield opinfo_check(op, info, variant, call, dtype, number, sample)


def _sample_settings(info, dtype) -> dict:
    """What the OpInfo's test asks its samples for: TestGradients conjugated inputs where the
    OpInfo tests them, TestForeach.test_autodiff five tensors per list."""
    if not is_foreach(info):
        return {"include_conjugated_inputs": info.test_conjugated_samples and dtype.is_complex}
    settings: dict[str, Any] = {"num_input_tensors": [5]}
    if info.name in FOREACH_DOMAIN and not dtype.is_complex:
        settings.update(low=0.5, high=1.0)
    return settings


def file_samples(op: str, path: str, dtypes: list[str],
                 refused: list[str]) -> Iterator[SampleCheck]:
    """Samples from a --samples file: `SAMPLES = {op: function(dtype) -> [args tuple, …]}`,
    checked through torch.<op> with gradcheck's default settings; a note in `refused` for each
    sample the op itself refuses (a dtype it does not support: no verdict, not a FAIL)."""
    import torch

    namespace: dict = {"__file__": path}
    exec(compile(Path(path).read_text(), path, "exec"), namespace)  # the user's own file
    make = (namespace.get("SAMPLES") or {}).get(op)
    call = getattr(torch, op, None)
    if make is None or call is None:
        return
    for dtype_name in dtypes:
        for number, args in enumerate(make(getattr(torch, dtype_name))):
            refusal = _refusal(call, args, torch)
            if refusal:
                refused.append(f"{dtype_name} sample {number}: torch.{op} raised {refusal}")
                continue
            yield _file_sample(op, call, tuple(args), dtype_name, number, torch)


def _refusal(call: Callable, args, torch) -> str:
    """What the op raises on the sample without gradients (nothing when it runs)."""
    try:
        with torch.no_grad():
            call(*args)
    except Exception as e:  # the op's own refusal: the sample cannot be checked
        return (str(e).strip() or type(e).__name__).splitlines()[0]
    return ""


def _file_sample(op: str, call: Callable, args: tuple, dtype_name: str, number: int,
                 torch) -> SampleCheck:
    from torch.testing._internal.common_utils import gradcheck

    function = _Positional(call, args, torch)
    inputs = tuple(a for a in args if isinstance(a, torch.Tensor) and a.requires_grad)
    return SampleCheck(op, "--samples", "function", dtype_name, number, function, inputs,
                       (("gradcheck", partial(gradcheck, function, inputs)),))


class _Positional:
    """Calls the op with the given tensors in the places of the sample's arguments that
    require grad, its other arguments as they are."""

    def __init__(self, call: Callable, args: tuple, torch) -> None:
        self.call, self.args, self.torch = call, args, torch

    def __call__(self, *tensors):
        supply = iter(tensors)
        return self.call(*(next(supply) if isinstance(a, self.torch.Tensor) and a.requires_grad
                           else a for a in self.args))

    def labels(self, torch) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """As Recomposed.labels, for torch.<op> called with the file's arguments."""
        schema = schema_of(self.call, self.args, {}, torch)
        if schema is None:
            return (), ()
        with torch.no_grad():
            output = self.call(*(a.detach() if isinstance(a, torch.Tensor) else a
                                 for a in self.args))
        return (argument_labels(schema, list(enumerate(self.args)), torch),
                output_labels(schema, output, torch))


# ---------------------------------------------------------------------------------------------
# The processes that draw samples: try's worker and the gradient test index's observer


def seed_streams(seed: int) -> None:
    """Torch's CPU generator, Python's random and numpy's seeded alike: the streams the
    samples, and the checks' random vectors, are drawn from."""
    import numpy
    import torch

    torch.manual_seed(seed)
    random.seed(seed)
    numpy.random.seed(seed % 2**32)  # numpy's seeds are 32-bit


def answer_channel() -> IO[str]:
    """The answers' own copy of stdout; stdout itself (file descriptor 1, where torch's C++
    and the checked or observed code print) goes to stderr, so that nothing printed breaks an
    answer."""
    answers = os.fdopen(os.dup(sys.stdout.fileno()), "w")
    sys.stdout.flush()
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    return answers


def write_answer(channel: IO[str], message: dict) -> None:
    """One line on the answer channel, flushed: the asking side reads it at once."""
    channel.write(json.dumps(message) + "\n")
    channel.flush()
