"""derivatives.yaml entries → `DerivativeEntry` records, one entry at a time.

An entry is either the classic form (`name`, optional `output_differentiability`, then one
formula per key) or the dispatch form (`dispatch: {Default: {...}, AutogradNestedTensor:
{...}}`). Both become a list of per-dispatch-key formula sets, as load_derivatives.py:
load_derivatives normalizes them. Formulas keep their line offset within the entry so that
diagnostics can point at them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from gradshard.pipeline.parse.source import LoadedEntry, quote_value
from gradshard.pipeline.problems import RuleViolation
from gradshard.pipeline.records import Record

__all__ = ["DEFAULT_KEY", "DerivativeEntry", "DispatchFormulas", "Formula",
           "parse_derivative_entry"]

ENTRY_KEYS = ("name", "output_differentiability", "dispatch")
DEFAULT_KEY = "Default"


@dataclass(frozen=True, slots=True)
class Formula(Record):
    """One `names: formula` line: backward (names are inputs) or forward (names are outputs)."""

    names: str
    formula: str
    line_in_entry: int = 0

    def split_names(self) -> tuple[str, ...]:
        return tuple(n.strip() for n in self.names.split(","))


@dataclass(frozen=True, slots=True)
class DispatchFormulas(Record):
    key: str
    formulas: tuple[Formula, ...]
    line_in_entry: int = 0


@dataclass(frozen=True, slots=True)
class DerivativeEntry(Record):
    name: str
    dispatch: tuple[DispatchFormulas, ...]
    output_differentiability: tuple[bool, ...] | None = None
    output_differentiability_conditions: tuple[str, ...] | None = None
    line_in_entry_of_output_differentiability: int = 0

    @property
    def op_name(self) -> str:
        """The operator name of `name:` (`mul.Tensor`), which is how users call the entry."""
        return self.name.split("(", 1)[0]

    @property
    def defn_name(self) -> str:
        """The base name load_derivatives works with (utils.py: split_name_params)."""
        m = re.match(r"(\w+)(\.\w+)?\((.*)\)", self.name)
        if m is None:
            raise RuleViolation("derivatives.bad-name", f"'{self.name}' is not a schema",
                                "write 'name: op.overload(ARGS) -> RETURNS'", line_in_entry=0)
        return m.group(1)


def parse_derivative_entry(loaded: LoadedEntry) -> DerivativeEntry:
    entry = loaded.value
    name = entry.get("name")
    if not isinstance(name, str):
        raise RuleViolation("derivatives.missing-name", "the entry has no 'name: SCHEMA'",
                            "every entry starts with '- name: op.overload(ARGS) -> RETURNS'",
                            line_in_entry=0)
    if "dispatch" in entry:
        dispatch = _dispatch_form(loaded)
    else:
        dispatch = (_formulas(loaded, DEFAULT_KEY, entry, ("name", "output_differentiability"), ()),)
    differentiability, conditions = _output_differentiability(loaded)
    parsed = DerivativeEntry(name, dispatch, differentiability, conditions,
                             loaded.offset_of("output_differentiability") or 0)
    _ = parsed.defn_name  # raises for a name load_derivatives cannot split
    return parsed


def _dispatch_form(loaded: LoadedEntry) -> tuple[DispatchFormulas, ...]:
    entry = loaded.value
    for key in entry:
        if key not in ENTRY_KEYS:
            raise RuleViolation(
                "derivatives.unknown-key",
                f"key {quote_value(key)} sits beside 'dispatch:' and is ignored",
                f"move it under a dispatch key such as '{DEFAULT_KEY}:'",
                line_in_entry=loaded.offset_of(str(key)))
    table = entry["dispatch"]
    if not isinstance(table, dict):
        raise RuleViolation("derivatives.bad-dispatch",
                            "'dispatch' must map dispatch keys to formulas",
                            f"write 'dispatch:' then '{DEFAULT_KEY}:' with the formulas under it",
                            line_in_entry=loaded.offset_of("dispatch"))
    result = []
    for key, formulas in table.items():
        if not isinstance(key, str) or not isinstance(formulas, dict):
            raise RuleViolation("derivatives.bad-dispatch",
                                f"dispatch key {quote_value(key)} must map to a set of formulas",
                                "write the formulas indented under the key, e.g. 'self: grad'",
                                line_in_entry=loaded.offset_of("dispatch", str(key)))
        result.append(_formulas(loaded, key, formulas, (), ("dispatch", key)))
    return tuple(result)


def _formulas(loaded: LoadedEntry, key: str, mapping: dict, skip: tuple[str, ...],
              path: tuple[str, ...]) -> DispatchFormulas:
    formulas = []
    for names, formula in mapping.items():
        if names in skip:
            continue
        offset = loaded.offset_of(*path, str(names)) or 0
        if not isinstance(names, str) or not names.strip():
            raise RuleViolation("derivatives.bad-formula-key",
                                f"'{names}' is not a name of an input or output",
                                "formula keys are argument names ('self', 'self, other') or "
                                "output names ('result')", line_in_entry=offset)
        if not isinstance(formula, str):
            raise RuleViolation("derivatives.bad-formula", f"the formula for '{names}' is "
                                f"{type(formula).__name__} {quote_value(formula)}, not a C++ "
                                "expression",
                                "quote the formula if YAML reads it as another type",
                                line_in_entry=offset)
        _reject_preprocessor_lines(names, formula, offset)
        formulas.append(Formula(names, formula, offset))
    return DispatchFormulas(key, tuple(formulas), loaded.offset_of(*path) or 0)


def _reject_preprocessor_lines(names: str, formula: str, offset: int) -> None:
    """gradshard's own rule (torchgen pastes the formula into Functions.cpp as it is): a
    formula line starting with '#' becomes a preprocessor directive inside a generated
    function, which breaks the compile of unrelated code. A formula that spans lines is a
    block scalar ('|' or '>'), whose text starts on the line after its key."""
    lines = formula.split("\n")
    for index, line in enumerate(lines):
        if line.lstrip().startswith("#"):
            raise RuleViolation(
                "derivatives.preprocessor",
                f"line {index + 1} of the formula for '{names}' starts with '#': "
                f"{quote_value(line.strip(), width=64)}",
                "a formula is one C++ expression and cannot hold preprocessor lines; inside a "
                "'|' or '>' block YAML keeps '#' lines as text, so write comments above the "
                "key instead", line_in_entry=offset + (index + 1 if len(lines) > 1 else 0))


def _output_differentiability(loaded: LoadedEntry) -> tuple[Any, Any]:
    """(output_differentiability, conditions) as load_derivatives.py stores them."""
    entry = loaded.value
    raw = entry.get("output_differentiability")
    offset = loaded.offset_of("output_differentiability")
    if raw is None or (not raw and "dispatch" not in entry):
        # the classic form drops a falsy value (load_derivatives.py: load_derivatives)
        return None, None
    if not isinstance(raw, list) or not all(isinstance(v, (bool, str)) for v in raw):
        raise RuleViolation("derivatives.bad-output-differentiability",
                            "output_differentiability must be a list of True/False, or a "
                            "one-item list holding a condition", "e.g. [True, False]",
                            line_in_entry=offset)
    if any(isinstance(v, str) for v in raw):
        if len(raw) != 1:
            raise RuleViolation("derivatives.bad-output-differentiability",
                                "a condition in output_differentiability is only supported "
                                "for single-output functions",
                                "use a list of booleans, or a single condition",
                                line_in_entry=offset)
        return (True,), tuple(raw)
    return tuple(raw), None
