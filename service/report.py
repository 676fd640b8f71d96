"""How problems reach the user: compiler-style text for terminals and editors, or JSON."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, TextIO

from gradshard.pipeline.errors import (YAML_FILES, GradshardError, Problem, SpecError, SpecFile,
                                       UsageError)

if TYPE_CHECKING:  # the report is imported on every run; the pipeline only when needed
    from gradshard.pipeline.spec import SpecTexts

from .spec_location import SpecLocation


def problem_path(problem: Problem, location: SpecLocation | None) -> str:
    if problem.file is SpecFile.TEMPLATES:
        return str(location.templates / problem.entry) if location else problem.entry
    return str(location.path_of(problem.file)) if location else problem.file.value


def format_problem(problem: Problem, location: SpecLocation | None,
                   texts: SpecTexts | None = None) -> str:
    """`path:line:col: error: message [rule]`, then the source line, entry and hint."""
    where = problem_path(problem, location)
    if problem.line is not None:
        where += f":{problem.line}"
        if problem.column is not None:
            where += f":{problem.column}"
    lines = [f"{where}: error: {problem.message} [{problem.rule}]"]
    source = _source_line(problem, texts)
    if source is not None:
        lines.append(f"  {problem.line:>5} | {source}")
    if problem.entry:
        lines.append(f"  in entry: {problem.entry}")
    if problem.hint:
        lines.append(f"  hint: {problem.hint}")
    return "\n".join(lines)


def _source_line(problem: Problem, texts: SpecTexts | None) -> str | None:
    if texts is None or problem.line is None or problem.file not in YAML_FILES:
        return None
    lines = texts.text_of(problem.file).split("\n")
    return lines[problem.line - 1].rstrip() if 0 < problem.line <= len(lines) else None


def problem_json(problem: Problem, location: SpecLocation | None) -> dict:
    return {"file": problem_path(problem, location), "line": problem.line,
            "column": problem.column, "entry": problem.entry, "rule": problem.rule,
            "message": problem.message, "hint": problem.hint}


def report_spec_error(error: SpecError, location: SpecLocation | None, texts: SpecTexts | None,
                      out: TextIO | None = None) -> None:
    out = out or sys.stderr
    for problem in error.problems:
        print(format_problem(problem, location, texts), file=out)
    count = len(error.problems)
    print(f"gradshard: {count} error{'s' if count != 1 else ''} in the spec", file=out)


def report_usage_error(error: UsageError, out: TextIO | None = None) -> None:
    out = out or sys.stderr
    print(f"gradshard: error: {error.message}", file=out)
    if error.hint:
        print(f"  hint: {error.hint}", file=out)


def spec_file_paths(location: SpecLocation) -> dict[str, str]:
    return {f.value: str(location.path_of(f)) for f in YAML_FILES}


def spec_texts_of(location: SpecLocation | None) -> SpecTexts | None:
    """The spec's texts for quoting source lines, when they can be decoded."""
    if location is None:
        return None
    from gradshard.pipeline.spec import decode_spec

    try:
        return decode_spec(location.read_all())
    except GradshardError:
        return None
