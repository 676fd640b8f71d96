"""`--format {text,json,sarif,lintrunner}` and `--output FILE` of `check` and `build`.

text and json are the commands' own reports (`--json` is `--format json`). sarif and
lintrunner print what the command found (service/report/findings.py) as one SARIF log or as
lintrunner's JSON lines, on stdout, while the text report goes to stderr; the exit code is
the command's own, except that lintrunner's adapters exit 0 when they report what they found
(lintrunner takes any other code as the linter itself failing). `--output FILE` puts what
would go to stdout in FILE instead, written whole once the command ends (never a part of it).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Iterator, Sequence, TextIO

from gradshard.cache.errors import (CompileError, GeneratorFailed, GeneratorMismatch, UsageError,
                                    VerifyMismatch)
from gradshard.pipeline.problems import SpecError
from gradshard.service.exit_codes import EXIT_INTERRUPTED, EXIT_USAGE
from gradshard.service.options import FORMATS
from gradshard.service.report.findings import (GENERATOR_RULE, Finding, compile_findings,
                                               failure_finding, generated_file, spec_findings)

if TYPE_CHECKING:
    from gradshard.service.files.spec_location import SpecLocation

__all__ = ["FORMATS", "MACHINE_FORMATS", "emit_findings", "error_findings", "gathered_stdout",
           "human_stream", "machine_format", "reported_by_linter", "settle_format",
           "write_output"]

TEXT, JSON, SARIF, LINTRUNNER = FORMATS
MACHINE_FORMATS = (SARIF, LINTRUNNER)
# the rules of failures that are no problem of the spec's and no placed compile error
USAGE_RULE, GENERATOR_FAILED_RULE, ERROR_RULE = "usage", "generator.failed", "gradshard.error"
_FAILURE_RULES = ((UsageError, USAGE_RULE), (GeneratorFailed, GENERATOR_FAILED_RULE),
                  (VerifyMismatch, "cache.disagreement"), (CompileError, "compile.failed"))


def settle_format(args: argparse.Namespace) -> None:
    """--json and --format as one: args.format always set, args.json true for json."""
    chosen = getattr(args, "format", None)
    if getattr(args, "json", False) and chosen not in (None, JSON):
        raise UsageError(f"--json and --format {chosen} ask for two formats",
                         "drop --json (it is --format json)")
    args.format = JSON if getattr(args, "json", False) else chosen or TEXT
    args.json = args.format == JSON


def machine_format(args: argparse.Namespace) -> str | None:
    """sarif or lintrunner when asked for (None for text and json)."""
    chosen = getattr(args, "format", None)
    return chosen if chosen in MACHINE_FORMATS else None


def human_stream(args: argparse.Namespace) -> TextIO:
    """Where the text report goes: stdout, or stderr when stdout carries a machine format."""
    return sys.stderr if machine_format(args) else sys.stdout


def reported_by_linter(args: argparse.Namespace, error: BaseException) -> bool:
    """Whether lintrunner's adapter reported this failure as lint messages (its exit code is
    then 0): the spec's problems, compile errors and a differing generator."""
    return (machine_format(args) == LINTRUNNER
            and isinstance(error, (SpecError, CompileError, GeneratorMismatch)))


def error_findings(error: BaseException, location: SpecLocation | None,
                   args: argparse.Namespace) -> list[Finding]:
    """What a failed command found: the spec's problems, the compile errors, each file that
    differs from the spec's generator (under --generator-check strict: where --out and
    --tree put it), or one finding for any other failure."""
    if isinstance(error, SpecError):
        return spec_findings(error, location)
    if isinstance(error, CompileError) and error.diagnostics:
        return compile_findings(error)
    if isinstance(error, GeneratorMismatch):
        out, tree = Path(getattr(args, "out", None) or "."), getattr(args, "tree", "flat")
        return [failure_finding(GENERATOR_RULE, f"{name} differs from the spec's generator's",
                                error.hint, [generated_file(out, name, tree)])
                for name in error.files]
    rule = next((r for kind, r in _FAILURE_RULES if isinstance(error, kind)), ERROR_RULE)
    message = getattr(error, "message", None) or f"{type(error).__name__}: {error}"
    return [failure_finding(rule, message, getattr(error, "hint", "") or "")]


def emit_findings(args: argparse.Namespace, findings: Sequence[Finding],
                  location: SpecLocation | None) -> None:
    """The machine format's document of the findings on stdout (nothing for text and json,
    whose reports the commands print themselves)."""
    chosen = machine_format(args)
    if chosen is None:
        return
    from gradshard.pipeline.problems import SpecFile
    from gradshard.service.report.sarif import repository_root

    root = repository_root(location.root if location is not None else Path.cwd())
    if chosen == SARIF:
        from gradshard.service.report.sarif import sarif_text

        # code scanning takes no result without a place: a failure is at the spec's file
        spec_file = location.path_of(SpecFile.DERIVATIVES) if location is not None else None
        print(sarif_text(findings, _version(), root, spec_file))
    else:
        from gradshard.service.report.lintrunner import lint_lines

        for line in lint_lines(findings, root):
            print(line)


@contextlib.contextmanager
def gathered_stdout(args: argparse.Namespace) -> Iterator[io.StringIO | None]:
    """With --output FILE: stdout gathered (for write_output); without, None."""
    if not getattr(args, "output", None):
        yield None
        return
    gathered = io.StringIO()
    with contextlib.redirect_stdout(gathered):
        yield gathered


def write_output(args: argparse.Namespace, gathered: io.StringIO | None, code: int) -> int:
    """--output's FILE written whole, once the command has ended (atomically: a reader never
    sees a part of it): the command's exit code, or a usage error's when FILE cannot be
    written."""
    if gathered is None or code == EXIT_INTERRUPTED:
        return code  # an interrupted command has no whole report: FILE stays as it was
    from gradshard.service.files.outputs import write_atomic

    path = Path(args.output)
    try:
        write_atomic(path, gathered.getvalue().encode())
    except OSError as error:
        print(f"gradshard: error: cannot write --output {path}: {error.strerror}\n"
              "  hint: name a file in a directory that exists and is writable",
              file=sys.stderr)
        return EXIT_USAGE
    return code


def _version() -> str:
    # Imported here: importlib.metadata takes 14 ms to import, a sixth of a no-op build's
    # time, and only a SARIF report reads the version.
    import importlib.metadata
    try:
        return importlib.metadata.version("gradshard")
    except importlib.metadata.PackageNotFoundError:
        return "0"
