"""How a build reports itself: one screen of text, or JSON for machines."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

from gradshard.service.compile.report import compile_json, compile_line
from gradshard.service.generator.check import State
from gradshard.service.outcome import BuildOutcome
from gradshard.service.report.problems import problem_json, problem_lines

if TYPE_CHECKING:
    from gradshard.cache.engine.stats import EngineStats

__all__ = ["STAGES", "STAGE_TIME", "build_json", "build_text", "generator_report_lines",
           "tasks_line"]

# Every stage a build times, in the order a build meets them: the engine's stages (each
# task's and group's `stage`, cache/graph), then writing the files and compiling them.
STAGES = ("parse", "match", "foreach", "render", "bindings", "assemble", "layout", "write",
          "compile")
SHOWN_RUNS = 4
# the steps a host build times (service/host/generation.py, service/build.py), in order
HOST_STEPS = ("worker start", "prime", "rules", "generate", "write", "check")
# Up to this many tasks that ran (an edit's) are named, the first SHOWN_RUNS of them; more
# (a cold build's 20,000) are only counted, by reason.
NAMED_RUNS = 50
JSON_RUNS = 500


def build_text(outcome: BuildOutcome) -> str:
    writes = outcome.writes
    head = (f"gradshard build: {outcome.files} files in {outcome.out} "
            f"({len(writes.written)} written, {len(writes.unchanged)} unchanged"
            + (f", {len(writes.removed)} removed" if writes.removed else "") + ")"
            f" · {outcome.seconds['total']:.2f} s")
    if outcome.status == "up to date":
        head = (f"gradshard build: up to date ({outcome.files} files in {outcome.out})"
                f" · {outcome.seconds['total']:.2f} s")
    lines = [head, "  " + outcome.generator.summary()]
    stats = outcome.stats
    if stats is None and outcome.status == "up to date":
        lines.append(f"  {tasks_line(0, 0)}; nothing changed since the last build")
    if stats is not None and outcome.generator.state == State.HOST:
        lines.extend(_host_lines(outcome, stats))
    elif stats is not None:
        run, reused = sum(stats.run.values()), sum(stats.reused.values())
        per_stage = " · ".join(f"{s} {stats.run[s]:,}" for s in STAGES if stats.run.get(s))
        lines.append(f"  {tasks_line(run, reused, per_stage)}"
                     + ("; a reused group's tasks are not looked up" if reused else ""))
        lines.extend(_why(stats))
        timed = [(s, outcome.seconds[s]) for s in STAGES if outcome.seconds.get(s)]
        lines.append("  time:  " + " · ".join(f"{s} {t:.2f} s" for s, t in timed)
                     + f" ({STAGE_TIME})")
    if outcome.compiled is not None:
        lines.append("  " + compile_line(outcome.compiled))
    if outcome.verified and stats is not None:
        lines.append(verify_line(stats))
    lines.append(f"  cache: {outcome.cache}" if outcome.cache else "  cache: off (--no-cache)")
    lines.extend(f"  warning: {w}" for w in outcome.warnings)
    if outcome.findings:
        lines.append(f"  gradshard's own rules found {len(outcome.findings)} problem"
                     f"{'s' if len(outcome.findings) != 1 else ''} that the spec's generator "
                     "accepts (`gradshard check` reports them as errors):")
        lines.extend(problem_lines(outcome.findings, outcome.location, None, "warning"))
    if outcome.generator.report:
        lines.extend(generator_report_lines(outcome.generator.report))
    return "\n".join(lines)


def _host_lines(outcome: BuildOutcome, stats: EngineStats) -> list[str]:
    """A host build's item calls (service/host/items.py) and the seconds of its steps."""
    run, reused = sum(stats.run.values()), sum(stats.reused.values())
    most = " · ".join(f"{name} {count:,}" for name, count in stats.run.most_common(SHOWN_RUNS))
    timed = [(s, outcome.seconds[s]) for s in HOST_STEPS if outcome.seconds.get(s)]
    return [f"  items: {run + reused:,} calls: {run:,} run, {reused:,} served from the memo"
            + (f" ({most})" if most else ""),
            "  time:  " + " · ".join(f"{s} {t:.2f} s" for s, t in timed)
            + " (rules: gradshard's own, while the generator ran; check: the net, apart)"]


def tasks_line(run: int, reused: int, per_stage: str = "") -> str:
    """What the engine counted (tasks and groups alike, cache/engine/core.py): the tasks it
    looked up in the cache, each either run (a miss) or reused (a hit). A reused group
    stands for every task beneath it, which is never looked up: an edit looks up only the
    tasks its change reaches (and their groups), and a build after `gradshard affected`
    (which ran and cached what changed) finds the top groups and looks up nothing more."""
    stages = f" ({per_stage})" if per_stage else ""
    return f"tasks: {run + reused:,} looked up: {run:,} run{stages}, {reused:,} reused"


# The stages' times are each process's wall time in the stage, summed over the forked
# processes that build at once: they overlap, so their sum can exceed the build's time.
STAGE_TIME = "summed over parallel processes: stages overlap"


def generator_report_lines(report: str) -> list[str]:
    """The generator check's loud report (once per generator and spec)."""
    first, *rest = report.splitlines()
    return [f"  WARNING: {first}", *(f"    {line}" for line in rest)]


def verify_line(stats) -> str:
    wrong = len(stats.disagreements)
    verdict = (f"{wrong:,} disagree (rewritten; listed below)" if wrong
               else "every one agrees")
    return f"  verify: {stats.verified:,} cached results compared with a fresh run: {verdict}"


def _why(stats) -> list[str]:
    """How many tasks ran for each reason, and when few ran, the first of them."""
    if not stats.runs:
        return []
    reasons = Counter(r.reason.split(":")[0] for r in stats.runs)
    counts = ", ".join(f"{n:,} {reason}" for reason, n in reasons.most_common())
    if len(stats.runs) > NAMED_RUNS:
        return [f"  why:   {counts}"]
    first = [f"{r.task} {r.ident} ({r.reason})" for r in stats.runs[:SHOWN_RUNS]]
    more = len(stats.runs) - len(first)
    tail = f"; … {more:,} more" if more else ""
    return [f"  why:   {counts}", "         " + "; ".join(first) + tail]


def build_json(outcome: BuildOutcome) -> dict:
    stats = outcome.stats
    result = {
        "ok": True, "status": outcome.status, "spec": str(outcome.location.root),
        "layout": outcome.location.layout, "out": str(outcome.out),
        "cache": str(outcome.cache) if outcome.cache else None,
        "files": {"total": outcome.files, "written": outcome.writes.written,
                  "unchanged": outcome.writes.unchanged, "removed": outcome.writes.removed},
        "seconds": {k: round(v, 4) for k, v in outcome.seconds.items()},
        "warnings": outcome.warnings,
        "findings": [{**problem_json(p, outcome.location), "severity": "warning"}
                     for p in outcome.findings],
        "generator": {**outcome.generator.to_json(), "report": outcome.generator.report},
    }
    if outcome.compiled is not None:
        result["compile"] = compile_json(outcome.compiled)
    if stats is not None:
        stages = sorted(set(stats.run) | set(stats.reused))
        run, reused = sum(stats.run.values()), sum(stats.reused.values())
        result["tasks"] = {
            "looked_up": run + reused, "run": run, "reused": reused,
            "by_stage": {s: {"run": stats.run.get(s, 0), "reused": stats.reused.get(s, 0)}
                         for s in stages},
            "ran": [{"task": r.task, "stage": r.stage, "ident": r.ident, "reason": r.reason}
                    for r in stats.runs[:JSON_RUNS]],
            "recovered": stats.recovered,
        }
        if outcome.verified:
            result["ok"] = not stats.disagreements
            result["verify"] = {
                "compared": stats.verified,
                "disagreements": [{"task": d.task, "ident": d.ident, "cached": d.cached,
                                   "computed": d.computed} for d in stats.disagreements]}
    return result
