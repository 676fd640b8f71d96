"""The options table (service/options.py) is the one description of every command's options:
each command's parser (and the pytest plugin's options) is exactly what the table makes of
it, help included, and every building option is walked through all three consumers (the
parser and where its value lands, `daemon start`'s forwarding to the daemon process, and the
daemon-match check); then one real daemon round trip."""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from support.daemon import Running
from support.specs import MINI_SPEC

from gradshard.pipeline.layout.compile_layout import ShardSettings
from gradshard.service.cli import DESCRIPTIONS, build_parser
from gradshard.service.files.spec_location import locate_spec
from gradshard.service.daemon import commands as daemon_commands
from gradshard.service.daemon import runtime as daemon_runtime
from gradshard.service.daemon.runtime import QUICK_STATUS_OPTIONS
from gradshard.service.daemon.server import Daemon
from gradshard.service.exit_codes import EXIT_NO_DAEMON
from gradshard.service.live import process, pytest_plugin
from gradshard.service.options import (BUILD, BUILDING, COMMANDS, OPTIONS, PYTEST, PYTEST_GROUP,
                                       PYTEST_GROUP_TITLE, RUN, START, STATUS, TRY, TRY_TIMEOUT,
                                       Option, add_options, argument_settings, compile_options,
                                       daemon_serves, forwarded_options, jobs_of, options_of)

# The options of the commands that build (the others' are parsed and read by their command
# alone: the help comparison below covers them).
BUILD_OPTIONS = [o for o in OPTIONS if o.commands & BUILDING]


class Sample:
    """A value other than the default for one option: the words that set it, the value the
    command reads, and the value after `daemon start` handed it to the daemon process."""

    def __init__(self, words: list[str], parsed, forwarded=None) -> None:
        self.words, self.parsed = words, parsed
        self.forwarded = parsed if forwarded is None else forwarded


# Run in a temporary directory holding `spec2` (a copy of the mini spec) and `work/`; a
# relative path is made absolute by `daemon start` (the daemon outlives the shell's
# directory).
def samples(root: Path) -> dict[str, Sample]:
    root = root.resolve()
    return {
        "spec": Sample(["--spec", "spec2"], "spec2", str(root / "spec2")),
        "out": Sample(["--out", "work/out2"], "work/out2", str(root / "work/out2")),
        "tree": Sample(["--tree", "pytorch"], "pytorch"),
        "subset": Sample(["--subset", "libtorch"], "libtorch"),
        "disable_autograd": Sample(["--disable-autograd"], True),
        "codegen_only": Sample(["--codegen-only"], True),
        "compile_dir": Sample(["--compile-dir", "work/c"], "work/c", str(root / "work/c")),
        "cxx": Sample(["--cxx", "clang++"], "clang++"),
        "cxxflags": Sample(["--cxxflags=-O0 -g"], "-O0 -g"),
        "include": Sample(["--include", "inc", "--include=-odd"], ["inc", "-odd"],
                          [str(root / "inc"), str(root / "-odd")]),
        "launcher": Sample(["--launcher", "ccache"], "ccache"),
        "jobs": Sample(["-j", "3"], 3),
        "units": Sample(["--units", "Functions_*", "--units=-x"], ["Functions_*", "-x"]),
        "raw": Sample(["--raw"], True),
        "shard_nodes": Sample(["--shard-nodes", "2,4,0"], (2, 4, 0)),
        "cache": Sample(["--cache", "work/cache2"], "work/cache2", str(root / "work/cache2")),
        "no_cache": Sample(["--no-cache"], True),
        "verify": Sample(["--verify"], True),
        "json": Sample(["--json"], True),
        "format": Sample(["--format", "sarif"], "sarif"),
        "output": Sample(["--output", "work/report.sarif"], "work/report.sarif"),
        "settle": Sample(["--settle", "250"], 250.0),
        "try_checks": Sample(["--try"], True),
        "try_dtype": Sample(["--try-dtype", "float64"], ["float64"]),
        "generator_check": Sample(["--generator-check", "strict"], "strict"),
        "generator_timeout": Sample(["--generator-timeout", "30"], 30.0),
        "generator_path": Sample(["--generator-path", "host"], "host"),
    }


# Where each sample's value lands in CompileOptions (by field).
COMPILED = {
    "directory": Path("work/c"), "cxx": "clang++", "flags": ("-O0", "-g"),
    "includes": ("inc", "-odd"), "launcher": "ccache", "jobs": 3,
    "units": ("Functions_*", "-x"),
    "shards": ShardSettings(formula_nodes=2, methods_nodes=4, merged_formula_units=0),
}


@pytest.fixture
def root(tmp_path, monkeypatch):
    shutil.copytree(MINI_SPEC, tmp_path / "spec2")
    (tmp_path / "work").mkdir()
    (tmp_path / "run").mkdir(mode=0o700)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "run"))
    monkeypatch.delenv("CXXFLAGS", raising=False)
    return tmp_path


def base_words(root: Path) -> list[str]:
    """A build every sample differs from in one option only."""
    return ["--spec", str(MINI_SPEC), "--out", str(root / "out"), "--cache",
            str(root / "cache")]


def parse(command: str, words: list[str]) -> argparse.Namespace:
    return build_parser().parse_args([*command.split(), *words])


def command_parsers(parser: argparse.ArgumentParser, words: tuple[str, ...] = ()):
    """(command, parser) for every command of the command line (`daemon status`'s is the
    parser under `daemon`)."""
    actions = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not actions:
        yield " ".join(words), parser
    for action in actions:
        for word, child in action.choices.items():
            yield from command_parsers(child, (*words, word))


def table_parser(command: str) -> argparse.ArgumentParser:
    """What the table alone makes of a command (and its description, the command line's)."""
    parser = argparse.ArgumentParser(prog=f"gradshard {command}",
                                     description=DESCRIPTIONS[command])
    add_options(parser, command)
    return parser


CLI_COMMANDS = [c for c in COMMANDS if c != PYTEST]


def test_the_command_line_has_the_tables_commands():
    """A parser for each command of the table; those above them (`gradshard`, `gradshard
    daemon`) hold no option but --help (and `gradshard`'s --version), only their commands."""
    assert sorted(command for command, _ in command_parsers(build_parser())) == \
        sorted(CLI_COMMANDS)
    above = [build_parser()]
    while above:
        parser = above.pop()
        commands = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if not commands:
            continue
        flags = [a.option_strings for a in parser._actions if a.option_strings]
        assert flags in ([["-h", "--help"]], [["-h", "--help"], ["--version"]])
        assert parser._actions[-1] is commands[0] and len(commands) == 1
        above += commands[0].choices.values()


@pytest.mark.parametrize("command", CLI_COMMANDS)
def test_a_commands_help_is_the_tables(command, monkeypatch):
    """The parser the command line uses for `command` and one built from the table alone
    print the same --help (every flag, positional, section and exclusive pair), and their
    arguments parse alike (defaults, types, choices, which help does not show): an option
    added to a parser by hand, or changed there, fails here."""
    monkeypatch.setenv("COLUMNS", "100")
    used = dict(command_parsers(build_parser()))[command]
    table = table_parser(command)
    assert used.format_help() == table.format_help()
    assert arguments(used) == arguments(table)


def arguments(parser: argparse.ArgumentParser) -> list[tuple]:
    return [(type(a).__name__, a.option_strings, a.dest, a.default, a.type, a.choices,
             a.nargs, a.required, a.metavar, a.help) for a in parser._actions]


class RecordingGroup:
    """pytest's option group, as far as the plugin uses it."""

    def __init__(self, parser: RecordingParser) -> None:
        self.parser = parser

    def addoption(self, *flags: str, **settings) -> None:
        self.parser.added.append((flags, settings))


class RecordingParser:
    def __init__(self) -> None:
        self.groups: list[tuple[str, str]] = []
        self.added: list[tuple[tuple[str, ...], dict]] = []

    def getgroup(self, name: str, description: str = "") -> RecordingGroup:
        self.groups.append((name, description))
        return RecordingGroup(self)

    def addoption(self, *flags: str, **settings) -> None:
        self.added.append((flags, settings))


def test_the_pytest_plugins_options_are_the_tables():
    """The plugin adds exactly the table's PYTEST options, in its section, as the table
    says."""
    recorded = RecordingParser()
    pytest_plugin.pytest_addoption(recorded)
    assert recorded.groups == [(PYTEST_GROUP, PYTEST_GROUP_TITLE)]
    assert recorded.added == [(o.flags, argument_settings(o)) for o in options_of(PYTEST)]
    assert [o.name for o in options_of(PYTEST)] == ["--gradshard-spec", "--gradshard-op",
                                                    "--gradshard-cache"]


def test_one_record_per_meaning():
    """A dest is one record's (a command reads an option by its dest), and no command
    takes a flag twice."""
    assert len({o.dest for o in OPTIONS}) == len(OPTIONS)
    for command in COMMANDS:
        flags = [flag for o in options_of(command) for flag in o.flags]
        assert len(flags) == len(set(flags)), command


GUIDE = Path(__file__).resolve().parent.parent / "docs" / "usage.md"


SHOWN = [o for o in OPTIONS if o.flags and o.help != argparse.SUPPRESS]


@pytest.mark.parametrize("option", SHOWN, ids=lambda o: o.name)
def test_the_usage_guide_names_every_option(option: Option):
    """docs/usage.md names every flag of every shown option (the pytest plugin's too)."""
    guide = GUIDE.read_text()
    for flag in option.flags:
        assert re.search(re.escape(flag) + r"(?![\w-])", guide), flag


def test_build_and_try_compile_with_the_same_jobs(monkeypatch):
    """-j is one option: `try` compiles with as many jobs as `build` by default, the
    processors the process may run on (issue 34: `try` had 2), not the machine's cores."""
    assert parse(TRY, []).jobs == parse(BUILD, []).jobs == 0
    monkeypatch.setattr(os, "cpu_count", lambda: 64)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {3, 5, 6, 7, 9, 11, 12})
    assert jobs_of(0) == 7 and jobs_of(3) == 3


def test_the_try_timeout_is_the_processs():
    """The table's default (standard library only) is the one the worker process uses."""
    assert process.TryProcess().timeout == TRY_TIMEOUT == parse(TRY, []).timeout


def test_daemon_status_reads_the_tables_options():
    """`daemon status`'s fast reader (service/daemon/runtime.py) knows every option the table
    gives the command: an option added there without teaching it fails here (it would hand
    every status to the full command line)."""
    assert options_of(STATUS) == QUICK_STATUS_OPTIONS


def test_daemon_status_imports_only_the_standard_library(tmp_path):
    """`gradshard daemon status` (no daemon running) answers without importing the pipeline,
    the cache or any third-party module but xxhash (the socket's name)."""
    (tmp_path / "run").mkdir(mode=0o700)
    program = ("import json, sys\n"
               "from gradshard.service.entry import main\n"
               f"code = main(['daemon', 'status', '--spec', {str(MINI_SPEC)!r}, '--cache', "
               f"{str(tmp_path / 'cache')!r}, '--json'])\n"
               "print(json.dumps([code, sorted(sys.modules)]))")
    env = {**os.environ, "XDG_RUNTIME_DIR": str(tmp_path / "run")}
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                          env=env, check=True)
    code, modules = json.loads(done.stdout.splitlines()[-1])
    assert code == EXIT_NO_DAEMON  # none runs
    ours = {m for m in modules if m.startswith("gradshard.")}
    assert ours <= {"gradshard.service", "gradshard.service.daemon",
                    "gradshard.service.daemon.runtime", "gradshard.service.defaults",
                    "gradshard.service.entry", "gradshard.service.exit_codes",
                    "gradshard.service.options",
                    "gradshard.service.process_end"}, ours
    assert not {m for m in modules if m.split(".")[0] in ("yaml", "jinja2", "watchdog",
                                                          "sqlite3")}


def test_what_a_daemon_need_not_match(root):
    """How many compiles run at once, how a failure is printed, how long saves settle and
    the options that never reach a daemon: a daemon serves a build differing only in them."""
    unmatched = {o.dest for o in BUILD_OPTIONS if not o.match}
    assert not [o for o in OPTIONS if o.match and not o.commands & BUILDING]
    assert unmatched == {"jobs", "raw", "settle", "no_cache", "verify", "json", "format",
                         "output", "try_checks", "try_dtype", "selective_build",
                         "generator_timeout"}


def test_the_generator_options_are_the_checks_own():
    """options.py repeats check.py's modes and default (it imports nothing heavy): the same."""
    from gradshard.service.generator.check import (DEFAULT_TIMEOUT, GENERATOR_MODES,
                                                   GENERATOR_PATHS)
    from gradshard.service.options import GENERATOR_MODES as OPTION_MODES
    from gradshard.service.options import GENERATOR_PATHS as OPTION_PATHS
    from gradshard.service.options import GENERATOR_TIMEOUT

    assert OPTION_MODES == GENERATOR_MODES and GENERATOR_TIMEOUT == DEFAULT_TIMEOUT
    assert OPTION_PATHS == GENERATOR_PATHS


def test_every_option_has_a_sample(root):
    """(but the selective build, which no value passes: test_a_selective_build_is_refused)"""
    assert sorted(samples(root)) == sorted(o.dest for o in SAMPLED)


@pytest.mark.parametrize("flag", ["--selected-op-list-path", "--operators-yaml-path",
                                  "--operators_yaml_path"])
def test_a_selective_build_is_refused(flag, capsys):
    """generate_code's selectors change what its files hold: refused with a reason, never
    ignored."""
    with pytest.raises(SystemExit) as exited:
        parse("build", [flag, "ops.yaml"])
    assert exited.value.code == 2
    message = capsys.readouterr().err
    assert "full operator set only" in message and "selective build" in message


# every option with a value that parses (the selective build's never does)
SAMPLED = [o for o in BUILD_OPTIONS if o.dest != "selective_build"]


@pytest.mark.parametrize("option", SAMPLED, ids=lambda o: o.name)
def test_an_option_reaches_what_reads_it(option: Option, root):
    """argparse parses the sample in every command that takes the option, and the value
    reaches CompileOptions (ShardSettings), the daemon's config or the command."""
    sample = samples(root)[option.dest]
    for command in option.commands & BUILDING:
        args = parse(command, [*base_words(root), *sample.words])
        assert getattr(args, option.dest) == sample.parsed, command
        if option.compile_field:
            compiled = getattr(compile_options(args), option.compile_field)
            assert compiled == COMPILED[option.compile_field], command
    if START in option.commands:  # else build alone takes it, and run_build reads args.<dest>
        config = daemon_config_of(parse(START, [*base_words(root), *sample.words]))
        if option.compile_field:
            compiled = getattr(config.compile, option.compile_field)
            assert compiled == COMPILED[option.compile_field]
        elif option.dest in DAEMON_READS:
            assert DAEMON_READS[option.dest](config) == daemon_value(option, sample)


# What a daemon's config holds of the options that are not compile options (--raw is the
# client's way of printing a failure: no daemon reads it).
DAEMON_READS = {"spec": lambda config: str(config.location.root),
                "out": lambda config: str(config.out), "cache": lambda config: str(config.cache),
                "codegen_only": lambda config: config.codegen_only,
                "settle": lambda config: config.settle * 1000,
                "generator_check": lambda config: config.generator.mode,
                "generator_timeout": lambda config: config.generator.timeout,
                "generator_path": lambda config: config.generator.path}


def daemon_value(option: Option, sample: Sample):
    return sample.forwarded if option.forward == "path" else sample.parsed


def daemon_config_of(args: argparse.Namespace):
    location = daemon_runtime.resolved(locate_spec(args.spec))
    return daemon_commands.daemon_config(args, location)


@pytest.mark.parametrize("option", BUILD_OPTIONS, ids=lambda o: o.name)
def test_an_option_is_forwarded_to_the_daemon_process(option: Option, root):
    """`daemon start` hands the daemon process (`daemon run`) every forwarded option's value,
    paths made absolute; an option not forwarded reaches it as its default."""
    if START not in option.commands:  # build alone takes it: the daemon never sees it
        assert option.forward is None and not hasattr(parse(RUN, []), option.dest)
        return
    sample = samples(root)[option.dest]
    served = parse(RUN, forwarded_options(parse(START, [*base_words(root), *sample.words])))
    if option.forward:
        assert getattr(served, option.dest) == sample.forwarded
    else:
        assert getattr(served, option.dest) == getattr(parse(RUN, []), option.dest)


@pytest.mark.parametrize("option", [o for o in BUILD_OPTIONS
                                    if o.forward == "path" and o.action == "store"],
                         ids=lambda o: o.name)
def test_an_empty_path_means_the_same_to_the_daemon_process(option: Option, root):
    """An empty --spec or --out is the current directory, an empty --cache or --compile-dir
    the default: the daemon process is told the same."""
    served = parse(RUN, forwarded_options(parse(START, [f"{option.name}="])))
    expected = {"spec": str(root.resolve()), "out": str(root.resolve())}
    assert getattr(served, option.dest) == expected.get(option.dest, option.default)


@pytest.mark.parametrize("option", SAMPLED, ids=lambda o: o.name)
def test_a_running_daemon_serves_only_builds_it_matches(option: Option, root):
    """A daemon (its real description, from its forwarded options) serves a `gradshard build`
    that differs from it only in this option exactly when the table says the option does
    not matter; and it always serves the build it was started for."""
    sample = samples(root)[option.dest]
    daemon = description_of(parse(START, base_words(root)))
    assert daemon_serves(daemon, parse(BUILD, base_words(root)))
    if BUILD in option.commands:  # the build asks with the option set
        client = parse(BUILD, [*base_words(root), *sample.words])
        assert daemon_serves(daemon, client) is not option.match
    if START in option.commands:  # the daemon was started with it
        daemon = description_of(parse(START, [*base_words(root), *sample.words]))
        assert daemon_serves(daemon, parse(BUILD, base_words(root))) is not option.match
        if BUILD in option.commands:
            client = parse(BUILD, [*base_words(root), *sample.words])
            assert daemon_serves(daemon, client)


def description_of(started: argparse.Namespace) -> dict:
    """What the daemon that `daemon start` with these options starts writes into its lock."""
    served = parse(RUN, forwarded_options(started))
    location = daemon_runtime.resolved(locate_spec(served.spec))
    paths = daemon_runtime.paths_of(served, location)
    daemon = Daemon(daemon_commands.daemon_config(served, location), paths, announce=print)
    try:
        return daemon.description()
    finally:
        daemon.session.close()


def test_a_real_daemon_serves_a_build_with_its_options(tmp_path):
    """Round trip through real processes: a value starting with a dash reaches the daemon
    process (--cxxflags=-O0), -j does not matter, --cxxflags does."""
    spec = tmp_path / "spec"
    subprocess.run(["cp", "-r", str(MINI_SPEC), str(spec)], check=True)
    running = Running(tmp_path, spec, "--codegen-only", "--cxxflags=-O0", "-j", "3")
    started = running.start()
    assert started.returncode == 0, started.stderr
    try:
        status = running.wait()
        assert "--cxxflags=-O0" in status["options"] and status["last"]["ok"]
        same = ["build", "--codegen-only", "--out", str(running.out), *running.where()]
        done = running.cli(*same, "--cxxflags=-O0", "-j", "1")
        assert "built by the daemon" in done.stdout
        done = running.cli(*same, "--cxxflags=-O1")
        assert "built by the daemon" not in done.stdout and "gradshard build:" in done.stdout
    finally:
        running.cli("daemon", "stop", *running.where(), check=False)


def test_try_takes_raw():
    """`try`'s hint promises `--raw` (issue 47, item 6): one option, the build's, taken by
    `try` too."""
    assert parse(TRY, ["--raw"]).raw is True and parse(TRY, []).raw is False
