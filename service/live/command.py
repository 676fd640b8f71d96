"""`gradshard try`: an edited formula compiled, loaded into the installed torch and
gradchecked on OpInfo samples (service/live/plan.py → service/live/patch_build.py →
service/live/worker.py), without rebuilding PyTorch.

Exit codes (service/exit_codes.py): 0 every verdict passes, 5 one fails, 10 nothing could be
checked (each op's reason is printed), 9 the worker overran or died; the others as `build` has
them (1 spec errors, 2 usage, 3 a patch that does not compile, 4 internal error).

The text comes as it is known (try_patch's `show`): the first line and the ops not patched
once the patch is built, each op's verdict as soon as the worker finds it (its first failing
sample, or all passing), then each failing op's samples with their errors located.
"""

from __future__ import annotations

import importlib.metadata
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Callable, Sequence

from gradshard.cache.errors import UsageError
from gradshard.pipeline.releases import release_series
from gradshard.service.exit_codes import EXIT_OK, EXIT_TRY_FAILED, EXIT_TRY_NOTHING
from gradshard.service.files.spec_location import SpecLocation
from gradshard.service.generator.check import HOST
from gradshard.service.generator.identity import (GeneratorIdentity, identify_generator,
                                                installed_generator)
from gradshard.service.live.compiler import TryCompiler, choose_try_compiler
from gradshard.service.live.plan import PatchOp, PatchPlan
from gradshard.service.live.process import TryProcess
from gradshard.service.options import TRY_DTYPES, TRY_TIMEOUT, jobs_of

__all__ = ["DEFAULT_DTYPES", "TryOptions", "build_library", "check_extra", "check_ops",
           "check_generator", "compiler_text", "failed", "op_json", "op_lines", "place_text",
           "plan_and_build", "torch_library_dir", "try_json", "try_patch", "verdict_line"]

TRY_EXTRA_MODULES = (("numpy", "numpy"), ("expecttest", "expecttest"), ("elftools", "pyelftools"))
DEFAULT_DTYPES = TRY_DTYPES


@dataclass
class TryOutcome:
    plan: PatchPlan
    compiler: TryCompiler | None = None  # None when nothing was built
    answers: dict[str, dict] = field(default_factory=dict)  # op → the worker's answer
    seconds: float = 0.0
    note: str = ""  # the try directory is over its limit with this build's own files

    def verdicts(self) -> list[dict]:
        return [v for a in self.answers.values() for v in a.get("verdicts", [])]

    def exit_code(self) -> int:
        verdicts = self.verdicts()
        if not verdicts:
            return EXIT_TRY_NOTHING
        return EXIT_TRY_FAILED if any(v["verdict"] == "FAIL" for v in verdicts) else EXIT_OK


def check_extra(command: str = "gradshard try") -> None:
    """The modules `try` (and `affected --tests`) need that `build` does not (the `try`
    extra)."""
    import importlib.util

    missing = [package for module, package in TRY_EXTRA_MODULES
               if importlib.util.find_spec(module) is None]
    if importlib.util.find_spec("torch") is None:
        missing.insert(0, "torch==2.13.0")
    if missing:
        raise UsageError(f"`{command}` needs {', '.join(missing)}, which are not installed",
                         "pip install 'gradshard[try]'")


def check_generator(spec: GeneratorIdentity, names: Sequence[str]) -> None:
    """A spec is compared with the installed torch's only when both have one generator:
    otherwise every op whose code moved between generators would look edited. A checkout,
    a packaged spec and a copy alike (service/generator/identity.py); named ops are tried
    whatever the generator, unless it is another release's: its patches would need that
    release's headers and library. `spec`: the spec's generator."""
    torch = importlib.metadata.version("torch").split("+")[0]
    series = release_series(spec.rules_release)
    if spec.known and spec.hash and series != release_series(torch):
        raise UsageError(f"the spec's {spec.describe()}; its patches compile against torch "
                         f"{series}'s headers and load into that release's library, and the "
                         f"installed torch is {torch}",
                         f"try the ops with torch {series} installed, or on a spec of torch "
                         f"{torch}")
    if names:
        return
    installed = installed_generator()
    if installed is None or spec.hash in ("", installed.hash):
        return
    raise UsageError(f"the spec's {spec.describe()}; the installed torch {torch}'s is "
                     f"{installed.label}: the spec's ops cannot be compared "
                     f"with the installed ones",
                     "name the ops to try (gradshard try sin mul.Tensor …)")


def torch_library_dir() -> Path:
    import importlib.util

    found = importlib.util.find_spec("torch")
    if found is None or found.origin is None:
        raise UsageError("torch is not installed", "pip install 'gradshard[try]'")
    return Path(found.origin).parent / "lib"


def request_of(library, ops: Sequence[PatchOp], dtypes: Sequence[str],
               samples: str | None) -> dict:
    return {"library": str(library.path), "slots": library.slots, "sum": library.sum,
            "ops": [{"name": op.name} for op in ops], "dtypes": list(dtypes),
            "samples": str(Path(samples).resolve()) if samples else None}


@dataclass(frozen=True)
class TryOptions:
    names: tuple[str, ...]
    dtypes: tuple[str, ...] = DEFAULT_DTYPES
    samples: str | None = None
    cxx: str | None = None
    jobs: int = field(default_factory=partial(jobs_of, 0))  # compiles at once: -j's default
    timeout: float = TRY_TIMEOUT  # seconds for the checks of one patch


def plan_and_build(location: SpecLocation, session, names: Sequence[str], cxx: str | None,
                   jobs: int):
    """The plan, its library built (None when there is nothing to patch) and the compiler
    chosen: what both `try` and the Python API (service/live/api.py) load."""
    from gradshard.service.live.plan import plan_patch

    check_extra()
    identity = identify_generator(location)  # once: the check and the plan read it
    check_generator(identity, names)
    compiler = choose_try_compiler(location, cxx, torch_library_dir())
    plan = plan_patch(location, session, names, identity=identity)
    return plan, build_library(plan, compiler, jobs, session.directory), compiler


def build_library(plan: PatchPlan, compiler: TryCompiler, jobs: int, cache: Path | None = None):
    """The plan's patch library (None when there is nothing to patch); `cache`: the cache
    directory the session uses, which the try directory may not be inside."""
    from gradshard.service.live.patch_build import build_patch

    if plan.sources is None:
        return None
    return build_patch(plan, compiler.toolchain, torch_library_dir(), jobs, cache)


def try_patch(location: SpecLocation, session, options: TryOptions,
              show: Callable[[str], None] | None = None) -> TryOutcome:
    """Plan, build, check: the outcome with every op's verdicts (or why it has none); `show`,
    when given, gets the text's lines as soon as each is known."""
    import time

    show = show or _unshown
    started = time.perf_counter()
    with TryProcess(options.timeout) as worker:
        worker.warm()  # torch and the OpInfos import while the patch compiles
        plan, library, compiler = plan_and_build(location, session, options.names, options.cxx,
                                                 options.jobs)
        outcome = TryOutcome(plan, compiler if library is not None else None,
                             note=library.note if library is not None else "")
        _show_all(show, _head_lines(outcome))
        if library is not None:
            outcome.answers = check_ops(library, plan.patched, options, worker,
                                        partial(_verdict_arrived, outcome, show))
        _show_all(show, _detail_lines(outcome))
        # its work is done and it holds nothing to keep: an interpreter with torch loaded
        # takes a second to leave by itself, which the command would wait for
        worker.close(kill=True)
    outcome.seconds = time.perf_counter() - started
    return outcome


def check_ops(library, ops: Sequence[PatchOp], options: TryOptions,
              worker: TryProcess | None = None,
              on_event: Callable[[dict], None] | None = None) -> dict[str, dict]:
    """Each op's answer from a worker with the library installed: the warm worker given (the
    daemon's), else a fresh one for this call; each op's verdict event to on_event as soon as
    the worker has it."""
    request = request_of(library, ops, options.dtypes, options.samples)
    if worker is not None:
        answer = worker.ask(request, on_event)
    else:
        with TryProcess(options.timeout) as fresh:
            answer = fresh.ask(request, on_event)
    return {a["op"]: a for a in answer["ops"]}


def _unshown(line: str) -> None:
    """The lines of a `try` whose text nobody reads as it comes (--json, the API)."""


def _show_all(show: Callable[[str], None], lines: list[str]) -> None:
    for line in lines:
        show(line)


def _verdict_arrived(outcome: TryOutcome, show: Callable[[str], None], event: dict) -> None:
    show("  " + verdict_line(_place(outcome.plan, event["op"]), event))


def _place(plan: PatchPlan, name: str) -> dict:
    """The op's op_json before it has any verdict: its formula's place, for its lines."""
    return op_json(plan, next(op for op in plan.ops if op.name == name), {})


def try_json(outcome: TryOutcome) -> dict:
    """Per op: its formula's place and reason, and per sample its verdict and error."""
    plan = outcome.plan
    ops = [op_json(plan, op, outcome.answers.get(op.name, {})) for op in plan.ops]
    compiler = outcome.compiler.json() if outcome.compiler is not None else None
    return {"ok": outcome.exit_code() == EXIT_OK, "against": plan.baseline,
            "generator_path": plan.path, "compiler": compiler,
            "warnings": [outcome.note] if outcome.note else [], "ops": ops,
            "seconds": round(outcome.seconds, 3)}


def op_json(plan: PatchPlan, op: PatchOp, answer: dict) -> dict:
    return {"op": op.name, "functions": list(op.functions), "nodes": list(op.nodes),
            "entry": op.entry, "file": str(plan.derivatives), "line": op.line,
            "reason": op.reason or answer.get("reason", ""),
            "samples": answer.get("verdicts", [])}


def _head_lines(outcome: TryOutcome) -> list[str]:
    """What is known before any check: the first line, and every op not patched (SKIP, with
    its reason)."""
    plan = outcome.plan
    lines = [f"gradshard try: compared with {plan.baseline}" + compiler_text(outcome.compiler)]
    if plan.path == HOST:
        lines.append("  the nodes and kernels are the spec's own generator's (the host path: "
                     "gradshard does not reproduce that generator)")
    if outcome.note:
        lines.append(f"  warning: {outcome.note}")
    if not plan.ops:
        lines.append("  no op's generated code differs: nothing to try")
    unchecked = [op for op in plan.ops if op.reason or outcome.compiler is None]
    return lines + ["  " + line for op in unchecked for line in op_lines(op_json(plan, op, {}))]


def _detail_lines(outcome: TryOutcome) -> list[str]:
    """Each failing op again, with its counts and every failing sample, its error located."""
    return ["  " + line for op in try_json(outcome)["ops"] if failed(op)
            for line in op_lines(op)]


def failed(op: dict) -> bool:
    """Whether one op of try_json has a failing sample."""
    return any(s["verdict"] == "FAIL" for s in op["samples"])


def verdict_line(op: dict, event: dict) -> str:
    """An op's verdict as soon as the worker knows it (`op` is its op_json, for its place;
    `event` the worker's): all samples passing, its first failing sample (not located yet),
    or why it has none."""
    if event["verdict"] == "SKIP":
        return _skip_line(op, op["reason"] or event["reason"])
    if event["verdict"] == "PASS":
        return _count_line(op, event["samples"], event["samples"], event["seconds"])
    return (f"FAIL {op['op']}  ({_where(op)}, {op['entry']}): first failing sample: "
            f"{_sample_name(event['sample'])}")


def compiler_text(compiler: TryCompiler | None) -> str:
    """`; compiled with …, …` for the first line (nothing when nothing was built)."""
    if compiler is None:
        return ""
    return f"; compiled with {compiler.toolchain.version} ({compiler.why})"


def op_lines(op: dict) -> list[str]:
    """One op of try_json: its verdict line (PASS, FAIL or SKIP with the reason), then one
    line per failing sample."""
    samples = op["samples"]
    if not samples:
        return [_skip_line(op, op["reason"])]
    failing = [s for s in samples if s["verdict"] == "FAIL"]
    seconds = sum(s["seconds"] for s in samples)
    return [_count_line(op, len(samples) - len(failing), len(samples), seconds),
            *(f"  {_sample_text(s)}" for s in failing)]


def _skip_line(op: dict, reason: str) -> str:
    return f"SKIP {op['op']}  ({_where(op)}): {reason or 'no samples'}"


def _count_line(op: dict, passing: int, samples: int, seconds: float) -> str:
    verdict = "PASS" if passing == samples else "FAIL"
    return (f"{verdict} {op['op']}  {passing}/{samples} samples pass, {seconds:.1f} s  "
            f"({_where(op)}, {op['entry']})")


def _where(op: dict) -> str:
    return f"{op['file']}:{op['line']}" if op["line"] else op["file"]


def _sample_text(sample: dict) -> str:
    place = (f"; largest error {sample['error']:.3g} {place_text(sample['where'])}"
             if sample.get("error") else "")
    return f"FAIL {_sample_name(sample)}{place}"


def place_text(where: dict) -> str:
    """Where a located error is, in the words and numbering of gradcheck's message that
    precedes it (`mismatch for output 0 with respect to input 0`: both from 0), with their
    names in the op's schema and a complex element's part: `for output 0 with respect to
    input 1 (other) at element [2, 1] (imaginary part)`."""
    part = f" ({where['part']} part)" if where.get("part") else ""
    return (f"for {_named('output', where['output'], where.get('output_name'))} with respect "
            f"to {_named('input', where['input'], where.get('input_name'))} at element "
            f"{where['element']}{part}")


def _named(what: str, number: int, name: str | None) -> str:
    return f"{what} {number} ({name})" if name else f"{what} {number}"


def _sample_name(sample: dict) -> str:
    return (f"{sample['opinfo']} {sample['variant']} {sample['dtype']} sample "
            f"{sample['sample']}: {sample['check']}: {sample['message']}")
