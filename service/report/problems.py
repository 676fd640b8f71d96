"""How problems reach the user: compiler-style text for terminals and editors, or JSON; and
the text of a generator check's failure and of a --verify mismatch, which endings.py says for
the command line and the daemon's answers alike.

Text reports print the first MAX_PRINTED_PROBLEMS problems and count the rest, as compilers
do; JSON lists every problem. Each file is split into lines once per report, so a report
takes time linear in the spec and the problems.
"""

from __future__ import annotations

import io
import sys
from typing import TYPE_CHECKING, Sequence, TextIO

from gradshard.cache.errors import (GeneratorFailed, GeneratorMismatch, UsageError,
                                    VerifyMismatch)
from gradshard.pipeline.problems import YAML_FILES, GradshardError, Problem, SpecError, SpecFile

if TYPE_CHECKING:  # the report is imported on every run; the pipeline only when needed
    from gradshard.pipeline.parse.spec import SpecTexts

from gradshard.pipeline.releases import DEFAULT_RELEASE
from gradshard.service.files.spec_location import SpecLocation
from gradshard.service.generator.identity import GeneratorIdentity

__all__ = ["VERIFY_HINT", "generator_failure_text", "problem_json", "problem_lines",
           "problem_path",
           "report_spec_error", "report_usage_error", "spec_error_lines", "spec_error_text",
           "spec_file_paths", "spec_texts_of", "unread_spec_note", "verify_mismatch_text"]

MAX_PRINTED_PROBLEMS = 50


class SourceLines:
    """The spec files' lines for quoting, each file split the first time it is quoted."""

    def __init__(self, texts: SpecTexts | None) -> None:
        self.texts = texts
        self._lines: dict[SpecFile, list[str]] = {}

    def line(self, file: SpecFile, number: int) -> str | None:
        """Line `number` (1-based) of a YAML file, or None when there is none."""
        if self.texts is None or file not in YAML_FILES:
            return None
        if file not in self._lines:
            self._lines[file] = self.texts.text_of(file).split("\n")
        lines = self._lines[file]
        return lines[number - 1] if 0 < number <= len(lines) else None


def problem_path(problem: Problem, location: SpecLocation | None) -> str:
    if problem.file is SpecFile.TEMPLATES:
        return str(location.templates / problem.entry) if location else problem.entry
    return str(location.path_of(problem.file)) if location else problem.file.value


def format_problem(problem: Problem, location: SpecLocation | None,
                   texts: SpecTexts | SourceLines | None = None,
                   severity: str = "error") -> str:
    """`path:line:col: error: message [rule]`, then the source line, entry and hint. To
    format many problems, pass one SourceLines: SpecTexts are split on every call."""
    where = problem_path(problem, location)
    if problem.line is not None:
        where += f":{problem.line}"
        if problem.column is not None:
            where += f":{problem.column}"
    lines = [f"{where}: {severity}: {problem.message} [{problem.rule}]"]
    source = _source_line(problem, texts if isinstance(texts, SourceLines) else SourceLines(texts))
    if source is not None:
        lines.append(f"  {problem.line:>5} | {source}")
    if problem.entry:
        lines.append(f"  in entry: {problem.entry}")
    if problem.hint:
        lines.append(f"  hint: {problem.hint}")
    return "\n".join(lines)


def _source_line(problem: Problem, source: SourceLines) -> str | None:
    if problem.line is None:
        return None
    line = source.line(problem.file, problem.line)
    return None if line is None else _shortened(line.rstrip())


def _shortened(line: str, width: int = 200) -> str:
    """A quoted source line, cut to a readable width (a whole file may be one line)."""
    return line if len(line) <= width else line[:width] + " …"


def problem_json(problem: Problem, location: SpecLocation | None) -> dict:
    return {"file": problem_path(problem, location), "line": problem.line,
            "column": problem.column, "entry": problem.entry, "rule": problem.rule,
            "message": problem.message, "hint": problem.hint}


def spec_error_lines(error: SpecError, location: SpecLocation | None, texts: SpecTexts | None,
                     limit: int = MAX_PRINTED_PROBLEMS) -> list[str]:
    """The first `limit` problems formatted, then how many more there are."""
    return problem_lines(error.problems, location, texts, "error", limit)


def problem_lines(problems: Sequence[Problem], location: SpecLocation | None,
                  texts: SpecTexts | None, severity: str,
                  limit: int = MAX_PRINTED_PROBLEMS) -> list[str]:
    """The first `limit` problems formatted as of `severity`, then how many more there are."""
    source = SourceLines(texts)
    shown = [format_problem(p, location, source, severity) for p in problems[:limit]]
    hidden = len(problems) - len(shown)
    if hidden > 0:
        shown.append(f"… and {hidden} more {severity}{'s' if hidden != 1 else ''} "
                     "(--json lists every one)")
    return shown


def report_spec_error(error: SpecError, location: SpecLocation | None, texts: SpecTexts | None,
                      out: TextIO | None = None) -> None:
    out = out or sys.stderr
    for text in spec_error_lines(error, location, texts):
        print(text, file=out)
    count = len(error.problems)
    print(f"gradshard: {count} error{'s' if count != 1 else ''} in the spec", file=out)


def spec_error_text(error: SpecError, location: SpecLocation | None, texts: SpecTexts | None,
                    identity: GeneratorIdentity | None) -> str:
    """What a failed command prints on stderr for a spec's errors, whether it built by itself
    or a daemon built for it: the problems and their count, with a note before and after them
    when the spec's generator is one gradshard does not reproduce (a hundred errors scroll the
    first away)."""
    note = f"{unread_spec_note(identity)}\n" if identity and not identity.known else ""
    printed = io.StringIO()
    report_spec_error(error, location, texts, printed)
    return note + printed.getvalue() + note


def unread_spec_note(identity: GeneratorIdentity) -> str:
    """What precedes and follows the errors of a spec whose generator gradshard does not
    reproduce: they may be gradshard's, not the spec's."""
    return (f"gradshard: note: this spec's {identity.describe()}\n"
            f"  gradshard reads specs as torchgen {DEFAULT_RELEASE} does and cannot read this "
            f"one yet: the errors are where its rules and this generator's differ, not "
            f"necessarily mistakes in the spec")


def report_usage_error(error: UsageError, out: TextIO | None = None) -> None:
    out = out or sys.stderr
    print(f"gradshard: error: {error.message}", file=out)
    if error.hint:
        print(f"  hint: {error.hint}", file=out)


# The words of a generator check's failure and of a --verify mismatch, as `gradshard build`
# prints them on stderr: one text each, which endings.py renders for the command line
# (service/cli.py) and for the daemon's build answer, as its `stderr`
# (service/daemon/server.py), so that a failing build prints the same through the daemon
# (service/daemon/runtime.py: report_failure prints it).

VERIFY_HINT = ("the cache was written by other code or altered; the rows were rewritten with "
               "the computed results")


def generator_failure_text(error: GeneratorFailed | GeneratorMismatch) -> str:
    """The message; a mismatch's report (which files differ, their first differing lines);
    a failed generator's last lines of error output, each after `  | `; the hint."""
    lines = [f"gradshard: error: {error}"]
    if getattr(error, "report", None):
        lines.extend(f"  {line}" for line in error.report.splitlines())
    if getattr(error, "detail", None):
        lines.extend(f"  | {line}" for line in error.detail.splitlines())
    if error.hint:
        lines.append(f"  hint: {error.hint}")
    return "\n".join(lines)


def verify_mismatch_text(error: VerifyMismatch) -> str:
    """The count, every disagreeing task (name, ident and both hashes) and what was done."""
    return "\n  ".join([f"gradshard: error: {error}:", *error.disagreements,
                        f"hint: {VERIFY_HINT}"])


def spec_file_paths(location: SpecLocation) -> dict[str, str]:
    return {f.value: str(location.path_of(f)) for f in YAML_FILES}


def spec_texts_of(location: SpecLocation | None) -> SpecTexts | None:
    """The spec's texts for quoting source lines, when they can be decoded."""
    if location is None:
        return None
    from gradshard.service.files.inputs import load_texts  # decoding loads the pipeline

    try:
        return load_texts(location)
    except GradshardError:
        return None
