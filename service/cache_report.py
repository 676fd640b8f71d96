"""How `stats` and `gc` report."""

from __future__ import annotations

import time

from gradshard.cache.maintenance import GcReport, StoreStats

STAGES = ("parse", "match", "foreach", "render", "bindings", "assemble", "write")


def megabytes(size: int) -> str:
    return f"{size / 1e6:.1f} MB"


def stats_text(stats: StoreStats) -> str:
    totals = stats.totals
    handled = totals["run"] + totals["reused"]
    share = f" ({totals['reused'] / handled:.1%} reused)" if handled else ""
    lines = [f"gradshard cache: {stats.path} ({megabytes(stats.file_bytes)})",
             f"  store:  {stats.blobs:,} blobs ({megabytes(stats.blob_bytes)}), "
             f"{stats.tasks:,} tasks, {stats.manifests} recorded builds",
             f"  builds: {totals['builds']} ({totals['up_to_date']} up to date); tasks "
             f"{totals['run']:,} run, {totals['reused']:,} reused{share}"]
    if stats.builds:
        lines.append("  last builds:")
    for row in stats.builds:
        summary = row.summary
        run, reused = sum(summary.get("run", {}).values()), sum(summary.get("reused", {}).values())
        seconds = summary.get("seconds", {})
        stages = " · ".join(f"{s} {seconds[s]:.2f}" for s in STAGES if seconds.get(s))
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(row.started))
        lines.append(f"    #{row.id:<4} {when}  {row.status:10} {row.seconds:6.2f} s  "
                     f"{run:,} run / {reused:,} reused  {stages}")
    return "\n".join(lines)


def stats_json(stats: StoreStats) -> dict:
    return {"ok": True, "path": stats.path, "file_bytes": stats.file_bytes,
            "blobs": stats.blobs, "blob_bytes": stats.blob_bytes, "tasks": stats.tasks,
            "manifests": stats.manifests, "totals": stats.totals,
            "builds": [{"id": r.id, "started": r.started, "seconds": r.seconds,
                        "status": r.status, "spec": r.spec, "out": r.out, **r.summary}
                       for r in stats.builds]}


def gc_text(report: GcReport) -> str:
    lines = [f"gradshard gc: {megabytes(report.before_bytes)} → {megabytes(report.after_bytes)}"
             f" · {report.seconds:.2f} s",
             f"  removed {report.removed_blobs:,} blobs and {report.removed_tasks:,} tasks; "
             f"kept {report.kept_builds} recorded build(s)"]
    if report.dropped_builds:
        lines.append(f"  forgot the {report.dropped_builds} oldest recorded build(s) to fit "
                     "--max-size")
    if report.running_builds:
        lines.append(f"  left what {report.running_builds} running build(s) hold")
    return "\n".join(lines)


def gc_json(report: GcReport) -> dict:
    return {"ok": True, "before_bytes": report.before_bytes, "after_bytes": report.after_bytes,
            "removed_blobs": report.removed_blobs, "removed_tasks": report.removed_tasks,
            "kept_builds": report.kept_builds, "dropped_builds": report.dropped_builds,
            "running_builds": report.running_builds, "seconds": round(report.seconds, 3)}
