"""The editor's questions that need the build, as plain JSON in and out: the table the
language server's own session answers and a running daemon answers alike (its requests
`analyse`, `hover` and `lenses`: service/daemon/protocol.py), so that both give one answer.

Each takes the spec's buffers (service/editor/buffers.py: the unsaved texts of its open files)
and the session on the cache, and gives a JSON object:

- analyse: every problem `check` finds in the buffers (`diagnostics`), and whether the spec
  was accepted;
- hover: the Markdown of one entry (named by file and name: the editor found it in its own
  text, which may not parse for a moment; the buffers may be the last accepted ones);
- lenses: each derivatives entry's footprint counts, or its edit's reach.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from gradshard.cache.errors import UsageError
from gradshard.pipeline.problems import SpecError, SpecFile
from gradshard.service.editor.analysis import analyse, diagnostics_json
from gradshard.service.editor.buffers import SpecBuffers, disk_text
from gradshard.service.editor.hover import hover_markdown
from gradshard.service.editor.lenses import Footprint, edit_reach, edited_entries, footprints
from gradshard.service.editor.places import EntryAt, entry_starts, operator_of
from gradshard.service.open_cache import OpenCache

__all__ = ["EDITOR_QUERIES", "answer_query", "footprint_json"]


def _analyse(buffers: SpecBuffers, session: OpenCache, request: dict) -> dict:
    analysis = analyse(buffers, session)
    return {"ok": True, "accepted": analysis.accepted,
            "generator": analysis.identity.describe(),
            "diagnostics": diagnostics_json(analysis)}


def _hover(buffers: SpecBuffers, session: OpenCache, request: dict) -> dict:
    file, name = request.get("file"), request.get("name")
    known = {f.value: f for f in (SpecFile.DERIVATIVES, SpecFile.NATIVE_FUNCTIONS)}
    if file not in known or not isinstance(name, str):
        raise UsageError("a hover request names a file (derivatives.yaml or "
                         "native_functions.yaml) and an entry's name",
                         "send {\"file\": …, \"name\": \"sin(Tensor self) -> Tensor\"}")
    analysis = analyse(buffers, session)
    if not analysis.accepted:
        return {"ok": True, "accepted": False, "markdown": None}
    entry = EntryAt(known[file], name, operator_of(name), 0)
    return {"ok": True, "accepted": True, "markdown": hover_markdown(analysis, entry)}


def _lenses(buffers: SpecBuffers, session: OpenCache, request: dict) -> dict:
    analysis = analyse(buffers, session)
    if not analysis.accepted:
        return {"ok": True, "accepted": False, "lenses": []}
    text = buffers.text_of(SpecFile.DERIVATIVES)
    if text is None:
        text = disk_text(buffers.location.path_of(SpecFile.DERIVATIVES))
    starts = entry_starts(SpecFile.DERIVATIVES, text)
    found = footprints(analysis)
    edits = edited_entries(buffers, disk_text(buffers.location.path_of(SpecFile.DERIVATIVES)))
    for label, edited_text in edits.items():
        try:
            found[label] = edit_reach(buffers, session, edited_text,
                                      analysis.identity.rules_release)
        except SpecError:
            pass  # the entry alone does not build on the spec on disk: its footprint stays
    lenses = [{"entry": label, "line": starts[label], **footprint_json(footprint)}
              for label, footprint in found.items() if label in starts]
    return {"ok": True, "accepted": True, "lenses": sorted(lenses, key=lambda l: l["line"])}


def footprint_json(footprint: Footprint) -> dict:
    return {**footprint.counts(), "edited": footprint.edited, "nodes_named": list(footprint.nodes),
            "files_named": list(footprint.files),
            "ops": [{"op": o.op, "nodes": o.nodes, "kernels": o.kernels,
                     "node_names": list(o.node_names),
                     "kernel_functions": list(o.kernel_functions)} for o in footprint.ops]}


# Every question and what answers it, given the buffers, the session and the request
EDITOR_QUERIES: dict[str, Callable[[SpecBuffers, OpenCache, dict], dict]] = {
    "analyse": _analyse,
    "hover": _hover,
    "lenses": _lenses,
}


def answer_query(kind: str, request: dict, session: OpenCache,
                 spec_root: Path | None = None) -> dict:
    """One question's answer; `spec_root`: the only spec this session answers for (a
    daemon's), whose buffers the request must be."""
    buffers = SpecBuffers.from_json(request)
    if spec_root is not None and buffers.location.root.resolve() != spec_root.resolve():
        raise UsageError(f"this daemon serves the spec at {spec_root}, not "
                         f"{buffers.location.root}", "ask the daemon of that spec")
    return EDITOR_QUERIES[kind](buffers, session, request)
