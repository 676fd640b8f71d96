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
by its content: service/live/patch_build.py).

The checks are those of PyTorch's gradient tests, on the samples they draw: which samples
(the op's OpInfos', or a --samples file's) is service/live/samples.py, how each is checked and
a failure located service/live/checks.py.
"""

from __future__ import annotations

import ctypes
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

from gradshard.service.live.checks import (FAIL, PASS, SKIP, SampleCheck, Verdict, check_sample,
                                           locate, skip_fast_mode_recheck)
from gradshard.service.live.samples import (answer_channel, backward_dtypes, file_samples,
                                            opinfo_index, opinfo_samples, opinfos_of,
                                            seed_streams, write_answer)

__all__ = ["install", "load_library"]

# each op's checks start from this seed (c10's default_rng_seed_val), whatever was checked
# before them. The OpInfos' samples are seeded by torch before each one (TrackedInputIter),
# but a --samples file's are drawn from the streams as they are, and so are gradcheck's
# fast-mode vectors: without it, those would depend on the ops checked before and differ from
# one check of a patch to the next (a fresh process's streams are seeded at random)
SEED = 67280421310721


@dataclass
class OpResult:
    op: str
    verdicts: list[Verdict] = field(default_factory=list)
    reason: str = ""  # why nothing was checked


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
    write = partial(write_answer, answer_channel())
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            answer = serve(json.loads(line), write)
        except Exception as e:  # the worker's own failure: reported, not a traceback
            answer = {"ok": False, "error": f"{type(e).__name__}: {e}",
                      "trace": traceback.format_exc()}
        write(answer)


def _unheard(event: dict) -> None:
    """The events of a request served without anyone listening."""


def serve(request: dict, emit: Callable[[dict], None] = _unheard) -> dict:
    """The answer to one request; each op's verdict event is emitted as soon as it is known
    (the first phase), before the failures are located (the second)."""
    if request.get("ping"):
        import torch  # noqa: F401  (a warm worker's imports, made before the first patch)
        opinfo_index()
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
    seed_streams(SEED)  # the streams at an op's start: those of a worker checking it alone
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
        yield from file_samples(op, samples_file, dtypes, refused)
    for info in infos:
        for dtype in backward_dtypes(info, dtypes, torch):
            yield from opinfo_samples(op, info, dtype)


def _result_json(result: OpResult) -> dict:
    return {"op": result.op, "reason": result.reason,
            "verdicts": [asdict(v) for v in result.verdicts]}


if __name__ == "__main__":
    main()
