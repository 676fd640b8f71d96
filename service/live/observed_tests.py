"""Which backward nodes and autograd kernels each OpInfo's gradient tests reach, observed: the
index `affected --tests` selects PyTorch's gradient tests by (service/live/gradient_tests.py).

Built once per installed torch, in worker processes (WORKERS of them, the OpInfos handed out
one at a time), never in gradshard's own: every OpInfo of torch's op_db
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
formula calls sin on primals: sin's kernel edit selects polar's forward-mode tests). An
OpInfo whose run hangs past OPINFO_TIMEOUT or kills its worker is recorded as lost (the
worker is replaced): `affected --tests` finds such an OpInfo's tests by name, as before.

The index is kept in the cache directory (`CACHE/gradient-tests/<key>.json`, KEPT of them)
as data: a header line (the format, the key, the hash of the body's bytes) and the body, JSON
only, never executed. The key covers the installed torch (its version, its directory, the
size and mtime of libtorch_cpu and of op_db's module), the Python version, the OpInfos
indexed and this module's own source, so another torch, or another observer, builds anew. A
cache directory travels (CI restores it), so a file is read only as a regular file under a
size limit whose path stays inside the cache directory, its body checked against its hash
and its every value against the layout below before use; one that fails is named in a
warning and built again. Its names are only looked up: the test ids are made from the live
OpInfos, never from the file.

    body: {"key", "torch": {identity}, "subset": null | [names], "seconds", "workers",
           "opinfos": {name: {dtype: {"samples": n, "skipped": n,
                                      "function": {phase: [names]},
                                      "inplace": {phase: [names]} (where it has one)}}},
           "lost": {name: why}}

Run as a module it is the worker: OpInfo names in, one JSON line out for each.
"""

from __future__ import annotations

import json
import os
import re
import selectors
import subprocess
import sys
import tempfile
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Callable, Iterable, Mapping, Sequence

import xxhash

from gradshard.cache.errors import EnvironmentFailure
from gradshard.cache.store.database import blob_hash, path_inside
from gradshard.cache.store.regular_files import read_regular
from gradshard.service.files.outputs import write_atomic

__all__ = ["DTYPES", "GradientIndex", "INDEX_DIRECTORY", "KEPT", "OPINFO_TIMEOUT", "PHASES",
           "Reach", "WORKERS", "build_index", "gradient_index", "index_path", "observe",
           "read_index", "torch_identity"]

INDEX_DIRECTORY = "gradient-tests"
FORMAT = "gradshard-gradient-index-1"
CODEC = "json:GradientIndex"  # the body's hash: blob_hash(CODEC, body bytes)
KEPT = 4  # index files kept in the directory (one per torch installed lately)
INDEX_BYTES = 64 << 20  # the most of a file read (the full index is about 1 MiB)
WORKERS = 2
OPINFO_TIMEOUT = 180.0  # one OpInfo's samples, every dtype and variant (the slowest: ~5 s)
START_TIMEOUT = 300.0  # a worker importing torch and op_db (~5 s)
STARTS = 3  # workers that may fail to start, one after the other, before the build gives up
DTYPES = ("float64", "complex128")  # both files' allowed_dtypes, in their order
VARIANTS = ("function", "inplace")
# per sample: the forward's graph and kernels, the create_graph backward's, forward mode's
PHASES = ("nodes", "kernels", "backward_nodes", "backward_kernels", "forward_ad_kernels")
WORKER_MODULE = "gradshard.service.live.observed_tests"
SEED = 0
_KEY = re.compile(r"[0-9a-f]{32}")
_INDEX_FILE = re.compile(r"[0-9a-f]{32}\.json")
_UNPRINTABLE = re.compile(r"[^\x20-\x7e]")


@dataclass(frozen=True)
class Reach:
    """What one variant's samples reached at one dtype (PHASES)."""

    nodes: frozenset[str] = frozenset()
    kernels: frozenset[str] = frozenset()
    backward_nodes: frozenset[str] = frozenset()
    backward_kernels: frozenset[str] = frozenset()
    forward_ad_kernels: frozenset[str] = frozenset()

    def every_node(self) -> frozenset[str]:
        return self.nodes | self.backward_nodes

    def every_kernel(self) -> frozenset[str]:
        return self.kernels | self.backward_kernels | self.forward_ad_kernels


@dataclass(frozen=True)
class DtypeReach:
    samples: int
    skipped: int  # samples that raised (what they reached before is kept)
    function: Reach
    inplace: Reach | None


@dataclass
class GradientIndex:
    """The observations: OpInfo (formatted name) → dtype → DtypeReach; the OpInfos that could
    not be observed, with why; how it was made."""

    torch: dict
    opinfos: dict[str, dict[str, DtypeReach]]
    lost: dict[str, str]
    seconds: float
    workers: int
    subset: tuple[str, ...] | None = None
    built: bool = False  # by this command (else read from the cache)
    path: Path | None = None

    def reached(self, name: str) -> tuple[frozenset[str], frozenset[str]]:
        """Every node and kernel the OpInfo's samples reached, at any dtype and variant."""
        nodes: set[str] = set()
        kernels: set[str] = set()
        for dtype in self.opinfos.get(name, {}).values():
            for reach in (dtype.function, dtype.inplace):
                if reach is not None:
                    nodes |= reach.every_node()
                    kernels |= reach.every_kernel()
        return frozenset(nodes), frozenset(kernels)

    def counts(self) -> tuple[int, int]:
        """Samples run and samples skipped (they raised), over every OpInfo and dtype."""
        per = [d for o in self.opinfos.values() for d in o.values()]
        return sum(d.samples for d in per), sum(d.skipped for d in per)


# ---------------------------------------------------------------------------------------------
# The index in the cache


def torch_identity() -> dict:
    """What the index is a function of: the installed torch (version, directory, its C++
    library's and op_db's module's size and mtime), Python's version and this observer."""
    import torch

    root = Path(torch.__file__).resolve().parent
    library = next(iter(sorted((root / "lib").glob("libtorch_cpu.*"))), None) \
        or next(iter(sorted(root.glob("_C.*"))), root / "__init__.py")
    samples = root / "testing" / "_internal" / "common_methods_invocations.py"
    return {"version": str(torch.__version__), "path": str(root),
            "library": _stamp(library, root), "op_db": _stamp(samples, root),
            "python": "%d.%d" % sys.version_info[:2],
            "observer": xxhash.xxh3_128_hexdigest(Path(__file__).read_bytes())}


def _stamp(path: Path, root: Path) -> list:
    try:
        info = path.stat()
    except OSError:
        return [str(path.relative_to(root)), -1, -1]
    return [str(path.relative_to(root)), info.st_size, info.st_mtime_ns]


def index_key(identity: Mapping, subset: Sequence[str] | None) -> str:
    text = json.dumps([FORMAT, identity, sorted(subset) if subset is not None else None],
                      sort_keys=True)
    return xxhash.xxh3_128_hexdigest(text.encode())


def index_path(cache: Path, key: str) -> Path | None:
    """The index file's path, when it stays inside the cache directory (no link among its
    directories leads out)."""
    return path_inside(cache, f"{INDEX_DIRECTORY}/{key}.json")


def gradient_index(cache: Path | None, names: Sequence[str], warnings: list[str],
                   subset: bool = False, workers: int = WORKERS,
                   timeout: float = OPINFO_TIMEOUT, progress: bool = True,
                   command: Sequence[str] | None = None) -> GradientIndex:
    """The index of these OpInfos for the installed torch: read from the cache directory, or
    built (and kept there). `subset`: the names are some of op_db's (kept apart from the
    whole index)."""
    identity = torch_identity()
    key = index_key(identity, names if subset else None)
    path = index_path(cache, key) if cache is not None else None
    if cache is not None and path is None:
        warnings.append(f"{cache / INDEX_DIRECTORY} leads outside the cache directory: the "
                        "gradient test index was built and not kept")
    if path is not None:
        found = read_index(path, identity, key, warnings)
        if found is not None:  # of these OpInfos only, whatever else the file names
            found.opinfos = {n: found.opinfos[n] for n in names if n in found.opinfos}
            found.lost = {n: found.lost[n] for n in names if n in found.lost}
            return found
    index = build_index(names, workers, timeout, progress, command)
    index.torch, index.subset = identity, tuple(names) if subset else None
    if path is not None:
        _keep(path, key, index, warnings)
    return index


def read_index(path: Path, identity: Mapping, key: str,
               warnings: list[str]) -> GradientIndex | None:
    """The index kept at path, or None: none there, or one that is damaged or foreign (named
    in `warnings`: it is built again)."""
    try:
        if os.path.islink(path):
            raise ValueError("it is a symbolic link")
        data = read_regular(path, INDEX_BYTES)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as error:
        warnings.append(f"the gradient test index {path} cannot be read ({error}): it was "
                        "built again")
        return None
    try:
        index = _decoded(data, identity, key)
    except (ValueError, TypeError, KeyError, AttributeError, RecursionError) as error:
        warnings.append(f"the gradient test index {path} is damaged or not this torch's "
                        f"({error}): it was built again")
        return None
    index.path = path
    return index


def _keep(path: Path, key: str, index: GradientIndex, warnings: list[str]) -> None:
    body = json.dumps(_body_json(index, key), sort_keys=True, separators=(",", ":")).encode()
    header = json.dumps({"format": FORMAT, "key": key, "hash": blob_hash(CODEC, body),
                         "bytes": len(body)}).encode()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, header + b"\n" + body)
    except OSError as error:
        warnings.append(f"the gradient test index could not be kept in {path.parent} "
                        f"({error.strerror or error}): it is built again next time")
        return
    index.path = path
    _prune(path.parent, path.name)


def _prune(directory: Path, kept: str) -> None:
    """The directory's index files past the KEPT newest (only files of an index's name:
    anything else there is left alone)."""
    try:
        entries = [(e.stat(follow_symlinks=False).st_mtime, e.name) for e in os.scandir(directory)
                   if _INDEX_FILE.fullmatch(e.name) and e.name != kept]
    except OSError:
        return
    for _, name in sorted(entries, reverse=True)[KEPT - 1:]:
        try:
            os.unlink(directory / name)
        except OSError:
            pass


def _body_json(index: GradientIndex, key: str) -> dict:
    return {"key": key, "torch": index.torch, "seconds": round(index.seconds, 3),
            "workers": index.workers,
            "subset": list(index.subset) if index.subset is not None else None,
            "opinfos": {name: {dtype: _dtype_json(reach) for dtype, reach in dtypes.items()}
                        for name, dtypes in index.opinfos.items()},
            "lost": dict(index.lost)}


def _dtype_json(reach: DtypeReach) -> dict:
    found: dict[str, Any] = {"samples": reach.samples, "skipped": reach.skipped,
                             "function": _reach_json(reach.function)}
    if reach.inplace is not None:
        found["inplace"] = _reach_json(reach.inplace)
    return found


def _reach_json(reach: Reach) -> dict:
    return {phase: sorted(getattr(reach, phase)) for phase in PHASES}


def _decoded(data: bytes, identity: Mapping, key: str) -> GradientIndex:
    """The index file's bytes checked and read (ValueError, TypeError, KeyError: it is not an
    index of this key, or damaged)."""
    head, newline, body = data.partition(b"\n")
    header = json.loads(head)
    if not newline or not isinstance(header, dict) or header.get("format") != FORMAT:
        raise ValueError("not an index of this format")
    if header.get("key") != key:
        raise ValueError("the index of another torch or other OpInfos")
    if header.get("hash") != blob_hash(CODEC, body):
        raise ValueError("its body does not match its hash")
    value = json.loads(body)
    _expect(isinstance(value, dict) and value.get("key") == key, "its body names another key")
    _expect(value.get("torch") == dict(identity), "it was built for another torch")
    subset = value.get("subset")
    _expect(subset is None or _strings(subset), "its subset is not a list of names")
    lost = value.get("lost")
    _expect(isinstance(lost, dict) and all(isinstance(v, str) for v in lost.values()),
            "its lost OpInfos are not names with reasons")
    _expect(_number(value.get("seconds")) and _number(value.get("workers")),
            "its figures are not numbers")
    opinfos = value.get("opinfos")
    _expect(isinstance(opinfos, dict), "its OpInfos are not a mapping")
    return GradientIndex(dict(identity), {name: _dtypes_read(dtypes)
                                          for name, dtypes in opinfos.items()},
                         {name: _words(why) for name, why in lost.items()},
                         float(value["seconds"]), int(value["workers"]),
                         tuple(subset) if subset is not None else None)


def _dtypes_read(dtypes: object) -> dict[str, DtypeReach]:
    _expect(isinstance(dtypes, dict) and set(dtypes) <= set(DTYPES), "an OpInfo's dtypes")
    return {dtype: _dtype_read(value) for dtype, value in dtypes.items()}


def _dtype_read(value: object) -> DtypeReach:
    _expect(isinstance(value, dict) and set(value) <= {"samples", "skipped", *VARIANTS}
            and "function" in value, "a dtype's observations")
    samples, skipped = value.get("samples"), value.get("skipped")
    _expect(_count(samples) and _count(skipped), "a dtype's sample counts")
    inplace = value.get("inplace")
    return DtypeReach(samples, skipped, _reach_read(value["function"]),
                      None if inplace is None else _reach_read(inplace))


def _reach_read(value: object) -> Reach:
    _expect(isinstance(value, dict) and set(value) == set(PHASES)
            and all(_strings(v) for v in value.values()), "a variant's phases")
    return Reach(**{phase: frozenset(value[phase]) for phase in PHASES})


def _words(text: str) -> str:
    """A reason as printed: one line of printable ASCII, at most 300 characters (a crafted
    index's reasons reach a terminal or a CI log, where control characters and a line of
    its own would be commands)."""
    return _UNPRINTABLE.sub("?", text)[:300]


def _expect(condition: bool, what: str) -> None:
    if not condition:
        raise ValueError(what)


def _strings(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


# ---------------------------------------------------------------------------------------------
# Building: the workers, supervised


def build_index(names: Sequence[str], workers: int = WORKERS, timeout: float = OPINFO_TIMEOUT,
                progress: bool = True, command: Sequence[str] | None = None) -> GradientIndex:
    """Every named OpInfo observed by `workers` worker processes (each handed one OpInfo at a
    time): one that overruns `timeout` or dies is lost, and its worker replaced."""
    started = time.perf_counter()
    if not names:
        return GradientIndex({}, {}, {}, 0.0, 0, built=True)
    command = tuple(command or (sys.executable, "-m", WORKER_MODULE))
    pool = _Pool(command, deque(dict.fromkeys(names)), max(1, min(workers, len(names))),
                 timeout)
    with _progress(progress, len(pool.queue)) as advance:
        pool.run(advance)
    return GradientIndex({}, pool.observed, pool.lost, time.perf_counter() - started,
                         pool.size, built=True)


class _Progress:
    def __init__(self, total: int) -> None:
        from rich.console import Console
        from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn,
                                   TimeElapsedColumn)

        self.bar = Progress(TextColumn("observing the OpInfos' gradient samples"), BarColumn(),
                            MofNCompleteColumn(), TimeElapsedColumn(),
                            TextColumn("{task.fields[name]}"), console=Console(stderr=True),
                            transient=True)
        self.task = self.bar.add_task("index", total=total, name="")

    def __call__(self, name: str) -> None:
        self.bar.update(self.task, advance=1, name=name)


class _progress:
    """A rich progress bar on a terminal's stderr; a line before and after elsewhere."""

    def __init__(self, enabled: bool, total: int) -> None:
        self.enabled, self.total, self.bar = enabled, total, None
        self.started = time.perf_counter()

    def __enter__(self) -> Callable[[str], None]:
        if not self.enabled:
            return lambda name: None
        if sys.stderr.isatty():
            self.bar = _Progress(self.total)
            self.bar.bar.start()
            return self.bar
        print(f"gradshard: observing the gradient samples of {self.total} OpInfos (once per "
              "installed torch)", file=sys.stderr, flush=True)
        return lambda name: None

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.bar.stop()
        if self.enabled and exc[0] is None:
            print(f"gradshard: the gradient test index was built in "
                  f"{time.perf_counter() - self.started:.0f} s", file=sys.stderr, flush=True)


class _Worker:
    """One worker process: its pipes, what it was last handed and by when it must answer."""

    def __init__(self, command: tuple[str, ...]) -> None:
        self.stderr = tempfile.TemporaryFile()
        self.process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=self.stderr, bufsize=0)
        self.buffer = b""
        self.ready = False
        self.current: str | None = None
        self.deadline = time.monotonic() + START_TIMEOUT
        self.ended: str | None = None

    def hand(self, name: str, timeout: float) -> bool:
        try:
            self.process.stdin.write((json.dumps({"opinfo": name}) + "\n").encode())
        except OSError:
            return False
        self.current, self.deadline = name, time.monotonic() + timeout
        return True

    def messages(self) -> list[dict] | None:
        """The complete lines read now, as JSON objects (None: it ended)."""
        chunk = os.read(self.process.stdout.fileno(), 1 << 20)
        if not chunk:
            return None
        self.buffer += chunk
        *lines, self.buffer = self.buffer.split(b"\n")
        found = []
        for line in lines:
            try:
                message = json.loads(line)
            except ValueError:
                continue
            if isinstance(message, dict):
                found.append(message)
        return found

    def end(self) -> str:
        """Killed (if still running) and reaped: how it ended, with its stderr's tail (once:
        later calls say the same)."""
        if self.ended is not None:
            return self.ended
        process = self.process
        if process.poll() is None:
            process.kill()
        code = process.wait()
        for pipe in (process.stdin, process.stdout):
            try:
                pipe.close()
            except OSError:
                pass
        how = f"killed by signal {-code}" if code < 0 else f"exited with {code}"
        self.stderr.seek(max(0, self.stderr.seek(0, os.SEEK_END) - 2048))
        tail = self.stderr.read().decode(errors="replace").strip().splitlines()[-3:]
        self.stderr.close()
        self.ended = how + (": " + " | ".join(tail) if tail else "")
        return self.ended

    def stop(self) -> None:
        if self.ended is not None:
            return
        try:
            self.process.stdin.close()
            self.process.wait(timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            pass
        self.end()


class _Pool:
    def __init__(self, command: tuple[str, ...], queue: deque, size: int,
                 timeout: float) -> None:
        self.command, self.queue, self.size, self.timeout = command, queue, size, timeout
        self.observed: dict[str, dict[str, DtypeReach]] = {}
        self.lost: dict[str, str] = {}
        self.failed_starts = 0
        self.workers: list[_Worker] = []

    def run(self, advance: Callable[[str], None]) -> None:
        try:
            self.workers = [_Worker(self.command) for _ in range(self.size)]
            while self.queue or any(w.current is not None for w in self.workers):
                self._hand_out()
                self._wait(advance)
        except BaseException:  # an interrupt, or no worker starts: none is waited for
            for worker in self.workers:
                worker.end()
            raise
        for worker in self.workers:
            worker.stop()

    def _hand_out(self) -> None:
        for index, worker in enumerate(self.workers):
            if worker.ready and worker.current is None and self.queue:
                name = self.queue.popleft()
                if not worker.hand(name, self.timeout):
                    self.queue.appendleft(name)
                    self._replace(index, worker, None)

    def _wait(self, advance: Callable[[str], None]) -> None:
        with selectors.DefaultSelector() as selector:
            for index, worker in enumerate(self.workers):
                selector.register(worker.process.stdout, selectors.EVENT_READ, index)
            deadline = min(w.deadline for w in self.workers)
            ready = selector.select(None if deadline == float("inf")
                                    else max(0.0, deadline - time.monotonic()))
        for key, _ in ready:
            index = key.data
            worker = self.workers[index]
            messages = worker.messages()
            if messages is None:
                self._replace(index, worker, "its worker died")
                continue
            for message in messages:
                self._take(worker, message, advance)
        now = time.monotonic()
        for index, worker in enumerate(self.workers):
            if worker.deadline < now:
                self._replace(index, worker, f"it ran past {self.timeout:.0f} s")

    def _take(self, worker: _Worker, message: dict, advance: Callable[[str], None]) -> None:
        if message.get("ready") is True and not worker.ready:
            worker.ready, worker.deadline = True, float("inf")
            self.failed_starts = 0
            return
        name = message.get("opinfo")
        if name is None or name != worker.current:
            return
        try:
            if "error" in message:
                raise ValueError(str(message["error"])[:500])
            self.observed[name] = _dtypes_read(message.get("observed"))
        except (ValueError, TypeError, KeyError) as error:
            self.lost[name] = _words(f"its observation failed: {error}")
        worker.current, worker.deadline = None, float("inf")
        advance(name)

    def _replace(self, index: int, worker: _Worker, why: str | None) -> None:
        """The worker ended (killed if running) and another started in its place; the OpInfo
        it had is lost (`why`), or, before it was ready, the start counted as failed."""
        how = worker.end()
        if worker.current is not None and why is not None:
            self.lost[worker.current] = _words(f"{why} ({how})")
        elif not worker.ready:
            self.failed_starts += 1
            if self.failed_starts >= STARTS:
                raise EnvironmentFailure(
                    f"the gradient test index's worker could not start ({how})",
                    "check that torch and its OpInfos import: python -c 'import torch."
                    "testing._internal.common_methods_invocations'")
        self.workers[index] = _Worker(self.command)


# ---------------------------------------------------------------------------------------------
# The worker's side: observing an OpInfo


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
    _seed()
    phases: dict[str, set[str]] = {phase: set() for phase in PHASES}
    samples = skipped = 0
    if inplace:
        call = _OnCopy(call)
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

    function = _Recomposed(info, call, sample)
    inputs = tuple(x for x in _flat(sample) if isinstance(x, torch.Tensor) and x.requires_grad)
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


def _flat(sample) -> list:
    parts = [sample.input, *sample.args, *sample.kwargs.values()]
    return [x for part in parts for x in (part if isinstance(part, (list, tuple)) else [part])]


class _OnCopy:
    """An in-place variant on a copy of its first argument (TestGradients._get_safe_inplace)."""

    def __init__(self, call: Callable) -> None:
        self.call = call

    def __call__(self, first, *args, **kwargs):
        copy = [t.clone() for t in first] if isinstance(first, (list, tuple)) else first.clone()
        return self.call(copy, *args, **kwargs)


class _Recomposed:
    """The variant called with the given tensors where the sample's tensors that require
    grad were (TestGradients._check_helper's fn)."""

    def __init__(self, info, call: Callable, sample) -> None:
        self.info, self.call, self.sample = info, call, sample

    def __call__(self, *tensors):
        supply = iter(tensors)
        args = [self._put(self.sample.input, supply), *(self._put(a, supply)
                                                        for a in self.sample.args)]
        kwargs = {k: self._put(v, supply) for k, v in self.sample.kwargs.items()}
        output = self.info.gradcheck_wrapper(self.call, *args, **kwargs)
        process = self.sample.output_process_fn_grad
        return process(output) if process is not None else output

    @staticmethod
    def _put(value, supply):
        import torch

        if isinstance(value, (list, tuple)) and all(isinstance(x, torch.Tensor) for x in value):
            return [next(supply) if x.requires_grad else x for x in value]
        if isinstance(value, torch.Tensor) and value.requires_grad:
            return next(supply)
        return value


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


def _seed() -> None:
    import random

    import numpy
    import torch

    torch.manual_seed(SEED)
    random.seed(SEED)
    numpy.random.seed(SEED)


def _answer_channel() -> IO[str]:
    """The answers' own copy of stdout; stdout itself (where torch and the samples print)
    goes to stderr."""
    answers = os.fdopen(os.dup(sys.stdout.fileno()), "w")
    sys.stdout.flush()
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    return answers


def main() -> None:
    """The worker: a line {"opinfo": name} in, a line {"opinfo", "observed" | "error"} out."""
    import warnings

    answers = _answer_channel()

    def write(message: dict) -> None:
        answers.write(json.dumps(message) + "\n")
        answers.flush()

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
