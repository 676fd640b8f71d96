"""The `gradshard` command line.

Exit codes are service/exit_codes.py's table (EXIT_CODES: every code and its one meaning,
shared with the daemon and `try`). Bad input never shows a traceback; an internal error says
it is a bug (GRADSHARD_DEBUG=1 shows the trace). Every command's options are
service/options.py's table.

Commands import the pipeline only when they need it: `build` answers "nothing changed"
from hashes and the cache before anything heavy is loaded.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import sys
import time
import traceback
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Iterator

from gradshard.cache.errors import UsageError, VerifyMismatch
from gradshard.cache.store.database import set_aside
from gradshard.service.config.effective import applied_config, effective_settings
from gradshard.service.config.files import find_config
from gradshard.service.daemon import commands as daemon_commands
from gradshard.service.exit_codes import (EXIT_GENERATOR_MISMATCH, EXIT_INTERRUPTED, EXIT_OK,
                                          EXIT_USAGE, RUN_AGAIN, Report, damaged_text, ending_of)
from gradshard.service.files.spec_location import SpecLocation, locate_spec, spec_of_paths
from gradshard.service.options import (AFFECTED, BUILD, CHECK, CONFIG, GC, GENERATOR, LOGS,
                                       OPTIONS, RUN, SHOW, START, STATS, STATUS, STOP, TRY, WATCH,
                                       add_options, compile_options, generator_check_of, jobs_of,
                                       placement_of)
from gradshard.service.process_end import closed_pipe, end_process
from gradshard.service.report.findings import build_findings
from gradshard.service.report.formats import (BUG_HINT, emit_findings, error_findings,
                                              gathered_stdout, human_stream, installed_version,
                                              machine_format, reported_by_linter, settle_format,
                                              write_output)
from gradshard.service.report.problems import (generator_failure_text, problem_json,
                                               report_usage_error, spec_error_text,
                                               spec_file_paths, spec_texts_of,
                                               verify_mismatch_text)
from gradshard.service.session import Session

if TYPE_CHECKING:
    from gradshard.pipeline.parse.spec import SpecTexts

__all__ = ["DESCRIPTIONS", "Loaded", "build_parser", "collector_for",
           "main"]


@dataclass
class Loaded:
    """The spec as one command sees it; `texts` stays None until the files are decoded."""

    location: SpecLocation | None = None
    texts: SpecTexts | None = None


def _on_spec_cache(args: argparse.Namespace, loaded: Loaded, command):
    """command(location, session) on the spec the arguments name (lintrunner names its files)
    and the command's cache; --no-cache: a session without one (every task runs)."""
    from gradshard.service.defaults import default_cache_dir

    loaded.location = locate_spec(spec_of_paths(getattr(args, "paths", ()), args.spec))
    session = Session(None if args.no_cache else _cache_dir(args, default_cache_dir))
    try:
        return command(loaded.location, session)
    finally:
        session.close()
        for warning in session.warnings:
            print(f"gradshard: warning: {warning}", file=sys.stderr)


def run_check(args: argparse.Namespace, loaded: Loaded) -> int:
    from gradshard.service.generator.identity import identify_generator
    from gradshard.service.query.check import check_spec

    started = time.perf_counter()
    result = _on_spec_cache(args, loaded, check_spec)
    if result.findings:  # the formula check's: errors here (a build warns and writes)
        from gradshard.pipeline.problems import SpecError

        raise SpecError(result.findings)
    seconds = time.perf_counter() - started
    counts = result.counts
    identity = identify_generator(loaded.location)
    if args.json:
        print(json.dumps({"ok": True, "spec": str(loaded.location.root),
                          "layout": loaded.location.layout,
                          "files": spec_file_paths(loaded.location), "counts": counts,
                          "generator": identity.to_json(),
                          "seconds": round(seconds, 3)}, indent=2))
    else:
        print(_check_text(loaded.location, identity, counts, seconds), file=human_stream(args))
    emit_findings(args, [], loaded.location)
    return EXIT_OK


def _check_text(location: SpecLocation, identity, counts: dict[str, int], seconds: float) -> str:
    return (f"gradshard check: spec OK ({location.root}, {location.layout})\n"
            f"  {identity.describe()}\n"
            f"  {counts['native_functions']} native functions "
            f"({counts['generated_functions']} generated by torchgen's rules), "
            f"{counts['tags']} tags, {counts['deprecated_signatures']} deprecated signatures\n"
            f"  {counts['derivatives_entries']} derivatives entries -> "
            f"{counts['infos']} infos for {counts['info_schemas']} schemas, "
            f"{counts['infos_with_derivatives']} with a backward node\n"
            f"  {counts['matched_functions']} functions use derivatives; "
            f"{counts['foreach_synthesized']} foreach infos synthesized; "
            f"{counts['backward_nodes']} backward nodes\n"
            f"  {seconds:.2f} s")


def run_show(args: argparse.Namespace, loaded: Loaded) -> int:
    from gradshard.service.query.check import analyze, prepare
    from gradshard.service.query.show import show_json, show_text

    result = _on_spec_cache(args, loaded, lambda location, session: session.retrying(
        lambda: analyze(prepare(location), session)))
    if args.json:
        print(json.dumps(show_json(result, loaded.location, args.name), indent=2))
    else:
        print(show_text(result, loaded.location, args.name))
    return EXIT_OK


def run_build(args: argparse.Namespace, loaded: Loaded) -> int:
    from gradshard.service.defaults import default_cache_dir

    if args.verify and args.no_cache:
        raise UsageError("--verify compares a cache with fresh runs; --no-cache opens none",
                         "drop one of them")
    # a machine format reports the build's own findings: a daemon answers with text and JSON
    if not args.no_cache and not args.verify and machine_format(args) is None:
        answered = daemon_commands.build_through_daemon(args, loaded)
        if answered is not None:
            return answered
    session = Session(None if args.no_cache else _cache_dir(args, default_cache_dir))
    try:
        loaded.location = locate_spec(args.spec)
        outcome = _build_and_compile(args, loaded.location, session)
    finally:
        session.close()
    if args.json:
        from gradshard.service.report.build import build_json

        print(json.dumps(build_json(outcome), indent=2))
    else:
        from gradshard.service.report.build import build_text

        print(build_text(outcome), file=human_stream(args))
    if outcome.verified and outcome.stats.disagreements:  # its findings: _run_command's
        raise VerifyMismatch(d.describe() for d in outcome.stats.disagreements)
    emit_findings(args, build_findings(outcome), outcome.location)
    return EXIT_OK


def _build_and_compile(args: argparse.Namespace, location: SpecLocation, session: Session):
    """The build and, unless --codegen-only, its compile (with a progress bar on a terminal),
    as one build of the cache (service/build.py)."""
    from gradshard.service.build import build_and_compile

    out = Path(args.out)
    placement, check = placement_of(args), generator_check_of(args)
    if args.codegen_only:
        return build_and_compile(location, out, session, verify=args.verify,
                                 placement=placement, check=check)
    from gradshard.service.compile.report import progress_printer

    with progress_printer(enabled=not args.json) as progress:
        return build_and_compile(location, out, session, compile_options(args), progress,
                                 args.verify, placement=placement, check=check)


def _cache_dir(args: argparse.Namespace, default) -> Path:
    return Path(args.cache) if args.cache else default()


def run_affected(args: argparse.Namespace, loaded: Loaded) -> int:
    from gradshard.service.defaults import default_cache_dir
    from gradshard.service.live.gradient_tests import (gradient_tests, tests_json, tests_text,
                                                       write_tests_file)
    from gradshard.service.query.affected import affected, affected_json, affected_text

    if args.against and args.since:
        raise UsageError("--against and --since both name a baseline", "pass one of them")
    tests_file = Path(args.tests_file) if args.tests_file else None
    with_tests = args.tests or tests_file is not None
    if with_tests:  # before the build side: a missing torch is said at once
        from gradshard.service.live.command import check_extra

        check_extra("gradshard affected --tests")

    def command(location, session):
        result = affected(location, session, args.against, args.since, with_tests)
        # the index of what the tests reach lives in the cache directory, its warnings with
        # the session's
        return result, (gradient_tests(result.ops, session.directory, session.warnings)
                        if with_tests else None)

    result, tests = _in_session(args, loaded, default_cache_dir, command)
    if tests_file is not None:
        write_tests_file(tests, tests_file)
    if args.json:
        report = affected_json(result, loaded.location)
        print(json.dumps(report | ({"tests": tests_json(tests, tests_file)} if tests else {}),
                         indent=2))
    else:
        print(affected_text(result, loaded.location)
              + ("\n" + tests_text(tests, tests_file) if tests else ""))
    return EXIT_OK


def _in_session(args: argparse.Namespace, loaded: Loaded, default, command):
    """command(location, session): the spec located, in a session on the command's cache;
    the damage the session found and set aside is reported after it."""
    session = Session(_cache_dir(args, default))
    try:
        loaded.location = locate_spec(args.spec)
        return command(loaded.location, session)
    finally:
        session.close()
        for warning in session.warnings:
            print(f"gradshard: warning: {warning}", file=sys.stderr)


def run_try(args: argparse.Namespace, loaded: Loaded) -> int:
    from functools import partial

    from gradshard.service.defaults import default_cache_dir
    from gradshard.service.live.command import DEFAULT_DTYPES, TryOptions, try_json, try_patch

    if args.timeout <= 0:
        raise UsageError(f"--timeout {args.timeout}: the checks need some time",
                         "pass seconds, such as --timeout 300")
    options = TryOptions(tuple(args.names), tuple(args.dtype) or DEFAULT_DTYPES, args.samples,
                         args.cxx, jobs_of(args.jobs), args.timeout)
    # the text line by line as each is known (each op's verdict as the worker finds it);
    # --json one document at the end
    show = None if args.json else partial(print, flush=True)
    outcome = _in_session(args, loaded, default_cache_dir,
                          lambda location, session: try_patch(location, session, options, show))
    if args.json:
        print(json.dumps(try_json(outcome), indent=2))
    return outcome.exit_code()


def run_generator(args: argparse.Namespace, loaded: Loaded) -> int:
    from gradshard.service.defaults import default_cache_dir
    from gradshard.service.query.generator import (generator_json, generator_text,
                                                   run_generator_check)

    if not args.generator_timeout > 0:
        raise UsageError(f"--generator-timeout {args.generator_timeout}: not a positive number "
                         "of seconds", "e.g. --generator-timeout 900")
    verdict = _in_session(args, loaded, default_cache_dir,
                          lambda location, session: run_generator_check(
                              location, session, args.generator_timeout))
    print(json.dumps(generator_json(verdict), indent=2) if args.json
          else generator_text(verdict))
    return EXIT_GENERATOR_MISMATCH if verdict.differing else EXIT_OK


def run_stats(args: argparse.Namespace, loaded: Loaded) -> int:
    from gradshard.cache.maintenance import store_stats
    from gradshard.service.defaults import default_cache_dir
    from gradshard.service.report.cache import stats_json, stats_text

    session = _existing_cache(args, default_cache_dir)
    try:
        stats = store_stats(session.open(), last=args.last)
    finally:
        session.close()
    print(json.dumps(stats_json(stats), indent=2) if args.json else stats_text(stats))
    return EXIT_OK


def run_gc(args: argparse.Namespace, loaded: Loaded) -> int:
    from gradshard.cache.maintenance import collect_garbage, parse_size
    from gradshard.cache.version import code_version
    from gradshard.service.defaults import default_cache_dir
    from gradshard.service.live.try_directory import collect_try_directory
    from gradshard.service.report.cache import gc_json, gc_text

    try:
        max_bytes = parse_size(args.max_size) if args.max_size else None
    except ValueError as e:
        raise UsageError(f"--max-size: {e}", "write a size such as 500M or 2G") from None
    session = _existing_cache(args, default_cache_dir)
    try:
        report = collect_garbage(session.open(), max_bytes, code_version(),
                                 drop_protected=args.all)
    finally:
        session.close()
    # after the cache's (a try directory refused, or a bad limit, leaves the cache collected),
    # under its own limit ($GRADSHARD_TRY_MAX_SIZE), not --max-size: it is not the cache
    try_dir = collect_try_directory(drop_all=args.all)
    print(json.dumps(gc_json(report, try_dir), indent=2) if args.json
          else gc_text(report, try_dir))
    return EXIT_OK


def _existing_cache(args: argparse.Namespace, default) -> Session:
    directory = _cache_dir(args, default)
    if not directory.is_dir():
        raise UsageError(f"there is no cache at {directory}",
                         "run `gradshard build` first, or pass --cache DIR")
    return Session(directory)


def build_parser(defaults: bool = True) -> argparse.ArgumentParser:
    """The command line: every command's options from the table (service/options.py); without
    `defaults`, an option the words do not give is left unset (service/config/effective.py:
    given_options). Every command's --help starts with what it does (DESCRIPTIONS)."""
    parser = argparse.ArgumentParser(prog="gradshard", description=DESCRIPTIONS[""])
    parser.add_argument("--version", action=_Version)
    parsers = _Parsers(parser.add_subparsers(dest="command", required=True, metavar="COMMAND"),
                       defaults)
    parsers.add(BUILD, "generate the autograd files (and compile them)", run=run_build)
    parsers.add(WATCH, "build, then rebuild on every save of the spec (Ctrl-C stops)",
                run=run_daemon_command, daemon_command="watch")
    _daemon_parser(parsers)
    parsers.add(CHECK, "parse, match and render the spec; write nothing", run=run_check,
                parser_settings={"fromfile_prefix_chars": "@"})
    parsers.add(SHOW, "what gradshard knows of a function or entry", run=run_show)
    parsers.add(AFFECTED, "which entries, nodes, bindings and files a spec edit changes",
                run=run_affected)
    parsers.add(GENERATOR, "run the spec's own generator now and compare its files with "
                "gradshard's", run=run_generator)
    parsers.add(TRY, "patch edited formulas into the installed torch and gradcheck them",
                run=run_try)
    parsers.add(STATS, "what the cache holds and how the last builds went", run=run_stats)
    parsers.add(GC, "drop cache entries no recorded build needs", run=run_gc)
    parsers.add(CONFIG, "the settings in force and where each comes from ([tool.gradshard] "
                "in pyproject.toml or gradshard.toml, the environment, the defaults)",
                run=run_config)
    return parser


# What each command does: the first paragraph of its --help ("": `gradshard` itself). The
# one-line summaries in the lists of commands are build_parser's.
DESCRIPTIONS = {
    "": "Incremental, cached autograd code generation for PyTorch specs: generates the files "
        "torchgen's autograd generators write, byte for byte, re-running only what an edit "
        "reaches.",
    BUILD: "Generate the autograd files of the spec into --out from the content-addressed "
           "cache (only what an edit reaches runs again), then compile them against the "
           "installed torch's headers (--codegen-only skips the compile). Answered by a "
           "running daemon of the same spec, cache and options.",
    WATCH: "Build, then rebuild (and recompile) on every save of the spec, in the foreground, "
           "one line per rebuild, until Ctrl-C.",
    "daemon": "The background build service: one daemon per spec and cache watches the spec, "
              "rebuilds on every save, and answers `gradshard build`.",
    START: "Start a daemon in the background that watches the spec and rebuilds on every "
           "save; returns once it listens.",
    RUN: "The daemon process itself, as `gradshard daemon start` runs it (not listed: start "
         "a daemon with `daemon start`).",
    STOP: "Stop the daemon of this spec and cache.",
    STATUS: "Say whether a daemon runs for this spec and cache, what it is doing and how its "
            "last build went.",
    LOGS: "Print the last lines of the daemon's log.",
    CHECK: "Parse, match and render the spec with every stage, writing nothing: every error "
           "is reported at its file and line.",
    SHOW: "Explain an op, a derivatives entry or a backward node: every overload and variant "
          "of a name, its schema, its formulas and where each is written in the spec.",
    AFFECTED: "Say which derivatives entries, backward nodes, Python bindings and generated "
              "files an edit of the spec changes (against the last build, --against or "
              "--since).",
    GENERATOR: "Run the spec's own generator (torchgen and the autograd generators beside "
               "the spec) now and compare the files it writes with gradshard's, file by "
               "file.",
    TRY: "Compile the ops an edit of derivatives.yaml changes, load them into the installed "
         "torch and gradcheck them on their OpInfo samples; each op's verdict is printed as "
         "soon as it is known.",
    STATS: "Show what the cache holds and how the last builds went.",
    GC: "Drop the cache entries no recorded build needs (--max-size also forgets the oldest "
        "builds until the cache fits) and trim try's directory.",
    CONFIG: "Print every setting in force and where it comes from: [tool.gradshard] in "
            "pyproject.toml or gradshard.toml, the environment, the defaults.",
}


class _Version(argparse.Action):
    """--version: the installed distribution's version, printed and exit 0. Looked up only
    when asked: importlib.metadata takes 14 ms to import, and every command builds this
    parser."""

    def __init__(self, option_strings: list[str], dest: str, **settings) -> None:
        super().__init__(option_strings, argparse.SUPPRESS, nargs=0, default=argparse.SUPPRESS,
                         help="print gradshard's version and exit")

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        print(f"gradshard {installed_version() or 'unknown (not installed)'}")
        parser.exit()


@dataclass(frozen=True)
class _Parsers:
    """Where the commands' parsers go, and whether their options have defaults."""

    commands: argparse._SubParsersAction
    defaults: bool = True

    def add(self, command: str, summary: str | None, parser_settings: dict | None = None,
            **handlers) -> None:
        """One command's parser (named by the command's last word), its --help led by its
        description, its options from the table; `handlers` says what runs it. Without a
        `summary` it is not listed among its parent's commands (argparse lists only those
        added with a help)."""
        listed = {} if summary is None else {"help": summary}
        parser = self.commands.add_parser(command.split()[-1], description=DESCRIPTIONS[command],
                                          **listed, **(parser_settings or {}))
        add_options(parser, command, self.defaults)
        parser.set_defaults(**handlers)


def _daemon_parser(parsers: _Parsers) -> None:
    daemon = parsers.commands.add_parser("daemon", description=DESCRIPTIONS["daemon"],
                                         help="the background build service (start, stop, "
                                              "status, logs)")
    actions = _Parsers(daemon.add_subparsers(dest="action", required=True, metavar="ACTION"),
                       parsers.defaults)
    actions.add(START, "start watching and building in the background",
                run=run_daemon_command, daemon_command="start")
    # the daemon process itself: not listed
    actions.add(RUN, None, run=run_daemon_command, daemon_command="serve")
    for command, text in ((STOP, "stop the daemon"), (STATUS, "what the daemon is doing"),
                          (LOGS, "print the daemon's log")):
        actions.add(command, text, run=run_daemon_command, daemon_command=command.split()[-1])


# Commands whose process lives on, building again and again.
LONG_LIVED = frozenset({"watch", "daemon"})


@contextlib.contextmanager
def collector_for(command: str) -> Iterator[None]:
    """A build allocates millions of small objects (records, values, keys) that form no
    cycles: the cyclic collector only rescans them (~20% of a cold build at its default
    thresholds, 5% at these). A one-shot command ends before any garbage it leaves matters,
    so it runs without; a long-lived one collects, rarely. The caller's settings come back
    after (tests and tools run commands in their own process)."""
    enabled, thresholds = gc.isenabled(), gc.get_threshold()
    if command in LONG_LIVED:
        gc.set_threshold(200_000, 20, 100)
    else:
        gc.disable()
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)
        if enabled:
            gc.enable()


def given_options(words: list[str], command: str) -> set[str]:
    """The dests of the options the words give, as argparse reads them (abbreviations and
    `--name=value` included): the command line parsed again without defaults, so only what
    the words set is there."""
    parsed = build_parser(defaults=False).parse_args(words)
    return {o.dest for o in OPTIONS if command in o.commands and hasattr(parsed, o.dest)}


def command_name(args: argparse.Namespace) -> str:
    """The command as the options table names it: `build`, `daemon start`…"""
    return f"daemon {args.action}" if args.command == "daemon" else args.command


def run_config(args: argparse.Namespace, loaded: Loaded) -> int:
    """`gradshard config`: every setting in force and where it comes from."""
    config = find_config(Path.cwd())
    settings = effective_settings(config, os.environ)
    if args.json:
        print(json.dumps({"file": str(config.path) if config else None,
                          "settings": [asdict(s) for s in settings]}, indent=2))
        return EXIT_OK
    head = (f"gradshard config: {config.path}" if config else
            f"gradshard config: no [tool.gradshard] in a pyproject.toml, nor a gradshard.toml, "
            f"in {Path.cwd()} or above")
    width = max(len(s.key) for s in settings)
    lines = [f"  {s.key:<{width}} = {_shown(s.value)}  ({s.origin}"
             + (f": {s.where})" if s.where else ")") for s in settings]
    print("\n".join([head, *lines]))
    return EXIT_OK


def _shown(value: object) -> str:
    if isinstance(value, bool):  # as the file spells it
        return "true" if value else "false"
    return "(unset)" if value is None or value == [] else str(value)


def run_daemon_command(args: argparse.Namespace, loaded: Loaded) -> int:
    """`watch` and the daemon's actions, from service/daemon/commands.py."""
    return getattr(daemon_commands, args.daemon_command)(args, loaded)


def main(argv: list[str] | None = None) -> int:
    words = sys.argv[1:] if argv is None else list(argv)
    try:
        args = build_parser().parse_args(words)
    except UnicodeDecodeError as error:  # an @FILE that is not UTF-8 (argparse reads it)
        report_usage_error(UsageError(f"a file of arguments (@FILE) is not UTF-8 text: {error}",
                                      "list the spec files in FILE, one per line, in UTF-8"))
        return EXIT_USAGE
    with collector_for(args.command):
        return _run(args, words)


def _run(args: argparse.Namespace, words: list[str]) -> int:
    with gathered_stdout(args) as gathered:
        code = _run_command(args, words)
    return write_output(args, gathered, code)


def _run_command(args: argparse.Namespace, words: list[str]) -> int:
    loaded = Loaded()
    try:
        settle_format(args)
        command = command_name(args)
        # `config` shows the file, the environment and the defaults as they are
        config = None if command == CONFIG else find_config(Path.cwd())
        given = given_options(words, command) if config is not None else set()
        with applied_config(args, config, command, given):
            code = args.run(args, loaded)
        sys.stdout.flush()  # a closed pipe shows here, not in the interpreter's last flush
        return code
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        return closed_pipe()
    except Exception as error:  # reported as service/exit_codes.py says, as the daemon does
        ending = ending_of(error)
        _REPORTS[ending.report](args, ending.error, loaded)
        emit_findings(args, error_findings(ending.error, loaded.location, args),
                      loaded.location)
        return EXIT_OK if reported_by_linter(args, ending.error) else ending.code


def _report_spec_error(args: argparse.Namespace, error, loaded: Loaded) -> None:
    from gradshard.service.generator.identity import identify_generator

    identity = identify_generator(loaded.location) if loaded.location else None
    if getattr(args, "json", False):
        print(json.dumps({"ok": False,
                          "problems": [problem_json(p, loaded.location) for p in error.problems],
                          "generator": identity.to_json() if identity else None}, indent=2))
    sys.stderr.write(spec_error_text(error, loaded.location,
                                     loaded.texts or spec_texts_of(loaded.location), identity))


def _report_generator_failure(args: argparse.Namespace, error, loaded: Loaded) -> None:
    """A generator that failed (its error's last lines) or, under strict, differs (the
    report)."""
    if getattr(args, "json", False):
        print(json.dumps({"ok": False, "error": str(error), "hint": error.hint,
                          "detail": getattr(error, "detail", None),
                          "report": getattr(error, "report", None),
                          "files": list(getattr(error, "files", ()))}, indent=2))
    print(generator_failure_text(error), file=sys.stderr)  # the daemon's answer says it too


def _report_usage_error(args: argparse.Namespace, error: UsageError, loaded: Loaded) -> None:
    if getattr(args, "json", False):
        problems = [{"file": str(p.file), "line": p.line, "key": p.key, "message": p.message,
                     "hint": p.hint} for p in getattr(error, "problems", ())]
        print(json.dumps({"ok": False, "error": error.message, "hint": error.hint}
                         | ({"problems": problems} if problems else {}), indent=2))
    report_usage_error(error)


def _report_compile_error(args: argparse.Namespace, error, loaded: Loaded) -> None:
    from gradshard.service.compile.report import report_compile_error

    report_compile_error(error, raw=getattr(args, "raw", False),
                         as_json=getattr(args, "json", False))


def _report_verify_mismatch(args: argparse.Namespace, error: VerifyMismatch,
                            loaded: Loaded) -> None:
    print(verify_mismatch_text(error), file=sys.stderr)  # the daemon's answer says it too


def _report_error(args: argparse.Namespace, error: Exception, loaded: Loaded) -> None:
    print(f"gradshard: error: {error}", file=sys.stderr)


def _report_damage(args: argparse.Namespace, damage, loaded: Loaded) -> None:
    set_aside(damage.path)
    print(damaged_text(damage, RUN_AGAIN), file=sys.stderr)


def _report_internal_error(args: argparse.Namespace, error: BaseException,
                           loaded: Loaded) -> None:
    """A bug in gradshard, never the user's input (called while `error` is handled, for its
    traceback)."""
    print(f"gradshard: internal error: {type(error).__name__}: {error}\n  {BUG_HINT}",
          file=sys.stderr)
    if os.environ.get("GRADSHARD_DEBUG"):
        traceback.print_exc()


# How the command line reports each kind of ending (service/exit_codes.py).
_REPORTS = {Report.SPEC: _report_spec_error, Report.USAGE: _report_usage_error,
            Report.COMPILE: _report_compile_error, Report.VERIFY: _report_verify_mismatch,
            Report.ERROR: _report_error, Report.DAMAGED: _report_damage,
            Report.INTERNAL: _report_internal_error, Report.GENERATOR: _report_generator_failure}


if __name__ == "__main__":
    end_process(main())
