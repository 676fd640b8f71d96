"""Compiler errors in generated code, placed at their source in derivatives.yaml.

A formula or Functions unit knows where each node's definitions start, so an error line names
its node; the node's info name names its derivatives.yaml entry (a view-copy or foreach node, whose
entry has another name, is found by its formula); and within the entry the formula whose
identifiers the failing line holds names the variable and the line. A VariableType unit's
"nodes" are its kernels, each named with the entry its formulas come from, so a forward
formula that does not compile is placed the same way.

The derivatives file is split and its formulas read once (`_formula_index`, kept for the
last file seen), so placing many errors costs one pass over the file plus a comparison with
each formula per error.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Iterable

from gradshard.cache.errors import CompileDiagnostic
from gradshard.pipeline.layout.compile_layout import CompileUnit
from gradshard.pipeline.parse.source import Entry, split_entries
from gradshard.pipeline.parse.spec import entry_label
from gradshard.pipeline.problems import SpecFile

__all__ = ["collapsed", "diagnose"]

_ERROR = re.compile(r"^(?P<path>[^\s:][^:]*):(?P<line>\d+):(?P<column>\d+): "
                    r"(?:fatal )?error: (?P<message>.*)$")
_FORMULA = re.compile(r"^\s+(?P<vars>[A-Za-z_][\w, ]*):\s*(?P<formula>.+)$")
_IDENTIFIER = re.compile(r"[A-Za-z_]\w*")
# (forward formulas, `result: …`, are formulas too: VariableType kernels hold them)
_KEYS = {"name", "dispatch", "output_differentiability"}
# How a node's definition guards each gradient: `if (needs_input_grad[/*self*/0]) {`
_GUARD = re.compile(r"needs_input_grad\[/\*(\w+)\*/")


@dataclass(frozen=True)
class _Formula:
    """One formula line of derivatives.yaml and the identifiers it uses."""

    entry: Entry
    line: int
    variables: str
    formula: str
    words: frozenset[str]  # the identifiers of the formula
    names: frozenset[str]  # the variables it is the formula of


@dataclass(frozen=True)
class _FormulaIndex:
    formulas: tuple[_Formula, ...]
    by_entry: dict[str, tuple[_Formula, ...]]  # by entry label
    entry_lines: dict[str, int]  # each label's first entry line


def diagnose(units: Iterable[CompileUnit], all_units: Iterable[CompileUnit], logs: dict[str, str],
             compile_dir: Path, derivatives: str,
             node_entries: dict[str, str]) -> list[CompileDiagnostic]:
    """One diagnostic per compiler error of the failed units, placed at its formula when the
    code came from one (a merged unit's error lies in one of its parts, among `all_units`)."""
    index = _formula_index(derivatives)
    generated = _GeneratedLines(compile_dir)
    by_name = {unit.name: unit for unit in all_units}
    found = []
    for unit in units:
        sources = [unit, *(by_name[name] for name in unit.parts if name in by_name)]
        for match in _errors(logs.get(unit.name, "")):
            found.append(_place(sources, match, generated, index, node_entries))
    return collapsed(found)


def collapsed(diagnostics: list[CompileDiagnostic]) -> list[CompileDiagnostic]:
    """One diagnostic per formula and compiler message: a formula pasted into several units
    (its node's, each kernel's) fails alike in each, and the user has one mistake to fix
    (the first unit's is kept); errors placed at no formula are all kept."""
    seen: set[tuple] = set()
    kept = []
    for diagnostic in diagnostics:
        key = (diagnostic.entry, diagnostic.line, diagnostic.variables, diagnostic.message)
        if diagnostic.line is None or key not in seen:
            kept.append(diagnostic)
        seen.add(key)
    return kept


class _GeneratedLines:
    """The generated files' lines, each file read once per diagnosis (errors cluster)."""

    def __init__(self, compile_dir: Path) -> None:
        self.compile_dir = compile_dir
        self._files: dict[str, list[str]] = {}

    def of(self, path: str) -> list[str]:
        if path not in self._files:
            try:
                text = (self.compile_dir / path).read_text(errors="replace")
            except OSError:
                text = ""
            self._files[path] = text.splitlines()
        return self._files[path]


@lru_cache(maxsize=1)
def _formula_index(derivatives: str) -> _FormulaIndex:
    formulas: list[_Formula] = []
    by_entry: dict[str, tuple[_Formula, ...]] = {}
    entry_lines: dict[str, int] = {}
    for entry in split_entries(SpecFile.DERIVATIVES, derivatives):
        label, found = entry_label(entry), _entry_formulas(entry)
        formulas += found
        by_entry[label] = by_entry.get(label, ()) + tuple(found)
        entry_lines.setdefault(label, entry.line)
    return _FormulaIndex(tuple(formulas), by_entry, entry_lines)


def _entry_formulas(entry: Entry) -> list[_Formula]:
    found = []
    for offset, text in enumerate(entry.text.split("\n")):
        match = _FORMULA.match(text)
        if match and match["vars"].strip() not in _KEYS:
            variables = match["vars"].strip()
            found.append(_Formula(entry, entry.line + offset, variables, match["formula"].strip(),
                                  frozenset(_IDENTIFIER.findall(match["formula"])),
                                  frozenset(v.strip() for v in variables.split(","))))
    return found


def _errors(log: str) -> list[re.Match]:
    return [m for m in map(_ERROR.match, log.splitlines()) if m]


def _place(sources: list[CompileUnit], error: re.Match, generated_lines: _GeneratedLines,
           index: _FormulaIndex, node_entries: dict[str, str]) -> CompileDiagnostic:
    generated = f"{error['path']}:{error['line']}:{error['column']}"
    message = error["message"]
    node = next((found for unit in sources
                 if (found := _node_at(unit, error["path"], int(error["line"]))) is not None),
                None)
    if node is None:
        return CompileDiagnostic("", "", "", "", None, generated, message)
    code, guarded = _code_at(generated_lines.of(error["path"]), int(error["line"]))
    name = node_entries.get(node, "")
    best = (_best_formula(index.by_entry.get(name, ()), code, guarded)
            or _best_formula(index.formulas, code, guarded))
    if best is None:
        return CompileDiagnostic(name, node, "", "", index.entry_lines.get(name), generated,
                                 message)
    return CompileDiagnostic(entry_label(best.entry), node, best.variables, best.formula,
                             best.line, generated, message)


def _node_at(unit: CompileUnit, path: str, line: int) -> str | None:
    if not unit.node_lines or Path(path).as_posix() != unit.source:
        return None
    position = bisect.bisect_right(unit.node_lines, line) - 1
    return unit.nodes[position] if position >= 0 else None


def _code_at(lines: list[str], line: int) -> tuple[str, str]:
    """The generated line, and the variable whose gradient the nearest guard above computes."""
    if not 0 < line <= len(lines):
        return "", ""
    for above in reversed(lines[max(0, line - 8):line]):
        guard = _GUARD.search(above)
        if guard:
            return lines[line - 1], guard[1]
    return lines[line - 1], ""


def _best_formula(formulas: Iterable[_Formula], code: str, guarded: str) -> _Formula | None:
    """The formula line whose identifiers the generated line holds most completely (at
    least half of them); a formula for the guarded variable wins a tie."""
    present = set(_IDENTIFIER.findall(code))
    best, best_score = None, 0.5
    for formula in formulas:
        words = formula.words
        score = len(words & present) / len(words) if words else 0.0
        if guarded in formula.names:
            score += 0.25
        if score > best_score:
            best, best_score = formula, score
    return best
