"""`gradshard affected --tests`: PyTorch's gradient tests whose samples reach what an edit
changes, as pytest ids (and a file of them, for `python -m pytest @FILE`), from the installed
torch's op_db (the `try` extra).

What a test reaches is observed, not guessed from names: observer.py runs every OpInfo's
gradient samples once per installed torch (the index: index.py) and records the backward nodes
they create and the autograd kernels they pass through, so `_softmax`'s edit finds the tests of
`softmax`, `nn.functional.softmin` and every other OpInfo whose samples create a
SoftmaxBackward0, and `mul.Tensor`'s those of every OpInfo whose forward or double backward
multiplies.

The tests are those of test/test_ops_gradients.py (TestBwdGradientsCPU) and
test/test_ops_fwd_gradients.py (TestFwdGradientsCPU). Both files instantiate their methods with
`ops(op_db, dtypes=OpDTypes.supported, allowed_dtypes=[double, cdouble])`
(torch/testing/_internal/common_device_type.py: ops, instantiate_device_type_tests), so a
test's name is `<method>_<OpInfo.formatted_name>_cpu_<dtype>` for each of float64 and
complex128 the OpInfo supports; listed are those whose body does not skip by the OpInfo's own
attributes (common_utils.py: TestGradients._skip_helper, and each method's conditions), and
whose samples, at that dtype and through that method's variant, reach a changed node or
kernel in what the method runs (METHOD_REACH): the forward's nodes and kernels, the first
backward's kernels (test_fn_grad), the create_graph backward's nodes (the gradgrad tests and
test_fn_fwgrad_bwgrad), forward mode's kernels (the forward-mode tests). So a changed node
selects backward-file methods and test_fn_fwgrad_bwgrad, never test_forward_mode_AD; a
changed kernel the forward-mode tests as well, where they reach it.

An OpInfo the index could not observe (its samples hung or killed the worker) is matched by
name instead (its name, aten name, variants and aliases, as `try` finds an op's OpInfos), and
says so.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from gradshard.cache.errors import UsageError
from gradshard.service.gradient_tests.index import gradient_index
from gradshard.service.gradient_tests.reach import DTYPES, GradientIndex, Reach
from gradshard.service.query.affected import OpChange

__all__ = ["BACKWARD_FILE", "FORWARD_FILE", "GradientTests", "METHOD_REACH", "OpTests",
           "gradient_test_id", "gradient_tests", "opinfo_test_ids", "tests_json", "tests_text",
           "write_tests_file"]

BACKWARD_FILE = "test/test_ops_gradients.py::TestBwdGradientsCPU"
FORWARD_FILE = "test/test_ops_fwd_gradients.py::TestFwdGradientsCPU"
FOREACH = ("a foreach op: test/test_foreach.py tests its autograd, with ids of its own; the "
           "gradient test files run no foreach OpInfo")
UNREACHED = "no OpInfo's gradient samples reach it"
NO_BACKWARD_DTYPE = "the OpInfos whose samples reach it run no gradient test (no backward dtype)"


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
METHODS = tuple((BACKWARD_FILE, m) for m in BACKWARD_METHODS) + tuple(
    (FORWARD_FILE, m) for m in FORWARD_METHODS)
# forward-over-reverse: the backward formula differentiated in forward mode, which a node's
# edit alone can break (a formula calling an op without a forward derivative)
BACKWARD_UNDER_FORWARD = frozenset({"test_fn_fwgrad_bwgrad"})

# What each method runs of its variant's samples: (variant, node phases, kernel phases), the
# phases of observer.py (reach.py: PHASES; gradcheck: a forward and a backward; gradgradcheck
# differentiates the create_graph backward again; forward mode runs the forward formulas)
_FIRST = (("nodes",), ("kernels", "backward_kernels"))
_SECOND = (("nodes", "backward_nodes"), ("kernels", "backward_kernels"))
_FORWARD = ((), ("kernels", "forward_ad_kernels"))
METHOD_REACH: dict[str, tuple[str, tuple[str, ...], tuple[str, ...]]] = {
    "test_fn_grad": ("function", *_FIRST),
    "test_inplace_grad": ("inplace", *_FIRST),
    "test_fn_gradgrad": ("function", *_SECOND),
    "test_fn_fail_gradgrad": ("function", *_SECOND),
    "test_inplace_gradgrad": ("inplace", *_SECOND),
    "test_fn_fwgrad_bwgrad": ("function", _SECOND[0],
                              ("kernels", "backward_kernels", "forward_ad_kernels")),
    "test_forward_mode_AD": ("function", *_FORWARD),
    "test_inplace_forward_mode_AD": ("inplace", *_FORWARD),
}


@dataclass(frozen=True)
class OpTests:
    op: str
    opinfos: tuple[str, ...]  # the OpInfos (formatted names) whose tests are listed
    tests: tuple[str, ...]  # pytest ids
    reason: str = ""  # why there are none
    nodes: tuple[str, ...] = ()  # the changed nodes it creates
    kernels: tuple[str, ...] = ()  # its changed kernels (functions)
    unreached: dict[str, str] = field(default_factory=dict)  # changed, no test reaches: why
    by_name: tuple[str, ...] = ()  # OpInfos matched by name (the index lost them)


@dataclass(frozen=True)
class GradientTests:
    ops: tuple[OpTests, ...]
    index: GradientIndex | None = None  # None: no op changed, none was needed

    @property
    def ids(self) -> list[str]:
        return list(dict.fromkeys(test for op in self.ops for test in op.tests))


def gradient_tests(changes: Sequence[OpChange], cache: Path | None, warnings: list[str],
                   opinfos: Sequence[str] | None = None, **build: Any) -> GradientTests:
    """Each changed op's gradient tests (the installed torch's op_db), found through the
    index of what their samples reach (read from the cache directory, or built there).
    `opinfos`: only these OpInfos (by formatted name), indexed apart (for tests); `build`:
    index.gradient_index's settings."""
    if not changes:
        return GradientTests(())
    infos = _op_db()  # the OpInfos the gradient test files run
    if opinfos is not None:
        wanted = set(opinfos)
        infos = [info for info in infos if info.formatted_name in wanted]
    index = gradient_index(cache, [info.formatted_name for info in infos], warnings,
                           subset=opinfos is not None, **build)
    return GradientTests(tuple(_op_tests(change, infos, index) for change in changes), index)


def write_tests_file(tests: GradientTests, path: Path) -> None:
    """The ids one per line: pytest's arguments file (`python -m pytest @FILE`, pytest 8.2 or
    later), written whole even when empty (a step can test that it has lines)."""
    from gradshard.service.files.outputs import write_atomic

    try:
        write_atomic(path, "".join(f"{test}\n" for test in tests.ids).encode())
    except OSError as error:
        raise UsageError(f"--tests-file {path}: {error.strerror or error}",
                         "name a file in a writable directory") from None


def tests_json(tests: GradientTests, tests_file: Path | None = None) -> dict:
    """affected --tests' part of --json: the ids, per op its OpInfos, its tests, what of its
    change no test reaches and why, and the index they were found with."""
    found = {"ids": tests.ids, "file": str(tests_file) if tests_file else None,
             "ops": [{"op": o.op, "nodes": list(o.nodes), "kernels": list(o.kernels),
                      "opinfos": list(o.opinfos), "tests": list(o.tests),
                      "unreached": o.unreached, "by_name": list(o.by_name),
                      "reason": o.reason} for o in tests.ops],
             "index": None}
    if tests.index is not None:
        index = tests.index
        samples, skipped = index.counts()
        found["index"] = {"torch": index.torch.get("version"), "built": index.built,
                          "seconds": round(index.seconds, 1),
                          "path": str(index.path) if index.path else None,
                          "opinfos": len(index.opinfos), "samples": samples,
                          "skipped": skipped, "lost": index.lost}
    return found


def tests_text(tests: GradientTests, tests_file: Path | None = None) -> str:
    lines = [f"  gradient tests ({len(tests.ids)}){_index_words(tests.index)}"]
    if not tests.ops:
        lines.append("    no op's autograd code changed: no gradient test needs to run")
    for op in tests.ops:
        if op.tests:
            shown = ", ".join(op.opinfos[:4]) + (f" and {len(op.opinfos) - 4} more"
                                                 if len(op.opinfos) > 4 else "")
            line = (f"    {op.op}: {len(op.tests)} tests of {len(op.opinfos)} OpInfo"
                    f"{'s' if len(op.opinfos) != 1 else ''} ({shown})")
        else:
            line = f"    {op.op}: {op.reason}"
        lines.append(line)
        if op.tests:
            grouped: dict[str, list[str]] = {}
            for name, why in op.unreached.items():
                grouped.setdefault(why, []).append(name)
            lines.extend(f"      not reached: {', '.join(names)} ({why})"
                         for why, names in grouped.items())
        if op.by_name:
            lines.append(f"      by name (not observed: lost from the index): "
                         f"{', '.join(op.by_name)}")
    if tests.index is not None and tests.index.lost:
        lost = len(tests.index.lost)
        lines.append(f"  {lost} OpInfo{'s' if lost != 1 else ''} could not be observed (matched "
                     f"by name instead): " + "; ".join(
                         f"{name}: {why}" for name, why in sorted(tests.index.lost.items())[:5]))
    if tests.ids and tests_file is not None:
        lines.append(f"  run them, from the PyTorch checkout's root: python -m pytest "
                     f"@{tests_file}")
    elif tests.ids:
        lines.append("  run them: --tests-file FILE writes their ids, then from the PyTorch "
                     "checkout's root: python -m pytest @FILE (--json lists them too)")
    return "\n".join(lines)


def _index_words(index: GradientIndex | None) -> str:
    if index is None:
        return ""
    how = f"built now in {index.seconds:.0f} s" if index.built else "from the cache"
    return (f"; by what the samples of torch {index.torch.get('version', '?')}'s "
            f"{len(index.opinfos)} OpInfos reach, {how}")


def _op_tests(change: OpChange, infos: list, index: GradientIndex) -> OpTests:
    nodes, kernels = set(change.node_names), set(change.kernel_functions)
    tests: list[str] = []
    opinfos: list[str] = []
    by_name: list[str] = []
    reached: set[str] = set()
    reaching: set[str] = set()  # OpInfos whose samples reach it (whether or not tests run)
    for info in infos:
        name = info.formatted_name
        observed = index.opinfos.get(name)
        if observed is None:
            if name in index.lost and change.op in _named_ops(info):
                found = _tests_by_name(change, info)
                tests += found
                if found:
                    opinfos.append(name)
                    by_name.append(name)
            continue
        seen_nodes, seen_kernels = index.reached(name)
        if not (seen_nodes & nodes or seen_kernels & kernels):
            continue
        reaching.add(name)
        found = []
        for dtype_name, dtype in _dtypes(info):
            reach = observed.get(dtype_name)
            if reach is None:
                continue
            for where, (method, runs) in METHODS:
                if not runs(info, dtype):
                    continue
                hit = _hits(reach, method, nodes, kernels)
                if hit:
                    found.append(gradient_test_id(where, method, name, dtype_name))
                    reached |= hit
        if found:
            tests += found
            opinfos.append(name)
    named = [name for name in opinfos if change.op in _named_ops(_by_name(infos, name))]
    opinfos = named + [name for name in opinfos if name not in named]  # the op's own first
    items = [*change.node_names, *change.kernel_functions]
    unreached = {item: _why_unreached(change, item) for item in items if item not in reached}
    reason = ""
    if not tests:
        reason = (FOREACH if change.op.startswith("_foreach_") else
                  NO_BACKWARD_DTYPE if reaching else
                  f"no OpInfo's gradient samples reach {', '.join(items) or 'what changed'}")
    return OpTests(change.op, tuple(opinfos), tuple(dict.fromkeys(tests)), reason,
                   tuple(change.node_names), tuple(change.kernel_functions), unreached,
                   tuple(by_name))


def _hits(observed, method: str, nodes: set[str], kernels: set[str]) -> set[str]:
    """The changed nodes and kernels the method's run of the samples reaches."""
    variant, node_phases, kernel_phases = METHOD_REACH[method]
    reach: Reach | None = getattr(observed, variant)
    if reach is None:
        return set()
    hit = {n for phase in node_phases for n in getattr(reach, phase) & nodes}
    return hit | {k for phase in kernel_phases for k in getattr(reach, phase) & kernels}


def _by_name(infos: list, name: str):
    return next(info for info in infos if info.formatted_name == name)


def _why_unreached(change: OpChange, item: str) -> str:
    if change.op.startswith("_foreach_") or item.startswith(("_foreach_", "Foreach")):
        return FOREACH
    return UNREACHED


def _named_ops(info) -> set[str]:
    from gradshard.pipeline.layout.compile_layout import function_op
    from gradshard.service.live.samples import opinfo_names

    return {function_op(n) for n in opinfo_names(info)}


def opinfo_test_ids(info, methods: Callable[[str, str], bool] = lambda where, method: True
                    ) -> list[str]:
    """The ids of the OpInfo's gradient tests that run (of the methods chosen), by dtype then
    method: `<file>::<class>::<method>_<formatted_name>_cpu_<dtype>`."""
    return [gradient_test_id(where, method, info.formatted_name, dtype_name)
            for dtype_name, dtype in _dtypes(info) for where, (method, runs) in METHODS
            if runs(info, dtype) and methods(where, method)]


def gradient_test_id(where: str, method: str, opinfo: str, dtype: str) -> str:
    return f"{where}::{method}_{opinfo}_cpu_{dtype}"


def _tests_by_name(change: OpChange, info) -> list[str]:
    """An OpInfo the index lost, named for the op: its tests by the rule before observation
    (the backward file's methods; the forward file's where kernels changed, else
    test_fn_fwgrad_bwgrad)."""
    return opinfo_test_ids(info, lambda where, method: where == BACKWARD_FILE or change.kernels
                           or method in BACKWARD_UNDER_FORWARD)


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
