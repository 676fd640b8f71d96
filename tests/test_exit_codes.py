"""One mapping of errors to exit codes and reports (service/exit_codes.py): the command line
and the daemon's build answers read it, and they end each failure with the same code and
the same words; no error class carries an exit code of its own. Every code any command
exits with is in its one table, each with one meaning, and usage.md's table is that table."""

from __future__ import annotations

import argparse
import errno
import inspect
import re
from pathlib import Path

import pytest
from support.specs import MINI_SPEC

from gradshard.cache import errors as process_errors
from gradshard.cache.errors import (CompileDiagnostic, CompileError, EnvironmentFailure,
                                    GeneratorFailed, GeneratorMismatch, UsageError,
                                    VerifyMismatch)
from gradshard.cache.store.database import StoreDamaged
from gradshard.pipeline import problems
from gradshard.pipeline.problems import InternalError, Problem, SpecError, SpecFile
from gradshard.service import cli
from gradshard.service.daemon import commands as daemon_commands
from gradshard.service.daemon import runtime as daemon_runtime
from gradshard.service.daemon.server import Daemon
from gradshard.service.exit_codes import EXIT_CODES, Report, ending_of
from gradshard.service.files.spec_location import locate_spec
from gradshard.service.live.process import TryWorkerFailure

PROBLEM = Problem(SpecFile.DERIVATIVES, "mul.Tensor", "derivatives.example", "a message",
                  "a hint", line=3)
DIAGNOSTIC = CompileDiagnostic("mul.Tensor", "MulBackward0", "self", "grad * 2", 3,
                               "src/Functions_0.cpp:1:1", "error: no")


GENERATOR_REPORT = "Functions.cpp differs:\n  line 3: grad * 2\n  real: grad * 3"
GENERATOR_DETAIL = "Traceback (most recent call last):\nRuntimeError: unrecognized type"


def failures(tmp_path: Path) -> dict[str, tuple[BaseException, Report, int]]:
    """One error of each kind, how it is reported and its exit code (as before issue 34)."""
    return {
        "spec": (SpecError([PROBLEM]), Report.SPEC, 1),
        "usage": (UsageError("bad", "do this"), Report.USAGE, 2),
        "environment": (EnvironmentFailure("full", "free space"), Report.USAGE, 2),
        "compile": (CompileError([DIAGNOSTIC], ["Functions_0"], "raw"), Report.COMPILE, 3),
        "verify": (VerifyMismatch(["task 1", "task 2"]), Report.VERIFY, 6),
        "generator mismatch": (GeneratorMismatch(["Functions.cpp"], GENERATOR_REPORT,
                                                 "see the report"),
                               Report.GENERATOR, 7),
        "generator failed": (GeneratorFailed("the spec's generator raised", GENERATOR_DETAIL,
                                             "its last lines say which entry"),
                             Report.GENERATOR, 8),
        "try worker": (TryWorkerFailure("the try worker was killed by signal 11", "see it"),
                       Report.USAGE, 9),
        "internal": (InternalError("broken"), Report.ERROR, 4),
        "damaged": (StoreDamaged("is malformed", tmp_path / "cache" / "gradshard.sqlite3"),
                    Report.DAMAGED, 2),
        "full disk": (OSError(errno.ENOSPC, "No space left on device", "/x"), Report.USAGE, 2),
        "other OSError": (OSError(errno.EBADF, "Bad file descriptor"), Report.INTERNAL, 4),
        "bug": (ValueError("a bug"), Report.INTERNAL, 4),
    }


NAMES = ["spec", "usage", "environment", "compile", "verify", "generator mismatch",
         "generator failed", "try worker", "internal", "damaged", "full disk", "other OSError",
         "bug"]


@pytest.mark.parametrize("name", NAMES)
def test_each_error_has_its_exit_code_and_report(name, tmp_path):
    error, report, code = failures(tmp_path)[name]
    ending = ending_of(error)
    assert (ending.report, ending.code) == (report, code)
    if isinstance(error, OSError) and report is Report.USAGE:
        assert isinstance(ending.error, EnvironmentFailure)
        assert str(ending.error) == "No space left on device (/x)"
    else:
        assert ending.error is error


def test_no_error_class_carries_an_exit_code():
    """Exit codes are the process's: pipeline/ is hashed into every cache key."""
    for module in (problems, process_errors):
        for _, kind in inspect.getmembers(module, inspect.isclass):
            if issubclass(kind, BaseException):
                assert not hasattr(kind, "exit_code"), kind


def cli_ending(error: BaseException, capsys) -> tuple[int, str]:
    """The command line's exit code and stderr for a command that raises `error`."""
    def command(args, location):
        raise error

    code = cli._run(argparse.Namespace(command="build", run=command, json=False, raw=False),
                    ["build"])
    return code, capsys.readouterr().err


@pytest.fixture
def daemon(tmp_path, monkeypatch):
    (tmp_path / "run").mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "run"))
    args = cli.build_parser().parse_args(
        ["daemon", "run", "--spec", str(MINI_SPEC), "--out", str(tmp_path / "out"),
         "--cache", str(tmp_path / "cache"), "--codegen-only"])
    location = daemon_runtime.resolved(locate_spec(args.spec))
    paths = daemon_runtime.paths_of(args, location)
    served = Daemon(daemon_commands.daemon_config(args, location), paths, print)
    yield served
    served.session.close()


@pytest.mark.parametrize("name", NAMES)
def test_the_daemon_and_the_command_line_end_alike(name, daemon, tmp_path, capsys,
                                                   monkeypatch):
    """A build that raises `error` answers from the daemon with the exit code the command
    line exits with, and the same words (the damaged cache's next step aside: the daemon's
    next build starts the new cache by itself)."""
    error, report, code = failures(tmp_path)[name]

    def build():
        raise error

    monkeypatch.setattr(daemon, "_build", build)
    answer = daemon._outcome()
    exited, printed = cli_ending(error, capsys)
    assert answer["exit"] == exited == code and answer["ok"] is False
    if report in (Report.USAGE, Report.ERROR):
        assert answer["errors"] == [printed.rstrip("\n")]
    if report is Report.DAMAGED:
        said = answer["errors"][0]
        assert said.endswith("hint: the next build starts a new cache")
        assert printed.endswith("hint: run the command again (a new cache is started)\n")
        assert said.split("hint:")[0] == printed.split("hint:")[0]
    if report is Report.INTERNAL:
        assert answer["errors"][0].startswith(f"gradshard: internal error: "
                                              f"{type(error).__name__}: ")
        assert printed.startswith(f"gradshard: internal error: {type(error).__name__}: ")


def test_a_daemon_without_exit_in_its_answer():
    """A daemon older than "exit": the code from the kind of failure."""
    assert daemon_runtime._exit_code_of({"ok": False, "failed": ["Functions_0"]}) == 3
    assert daemon_runtime._exit_code_of({"ok": False, "errors": []}) == 1
    assert daemon_runtime._exit_code_of({"ok": False, "exit": 2}) == 2


USAGE = Path(__file__).resolve().parent.parent / "docs" / "usage.md"


def documented_exit_codes() -> list[tuple[int, str]]:
    """usage.md's "Exit codes" table: each row's code and meaning (`\\|` is a `|` in a cell)."""
    section = USAGE.read_text().split("\n## Exit codes\n", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| ")][1:]  # no head
    cells = [[c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", row)[1:-1]]
             for row in rows]
    return [(int(code), meaning) for code, meaning in cells]


def test_each_code_has_one_meaning_and_usage_md_says_the_same():
    codes = [e.code for e in EXIT_CODES]
    assert len(set(codes)) == len(codes) and codes == sorted(codes)
    meanings = [e.meaning for e in EXIT_CODES]
    assert len(set(meanings)) == len(meanings) and all("\n" not in m for m in meanings)
    assert documented_exit_codes() == [tuple(e) for e in EXIT_CODES]


def test_every_code_a_command_exits_with_is_in_the_table():
    """The codes the mapping, `try`'s verdicts and the daemon commands return."""
    from gradshard.service import exit_codes

    table = {e.code for e in EXIT_CODES}
    constants = {value for name, value in vars(exit_codes).items() if name.startswith("EXIT_")
                 and isinstance(value, int)}
    assert constants == table
    assert {ending_of(error).code for error, _, _ in failures(Path("/x")).values()} <= table


@pytest.mark.parametrize("action", ["status", "stop", "logs"])
def test_no_daemon_has_a_code_of_its_own(action, tmp_path, monkeypatch, capsys):
    """`daemon status|stop|logs` with none running for the spec and cache: 11, never the
    spec errors' 1 (a script cannot tell them apart) nor usage's 2."""
    (tmp_path / "run").mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "run"))
    code = cli.main(["daemon", action, "--spec", str(MINI_SPEC), "--cache",
                     str(tmp_path / "cache")])
    assert code == 11, capsys.readouterr()
    assert "gradshard daemon: n" in capsys.readouterr().out  # "not running", "none", "no log"


@pytest.mark.parametrize("raw", [False, True], ids=["placed", "raw"])
@pytest.mark.parametrize("name", ["spec", "usage", "compile", "internal", "generator mismatch",
                                  "generator failed", "verify"])
def test_a_failed_build_prints_the_same_through_the_daemon(name, raw, daemon, tmp_path, capsys,
                                                           monkeypatch):
    """What `gradshard build` prints on stderr for a failure the daemon answered
    (runtime.report_failure) is what the command line prints for it, word for word: the
    problems and their `N errors in the spec`, a compile error's units and hint, or the
    compiler's output with --raw; a generator check's report or the generator's last lines;
    every --verify disagreement."""
    error = failures(tmp_path)[name][0]

    def build():
        raise error

    def command(args, location):
        assert location == daemon.config.location  # the spec the error is reported against
        raise error

    monkeypatch.setattr(daemon, "_build", build)
    answer = daemon._outcome()
    exited = cli._run(argparse.Namespace(command="build", run=command, json=False, raw=raw,
                                         spec=str(daemon.config.location.root)), ["build"])
    printed = capsys.readouterr().err
    daemon_runtime.report_failure(answer, raw)
    assert capsys.readouterr().err == printed and answer["exit"] == exited
    hint = "  hint: --raw shows the compiler's output as it is\n"
    trailer = {"spec": "gradshard: 1 error in the spec\n", "compile": "\n" if raw else hint}
    assert printed.endswith(trailer.get(name, "\n")), printed
    shown = {"generator mismatch": [f"  {line}" for line in GENERATOR_REPORT.splitlines()],
             "generator failed": [f"  | {line}" for line in GENERATOR_DETAIL.splitlines()],
             "verify": ["  task 1", "  task 2"]}
    assert all(line in printed.splitlines() for line in shown.get(name, [])), printed
    assert not (raw and hint in printed)  # the hint names --raw only to who has not asked
