"""Compiler errors in generated code, placed at their source in derivatives.yaml.

A formula or Functions unit knows where each node's definitions start, so an error line names
its node; the node's info name names its derivatives.yaml entry (a view-copy or foreach node, whose
entry has another name, is found by its formula); and within the entry the formula whose
identifiers the failing line holds names the variable and the line.
"""

from __future__ import annotations

import bisect
import re
from pathlib import Path
from typing import Iterable

from gradshard.pipeline.compile_layout import CompileUnit
from gradshard.pipeline.errors import CompileDiagnostic, SpecFile
from gradshard.pipeline.source import Entry, split_entries
from gradshard.pipeline.spec import entry_label

_ERROR = re.compile(r"^(?P<path>[^\s:][^:]*):(?P<line>\d+):(?P<column>\d+): "
                    r"(?:fatal )?error: (?P<message>.*)$")
_FORMULA = re.compile(r"^\s+(?P<vars>[A-Za-z_][\w, ]*):\s*(?P<formula>.+)$")
_IDENTIFIER = re.compile(r"[A-Za-z_]\w*")
_KEYS = {"name", "dispatch", "output_differentiability", "result"}
# How a node's definition guards each gradient: `if (needs_input_grad[/*self*/0]) {`
_GUARD = re.compile(r"needs_input_grad\[/\*(\w+)\*/")


def diagnose(units: Iterable[CompileUnit], all_units: Iterable[CompileUnit], logs: dict[str, str],
             compile_dir: Path, derivatives: str,
             node_entries: dict[str, str]) -> list[CompileDiagnostic]:
    """One diagnostic per compiler error of the failed units, placed at its formula when the
    code came from one (a merged unit's error lies in one of its parts, among `all_units`)."""
    entries = split_entries(SpecFile.DERIVATIVES, derivatives)
    by_name = {unit.name: unit for unit in all_units}
    found = []
    for unit in units:
        sources = [unit, *(by_name[name] for name in unit.parts if name in by_name)]
        for match in _errors(logs.get(unit.name, "")):
            found.append(_place(sources, match, compile_dir, entries, node_entries))
    return found


def _errors(log: str) -> list[re.Match]:
    return [m for m in map(_ERROR.match, log.splitlines()) if m]


def _place(sources: list[CompileUnit], error: re.Match, compile_dir: Path,
           entries: tuple[Entry, ...], node_entries: dict[str, str]) -> CompileDiagnostic:
    generated = f"{error['path']}:{error['line']}:{error['column']}"
    message = error["message"]
    node = next((found for unit in sources
                 if (found := _node_at(unit, error["path"], int(error["line"]))) is not None),
                None)
    if node is None:
        return CompileDiagnostic("", "", "", "", None, generated, message)
    code, guarded = _code_at(compile_dir / error["path"], int(error["line"]))
    name = node_entries.get(node, "")
    named = [e for e in entries if entry_label(e) == name]
    best = _best_formula(named, code, guarded) or _best_formula(entries, code, guarded)
    if best is None:
        line = named[0].line if named else None
        return CompileDiagnostic(name, node, "", "", line, generated, message)
    entry, line, variables, formula = best
    return CompileDiagnostic(entry_label(entry), node, variables, formula, line, generated,
                             message)


def _node_at(unit: CompileUnit, path: str, line: int) -> str | None:
    if not unit.node_lines or Path(path).as_posix() != unit.source:
        return None
    position = bisect.bisect_right(unit.node_lines, line) - 1
    return unit.nodes[position] if position >= 0 else None


def _code_at(path: Path, line: int) -> tuple[str, str]:
    """The generated line, and the variable whose gradient the nearest guard above computes."""
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        return "", ""
    if not 0 < line <= len(lines):
        return "", ""
    for above in reversed(lines[max(0, line - 8):line]):
        guard = _GUARD.search(above)
        if guard:
            return lines[line - 1], guard[1]
    return lines[line - 1], ""


def _best_formula(entries: Iterable[Entry], code: str,
                  guarded: str) -> tuple[Entry, int, str, str] | None:
    """The formula line whose identifiers the generated line holds most completely (at
    least half of them); a formula for the guarded variable wins a tie."""
    present = set(_IDENTIFIER.findall(code))
    best, best_score = None, 0.5
    for entry in entries:
        for offset, text in enumerate(entry.text.split("\n")):
            match = _FORMULA.match(text)
            if not match or match["vars"].strip() in _KEYS:
                continue
            words = set(_IDENTIFIER.findall(match["formula"]))
            score = len(words & present) / len(words) if words else 0.0
            if guarded in (v.strip() for v in match["vars"].split(",")):
                score += 0.25
            if score > best_score:
                best = (entry, entry.line + offset, match["vars"].strip(), match["formula"].strip())
                best_score = score
    return best
