"""Running ninja over build.ninja, and reading back what each edge did: compiled, served from
the object cache, spliced, failed (and why, when the compiler's messages cannot say), into a
CompileReport. ninja runs with -k 0: one failing unit does not stop the others.

Before a run, the objects no edge writes are removed (`StaleObjects`): obj/ is what links.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from gradshard.cache.errors import UsageError
from gradshard.cache.objects.object_cache import RECORD_BYTES
from gradshard.service.compile.build_files import pch_report
from gradshard.service.compile.launcher_counts import LauncherTally, launcher_tally
from gradshard.service.compile.plan import CompilePlan, PreparedUnit, read_bounded
from gradshard.service.compile.report import CompileReport, PchFailure
from gradshard.service.compile.toolchain import launcher_environment, ninja_binary
from gradshard.service.ninja_manifest import build_file_error

__all__ = ["StaleObjects", "read_outcome", "remove_stale_objects", "run_ninja"]

BUILD_FILE = "build.ninja"  # ninja's default, in the compile directory it runs in (-C)


@dataclass(frozen=True)
class StaleObjects:
    """Which objects a build removes when no edge of it writes them: parts in obj/parts/
    always, and in obj/ the objects of merged units' parts always (a part compiled alone by
    an earlier layout would link a formula twice) and, when `linked` (a build of every
    unit), any object of an earlier layout (a build of selected units keeps the others')."""

    linked: bool
    parts: frozenset[str]  # every merged unit's parts, selected or not


def remove_stale_objects(plan: CompilePlan, units: list[PreparedUnit],
                         stale: StaleObjects) -> None:
    """Before ninja runs: what obj/ holds is what a link of obj/*.o takes."""
    wanted = {p.output for p in units}
    for path in (plan.directory / "obj").glob("*.o"):
        if (stale.linked or path.stem in stale.parts) and f"obj/{path.name}" not in wanted:
            remove_object(path)
    for path in (plan.directory / "obj" / "parts").glob("*.o"):
        if f"obj/parts/{path.name}" not in wanted:
            remove_object(path)


def remove_object(path: Path) -> None:
    """An object and what its edge left beside it (depfile, messages, outcome)."""
    for suffix in ("", ".d", ".log", ".how"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)


def run_ninja(plan: CompilePlan, units: list[PreparedUnit], pch_headers: dict[str, Path],
              progress) -> CompileReport:
    """Run ninja over every unit; which ran, which came from the cache, which failed and,
    when the compiler's messages cannot say, why."""
    started = time.perf_counter()
    forget_outcomes(plan, units, pch_headers)
    # an edge whose output's mtime is as before did not run: ninja found it up to date
    before = {p.unit.name: _mtime(plan.directory / p.output) for p in units}
    tally = launcher_tally(plan.toolchain.launcher, plan.directory)
    try:
        returncode, captured = run_streamed(plan, progress, tally)
    finally:
        counts = tally.finish()
    # ninja refusing build.ninja ran nothing: every unit would look failed, the compiler blamed
    refused = build_file_error("".join(captured), BUILD_FILE, plan.directory / BUILD_FILE)
    if returncode != 0 and refused is not None:
        raise refused
    report = CompileReport(units=len(units), seconds=time.perf_counter() - started,
                           pch_failures=pch_failures(plan, pch_headers), launcher=counts)
    for p in units:
        record_unit(plan, p, before[p.unit.name], report)
    if returncode != 0 and not report.failed and not report.pch_failures:
        raise UsageError("ninja failed: " + "".join(captured[-20:]).strip(), "ninja's own "
                         f"error, not the compiler's: see {plan.directory / BUILD_FILE}")
    return report


def run_streamed(plan: CompilePlan, progress, tally: LauncherTally) -> tuple[int, list[str]]:
    """ninja's exit status and its output, each line passed on as it comes (the progress
    bar's `[done/total]` status: NINJA_STATUS); the launcher's counting set up first."""
    command = [ninja_binary(), "-C", str(plan.directory), "-k", "0", "-j", str(plan.jobs)]
    env = tally.environment(dict(launcher_environment(plan.toolchain.launcher,
                                                      dict(os.environ)),
                                 NINJA_STATUS="[%f/%t] "))
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True, env=env)
    captured = []
    assert process.stdout is not None
    for line in process.stdout:
        captured.append(line)
        progress(line)
    process.wait()
    return process.returncode, captured


def forget_outcomes(plan: CompilePlan, units: list[PreparedUnit],
                    pch_headers: dict[str, Path]) -> None:
    """What an earlier run said of the edges this run may run (ninja reruns every edge
    whose output is missing), so what is read after it is this run's."""
    for p in units:
        output = plan.directory / p.output
        Path(f"{output}.how").unlink(missing_ok=True)
        if not output.is_file():
            Path(f"{output}.log").unlink(missing_ok=True)
    for header in pch_headers.values():
        for suffix in (".how", ".log"):
            (plan.directory / f"{pch_report(header)}{suffix}").unlink(missing_ok=True)


def record_unit(plan: CompilePlan, p: PreparedUnit, before: int | None,
                report: CompileReport) -> None:
    """One edge's outcome into the report: no output is a failure (a splice whose parts
    failed is blocked, too); an output ninja rewrote was compiled, spliced or served."""
    output = plan.directory / p.output
    if p.is_splice and not all((plan.directory / part).is_file() for part in p.parts):
        remove_object(output)  # the last build's object, without the edit: not an output
        report.blocked.append(p.unit.name)
    log = Path(f"{output}.log")
    if log.is_file():
        report.logs[p.unit.name] = log.read_text(errors="replace")
    outcome = read_outcome(Path(f"{output}.how"))
    report.warnings.extend(w for w in outcome.get("warnings", ()) if isinstance(w, str))
    if isinstance(outcome.get("failure"), dict):
        report.failures[p.unit.name] = outcome["failure"]
    if not output.is_file():
        report.failed.append(p.unit.name)
    elif _mtime(output) != before:
        ran = report.spliced if p.is_splice else report.compiled
        (report.cached if outcome.get("how") == "cached" else ran).append(p.unit.name)


def read_outcome(path: Path) -> dict:
    """object_cache's record of an edge (how, warnings, failure); {} when it did not run."""
    try:
        outcome = json.loads(read_bounded(path, RECORD_BYTES) or b"null")
    except ValueError:
        return {}
    return outcome if isinstance(outcome, dict) else {}


def pch_failures(plan: CompilePlan, pch_headers: dict[str, Path]) -> list[PchFailure]:
    """The PCHs this run failed to build (their units did not run)."""
    failed = []
    for kind, header in sorted(pch_headers.items()):
        report = plan.directory / pch_report(header)
        outcome = read_outcome(Path(f"{report}.how"))
        if Path(f"{header}.gch").is_file() and outcome.get("how") != "failed":
            continue
        failure = outcome.get("failure")
        log = read_bounded(Path(f"{report}.log"), LOG_BYTES) or b""
        failed.append(PchFailure(kind, str(header), failure if isinstance(failure, dict) else None,
                                 log.decode(errors="replace")))
    return failed


def _mtime(path: Path) -> int | None:
    try:
        return path.stat().st_mtime_ns
    except OSError:
        return None


LOG_BYTES = 64 << 20  # of a PCH build's messages: more is no message
