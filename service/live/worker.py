"""The process `gradshard try` checks a patch in: the installed torch, the patch library loaded
and installed, and torch's own gradient checks run on OpInfo samples.

    python -m gradshard.service.live.worker      one request per line on stdin (JSON),
                                                its events, then its answer, one per line
                                                on stdout

A request names the library (with its slots and sum), the ops, the dtypes and an optional
samples file; the answer holds a verdict per op and sample. The checks run in two phases, so
that each op's verdict is known as early as it can be: first, op by op, its samples up to the
first that fails (or all of them), and as soon as the op's verdict is known an event line

    {"event": "verdict", "op": …, "verdict": "PASS" | "FAIL" | "SKIP", "samples": checked,
     "sample": the failing sample's verdict (not located yet) or null,
     "reason": why nothing was checked (SKIP) or "", "seconds": its samples' checks}

then, for each op that failed, the rest of its samples, every failing one located. Each op's
checks draw from random streams of their own (seeded alike at the op's start, and carried from
its first phase to its second), so its answer is that of a worker checking that op alone,
whatever the other ops and the phases: only the order of the work differs. The patch is
installed for the request and removed after it, so a warm worker (the daemon's) serves edit
after edit; a library, once loaded, stays in the process (each is at a path of its own, named
by its content: service/live/build.py).

The checks are those of PyTorch's gradient tests (torch/testing/_internal/common_utils.py:
TestGradients._check_helper, as test_ops_gradients runs it): for every OpInfo of the op
(by name, aten_name, variant or alias) and every sample it gives, common_utils.gradcheck
with the OpInfo's settings (fast mode, batched grad, nondet_tol, forward-mode AD where the op
supports it), then gradgradcheck where it supports second derivatives. The foreach ops'
OpInfos, which test_ops_gradients does not run, get test_foreach.py's (TestForeach.
test_autodiff): five tensors per list, gradcheck with forward-mode AD, no batched grads and
no gradgradcheck. A failing sample is checked again in slow mode for the largest error and
where it is (in the second phase: that is what takes the time).
"""

from __future__ import annotations

import ctypes
import functools
import json
import os
import random
import sys
import time
import traceback
import types
from dataclasses import asdict, dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, Callable, Iterator

__all__ = ["install", "load_library", "opinfo_names", "opinfos_of"]

PASS, FAIL, SKIP = "PASS", "FAIL", "SKIP"  # SKIP: an op with no sample to check
# a failing sample's error is located element by element (two calls per input element, one
# backward per output element) only up to this many input elements: beyond, the message of
# the check is the answer
LOCATE_ELEMENTS = 400
# a located difference at most this large is central differences' own noise (gradcheck's
# default atol), not the failure
LOCATED_TOLERANCE = 1e-5
LOCATE_EPS = 1e-6  # the central differences' step, gradcheck's default eps
# each op's checks start from this seed (c10's default_rng_seed_val), whatever was checked
# before them. The OpInfos' samples are seeded by torch before each one (TrackedInputIter),
# but a --samples file's are drawn from the streams as they are, and so are gradcheck's
# fast-mode vectors: without it, those would depend on the ops checked before and differ from
# one check of a patch to the next (a fresh process's streams are seeded at random)
SEED = 67280421310721
OP_DBS = ("op_db", "foreach_unary_op_db", "foreach_binary_op_db", "foreach_pointwise_op_db",
          "foreach_reduce_op_db", "foreach_other_op_db")


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


@dataclass
class OpResult:
    op: str
    verdicts: list[Verdict] = field(default_factory=list)
    reason: str = ""  # why nothing was checked


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


@dataclass(frozen=True)
class OpChecks:
    """One op across the two phases: its samples still to check (a generator, resumed in the
    second phase where the first stopped), its result so far, and what its reason needs when
    it has no sample."""

    result: OpResult
    pending: Iterator[SampleCheck]
    has_opinfos: bool
    refused: list[str]  # --samples' samples the op refused, filled as `pending` runs


@dataclass(frozen=True)
class Streams:
    """The random streams the checks draw from: torch's CPU generator (the samples' tensors,
    fast mode's random vectors), Python's random (some OpInfos' scalars) and numpy's (which a
    --samples file may use)."""

    torch: Any  # torch.get_rng_state()
    python: tuple  # random.getstate()
    numpy: tuple  # numpy.random.get_state()


@dataclass(frozen=True)
class Stopped:
    """Where an op's first phase stopped: its failing sample (not located yet) and the streams
    right after its check, where the second phase goes on (locating it, then the next sample:
    the draws of a single pass)."""

    sample: SampleCheck
    streams: Streams


def main() -> None:
    write = partial(_write, _answer_channel())
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            answer = serve(json.loads(line), write)
        except Exception as e:  # the worker's own failure: reported, not a traceback
            answer = {"ok": False, "error": f"{type(e).__name__}: {e}",
                      "trace": traceback.format_exc()}
        write(answer)


def _write(channel, message: dict) -> None:
    """One line on the answer channel, flushed: the asking side reads it at once."""
    channel.write(json.dumps(message) + "\n")
    channel.flush()


def _unheard(event: dict) -> None:
    """The events of a request served without anyone listening."""


def _answer_channel():
    """The answers' own copy of stdout; stdout itself (file descriptor 1, where torch's C++
    and the checked code print) goes to stderr, so that nothing printed breaks an answer."""
    answers = os.fdopen(os.dup(sys.stdout.fileno()), "w")
    sys.stdout.flush()
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    return answers


def serve(request: dict, emit: Callable[[dict], None] = _unheard) -> dict:
    """The answer to one request; each op's verdict event is emitted as soon as it is known
    (the first phase), before the failures are located (the second)."""
    if request.get("ping"):
        import torch  # noqa: F401  (a warm worker's imports, made before the first patch)
        _opinfo_index()
        return {"ok": True}
    started = time.perf_counter()
    library = load_library(Path(request["library"]), request["slots"], request["sum"])
    skip_fast_mode_recheck()  # torch is imported by now
    handle = install(library)
    try:
        ops = [op_checks(op["name"], request["dtypes"], request.get("samples"))
               for op in request["ops"]]
        stops = []
        for checks in ops:  # the first phase: each op's verdict, told as soon as it is known
            stopped = until_failure(checks)
            emit(verdict_event(checks.result, stopped is not None))
            stops.append(stopped)
        for checks, stopped in zip(ops, stops):  # the second: the failures located
            if stopped is not None:
                rest_located(checks, stopped)
    finally:
        library.gradshard_patch_uninstall(handle)
    return {"ok": True, "ops": [_result_json(checks.result) for checks in ops],
            "seconds": time.perf_counter() - started}


# ---------------------------------------------------------------------------------------------
# Loading and installing


_loaded: dict[str, Any] = {}


def load_library(path: Path, slots: dict, expected_sum: str):
    """The library, checked against its sum, loaded once per process, its trampolines bound
    to torch's own copies of the hidden functions it calls."""
    if str(path) in _loaded:
        return _loaded[str(path)]
    import torch
    import xxhash

    if xxhash.xxh3_128_hexdigest(path.read_bytes()) != expected_sum:
        raise RuntimeError(f"{path} does not match its sum: rebuild it (gradshard try)")
    torch_lib = Path(torch.__file__).parent / "lib"
    bases = {name: _load_base(torch_lib / name, anchor, value)
             for name, (anchor, value) in slots["anchors"].items()}
    library = ctypes.PyDLL(str(path), mode=os.RTLD_NOW | os.RTLD_LOCAL)
    addresses = [bases[owner] + value for _, owner, value in slots["symbols"]]
    library.gradshard_patch_bind((ctypes.c_uint64 * max(1, len(addresses)))(*addresses))
    library.gradshard_patch_install.restype = ctypes.c_char_p
    library.gradshard_patch_python.argtypes = [ctypes.py_object]
    _loaded[str(path)] = library
    return library


def _load_base(library: Path, anchor: str, value: int) -> int:
    """Where a torch library is loaded: its exported anchor's address less its value."""
    handle = ctypes.CDLL(str(library), mode=os.RTLD_NOLOAD | os.RTLD_NOW)
    return ctypes.cast(getattr(handle, anchor), ctypes.c_void_p).value - value


def install(library) -> ctypes.c_void_p:
    """The nodes' Python classes (into a module of the patch's: torch's own stay where they
    are), then the kernels' registrations."""
    library.gradshard_patch_python(types.ModuleType("gradshard_patch_functions"))
    handle = ctypes.c_void_p()
    error = library.gradshard_patch_install(ctypes.byref(handle))
    if error is not None:
        raise RuntimeError(f"the dispatcher refused the patch's kernels: {error.decode()}")
    return handle


# ---------------------------------------------------------------------------------------------
# Checking


def op_checks(op: str, dtypes: list[str], samples_file: str | None) -> OpChecks:
    """The op's samples, none of them made or checked yet."""
    has_opinfos, refused = bool(opinfos_of(op)), []
    return OpChecks(OpResult(op), _samples(op, dtypes, samples_file, refused), has_opinfos,
                    refused)


def until_failure(checks: OpChecks) -> Stopped | None:
    """The first phase: the op's samples in order, from the streams' seed, up to the first
    that fails, which is returned (its error not located yet) with the streams' state; None
    when all pass, the reason set when there was none."""
    _seed()
    for sample in checks.pending:
        verdict = check_sample(sample)
        checks.result.verdicts.append(verdict)
        if verdict.verdict == FAIL:
            return Stopped(sample, _streams())
    if not checks.result.verdicts:
        checks.result.reason = _reason(checks)
    return None


def rest_located(checks: OpChecks, stopped: Stopped) -> None:
    """The second phase of an op that failed: the streams back where its first phase stopped
    (the other ops drew from them since), that failure located, then its remaining samples,
    each failure located as it is found."""
    _resume(stopped.streams)
    locate(stopped.sample, checks.result.verdicts[-1])
    for sample in checks.pending:
        verdict = check_sample(sample)
        if verdict.verdict == FAIL:
            locate(sample, verdict)
        checks.result.verdicts.append(verdict)


def _seed() -> None:
    """The streams at an op's start: those of a worker checking that op alone."""
    import numpy
    import torch

    torch.manual_seed(SEED)
    random.seed(SEED)
    numpy.random.seed(SEED % 2**32)  # numpy's seeds are 32-bit


def _streams() -> Streams:
    import numpy
    import torch

    return Streams(torch.get_rng_state(), random.getstate(), numpy.random.get_state())


def _resume(streams: Streams) -> None:
    import numpy
    import torch

    torch.set_rng_state(streams.torch)
    random.setstate(streams.python)
    numpy.random.set_state(streams.numpy)


def verdict_event(result: OpResult, failed: bool) -> dict:
    """The event of an op whose first phase is over: its last verdict is the failing one."""
    verdicts = result.verdicts
    verdict = FAIL if failed else PASS if verdicts else SKIP
    return {"event": "verdict", "op": result.op, "verdict": verdict, "samples": len(verdicts),
            "sample": asdict(verdicts[-1]) if failed else None, "reason": result.reason,
            "seconds": sum(v.seconds for v in verdicts)}


def _reason(checks: OpChecks) -> str:
    op = checks.result.op
    if checks.has_opinfos:
        return "its OpInfos support none of the dtypes asked for"
    if checks.refused:
        return "the op refused every sample of --samples: " + "; ".join(checks.refused)
    return (f"no OpInfo in torch.testing._internal's op_db names {op}, and no --samples file "
            "gives it samples")


def _samples(op: str, dtypes: list[str], samples_file: str | None,
             refused: list[str]) -> Iterator[SampleCheck]:
    """The op's samples in the order they are checked: its OpInfos' (each at each dtype it
    supports), else those of the --samples file."""
    import torch

    infos = opinfos_of(op)
    if not infos and samples_file:
        yield from _file_samples(op, samples_file, dtypes, refused)
    for info in infos:
        for dtype in _dtypes(info, dtypes, torch):
            yield from opinfo_samples(op, info, dtype)


def _op_db() -> list:
    from torch.testing._internal import common_methods_invocations as cmi

    return [info for name in OP_DBS for info in getattr(cmi, name, [])]


def opinfos_of(op: str) -> list:
    """The OpInfos whose op is `op`: by name, aten_name, a variant's name or an alias."""
    return _opinfo_index().get(op, [])


@functools.lru_cache(maxsize=1)
def _opinfo_index() -> dict[str, list]:
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


def _dtypes(info, wanted: list[str], torch) -> list:
    supported = info.supported_backward_dtypes("cpu")
    return [getattr(torch, d) for d in wanted if getattr(torch, d) in supported]


# test_foreach.py (TestForeach.test_autodiff): its ops whose float64 samples must stay in
# their domain get values in [0.5, 1]
FOREACH_DOMAIN = {"_foreach_acos", "_foreach_asin", "_foreach_log10", "_foreach_log1p",
                  "_foreach_log2", "_foreach_log", "_foreach_pow", "_foreach_sqrt",
                  "_foreach_rsqrt"}


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
            yield _opinfo_sample(op, info, variant, call, dtype, number, sample)


def _opinfo_sample(op: str, info, variant: str, call: Callable, dtype, number: int,
                   sample) -> SampleCheck:
    import torch

    function, inputs = _gradcheck_function(info, variant, call, sample, torch)
    return SampleCheck(op, info.name, variant, str(dtype).removeprefix("torch."), number,
                       function, inputs, tuple(_checks(info, variant, function, inputs)))


def _is_foreach(info) -> bool:
    return info.name.startswith("_foreach_")


def _sample_settings(info, dtype) -> dict:
    """What the OpInfo's test asks its samples for: TestGradients conjugated inputs where the
    OpInfo tests them, TestForeach.test_autodiff five tensors per list."""
    if not _is_foreach(info):
        return {"include_conjugated_inputs": info.test_conjugated_samples and dtype.is_complex}
    settings: dict[str, Any] = {"num_input_tensors": [5]}
    if info.name in FOREACH_DOMAIN and not dtype.is_complex:
        settings.update(low=0.5, high=1.0)
    return settings


def _checks(info, variant: str, function: Callable,
            inputs: tuple) -> list[tuple[str, Callable]]:
    """The checks of the OpInfo's gradient test, in its order: TestGradients' gradcheck then
    gradgradcheck (contiguous and not); TestForeach.test_autodiff's gradcheck. An in-place
    variant's batched forward grads follow check_inplace_batched_forward_grad
    (TestFwdGradients._forward_grad_helper)."""
    from torch.testing._internal.common_utils import gradcheck, gradgradcheck

    if _is_foreach(info):
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
    call = getattr(call, "call", call)  # an in-place variant on a copy (_OnCopy)
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
        call = _OnCopy(call)
    tensors = [x for x in _flat(sample) if isinstance(x, torch.Tensor) and x.requires_grad]
    return _Recomposed(info, call, sample, torch), tuple(tensors)


class _OnCopy:
    """An in-place variant applied to a copy of its first argument (a tensor or a list of
    them), as TestGradients._get_safe_inplace does: a leaf that requires grad is left alone."""

    def __init__(self, call: Callable) -> None:
        self.call = call

    def __call__(self, first, *args, **kwargs):
        copy = [t.clone() for t in first] if isinstance(first, (list, tuple)) else first.clone()
        return self.call(copy, *args, **kwargs)


def _flat(sample) -> list:
    parts = [sample.input, *sample.args, *sample.kwargs.values()]
    return [x for part in parts for x in (part if isinstance(part, (list, tuple)) else [part])]


class _Recomposed:
    """Calls the variant with the given tensors put back where the sample had them."""

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
            output = self(*(t.detach() for t in _flat(sample)
                            if isinstance(t, torch.Tensor) and t.requires_grad))
        return argument_labels(schema, parts, torch), output_labels(schema, output, torch)

    def _put(self, value, supply):
        if isinstance(value, (list, tuple)) and all(isinstance(x, self.torch.Tensor) for x in value):
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


def _file_samples(op: str, path: str, dtypes: list[str],
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
        """As _Recomposed.labels, for torch.<op> called with the file's arguments."""
        schema = schema_of(self.call, self.args, {}, torch)
        if schema is None:
            return (), ()
        with torch.no_grad():
            output = self.call(*(a.detach() if isinstance(a, torch.Tensor) else a
                                 for a in self.args))
        return (argument_labels(schema, list(enumerate(self.args)), torch),
                output_labels(schema, output, torch))


def _result_json(result: OpResult) -> dict:
    return {"op": result.op, "reason": result.reason,
            "verdicts": [asdict(v) for v in result.verdicts]}


if __name__ == "__main__":
    main()
