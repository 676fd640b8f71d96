"""`gradshard try`: an edited formula compiled, loaded into the installed torch and
gradchecked on OpInfo samples (service/live/plan.py → service/live/build.py →
service/live/worker.py), without rebuilding PyTorch.

Exit codes: 0 every verdict passes, 5 one fails, 2 nothing could be checked (each op's
reason is printed); the others as `build` has them (1 spec errors, 3 a patch that does not
compile, 4 internal error).
"""

from __future__ import annotations

import importlib.metadata
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Sequence

from gradshard.cache.errors import UsageError
from gradshard.pipeline.releases import release_series
from gradshard.service.files.spec_location import SpecLocation
from gradshard.service.generator.identity import identify_generator, installed_generator
from gradshard.service.live.compiler import TryCompiler, choose_try_compiler
from gradshard.service.live.plan import PatchOp, PatchPlan
from gradshard.service.live.process import TryProcess
from gradshard.service.options import TRY_DTYPES, TRY_TIMEOUT, jobs_of

__all__ = ["DEFAULT_DTYPES", "TryOptions", "build_library", "check_extra", "check_ops",
           "check_generator", "compiler_text", "op_json", "op_lines", "plan_and_build", "torch_library_dir",
           "try_json", "try_patch", "try_text"]

EXIT_PASS, EXIT_NOTHING, EXIT_FAIL = 0, 2, 5
TRY_EXTRA_MODULES = (("numpy", "numpy"), ("expecttest", "expecttest"), ("elftools", "pyelftools"))
DEFAULT_DTYPES = TRY_DTYPES


@dataclass
class TryOutcome:
    plan: PatchPlan
    compiler: TryCompiler | None = None  # None when nothing was built
    answers: dict[str, dict] = field(default_factory=dict)  # op → the worker's answer
    seconds: float = 0.0

    def verdicts(self) -> list[dict]:
        return [v for a in self.answers.values() for v in a.get("verdicts", [])]

    def exit_code(self) -> int:
        verdicts = self.verdicts()
        if not verdicts:
            return EXIT_NOTHING
        return EXIT_FAIL if any(v["verdict"] == "FAIL" for v in verdicts) else EXIT_PASS


def check_extra() -> None:
    """The modules `try` needs that `build` does not (the `try` extra)."""
    import importlib.util

    missing = [package for module, package in TRY_EXTRA_MODULES
               if importlib.util.find_spec(module) is None]
    if importlib.util.find_spec("torch") is None:
        missing.insert(0, "torch==2.13.0")
    if missing:
        raise UsageError(f"`gradshard try` needs {', '.join(missing)}, which are not installed",
                         "pip install 'gradshard[try]'")


def check_generator(location: SpecLocation, names: Sequence[str]) -> None:
    """A spec is compared with the installed torch's only when both have one generator:
    otherwise every op whose code moved between generators would look edited. A checkout,
    a packaged spec and a copy alike (service/generator/identity.py); named ops are tried
    whatever the generator, unless it is another release's: its patches would need that
    release's headers and library."""
    spec = identify_generator(location)
    torch = importlib.metadata.version("torch").split("+")[0]
    series = release_series(spec.rules.name)
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
    check_generator(location, names)
    compiler = choose_try_compiler(location, cxx, torch_library_dir())
    plan = plan_patch(location, session, names)
    return plan, build_library(plan, compiler, jobs), compiler


def build_library(plan: PatchPlan, compiler: TryCompiler, jobs: int):
    """The plan's patch library (None when there is nothing to patch)."""
    from gradshard.service.live.build import build_patch

    if plan.sources is None:
        return None
    return build_patch(plan, compiler.toolchain, torch_library_dir(), jobs)


def try_patch(location: SpecLocation, session, options: TryOptions) -> TryOutcome:
    """Plan, build, check: the outcome with every op's verdicts (or why it has none)."""
    import time

    started = time.perf_counter()
    with TryProcess(options.timeout) as worker:
        worker.warm()  # torch and the OpInfos import while the patch compiles
        plan, library, compiler = plan_and_build(location, session, options.names, options.cxx,
                                                 options.jobs)
        outcome = TryOutcome(plan, compiler if library is not None else None)
        if library is not None:
            outcome.answers = check_ops(library, plan.patched, options, worker)
    outcome.seconds = time.perf_counter() - started
    return outcome


def check_ops(library, ops: Sequence[PatchOp], options: TryOptions,
              worker: TryProcess | None = None) -> dict[str, dict]:
    """Each op's answer from a worker with the library installed: the warm worker given (the
    daemon's), else a fresh one for this call."""
    request = request_of(library, ops, options.dtypes, options.samples)
    if worker is not None:
        answer = worker.ask(request)
    else:
        with TryProcess(options.timeout) as fresh:
            answer = fresh.ask(request)
    return {a["op"]: a for a in answer["ops"]}


def try_json(outcome: TryOutcome) -> dict:
    """Per op: its formula's place and reason, and per sample its verdict and error."""
    plan = outcome.plan
    ops = [op_json(plan, op, outcome.answers.get(op.name, {})) for op in plan.ops]
    compiler = outcome.compiler.json() if outcome.compiler is not None else None
    return {"ok": outcome.exit_code() == EXIT_PASS, "against": plan.baseline,
            "compiler": compiler, "ops": ops, "seconds": round(outcome.seconds, 3)}


def op_json(plan: PatchPlan, op: PatchOp, answer: dict) -> dict:
    return {"op": op.name, "functions": list(op.functions), "nodes": list(op.nodes),
            "entry": op.entry, "file": str(plan.derivatives), "line": op.line,
            "reason": op.reason or answer.get("reason", ""),
            "samples": answer.get("verdicts", [])}


def try_text(outcome: TryOutcome) -> str:
    report = try_json(outcome)
    lines = [f"gradshard try: compared with {report['against']}"
             + compiler_text(outcome.compiler)]
    if not report["ops"]:
        lines.append("  no op's generated code differs: nothing to try")
    for op in report["ops"]:
        lines += ["  " + line for line in op_lines(op)]
    return "\n".join(lines)


def compiler_text(compiler: TryCompiler | None) -> str:
    """`; compiled with …, …` for the first line (nothing when nothing was built)."""
    if compiler is None:
        return ""
    return f"; compiled with {compiler.toolchain.version} ({compiler.why})"


def op_lines(op: dict) -> list[str]:
    """One op of try_json: its verdict line (PASS, FAIL or SKIP with the reason), then one
    line per failing sample."""
    where = f"{op['file']}:{op['line']}" if op["line"] else op["file"]
    samples = op["samples"]
    if not samples:
        return [f"SKIP {op['op']}  ({where}): {op['reason'] or 'no samples'}"]
    failed = [s for s in samples if s["verdict"] == "FAIL"]
    verdict = "FAIL" if failed else "PASS"
    seconds = sum(s["seconds"] for s in samples)
    return [f"{verdict} {op['op']}  {len(samples) - len(failed)}/{len(samples)} samples pass, "
            f"{seconds:.1f} s  ({where}, {op['entry']})",
            *(f"  {_sample_text(s)}" for s in failed)]


def _sample_text(sample: dict) -> str:
    where = sample.get("where") or {}
    place = (f"; largest error {sample['error']:.3g} at input {where['input']} element "
             f"{where['element']} (output {where['output']})" if sample.get("error") else "")
    return (f"FAIL {sample['opinfo']} {sample['variant']} {sample['dtype']} sample "
            f"{sample['sample']}: {sample['check']}: {sample['message']}{place}")
