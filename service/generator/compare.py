"""Saying how gradshard's files differ from the real generator's: which files, and each one's
first differing lines.

A generated file runs to tens of megabytes, so the first difference is found by a scan of the
lines, not a diff: what a reader needs is where it starts and what the real generator wrote
there.
"""

from __future__ import annotations

from typing import Mapping

__all__ = ["first_difference", "mismatch_report"]

SHOWN_LINES = 4  # of each side, from the first differing line
SHOWN_FILES = 12  # files shown with their lines; the rest are named


def first_difference(ours: str | None, real: str | None) -> list[str]:
    """The first differing lines of one file: its line number, gradshard's lines (`-`) and
    the real generator's (`+`); a file only one side writes says so."""
    if real is None:
        return ["  the real generator does not write this file"]
    if ours is None:
        return ["  gradshard does not write this file"]
    mine, theirs = ours.splitlines(), real.splitlines()
    line = next((i for i, (a, b) in enumerate(zip(mine, theirs)) if a != b),
                min(len(mine), len(theirs)))
    shown = [f"  line {line + 1}:"]
    shown += [f"  - {text}" for text in mine[line:line + SHOWN_LINES]]
    shown += [f"  + {text}" for text in theirs[line:line + SHOWN_LINES]]
    return shown


def mismatch_report(generator: str, files: Mapping[str, tuple[str | None, str | None]],
                    heading: str | None = None) -> str:
    """The loud report: `generator` (how it is named) writes other files than gradshard;
    `files` maps each differing file to (gradshard's text, the real text), None where that
    side writes no such file. `heading` says what follows when it is not the ported path's
    difference."""
    names = sorted(files)
    lines = [heading or
             f"{generator} writes {len(names)} of the generated files differently from "
             f"gradshard: a build writes them from the real generator's output and compiles "
             f"them as they are, and gradshard's incremental path is off for them:"]
    for name in names[:SHOWN_FILES]:
        lines.append(f"{name}:")
        lines.extend(first_difference(*files[name]))
    if len(names) > SHOWN_FILES:
        lines.append(f"and {len(names) - SHOWN_FILES} more: " + ", ".join(names[SHOWN_FILES:]))
    return "\n".join(lines)
