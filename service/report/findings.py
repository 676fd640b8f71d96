"""What a command found, in one shape for every machine format (service/report/sarif.py,
service/report/lintrunner.py): each finding a rule, a level, a message, where (a file and a
line, when there is one) and the places related to it.

Spec errors are found at their spec file's line; compile errors at the formula's
derivatives.yaml line, their generated file's line related; a generator that writes files
differently from gradshard is a warning at each differing file; any other failure is one
finding at the file it names, else without a place of its own (its rule says which kind of
failure it is) until `placed_at` gives it the report's default place: code scanning and
lintrunner take no result without one. Every rule is in service/report/rules.py's table.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Iterable

from gradshard.pipeline.problems import Problem, SpecError
from gradshard.service.report.rules import COMPILE_RULE, GENERATOR_RULE

if TYPE_CHECKING:
    from gradshard.cache.errors import CompileDiagnostic, CompileError
    from gradshard.service.files.spec_location import SpecLocation
    from gradshard.service.outcome import BuildOutcome

__all__ = ["ERROR", "Finding", "Place", "WARNING", "build_findings", "compile_findings",
           "failure_finding", "generated_file", "generator_findings", "placed_at",
           "problem_findings", "spec_findings"]

ERROR, WARNING = "error", "warning"
# a compiler's place in generated code: path:line[:column]
_GENERATED_PLACE = re.compile(r"^(?P<path>.+?):(?P<line>\d+)(?::(?P<column>\d+))?$")


@dataclass(frozen=True)
class Place:
    """A file (absolute), and a line and column in it when known (1-based)."""

    path: str
    line: int | None = None
    column: int | None = None


@dataclass(frozen=True)
class Finding:
    rule: str  # stable across runs: "derivatives.bad-formula", "compile.error", …
    level: str  # ERROR or WARNING
    message: str
    place: Place | None = None
    hint: str = ""
    entry: str = ""  # the spec entry it belongs to, when one
    related: tuple[tuple[Place, str], ...] = ()  # other places, each with what it is


def spec_findings(error: SpecError, location: SpecLocation | None) -> list[Finding]:
    """Each of the spec's problems at its file and line (service/report/problems.py places
    them the same way)."""
    return problem_findings(error.problems, location, ERROR)


def problem_findings(problems: Iterable[Problem], location: SpecLocation | None,
                     level: str) -> list[Finding]:
    from gradshard.service.report.problems import problem_path

    return [Finding(p.rule, level, p.message,
                    Place(_absolute(problem_path(p, location)), p.line, p.column),
                    p.hint, p.entry) for p in problems]


def build_findings(outcome: BuildOutcome) -> list[Finding]:
    """What a build that wrote its files warns of: the problems gradshard's own rules found
    that the spec's generator accepts (the formula check's), then the files the generator
    writes differently."""
    return (problem_findings(outcome.findings, outcome.location, WARNING)
            + generator_findings(outcome))


def compile_findings(error: CompileError) -> list[Finding]:
    """Each compiler error at the formula it came from (or at the generated code when it
    came from none), the generated file's line related."""
    return [_compile_finding(d, error.source, error.directory) for d in error.diagnostics]


def _compile_finding(diagnostic: CompileDiagnostic, derivatives: str,
                     directory: str) -> Finding:
    generated = generated_place(diagnostic.generated, directory)
    if diagnostic.line is None and not diagnostic.entry:
        return Finding(COMPILE_RULE, ERROR, diagnostic.message, generated)
    what = (f"{diagnostic.entry} ({diagnostic.node})" if diagnostic.node
            else diagnostic.entry)
    formula = f" ({diagnostic.variables}: {diagnostic.formula})" if diagnostic.variables else ""
    message = (f"generated code for {what} does not compile{formula}: "
               f"{diagnostic.message}")
    related = ((generated, "the generated code the compiler rejected"),) if generated else ()
    return Finding(COMPILE_RULE, ERROR, message,
                   Place(_absolute(derivatives), diagnostic.line), entry=diagnostic.entry,
                   related=related)


def generated_place(text: str, directory: str = "") -> Place | None:
    """A compiler's `path:line:column` as a place, a relative path under the directory the
    compiler ran in (None when it names no file)."""
    found = _GENERATED_PLACE.match(text.strip())
    if found is None:
        return Place(_absolute(text.strip(), directory)) if text.strip() else None
    column = found.group("column")
    return Place(_absolute(found.group("path"), directory), int(found.group("line")),
                 int(column) if column else None)


def generator_findings(outcome: BuildOutcome) -> list[Finding]:
    """A warning at each file the spec's generator writes differently from gradshard (the
    files written are the generator's: service/generator/check.py), where --tree put it."""
    verdict = outcome.generator
    summary = verdict.summary()
    return [Finding(GENERATOR_RULE, WARNING,
                    f"{name} is written from the spec's own generator: {summary}",
                    Place(generated_file(outcome.out, name, outcome.tree)),
                    "gradshard reproduces the generators it knows; --generator-check strict "
                    "makes a difference an error") for name in verdict.differing]


def generated_file(out: Path, name: str, tree: str) -> str:
    """Where the index's file `name` is under --out in this tree (service/files/placement)."""
    from gradshard.service.files.placement import placed_name

    return _absolute(str(out / (placed_name(name, tree) or name)))


def failure_finding(rule: str, message: str, hint: str = "",
                    places: Iterable[Place] = ()) -> Finding:
    """A failure that is not a problem of the spec's (a bad option, a generator that
    failed): at its first place when it names some, else at none until `placed_at`."""
    found = [replace(p, path=_absolute(p.path)) for p in places]
    return Finding(rule, ERROR, message, found[0] if found else None, hint,
                   related=tuple((p, "also concerned") for p in found[1:]))


def placed_at(findings: Iterable[Finding], default: Place) -> list[Finding]:
    """The findings, each without a place of its own at `default` (code scanning refuses a
    result without a location; lintrunner shows a message without a path apart)."""
    return [f if f.place is not None else replace(f, place=default) for f in findings]


def _absolute(path: str, directory: str = "") -> str:
    return str((Path(directory) / path).absolute() if directory else Path(path).absolute())
