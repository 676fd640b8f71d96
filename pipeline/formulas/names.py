"""Which names a derivatives.yaml formula may use, and the check of every formula of an entry.

A formula is pasted by torchgen into generated C++ as it is: a backward formula into its
node's `apply` (gen_autograd_functions.py), a forward one into the op's autograd kernel
(gen_variable_type.py). An identifier it names in its own scope must then be one of:

- its op's: an argument, an output (`result`, `resultN`, a named output), and what the
  generator derives from them: `grad`, `grads`, `grad_<output>`, `grad_input_mask`,
  `retain_variables` and the saved values the replacements make (`self_sym_sizes`:
  load_derivatives.py: saved_variables) in a backward formula; `<name>_t`, `<name>_p` and
  `original_self*` in a forward one (gen_variable_type.py: emit_fw_derivatives); the
  loop's `i` in a foreach entry's (gen_autograd_functions.py: the foreach loop);
- the spec's: a helper FunctionsManual.h declares, a type the spec's Functions/VariableType
  templates bring in with `using`, an at:: function (any native function, found by argument
  dependent lookup, and its `_symint` form), a function a replacement calls (`zeros_like`);
- C++'s: a keyword, a literal, a standard integer type, a <cmath> constant;
- the formula's own: a lambda's parameter, a local it declares.

Members (after `.` or `->`) and qualified names (`at::`, `std::`) are the compiler's to check.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from pathlib import PurePath
from typing import Iterable

from gradshard.pipeline.cpp import REDUNDANT_MEMORY_FORMAT, return_names
from gradshard.pipeline.formulas.lexer import bracket_fault, identifier_uses, tokens
from gradshard.pipeline.parse.derivatives import DerivativeEntry, Formula
from gradshard.pipeline.parse.differentiability import (REPLACEMENT_CALLEES, SAVED_SUFFIXES,
                                                        DifferentiabilityInfo, EntryInfos)
from gradshard.pipeline.parse.source import Entry
from gradshard.pipeline.problems import Problem, RuleViolation, SpecFile
from gradshard.pipeline.records import Record
from gradshard.pipeline.schema import FunctionSchema, cpp_name

__all__ = ["BRACKETS_RULE", "EntryFormulas", "FormulaFindings", "FormulaNames", "FormulaSources",
           "FormulaUse", "NAME_RULE", "OpenName", "SCOPE_TEMPLATES", "entry_formulas",
           "formula_findings", "formula_names", "helper_names"]

NAME_RULE = "derivatives.formula-name"
BRACKETS_RULE = "derivatives.formula-brackets"
# values that are no C++ (load_derivatives.py and gen_variable_type.py read them as words)
_WORDS = frozenset({"non_differentiable", "auto_element_wise", "auto_linear"})

_KEYWORDS = frozenset("""
    alignas alignof and and_eq asm auto bitand bitor bool break case catch char char8_t char16_t
    char32_t class compl concept const consteval constexpr constinit const_cast continue
    co_await co_return co_yield decltype default delete do double dynamic_cast else enum
    explicit export extern false float for friend goto if inline int long mutable namespace new
    noexcept not not_eq nullptr operator or or_eq private protected public register
    reinterpret_cast requires return short signed sizeof static static_assert static_cast
    struct switch template this thread_local throw true try typedef typeid typename union
    unsigned using virtual void volatile wchar_t while xor xor_eq
""".split())
# <cstdint>/<cstddef> types and <cmath> constants and macros a formula may name unqualified
_STANDARD = frozenset("""
    int8_t int16_t int32_t int64_t uint8_t uint16_t uint32_t uint64_t size_t ptrdiff_t
    M_E M_LOG2E M_LOG10E M_LN2 M_LN10 M_PI M_PI_2 M_PI_4 M_1_PI M_2_PI M_2_SQRTPI M_SQRT2
    M_SQRT1_2 INFINITY NAN
""".split())
_USING = re.compile(r"\busing\s+(?:[\w:]+::)?(\w+)\s*[;=]")
_TYPE = re.compile(r"\b(?:struct|class|enum(?:\s+class)?)\s+(\w+)")


# the spec's templates that bring names into the formulas' scope (`using at::Tensor;`)
SCOPE_TEMPLATES = ("Functions.h", "Functions.cpp", "VariableType.h", "VariableType.cpp")


@dataclass(frozen=True, slots=True)
class FormulaSources(Record):
    """What the spec-wide names are read from: the helper header (its path, "" when none was
    found, and its text) and the scope templates' texts."""

    header: str = ""
    header_text: str = ""
    templates: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class FormulaNames(Record):
    """What every formula of a spec may name besides its own op's names: the helper header's
    declarations (`header` says which file; empty: none was found, and calls go unchecked),
    the templates' `using` names, the at:: functions."""

    header: str
    helpers: tuple[str, ...]
    usings: tuple[str, ...]
    functions: tuple[str, ...]

    def known(self) -> frozenset[str]:
        return frozenset((*self.helpers, *self.usings, *self.functions, *REPLACEMENT_CALLEES,
                          *_KEYWORDS, *_STANDARD))


@dataclass(frozen=True, slots=True)
class FormulaFindings(Record):
    """The formula check's findings of one entry (named by entry, lines within it)."""

    problems: tuple[Problem, ...] = ()


def formula_names(sources: FormulaSources, function_names: Iterable[str]) -> FormulaNames:
    """The spec-wide names: the helper header's, the templates' `using`s, and every native
    function's name (`add.out` → `add`, `add_symint`)."""
    usings = sorted({name for text in sources.templates for name in _USING.findall(text)})
    bases = {name.split(".", 1)[0] for name in function_names}
    functions = sorted(bases | {f"{base}_symint" for base in bases})
    helpers = helper_names(sources.header_text) if sources.header else ()
    return FormulaNames(sources.header, helpers, tuple(usings), tuple(functions))


def helper_names(text: str) -> tuple[str, ...]:
    """What a C++ header declares outside any parentheses and function bodies: functions (a
    name before `(`), variables (a name after a type, before `=`, `;` or `[`), aliases and
    types; a parameter's or a local's name is nobody's to call."""
    found = tokens(text)
    names = set(_USING.findall(text)) | set(_TYPE.findall(text))
    depth, body = 0, 0  # parentheses; braces of a function body (opened after `)`)
    for at, token in enumerate(found):
        before = found[at - 1] if at else None
        if token.text in "({" and token.kind == "punct":
            depth += token.text == "("
            body += token.text == "{" and (body > 0 or (before is not None
                                                        and before.text == ")"))
        elif token.text in ")}" and token.kind == "punct":
            depth = max(depth - (token.text == ")"), 0)
            body = max(body - (token.text == "}" and body > 0), 0)
        if depth or body or token.kind != "identifier" or at + 1 >= len(found):
            continue
        after = found[at + 1].text
        typed = before is not None and (
            (before.kind == "identifier" and before.text not in _KEYWORDS)
            or before.text in ("*", "&", ">"))
        if after == "(" or (typed and after in ("=", ";", "[")):
            names.add(token.text)
    return tuple(sorted(names - _KEYWORDS))


@dataclass(frozen=True, slots=True)
class OpenName(Record):
    """A name a formula uses that its op's scope does not hold: where it is in the entry,
    and whether it is called (a helper or an at:: function, when it is one)."""

    name: str
    line_in_entry: int
    column: int | None
    called: bool


@dataclass(frozen=True, slots=True)
class FormulaUse(Record):
    """One formula's names the spec-wide ones must hold (`open`, in order), with what its
    finding would say: its key, what it breaks, and its op's own names (for the hint)."""

    names: str
    breaks: str
    backward: bool
    scope: tuple[str, ...]
    arguments: str
    outputs: str
    open: tuple[OpenName, ...]


@dataclass(frozen=True, slots=True)
class EntryFormulas(Record):
    """What one entry's formulas leave to the spec-wide check (its `faults` are findings
    already: brackets and quotes need no other name)."""

    entry: str
    faults: tuple[Problem, ...] = ()
    uses: tuple[FormulaUse, ...] = ()


def entry_formulas(entry: Entry, parsed: DerivativeEntry, infos: EntryInfos) -> EntryFormulas:
    """Each formula of the entry read alone: a bracket or literal left open is a finding; the
    names it uses outside its op's scope are left to `formula_findings` (the spec-wide names
    change with the native functions: the entries need not run again for it)."""
    lines = entry.text.split("\n")
    faults, uses = [], []
    for formulas in parsed.dispatch:
        info = infos.info_for(formulas.key)
        if info is None:
            continue
        for formula in formulas.formulas:
            if formula.formula.strip().lower() in _WORDS:
                continue
            fault, use = _formula_use(formula, info, lines, parsed.op_name)
            faults.extend([fault] if fault is not None else [])
            uses.extend([use] if use is not None and use.open else [])
    return EntryFormulas(parsed.op_name, tuple(faults), tuple(uses))


def formula_findings(entries: Iterable[EntryFormulas], names: FormulaNames) -> FormulaFindings:
    """One finding per formula that leaves a bracket open or names what it cannot: at its
    line and column in its entry, naming what it would break, with the closest name."""
    known = names.known()
    found = []
    for entry in entries:
        found.extend(entry.faults)
        for use in entry.uses:
            unknown = [n for n in use.open if n.name not in known
                       and not (n.called and not names.header)]
            if unknown:
                found.append(_name_problem(entry.entry, use, unknown, known, names))
    return FormulaFindings(tuple(found))


def _formula_use(formula: Formula, info: DifferentiabilityInfo, lines: list[str], op: str
                 ) -> tuple[Problem | None, FormulaUse | None]:
    backward = formula.split_names()[0] in _arguments(info)
    found = tokens(formula.formula)
    breaks = _breaks(info, backward)
    fault = bracket_fault(formula.formula, found)
    if fault is not None:
        line, column = _source_place(lines, formula, fault.start, fault.text, word=False)
        return Problem(SpecFile.DERIVATIVES, op, BRACKETS_RULE,
                       f"the formula for '{formula.names}' is not balanced: {fault.message} "
                       f"({breaks} would not compile)",
                       "close every '(', '[', '{' and quote the formula opens, in order",
                       line_in_entry=line, column=column), None
    values = _arguments(info) | _outputs(info)
    scope = _scope(values, info, backward, op)
    used, declared = identifier_uses(found)
    following = {token.start: after.text for token, after in zip(found, found[1:])}
    open_names, seen = [], set()
    for token in used:
        name = token.text
        if name in scope or name in declared or name in seen or _saved_form(name, values):
            continue
        seen.add(name)
        line, column = _source_place(lines, formula, token.start, name, word=True)
        open_names.append(OpenName(name, line, column, following.get(token.start) == "("))
    func = info.func.func
    return None, FormulaUse(formula.names, breaks, backward, tuple(sorted(scope)),
                            ", ".join(a.name for a in func.arguments.all),
                            ", ".join(_return_names(func)) or "none", tuple(open_names))


def _name_problem(entry: str, use: FormulaUse, unknown: list[OpenName], known: frozenset[str],
                  names: FormulaNames) -> Problem:
    first = unknown[0]
    others = [n.name for n in unknown[1:]]
    also = f" (also {', '.join(repr(o) for o in others)})" if others else ""
    return Problem(SpecFile.DERIVATIVES, entry, NAME_RULE,
                   f"'{first.name}' in the formula for '{use.names}' names nothing the "
                   f"formula can use{also}; {use.breaks} would not compile",
                   _name_hint(first.name, use, known, names),
                   line_in_entry=first.line_in_entry, column=first.column)


def _arguments(info: DifferentiabilityInfo) -> set[str]:
    names = {a.name for a in info.func.func.arguments.all}
    if "memory_format" in names:
        names.add(REDUNDANT_MEMORY_FORMAT)
    return names


def _outputs(info: DifferentiabilityInfo) -> set[str]:
    func = info.func.func
    named = {r.name for r in func.returns if r.name}
    numbered = {f"result{i}" for i in range(len(func.returns))}
    return {"result", *named, *numbered, *_return_names(func)}


def _return_names(func: FunctionSchema) -> tuple[str, ...]:
    """The C++ names of the returns (api/cpp.py: return_names); an in-place function with
    several returns has none there (the entry's other rules say so)."""
    try:
        return return_names(func)
    except RuleViolation:
        return ()


def _scope(values: set[str], info: DifferentiabilityInfo, backward: bool, op: str) -> set[str]:
    """The op's own names a formula of this kind may use (`values`: its arguments and
    outputs)."""
    if backward:
        grads = {f"grad_{r.name}" for r in info.func.func.returns if r.name}
        scope = values | grads | {"grad", "grads", "grad_input_mask", "retain_variables"}
    else:
        forms = {f"{name}{suffix}" for name in values | {"original_self"}
                 for suffix in ("_t", "_p")}
        scope = values | forms | {"original_self"}
    if op.startswith("_foreach_"):
        scope.add("i")
    return scope


def _saved_form(name: str, values: set[str]) -> bool:
    """A saved value's name the replacements make of an argument or output (`self_sym_sizes`,
    `self_sym_argsize_0`)."""
    for suffix in SAVED_SUFFIXES:
        at = name.find(suffix)
        if at > 0 and name[:at] in values and (
                name[at:] == suffix or (suffix.endswith("_") and len(name) > at + len(suffix))):
            return True
    return False


def _breaks(info: DifferentiabilityInfo, backward: bool) -> str:
    if backward:
        return f"the backward node {info.op}" if info.op else "its backward node"
    return f"the autograd kernel of {cpp_name(info.func.func)} (its forward-mode code)"


def _name_hint(name: str, use: FormulaUse, known: frozenset[str], names: FormulaNames) -> str:
    close = (difflib.get_close_matches(name, use.scope, n=1, cutoff=0.6)
             or difflib.get_close_matches(name, sorted(known), n=1, cutoff=0.75))
    mean = f"did you mean '{close[0]}'? " if close else ""
    derived = ("grad, grads, grad_<output>, grad_input_mask, retain_variables, saved values "
               "such as self_sym_sizes" if use.backward else "<name>_t, <name>_p, original_self")
    helpers = f"a helper of {PurePath(names.header).name}" if names.header else "a helper"
    return (f"{mean}A {'backward' if use.backward else 'forward'} formula may name its op's "
            f"arguments ({use.arguments}) and outputs ({use.outputs}), {derived}; {helpers}, "
            "an at:: function, a Tensor method after '.', or a C++ word")


def _source_place(lines: list[str], formula: Formula, start: int, text: str,
                  word: bool) -> tuple[int, int | None]:
    """Where the formula's `text` at offset `start` is in the entry's source: the same
    occurrence counted from the formula's key (YAML folds a formula's lines, but keeps its
    words and brackets)."""
    pattern = re.compile(rf"(?<!\w){re.escape(text)}(?!\w)" if word else re.escape(text))
    occurrence = len(pattern.findall(formula.formula[:start]))
    key = formula.line_in_entry
    if key >= len(lines):
        return key, None
    first = lines[key]
    colon = first.find(":", first.find(formula.names.split(",")[0].strip()))
    offsets = [(key, colon + 1 if colon >= 0 else 0)] + [(k, 0) for k in range(key + 1,
                                                                              len(lines))]
    for line, begin in offsets:
        for match in pattern.finditer(lines[line], begin):
            if occurrence == 0:
                return line, match.start() + 1
            occurrence -= 1
    return key, None

