"""How `stats` and `gc` report."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Protocol

from gradshard.cache.maintenance import GcReport, StoreStats, size_text
from gradshard.cache.store.directory import CATEGORIES, OBJECT_FILES, PCH_FILES, STORE
from gradshard.service.report.build import STAGES, tasks_line

__all__ = ["TryDirectoryGc", "gc_json", "gc_text", "stats_json", "stats_text"]

# What each compile-cache kind's hit rate counts: entries served, and entries made
_HIT_KINDS = {OBJECT_FILES: (("object", "splice"), "compiled or spliced"),
              PCH_FILES: (("pch",), "built")}


class TryDirectoryGc(Protocol):
    """What gc did to the try directory (service/live/try_directory.py: TryDirectoryUse; a
    report imports nothing of live)."""

    path: Path
    before_bytes: int
    after_bytes: int
    limit: int
    removed_entries: int
    note: str | None


def stats_text(stats: StoreStats) -> str:
    totals = stats.totals
    handled = totals["run"] + totals["reused"]
    share = f" ({totals['reused'] / handled:.1%} reused)" if handled else ""
    # counted in build's words (report/build.py tasks_line): looked up = run + reused
    lines = [f"gradshard cache: {stats.directory} ({size_text(stats.disk_bytes)} on disk)",
             *disk_lines(stats),
             f"  builds: {totals['builds']} ({totals['up_to_date']} up to date); "
             f"{tasks_line(totals['run'], totals['reused'])}{share}; units "
             f"{totals['compiled']:,} compiled, {totals['cached']:,} from the object cache, "
             f"{totals['spliced']:,} spliced"]
    if stats.builds:
        lines.append("  last builds:")
    for row in stats.builds:
        summary = row.summary
        run, reused = sum(summary.get("run", {}).values()), sum(summary.get("reused", {}).values())
        seconds = summary.get("seconds", {})
        stages = " · ".join(f"{s} {seconds[s]:.2f}" for s in STAGES if seconds.get(s))
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(row.started))
        lines.append(f"    #{row.id:<4} {when}  {row.status:10} {row.seconds:6.2f} s  "
                     f"{tasks_line(run, reused)}  {stages}")
        if summary.get("generator"):  # builds before issue 35 recorded none
            lines.append(f"          {summary['generator']}")
        lines.extend(_levels_line(summary.get("compile") or {}))
    return "\n".join(lines)


def _levels_line(compiled: dict) -> list[str]:
    """What each level served of a build's units: gradshard's object cache, then the
    launcher's cache (its hits), and what was compiled (the launcher's misses)."""
    if not compiled:
        return []
    line = (f"          units: {compiled.get('cached', 0)} from the object cache, "
            f"{compiled.get('compiled', 0)} compiled")
    launcher = compiled.get("launcher")
    if isinstance(launcher, dict):
        line += (f" ({launcher.get('launcher')}: {launcher.get('hits', 0)} hits, "
                 f"{launcher.get('misses', 0)} misses)")
    return [line]


def disk_lines(stats: StoreStats) -> list[str]:
    """One line per kind of file in the cache directory: the store, objects and PCHs always,
    the rest when there are any."""
    lines = []
    for category in CATEGORIES:
        use = stats.disk.get(category)
        if use is None or (not use.files and category not in (STORE, OBJECT_FILES, PCH_FILES)):
            continue
        lines.append(f"  {category + ':':13}{size_text(use.bytes):>9}  {_detail(stats, category)}")
    return lines


def _detail(stats: StoreStats, category: str) -> str:
    if category == STORE:
        return (f"{stats.blobs:,} blobs ({size_text(stats.blob_bytes)}), {stats.tasks:,} tasks, "
                f"{stats.manifests} recorded builds")
    use = stats.disk[category]
    text = (f"{use.entries:,} entr{'y' if use.entries == 1 else 'ies'}, "
            f"{use.files:,} file{'' if use.files == 1 else 's'}")
    rate = hit_rate(stats, category)
    return text if rate is None else f"{text}; {rate}"


def hit_rate(stats: StoreStats, category: str) -> str | None:
    """'75.0% served from the cache (30 served, 10 compiled or spliced)', over every
    recorded build; None for kinds without one, or before any build used them."""
    kinds, made_as = _HIT_KINDS.get(category, ((), ""))
    hits = sum(stats.compile_hits.get(kind, (0, 0))[0] for kind in kinds)
    made = sum(stats.compile_hits.get(kind, (0, 0))[1] for kind in kinds)
    if not hits + made:
        return None
    return f"{hits / (hits + made):.1%} served from the cache ({hits:,} served, {made:,} {made_as})"


def stats_json(stats: StoreStats) -> dict:
    return {"ok": True, "path": stats.path, "file_bytes": stats.file_bytes,
            "blobs": stats.blobs, "blob_bytes": stats.blob_bytes, "tasks": stats.tasks,
            "manifests": stats.manifests, "totals": stats.totals,
            "directory": stats.directory, "disk_bytes": stats.disk_bytes,
            "disk": {category: {"files": use.files, "bytes": use.bytes, "entries": use.entries}
                     for category, use in stats.disk.items()},
            "compile_hits": {kind: {"hits": hits, "made": made}
                             for kind, (hits, made) in sorted(stats.compile_hits.items())},
            "builds": [{"id": r.id, "started": r.started, "seconds": r.seconds,
                        "status": r.status, "spec": r.spec, "out": r.out, **r.summary}
                       for r in stats.builds]}


def gc_text(report: GcReport, try_directory: TryDirectoryGc | None = None) -> str:
    lines = [f"gradshard gc: {size_text(report.before_bytes)} → {size_text(report.after_bytes)}"
             f" · {report.seconds:.2f} s",
             f"  removed {report.removed_blobs:,} blobs and {report.removed_tasks:,} tasks; "
             f"kept {report.kept_builds} recorded build(s)"]
    if report.removed_entries:
        lines.append(f"  removed {report.removed_entries:,} compile cache entries and files "
                     "(objects, PCHs, baselines, damaged databases, leftovers)")
    if report.dropped_builds:
        lines.append(f"  forgot the {report.dropped_builds} least recently used recorded "
                     f"build(s) to fit {size_text(report.limit or 0)}")
    if report.running_builds:
        lines.append(f"  left what {report.running_builds} running build(s) hold")
    lines += [f"  warning: {warning}" for warning in report.warnings]
    if try_directory is not None:
        lines += _try_directory_lines(try_directory)
    return "\n".join(lines)


def _try_directory_lines(use: TryDirectoryGc) -> list[str]:
    removed = (f"; removed {use.removed_entries:,} entr"
               f"{'y' if use.removed_entries == 1 else 'ies'}" if use.removed_entries else "")
    return [f"  try directory {use.path}: {size_text(use.before_bytes)} → "
            f"{size_text(use.after_bytes)} (limit {size_text(use.limit)}){removed}",
            *([f"  warning: {use.note}"] if use.note else [])]


def gc_json(report: GcReport, try_directory: TryDirectoryGc | None = None) -> dict:
    """gc's report; `try_directory` null when there is none."""
    patches = None if try_directory is None else {
        "path": str(try_directory.path), "before_bytes": try_directory.before_bytes,
        "after_bytes": try_directory.after_bytes, "limit": try_directory.limit,
        "removed_entries": try_directory.removed_entries, "note": try_directory.note}
    return {"ok": True, "before_bytes": report.before_bytes, "after_bytes": report.after_bytes,
            "removed_blobs": report.removed_blobs, "removed_tasks": report.removed_tasks,
            "kept_builds": report.kept_builds, "dropped_builds": report.dropped_builds,
            "running_builds": report.running_builds, "removed_entries": report.removed_entries,
            "limit": report.limit, "warnings": list(report.warnings),
            "seconds": round(report.seconds, 3), "try_directory": patches}
