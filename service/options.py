"""Every command's options, as data: one table that the command line's parsers (argparse), the
pytest plugin's options, `daemon start`'s forwarding to the daemon process and the
daemon-match check (may a running daemon serve a client's `gradshard build`?) all read.

Each option is one `Option` record (the shape of pydoit's `cmd_options`): its flags (none for
a positional argument), how its value is parsed, its default and help, which commands take it,
how the daemon is handed it (`forward`), whether a daemon built with another value must not
serve the build (`match`), which CompileOptions field it sets, and the settings that stand in
for it when the command line does not give it (`settings`: its key in a configuration file,
the environment variable behind it, each with its kind, its default and what `gradshard
config` says of it). One meaning is one record, whatever commands take it (`-j` is the same
option for `build` and `try`). Adding an option means adding one record here;
tests/test_options.py compares every command's parser with the table and walks every
building option through all its consumers.

The variables' records (and the settings no flag gives) are service/defaults.py's, which
alone reads the environment: modules the functions here reach read them too.

Imports only the standard library and service/defaults.py (itself standard library only) at
start: `gradshard daemon status` reads --spec and --cache through here and answers in
milliseconds, and the pytest plugin loads it in every pytest run.
"""

from __future__ import annotations

import argparse
import shlex
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, NamedTuple

from gradshard.service.defaults import (BOOLEAN, CXX, CXX_LAUNCHER, CXXFLAGS, GRADSHARD_CACHE,
                                        GRADSHARD_TRY_CXX, PATH, PATHS, TEXT, WHOLE,
                                        XDG_CACHE_HOME, Setting, value_of)

if TYPE_CHECKING:
    from gradshard.pipeline.layout.compile_layout import ShardSettings
    from gradshard.service.compile.driver import CompileOptions
    from gradshard.service.files.placement import Placement
    from gradshard.service.generator.check import GeneratorCheck

__all__ = ["AFFECTED", "BUILD", "BUILDING", "CACHE", "CHECK", "COMMANDS", "CONFIG", "FORMAT",
           "FORMATS",
           "GC", "GENERATOR",
           "GENERATOR_MODES", "GENERATOR_PATHS", "GENERATOR_TIMEOUT", "JSON", "LOGS", "LSP",
           "OPTIONS", "Option", "PYTEST", "PYTEST_GROUP", "PYTEST_GROUP_TITLE", "RUN", "SHOW",
           "SPEC", "START", "STATS", "STATUS", "STOP", "TRY", "TRY_DTYPES", "TRY_TIMEOUT", "WATCH",
           "add_options", "argument_settings", "compile_options", "daemon_serves",
           "forwarded_options", "generator_check_of", "jobs_of", "match_words", "option_filled",
           "option_of", "options_of", "placement_of"]

DEFAULT_OUT = "gradshard-out"

# The commands that build; `daemon run` is the daemon process itself (`daemon start` starts
# it with the forwarded options).
BUILD, WATCH, START, RUN = "build", "watch", "daemon start", "daemon run"
BUILDING = frozenset({BUILD, WATCH, START, RUN})
SERVING = frozenset({WATCH, START, RUN})
# The other commands, the daemon's other actions, and pytest's command line (the plugin's
# options: service/live/pytest_plugin.py)
CHECK, SHOW, AFFECTED, TRY, STATS, GC = "check", "show", "affected", "try", "stats", "gc"
CONFIG = "config"
GENERATOR = "generator"
LSP = "lsp"  # the language server (service/editor/)
STOP, STATUS, LOGS = "daemon stop", "daemon status", "daemon logs"
PYTEST = "pytest"
COMMANDS = (BUILD, WATCH, START, RUN, STOP, STATUS, LOGS, CHECK, SHOW, AFFECTED, GENERATOR, TRY,
            STATS, GC, CONFIG, LSP, PYTEST)

# How `daemon start` writes a value for the daemon process (None: not forwarded): PATH (made
# absolute) and TEXT (as it is) are also the kinds of a configuration file's values
NUMBER, COUNTS, FLAG = "number", "counts", "flag"


def _node_counts(value: str) -> tuple[int, ...]:
    try:
        counts = tuple(int(part) for part in value.split(","))
    except ValueError:
        counts = ()
    if len(counts) not in (2, 3) or min(counts[:2]) < 1 or min(counts) < 0:
        raise argparse.ArgumentTypeError("expected two positive counts and an optional third "
                                         "(0: no merged units), such as 32,64 or 32,64,12")
    return counts


def shard_settings(counts: tuple[int, ...] | None) -> ShardSettings:
    """--shard-nodes F,M[,G]: nodes per formula unit and per Functions unit, and formula units
    per merged unit; the defaults without it."""
    from gradshard.pipeline.layout.compile_layout import ShardSettings

    if not counts:
        return ShardSettings()
    merged = {"merged_formula_units": counts[2]} if len(counts) == 3 else {}
    return ShardSettings(formula_nodes=counts[0], methods_nodes=counts[1], **merged)


def _default_if_empty(value: str) -> str | None:
    """`--cache ""` and `--compile-dir ""` mean the default (an empty --spec or --out is the
    current directory, as Path("") is)."""
    return value or None


def _optional_path(value: str | None) -> Path | None:
    return Path(value) if value else None


def _compiler_flags(value: str | None) -> tuple[str, ...]:
    return tuple(shlex.split(value or value_of(CXXFLAGS) or ""))


# service/files/placement.py's (not imported: `daemon status` answers in milliseconds)
TREES = ("flat", "pytorch")
SUBSETS = ("pybindings", "libtorch", "python")


def _one_of(choices: tuple[str, ...]) -> Callable[[str], str]:
    return partial(_choice, choices)


def _choice(choices: tuple[str, ...], value: str) -> str:
    if value not in choices:
        raise argparse.ArgumentTypeError(f"expected one of {', '.join(choices)}")
    return value


def _selective_build(value: str) -> str:
    """generate_code's operator selectors: refused, not ignored (a selective build's files
    differ from the full build's)."""
    raise argparse.ArgumentTypeError(
        "gradshard generates the full operator set only; a selective build (SELECTED_OP_LIST "
        "or an operators YAML) needs torchgen's own generate_code (see docs/usage.md: "
        "drop-in)")


TRY_DTYPES = ("float64", "complex128")  # gradcheck's precision: torch's gradient tests' two


def _try_dtype(value: str) -> str:
    if value not in TRY_DTYPES:
        raise argparse.ArgumentTypeError(f"expected one of {', '.join(TRY_DTYPES)}")
    return value


# Seconds one request to try's worker may take (service/live/process.py): a wrong formula can
# loop forever, and gradgradcheck on an OpInfo's largest samples takes a minute or two.
TRY_TIMEOUT = 600.0
# service/generator/check.py's (not imported: `daemon status` answers in milliseconds)
GENERATOR_MODES = ("check", "strict", "skip")
GENERATOR_PATHS = ("auto", "host", "ported")  # service/generator/check.py: GENERATOR_PATHS
GENERATOR_TIMEOUT = 900.0


def jobs_of(value: int) -> int:
    """-j's value as a number of compiles: 0 (the default) is the processors this process may
    run on (its CPU affinity: a container's or taskset's share, as ninja's own default)."""
    from gradshard.cache.engine.fork import processors

    return value or processors()


class Option(NamedTuple):
    flags: tuple[str, ...]  # () for a positional argument
    dest: str
    help: str
    commands: frozenset[str] = BUILDING
    metavar: str | None = None
    action: str = "store"  # store, store_true or append
    parse: Callable[[str], Any] | None = None  # argparse's type=
    default: Any = None
    group: str | None = None  # the help section ("compiling"); None: the command's options
    forward: str | None = None  # how the daemon process gets it (PATH, TEXT, …); None: not
    match: bool = False  # a daemon built with another value does not serve the build
    compile_field: str | None = None  # the CompileOptions field it sets
    to_compile: Callable[[Any], Any] = lambda value: value  # its value as that field's
    choices: tuple[str, ...] | None = None  # argparse's choices=
    nargs: str | None = None  # argparse's nargs= (a positional's "*")
    exclusive: str | None = None  # options of one name here: at most one of them is given
    # what sets it when the command line does not: a configuration file's key, a variable
    # (service/config_file.py: file < environment < flags)
    settings: tuple[Setting, ...] = ()

    @property
    def name(self) -> str:
        """The long flag (a positional's dest): how the forwarded words and the daemon's lock
        name it."""
        return self.flags[-1] if self.flags else self.dest


def _commands(*commands: str | frozenset[str]) -> frozenset[str]:
    return frozenset().union(*(c if isinstance(c, frozenset) else {c} for c in commands))


# pytest's help section of the plugin's options: its name and title
PYTEST_GROUP = "gradshard"
PYTEST_GROUP_TITLE = "gradshard: run against edited autograd formulas"


_INSTALLED_SPEC = "the installed torch's packaged spec"
SPEC = Option(("--spec",), "spec", "torchgen packaged spec directory or PyTorch checkout "
              f"(default: {_INSTALLED_SPEC})",
              _commands(BUILDING, CHECK, SHOW, AFFECTED, GENERATOR, TRY, STOP, STATUS, LOGS),
              metavar="DIR", forward=PATH, match=True,
              settings=(Setting(None, "spec", PATH, "the spec directory (--spec)",
                                shown=_INSTALLED_SPEC),))
CACHE = Option(("--cache",), "cache", f"the cache directory (default: ${GRADSHARD_CACHE.variable}"
               f", else ${XDG_CACHE_HOME.variable}/gradshard or ~/.cache/gradshard)",
               _commands(BUILDING, CHECK, SHOW, AFFECTED, GENERATOR, TRY, STATS, GC, STOP,
                         STATUS, LOGS, LSP),
               metavar="DIR",
               parse=_default_if_empty, forward=PATH, match=True, settings=(GRADSHARD_CACHE,))
JSON = Option(("--json",), "json", "machine-readable output",
              _commands(BUILD, CHECK, SHOW, AFFECTED, GENERATOR, TRY, STATS, GC, STATUS, CONFIG),
              action="store_true")
# service/report/formats.py's (not imported: `daemon status` answers in milliseconds)
FORMATS = ("text", "json", "sarif", "lintrunner")
FORMAT = Option(("--format",), "format", "the report's format: text (the default), json (as "
                "--json), sarif (a SARIF 2.1.0 log for code scanning; the text goes to stderr) "
                "or lintrunner (lintrunner's JSON lines; exit 0 when it reports what it found)",
                _commands(BUILD, CHECK), metavar="FORMAT", parse=_one_of(FORMATS))
OUTPUT = Option(("--output",), "output", "write the report to FILE instead of stdout (whole, "
                "once the command ends)", _commands(BUILD, CHECK), metavar="FILE")

# In the order argparse shows them.
OPTIONS: tuple[Option, ...] = (
    Option((), "name", "operator name (mul.Tensor), base name (mul), full schema, or backward "
           "node (MulBackward0)", _commands(SHOW), metavar="NAME"),
    Option((), "names", "ops to try: a derivatives entry, native function or node (default: "
           "every op whose generated code differs from the installed torch's)", _commands(TRY),
           metavar="NAME", nargs="*"),
    # lintrunner passes the files it lints (@{{PATHSFILE}}: argparse reads them from the file)
    Option((), "paths", "spec files to check (@FILE: the files listed in FILE, one per line, "
           "as lintrunner passes them): the spec holding them is checked", _commands(CHECK),
           metavar="PATH", nargs="*"),
    SPEC,
    Option(("--out",), "out", f"where to write the generated files (default: ./{DEFAULT_OUT})",
           metavar="DIR", default=DEFAULT_OUT, forward=PATH, match=True,
           settings=(Setting(None, "out", PATH, "where the generated files go (--out)"),)),
    Option(("--tree",), "tree", "how the files are laid out under --out: flat (the default), "
           "or pytorch: as tools/setup_helpers/generate_code.py writes them under a checkout's "
           "root (torch/csrc/autograd/generated/, torch/testing/_internal/generated/)",
           metavar="LAYOUT", parse=_one_of(TREES), default="flat", group="drop-in",
           forward=TEXT, match=True,
           settings=(Setting(None, "tree", TEXT, "flat or pytorch (--tree)"),)),
    Option(("--subset",), "subset", "write only what one of generate_code's generators writes: "
           "pybindings (gen_autograd_python), libtorch (gen_autograd) or python "
           "(gen_annotated_fn_args)", metavar="SUBSET", parse=_one_of(SUBSETS),
           group="drop-in", forward=TEXT, match=True),
    Option(("--disable-autograd",), "disable_autograd", "leave out the autograd kernels "
           "(VariableType, ADInplaceOrViewType, TraceType), as generate_code's "
           "--disable-autograd", action="store_true", group="drop-in", forward=FLAG, match=True),
    Option(("--selected-op-list-path", "--operators-yaml-path", "--operators_yaml_path"),
           "selective_build", "generate_code's selective build: refused (gradshard generates "
           "every operator)", _commands(BUILD), metavar="PATH", parse=_selective_build,
           group="drop-in"),
    Option(("--codegen-only",), "codegen_only", "generate the files without compiling them",
           action="store_true", forward=FLAG, match=True,
           settings=(Setting(None, "codegen-only", BOOLEAN, "generate the files without "
                             "compiling them (--codegen-only)"),)),
    Option(("--compile-dir",), "compile_dir", "where shards, objects, build.ninja and "
           "compile_commands.json go (default: OUT/compile)", metavar="DIR", group="compiling",
           parse=_default_if_empty, forward=PATH, match=True, compile_field="directory",
           to_compile=_optional_path),
    # builds fall back to $CXX (the `cxx` key), try to its own choice ($GRADSHARD_TRY_CXX,
    # the `try-cxx` key; service/live/compiler.py): a developer's CXX is not try's
    Option(("--cxx",), "cxx", f"the C++ compiler (default: ${CXX.variable}, else {CXX.default}; "
           f"try's: ${GRADSHARD_TRY_CXX.variable}, else the first clang++ >= 14, else g++)",
           _commands(BUILDING, TRY), metavar="CXX", group="compiling", forward=TEXT,
           match=True, compile_field="cxx",
           settings=(CXX._replace(commands=BUILDING),
                     GRADSHARD_TRY_CXX._replace(commands=frozenset({TRY})))),
    Option(("--cxxflags",), "cxxflags", f"extra compiler flags (default: ${CXXFLAGS.variable})",
           metavar="FLAGS", group="compiling", forward=TEXT, match=True,
           compile_field="flags", to_compile=_compiler_flags, settings=(CXXFLAGS,)),
    Option(("--include",), "include", "include directory (repeatable; default: the torch "
           "headers beside the spec, or the installed torch's)", metavar="DIR",
           action="append", default=[], group="compiling", forward=PATH, match=True,
           compile_field="includes", to_compile=tuple,
           settings=(Setting(None, "include", PATHS, "include directories (--include)"),)),
    Option(("--launcher",), "launcher", "run compiles through ccache, sccache, distcc or CMD "
           f"(default: ${CXX_LAUNCHER.variable})", metavar="CMD", group="compiling",
           forward=TEXT, match=True, compile_field="launcher", settings=(CXX_LAUNCHER,)),
    # The number of compiles at once changes no output: a daemon with another -j serves.
    # One default for `build` and `try` (until issue 34 `try` had 2): the processors the
    # process may run on (jobs_of: its CPU affinity, as ninja's default), the build's, won.
    # ninja never runs more compiles than a patch has units, so a one-op `try` is unchanged,
    # and a `try` of several ops, its first PCHs, or the daemon's --try (which already
    # compiled with the build's -j) use the processors the build uses.
    Option(("-j", "--jobs"), "jobs", "parallel compiles (default: the processors it may run on)",
           _commands(BUILDING, TRY), metavar="N", parse=int, default=0, group="compiling",
           forward=NUMBER, compile_field="jobs",
           settings=(Setting(None, "jobs", WHOLE, "parallel compiles (-j)",
                             shown=lambda: f"{jobs_of(0)} (the machine's cores)"),)),
    Option(("--units",), "units", "compile only the units whose names match (repeatable; "
           "shell patterns such as 'Functions_*' or 'python_functions_*')", metavar="PATTERN",
           action="append", default=[], group="compiling", forward=TEXT, match=True,
           compile_field="units", to_compile=tuple),
    # how the client prints a compile failure: the daemon's answer is the same either way
    Option(("--raw",), "raw", "show the compiler's output as it is, not placed at the spec",
           _commands(BUILDING, TRY), action="store_true", group="compiling"),
    # nodes per formula unit and per Functions unit, and formula units per merged unit
    Option(("--shard-nodes",), "shard_nodes", argparse.SUPPRESS, metavar="F,M[,G]",
           parse=_node_counts, group="compiling", forward=COUNTS, match=True,
           compile_field="shards", to_compile=shard_settings),
    CACHE,
    # --no-cache and --verify never go through a daemon (the client builds by itself)
    Option(("--no-cache",), "no_cache", "run every task and keep nothing (the cache is not "
           "opened)", _commands(BUILD, CHECK, SHOW), action="store_true"),
    Option(("--verify",), "verify", "run every task and compare with what the cache holds: "
           "each disagreement is listed and rewritten, and the exit code is 6",
           _commands(BUILD), action="store_true"),
    # the spec's generator (service/generator/): not `--verify`, which checks the cache
    Option(("--generator-check",), "generator_check", "how a spec whose generator gradshard "
           "does not reproduce is checked: check (the default: run it once per spec, write "
           "the files it writes differently from it, report them), strict (a difference is an "
           "error, exit code 7: for CI) or skip (gradshard's files, unchecked, said in every "
           "summary)", metavar="MODE", parse=_one_of(GENERATOR_MODES), default="check",
           group="generator", forward=TEXT, match=True),
    Option(("--generator-path",), "generator_path", "which code writes the files: host (the "
           "spec's own generator, run by gradshard's worker with its item functions memoized: "
           "exact on any generator), ported (gradshard's renderers, for the generators they "
           "reproduce) or auto (the default: ported for the generators it reproduces, host for "
           "any other)", metavar="PATH",
           parse=_one_of(GENERATOR_PATHS), default="auto", group="generator", forward=TEXT,
           match=True),
    Option(("--generator-timeout",), "generator_timeout", "the spec's generator's time limit "
           f"(default {GENERATOR_TIMEOUT:.0f} s); past it the build fails with exit code 8",
           _commands(BUILDING, GENERATOR), metavar="SECONDS", parse=float,
           default=GENERATOR_TIMEOUT, group="generator", forward=NUMBER),
    Option(("--against",), "against", "compare with another spec directory (default: the last "
           "build of this spec recorded in the cache)", _commands(AFFECTED), metavar="SPECDIR",
           exclusive="baseline"),
    Option(("--since",), "since", "compare with the spec files at a git revision of the "
           "checkout", _commands(AFFECTED), metavar="GITREV", exclusive="baseline"),
    Option(("--tests",), "tests", "also list PyTorch's gradient tests whose samples reach "
           "the changed nodes and kernels (test_ops_gradients.py, test_ops_fwd_gradients.py), "
           "as pytest ids; needs the try extra", _commands(AFFECTED), action="store_true"),
    Option(("--tests-file",), "tests_file", "with --tests (implied): write the ids to FILE, "
           "one per line, to run as `python -m pytest @FILE`", _commands(AFFECTED),
           metavar="FILE"),
    Option(("--samples",), "samples", "a Python file giving samples for ops without an OpInfo: "
           "SAMPLES = {op: function(dtype) -> [tuple of tensors, ...]}", _commands(TRY),
           metavar="FILE"),
    Option(("--dtype",), "dtype", "dtypes to check (default: both, where the op supports them)",
           _commands(TRY), action="append", default=[], choices=TRY_DTYPES),
    Option(("--timeout",), "timeout", f"time for the checks (default {TRY_TIMEOUT:.0f} s): a "
           "wrong formula may loop", _commands(TRY), metavar="SECONDS", parse=float,
           default=TRY_TIMEOUT),
    Option(("--last",), "last", "how many recent builds to list (default 10)", _commands(STATS),
           metavar="N", parse=int, default=10),
    Option(("--max-size",), "max_size", "also forget the oldest builds until the cache fits "
           "(500M, 2G…)", _commands(GC), metavar="SIZE"),
    Option(("--all",), "all", "drop even what the last builds need (without --max-size: all "
           "that no running build holds)", _commands(GC), action="store_true"),
    Option(("-n", "--lines"), "lines", "how many of the last lines (default 50)",
           _commands(LOGS), metavar="N", parse=int, default=50),
    # the language server (service/editor/settings.py: the editor's initializationOptions
    # may override both)
    Option(("--debounce",), "debounce", "milliseconds a change waits for the next before the "
           "buffers are checked (default 50)", _commands(LSP), metavar="MS", parse=float,
           default=50),
    Option(("--no-daemon",), "no_daemon", "answer from the server's own session even where a "
           "daemon runs for the spec", _commands(LSP), action="store_true"),
    JSON,
    FORMAT,
    OUTPUT,
    Option(("--settle",), "settle", "quiet time before a burst of saves is built (default "
           "50 ms)", SERVING, metavar="MS", parse=float, default=50, forward=NUMBER),
    # what the daemon checks after a build changes no output: a daemon with other --try
    # options serves the build
    Option(("--try",), "try_checks", "after each save, patch the ops whose code differs from "
           "the installed torch's into a warm worker and gradcheck the changed ones (one line "
           "per op; needs gradshard[try])", SERVING, action="store_true", group="checking",
           forward=FLAG),
    Option(("--try-dtype",), "try_dtype", "dtypes --try checks (repeatable; float64, "
           "complex128; default: both)", SERVING, metavar="DTYPE", action="append", default=[],
           parse=_try_dtype, group="checking", forward=TEXT),
    # the pytest plugin's, in pytest's help section PYTEST_GROUP
    Option(("--gradshard-spec",), "gradshard_spec", "patch the ops whose generated code this "
           "spec changes into torch", _commands(PYTEST), metavar="DIR", group=PYTEST_GROUP),
    Option(("--gradshard-op",), "gradshard_op", "patch this op (repeatable), changed or not",
           _commands(PYTEST), metavar="NAME", action="append", default=[],
           group=PYTEST_GROUP),
    Option(("--gradshard-cache",), "gradshard_cache", "gradshard's cache directory (default: "
           "as for gradshard)", _commands(PYTEST), metavar="DIR", group=PYTEST_GROUP),
)


def option_of(dest: str) -> Option:
    """The option that sets `dest` (one meaning, one record)."""
    return next(o for o in OPTIONS if o.dest == dest)


def option_filled(setting: Setting) -> Option | None:
    """The option a setting stands in for (None: one no flag gives, such as the cache's size
    limit). Found by its variable and key: an option may carry a variable's record narrowed
    to some of its commands (--cxx: $CXX for builds)."""
    named = (setting.variable, setting.key)
    return next((o for o in OPTIONS if named in {(s.variable, s.key) for s in o.settings}),
                None)


def options_of(command: str) -> tuple[Option, ...]:
    """The options `command` takes, in the table's order."""
    return tuple(o for o in OPTIONS if command in o.commands)


def argument_settings(option: Option, defaults: bool = True) -> dict[str, Any]:
    """add_argument's keywords for one option (pytest's addoption takes the same); without
    `defaults`, an option the words do not give is not set at all (which options a command
    line gives: service/config_file.py)."""
    settings: dict[str, Any] = {"action": option.action, "help": option.help}
    if option.flags:  # a positional's dest is its name
        settings["dest"] = option.dest
    if not defaults:
        settings["default"] = argparse.SUPPRESS
    if option.action == "store_true":
        return settings
    settings.update(metavar=option.metavar,
                    default=option.default if defaults else argparse.SUPPRESS)
    optional = {"type": option.parse, "choices": option.choices, "nargs": option.nargs}
    settings.update({key: value for key, value in optional.items() if value is not None})
    return settings


def add_option(parser: argparse.ArgumentParser | argparse._ArgumentGroup,
               option: Option, defaults: bool = True) -> None:
    parser.add_argument(*(option.flags or (option.dest,)), **argument_settings(option, defaults))


def add_options(parser: argparse.ArgumentParser, command: str, defaults: bool = True) -> None:
    """Every option of the table that `command` takes, in the table's order; grouped options
    under their section, exclusive ones in their mutually exclusive group."""
    sections: dict[str, argparse._ArgumentGroup] = {}
    exclusive: dict[str, argparse._MutuallyExclusiveGroup] = {}
    for option in options_of(command):
        place = parser
        if option.group is not None:
            if option.group not in sections:
                sections[option.group] = parser.add_argument_group(option.group)
            place = sections[option.group]
        if option.exclusive is not None:
            if option.exclusive not in exclusive:
                exclusive[option.exclusive] = place.add_mutually_exclusive_group()
            place = exclusive[option.exclusive]
        add_option(place, option, defaults)


def compile_options(args: argparse.Namespace) -> CompileOptions:
    """How to compile, from the parsed options that set a CompileOptions field."""
    from gradshard.service.compile.driver import CompileOptions

    return CompileOptions(**{o.compile_field: o.to_compile(getattr(args, o.dest))
                             for o in OPTIONS if o.compile_field})


def generator_check_of(args: argparse.Namespace, later: bool = False) -> GeneratorCheck:
    """How the build checks the spec's generator (service/generator/check.py)."""
    from gradshard.service.generator.check import GeneratorCheck

    return GeneratorCheck(args.generator_check, args.generator_timeout, later,
                          args.generator_path)


def placement_of(args: argparse.Namespace) -> Placement:
    """Which files go where under --out (service/files/placement.py)."""
    from gradshard.service.files.placement import Placement

    return Placement(args.tree, args.subset, not args.disable_autograd)


def _words(option: Option, value: Any) -> list[str]:
    """One option's value as the daemon process is given it; [] when unset."""
    if value is None or value is False or value == []:
        return []
    if option.forward == FLAG:
        return [option.name]
    values = value if option.action == "append" else [value]
    # --name=value: a value that starts with a dash (--cxxflags=-O0) stays a value
    return [f"{option.name}={_written(option, v)}" for v in values]


def _written(option: Option, value: Any) -> str:
    if option.forward == PATH:
        return str(Path(value).resolve())  # the daemon outlives the shell's directory
    if option.forward == COUNTS:
        return ",".join(map(str, value))
    return str(value)


def forwarded_options(args: argparse.Namespace) -> list[str]:
    """`daemon start`'s options as the daemon process (`daemon run`) takes them."""
    return [word for o in OPTIONS if o.forward and RUN in o.commands
            for word in _words(o, getattr(args, o.dest))]


def match_words(args: argparse.Namespace) -> list[str]:
    """The options that decide what a build produces, paths made absolute: equal words, equal
    builds. A daemon writes its own into its lock ("options")."""
    return [word for o in OPTIONS if o.match
            for word in _words(o, getattr(args, o.dest))]


def daemon_serves(running: dict, args: argparse.Namespace) -> bool:
    """Whether the running daemon (its lock's description) builds what `gradshard build` with
    these options would build."""
    return running.get("options") == match_words(args)
