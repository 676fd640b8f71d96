"""`try` from the editor: the entry's op tried with the buffers' text, on an overlay copy of
the spec (a directory of symbolic links to the spec's files and its generator, with each open
file's buffer written as a file of its own), so that the user's files are never written and
the spec's generator is the same one (service/generator/identity.py hashes the sources the
links reach). The verdict of each op is placed on its formula's line."""

from __future__ import annotations

import os
import shutil
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

from gradshard.pipeline.problems import SpecFile
from gradshard.service.editor.buffers import SpecBuffers
from gradshard.service.editor.places import formula_line
from gradshard.service.files.spec_location import SpecLocation, locate_spec
from gradshard.service.open_cache import OpenCache

__all__ = ["TryVerdict", "overlay_spec", "try_in_editor"]


@dataclass(frozen=True)
class TryVerdict:
    """One op's verdict on a line of derivatives.yaml (from 1; None: an op without an entry,
    on the file's first line)."""

    op: str
    verdict: str  # PASS, FAIL or SKIP
    line: int | None
    message: str


@contextmanager
def overlay_spec(buffers: SpecBuffers) -> Iterator[SpecLocation]:
    """The spec with its buffers in place of its files, in a temporary directory removed
    after. The mirrored directory is the spec's root, or the torchgen package around a packaged
    spec (its generator, which identifies it)."""
    location = buffers.location
    around = location.root.parent
    torchgen = location.layout == "packaged" and (around / "__init__.py").is_file()
    top = around if torchgen else location.root
    scratch = Path(tempfile.mkdtemp(prefix="gradshard-editor-"))
    try:
        mirror = scratch / top.name
        replaced = {location.path_of(file).relative_to(top): text
                    for file, text in buffers.texts}
        _mirror(top, mirror, replaced)
        root = mirror / location.root.relative_to(top)
        yield locate_spec(str(root))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _mirror(source: Path, target: Path, replaced: dict[Path, str]) -> None:
    """`target` as `source` through links, but for the files `replaced` (relative paths →
    their texts) and the directories on their way, which are made."""
    target.mkdir()
    firsts = {path.parts[0] for path in replaced}
    for child in sorted(os.listdir(source)):
        if child not in firsts:
            os.symlink(source / child, target / child)
    for first in firsts:
        if Path(first) in replaced:
            (target / first).write_text(replaced[Path(first)], encoding="utf-8")
            continue
        inner = {Path(*p.parts[1:]): t for p, t in replaced.items() if p.parts[0] == first}
        _mirror(source / first, target / first, inner)


def try_in_editor(buffers: SpecBuffers, session: OpenCache, op: str, jobs: int,
                  show: Callable[[str], None]) -> tuple[list[TryVerdict], int]:
    """`try` of `op` on the buffers (its lines to `show` as they come): each op's verdict
    at its formula's line, and try's exit code."""
    from gradshard.service.live.command import TryOptions, op_lines, try_json, try_patch

    with overlay_spec(buffers) as overlay:
        outcome = try_patch(overlay, session, TryOptions((op,), jobs=jobs), show)
        text = buffers.text_of(SpecFile.DERIVATIVES)
        if text is None:
            text = overlay.path_of(SpecFile.DERIVATIVES).read_text(encoding="utf-8")
    report = try_json(outcome)
    verdicts = [TryVerdict(o["op"], _verdict(o), _line(text, o), "\n".join(op_lines(o)))
                for o in report["ops"]]
    return verdicts, outcome.exit_code()


def _line(text: str, op: dict) -> int | None:
    """The verdict's line (from 1): the formula its first failing sample's error is in (the
    input it names), else the entry's first formula."""
    if not op["line"]:
        return None
    failing = [s for s in op["samples"] if s["verdict"] == "FAIL" and s.get("where")]
    argument = failing[0]["where"].get("input_name") if failing else None
    return formula_line(text, op["line"] - 1, argument) + 1


def _verdict(op: dict) -> str:
    samples = op["samples"]
    if not samples:
        return "SKIP"
    return "FAIL" if any(s["verdict"] == "FAIL" for s in samples) else "PASS"
