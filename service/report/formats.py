"""`--format {text,json,sarif,lintrunner}` and `--output FILE` of `check` and `build`.

text and json are the commands' own reports (`--json` is `--format json`). sarif and
lintrunner print what the command found (service/report/findings.py) as one SARIF log or as
lintrunner's JSON lines, on stdout, while the text report goes to stderr; the exit code is
the command's own, except that lintrunner's adapters exit 0 when they report what they found
(lintrunner takes any other code as the linter itself failing). `--output FILE` puts what
would go to stdout in FILE instead, written whole once the command ends (never a part of it).

Every finding has a place in both formats (code scanning refuses a whole upload for one
result without a location): its own, else the spec's derivatives.yaml when the spec was
found, else the configuration file in force, else pyproject.toml in the working directory
(`default_place`).
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
from gradshard.cache.store.database import StoreDamaged
from gradshard.pipeline.problems import GradshardError, SpecError, SpecFile
from gradshard.service.config_file import ConfigError
from gradshard.service.defaults import PYPROJECT, config_file
from gradshard.service.exit_codes import EXIT_INTERRUPTED, EXIT_USAGE
from gradshard.service.options import FORMATS
from gradshard.service.report.endings import BUG_HINT, RUN_AGAIN, damaged_message
from gradshard.service.report.findings import (Finding, Place, compile_findings, failure_finding,
                                               generated_file, placed_at, spec_findings)
from gradshard.service.report.rules import (CACHE_DAMAGED_RULE, COMPILE_FAILED_RULE,
                                            ERROR_RULE, GENERATOR_FAILED_RULE, GENERATOR_RULE,
                                            USAGE_RULE, VERIFY_RULE)

if TYPE_CHECKING:
    from gradshard.service.files.spec_location import SpecLocation

__all__ = ["FORMATS", "MACHINE_FORMATS", "default_place", "emit_findings",
           "error_findings", "gathered_stdout", "human_stream", "installed_version",
           "machine_format", "reported_by_linter", "resolve_format", "write_output"]

TEXT, JSON, SARIF, LINTRUNNER = FORMATS
MACHINE_FORMATS = (SARIF, LINTRUNNER)
# the rules of failures that are no problem of the spec's and no placed compile error; the
# first class an error is an instance of decides, any other error is gradshard's (a bug)
_FAILURE_RULES = ((UsageError, USAGE_RULE), (GeneratorFailed, GENERATOR_FAILED_RULE),
                  (VerifyMismatch, VERIFY_RULE), (CompileError, COMPILE_FAILED_RULE))


def resolve_format(args: argparse.Namespace) -> None:
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
                                error.hint, [Place(generated_file(out, name, tree))])
                for name in error.files]
    if isinstance(error, ConfigError):
        return [failure_finding(USAGE_RULE, p.message, p.hint, [Place(str(p.file), p.line)])
                for p in error.problems]
    if isinstance(error, StoreDamaged):
        return [failure_finding(CACHE_DAMAGED_RULE, damaged_message(error), RUN_AGAIN,
                                [Place(str(error.path))])]
    rule = next((r for kind, r in _FAILURE_RULES if isinstance(error, kind)), ERROR_RULE)
    message = getattr(error, "message", None) or f"{type(error).__name__}: {error}"
    hint = getattr(error, "hint", "") if isinstance(error, GradshardError) else BUG_HINT
    places = _usage_places(error) if isinstance(error, UsageError) else []
    return [failure_finding(rule, message, hint or "", places)]


def _usage_places(error: UsageError) -> list[Place]:
    """The file a usage error names: the machine's failure's file, or the configuration
    file in force when the message is about the whole file (not TOML, not readable: it
    begins with the file's path, service/config_file.py)."""
    if getattr(error, "path", None):
        return [Place(str(error.path))]
    config = config_file(Path.cwd())
    if config is None or not error.message.startswith(f"{config}:"):
        return []
    return [Place(str(config))]


def default_place(location: SpecLocation | None, start: Path, spec: str | None = None) -> Place:
    """Where a finding without a place of its own is: the spec's derivatives.yaml when the
    spec was found, else the configuration file in force in `start` (at its `spec` key, when
    that key named the spec the command looked for: `spec`, not a --spec of the command
    line), else `start`'s pyproject.toml (whether or not there is one: a location need not
    exist, and a repository's root usually holds one)."""
    if location is not None:
        return Place(str(location.path_of(SpecFile.DERIVATIVES)))
    config = config_file(start)
    if config is None:
        return Place(str(start.absolute() / PYPROJECT))
    return Place(str(config), _spec_line(config, spec))


def _spec_line(config: Path, spec: str | None) -> int | None:
    """The line of the configuration file's `spec` key when it named `spec` (None: it names
    another or none, or the file is the failure being reported)."""
    from gradshard.service.config_file import read_config

    try:
        read = read_config(config)
    except GradshardError:
        return None
    if read is None or spec is None or read.values.get("spec") != spec:
        return None
    return read.lines.get("spec")


def emit_findings(args: argparse.Namespace, findings: Sequence[Finding],
                  location: SpecLocation | None) -> None:
    """The machine format's document of the findings on stdout (nothing for text and json,
    whose reports the commands print themselves)."""
    chosen = machine_format(args)
    if chosen is None:
        return
    from gradshard.service.report.sarif import repository_root

    root = repository_root(location.root if location is not None else Path.cwd())
    place = default_place(location, Path.cwd(), getattr(args, "spec", None))
    findings = placed_at(findings, place)
    if chosen == SARIF:
        from gradshard.service.report.sarif import sarif_text

        print(sarif_text(findings, installed_version() or "0", root))
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


def installed_version() -> str | None:
    """The installed gradshard distribution's version (its metadata), or None when it runs
    from sources never installed: `gradshard --version` and SARIF's tool version."""
    # Imported here: importlib.metadata takes 14 ms to import, a sixth of a no-op build's
    # time, and only --version and a SARIF report read the version.
    import importlib.metadata
    try:
        return importlib.metadata.version("gradshard")
    except importlib.metadata.PackageNotFoundError:
        return None
