"""Go to definition and completion, from the texts alone (the buffers, the files on disk and
the formulas' helper header): they answer at once, whatever the spec's state.

- Definition: a derivatives.yaml entry's `- name:` line goes to its op's native_functions.yaml
  entry, and a native function's `- func:` line to the derivatives.yaml entry it takes its
  formulas from (its own, else its functional variant's, by name); a helper a formula calls
  goes to its declaration in FunctionsManual.h (the spec's own, else the installed torch's).
- Completion in a formula: the op's arguments (a forward formula's also as `_t` and `_p`,
  the tangent and the primal: pipeline/formulas/names.py's scope), `grad`/`grads`/`result`
  and their kin, and every helper the header declares.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from gradshard.pipeline.formulas.names import helper_names
from gradshard.pipeline.problems import RuleViolation, SpecFile
from gradshard.pipeline.schema import FunctionSchema
from gradshard.service.editor.buffers import disk_text
from gradshard.service.editor.places import EntryAt, entry_starts, operator_of

__all__ = ["Completion", "Target", "completions", "definition_entry", "formula_key",
           "helper_declaration", "helpers_of"]

# Keys of a derivatives entry that hold no formula
_NOT_FORMULAS = frozenset({"name", "output_differentiability", "dispatch"})


@dataclass(frozen=True)
class Target:
    """A place to go: a file, a line and a column (from 0, in characters)."""

    path: Path
    line: int
    column: int = 0


@dataclass(frozen=True)
class Completion:
    label: str
    kind: str  # "argument", "gradient", "output" or "helper"
    detail: str


def definition_entry(entry: EntryAt, other_text: str) -> int | None:
    """The first line (from 0) of the entry the other YAML file holds for `entry`'s op: the
    native function of a derivatives entry, the derivatives entry of a native function (its
    own, else by the functional variant's name); None when there is none."""
    other = (SpecFile.NATIVE_FUNCTIONS if entry.file is SpecFile.DERIVATIVES
             else SpecFile.DERIVATIVES)
    starts = entry_starts(other, other_text)
    for name in _candidates(entry):
        if name in starts:
            return starts[name]
    return None


def _candidates(entry: EntryAt) -> list[str]:
    """The names an op's entry may go by in the other file, closest first: `add_.Tensor` →
    add_.Tensor, add.Tensor, add; `sin.out` → sin.out, sin."""
    base, _, overload = entry.operator.partition(".")
    functional = base[:-1] if base.endswith("_") and not base.endswith("__") else base
    names = [entry.name, entry.operator, f"{functional}.{overload}" if overload else functional]
    if overload in ("out", ""):
        names.append(functional)
    return list(dict.fromkeys(names))


def helper_declaration(header: Path, name: str) -> int | None:
    """The line (from 0) of the header's first declaration of `name` (a name before `(` on a
    line that is not a comment), None when it declares none."""
    text = disk_text(header)
    pattern = re.compile(rf"\b{re.escape(name)}\s*\(")
    for number, line in enumerate(text.split("\n")):
        if pattern.search(line) and not line.lstrip().startswith(("//", "*", "/*", "#")):
            return number
    return None


def helpers_of(header: Path | None) -> tuple[str, ...]:
    """Every name the header declares (the formula check's reading of it)."""
    if header is None:
        return ()
    try:
        stat = header.stat()
    except OSError:
        return ()
    return _helpers(header, stat.st_mtime_ns, stat.st_size)


@lru_cache(maxsize=4)
def _helpers(header: Path, modified: int, size: int) -> tuple[str, ...]:
    """The header's names, read again only when it changes (every completion asks)."""
    return helper_names(disk_text(header))


def formula_key(entry: EntryAt) -> str | None:
    """The key of the formula a position of a derivatives entry is in, None outside any
    formula (the name, output_differentiability, dispatch's own line)."""
    if entry.file is not SpecFile.DERIVATIVES or entry.key is None:
        return None
    return None if entry.key in _NOT_FORMULAS else entry.key


def completions(entry: EntryAt, helpers: tuple[str, ...]) -> list[Completion]:
    """What a formula of `entry` may name: its op's values, gradients or outputs as the
    formula's kind allows, then the helpers."""
    key = formula_key(entry)
    if key is None:
        return []
    try:
        schema = FunctionSchema.parse(entry.name)
    except RuleViolation:
        return [Completion(h, "helper", "FunctionsManual.h") for h in helpers]
    arguments = [a.name for a in schema.arguments.all]
    outputs = ["result", *(r.name for r in schema.returns if r.name)]
    if len(schema.returns) > 1:
        outputs += [f"result{i}" for i in range(len(schema.returns))]
    forward = any(name.strip() in outputs for name in key.split(","))
    found = [Completion(a, "argument", f"argument of {operator_of(entry.name)}")
             for a in arguments]
    if forward:
        found += [Completion(f"{a}{suffix}", "argument", what)
                  for a in [*arguments, "original_self"]
                  for suffix, what in (("_t", "its tangent"), ("_p", "its primal"))]
        found += [Completion(o, "output", "an output") for o in outputs]
    else:
        found += [Completion(g, "gradient", "the incoming gradient")
                  for g in ("grad", "grads", "grad_input_mask", "retain_variables")]
        found += [Completion(f"grad_{r.name}", "gradient", "a named output's gradient")
                  for r in schema.returns if r.name]
        found += [Completion(o, "output", "an output (saved for the backward)")
                  for o in outputs]
    found += [Completion(h, "helper", "FunctionsManual.h") for h in helpers]
    seen: set[str] = set()
    return [c for c in found if not (c.label in seen or seen.add(c.label))]
