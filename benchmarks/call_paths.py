#!/usr/bin/env python3
"""How far a reader walks from a command to what it does: the files on each path, counted.

Three paths, each on the ported and on the host path (`--generator-path`), each run in a
fresh process on a copy of the spec with an empty cache, watched with sys.setprofile until
its event, where it stops:

  build → first file   `build --codegen-only`, until the first file of the output
                       directory is written (os.replace into it, as every write ends)
  build → ninja        `build` (compiling), until ninja is started
  try → worker         `try sin` after an edit of sin's formula, until its patch is handed
                       to the worker (TryProcess.ask: the worker process, started first so
                       that torch loads meanwhile, is given the library to load and check)

Two counts per path, both over the package's code (pipeline/, cache/, service/, templates/):

  through   the modules the command passes through on its way: a module counts when a call
            leaves it for another module (the command goes on from there), and so do the
            modules on the stack at the event. A module only consulted (its function returns
            without entering another module: a table, a value, a leaf helper) is not on the
            way. This is the measure the issue's goals are set in: run on the code the issue
            was written against (7156cab), it reads 12/14 to the first file and 20/23 to
            ninja, where the review that set the goals read ~13 and ~22.
  entered   every module of service/ that runs, and every module a service module calls into
            (the engine, the graph, the stages are entered, not walked: what they call is
            theirs): what a reader who opens every file the service touches reads.

Files are listed in the order first met. Back-calls: a call from a service module into a
module already on the stack beneath it (other than itself): the callee calling back into
its caller's module, as a callback handed down does.

    python benchmarks/call_paths.py [--spec DIR] [--json] [--paths NAME ...]
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import gradshard.service

PACKAGE = Path(next(iter(gradshard.service.__path__))).resolve().parent  # an editable install's too
SERVICE = PACKAGE / "service"
EDIT = ("  self: grad * self.cos().conj()\n", "  self: grad * self.cos().conj() * 1\n")
# each path: the command's words after the spec, cache and output directory, and its event
PATHS = {
    "build → first file (ported)": (["build", "--codegen-only", "--generator-path", "ported"],
                                    "write"),
    "build → first file (host)": (["build", "--codegen-only", "--generator-path", "host",
                                   "--generator-check", "skip"], "write"),
    "build → ninja (ported)": (["build", "--generator-path", "ported"], "ninja"),
    "build → ninja (host)": (["build", "--generator-path", "host", "--generator-check", "skip"],
                             "ninja"),
    "try → worker (ported)": (["try", "sin"], "worker"),
    # try takes the host path for a generator no release has (the statement bench_host edits)
    "try → worker (host)": (["try", "sin"], "worker"),
}
EDITED_GENERATOR = {"try → worker (host)"}
STATEMENT = ("[[maybe_unused]] auto _any_requires_grad = compute_requires_grad(",
             "[[maybe_unused]] const bool _any_requires_grad = compute_requires_grad(")
GOALS = {"first file": 9, "ninja": 14, "worker": 14}
ROOMS = ("pipeline", "cache", "service", "templates")  # the package's code, not its tests


class Reached(BaseException):
    """The event happened: the command stops there (past every `except Exception`), with
    the modules on the stack at the event, outermost first."""

    def __init__(self) -> None:
        super().__init__()
        self.stack = list(reversed(_modules_on(sys._getframe(1))))
        sys.setprofile(None)  # the walk ends at the event: what unwinds after it is not on it


class Walk:
    """What the profile saw: the modules entered and those passed through, in order, and
    the back-calls."""

    def __init__(self) -> None:
        self.files: dict[str, None] = {}
        self.through: dict[str, None] = {}
        self.back_calls: dict[str, None] = {}

    def profile(self, frame, event: str, _arg) -> None:
        if event != "call" or frame.f_code.co_name == "<module>":
            return  # a module imported is not walked: its functions are, when called
        callee = _module(frame.f_code.co_filename)
        caller_frame = frame.f_back
        if callee is None or caller_frame is None:
            return
        if caller_frame.f_code.co_name == "<module>":
            return  # work done while a module is imported (its tables, its decorators)
        caller = _module(caller_frame.f_code.co_filename)
        from_service = caller is not None and _in_service(caller)
        if from_service or _in_service(callee):
            self.files.setdefault(callee)
            if caller is not None and callee != caller:
                self.through.setdefault(caller)
        if from_service and callee != caller and callee in _beneath(caller_frame, caller):
            self.back_calls.setdefault(f"{caller} → {callee}")

    def reach(self, stack: list[str]) -> None:
        for module in stack:
            self.through.setdefault(module)

    def result(self, event: str, reached: bool) -> dict:
        return {"event": event, "reached": reached, "through": list(self.through),
                "through_count": len(self.through), "files": list(self.files),
                "count": len(self.files), "back_calls": list(self.back_calls)}


@functools.cache
def _module(filename: str) -> str | None:
    """A gradshard source file's path in the package (None for any other code)."""
    path = Path(filename)
    if not path.is_absolute() or path.suffix != ".py":
        return None  # <string>, <frozen …>
    try:
        relative = path.resolve().relative_to(PACKAGE)
    except ValueError:
        return None
    return relative.as_posix() if relative.parts[0] in ROOMS else None


def _in_service(module: str) -> bool:
    return module.startswith("service/")


def _modules_on(frame) -> list[str]:
    """The gradshard modules on the stack from `frame` down, each run of frames once."""
    found: list[str] = []
    while frame is not None:
        name = _module(frame.f_code.co_filename)
        if name is not None and (not found or found[-1] != name):
            found.append(name)
        frame = frame.f_back
    return found


def _beneath(frame, module: str) -> set[str]:
    """The gradshard modules on the stack beneath `frame`'s own module's frames."""
    found: set[str] = set()
    while frame is not None and _module(frame.f_code.co_filename) == module:
        frame = frame.f_back
    while frame is not None:
        name = _module(frame.f_code.co_filename)
        if name is not None:
            found.add(name)
        frame = frame.f_back
    return found


def watch(event: str, out: Path) -> None:
    """Stop the command at its event: a file replaced into `out`, ninja started, or the
    patch handed to the try worker."""
    from gradshard.service.live.process import TryProcess

    original_replace, original_popen = os.replace, subprocess.Popen.__init__

    def replace(source, target, *rest, **named):
        original_replace(source, target, *rest, **named)
        if event == "write" and Path(target).resolve().is_relative_to(out.resolve()):
            raise Reached

    def popen(self, command, *rest, **named):
        words = [str(w) for w in (command if isinstance(command, (list, tuple)) else [command])]
        if event == "ninja" and words and Path(words[0]).name.startswith("ninja"):
            raise Reached
        original_popen(self, command, *rest, **named)

    def ask(self, request, on_event=None):
        raise Reached

    os.replace = replace
    subprocess.Popen.__init__ = popen
    if event == "worker":
        TryProcess.ask = ask


def run_one(name: str, spec: Path, scratch: Path) -> dict:
    """One path, in this process: the command run under the profile until its event."""
    from gradshard.service.cli import main

    words, event = PATHS[name]
    out = scratch / "out"
    watch(event, out)
    walk = Walk()
    command = [words[0], *words[1:], "--spec", str(spec), "--cache", str(scratch / "cache")]
    if words[0] == "build":
        command += ["--out", str(out)]
    sys.setprofile(walk.profile)
    reached = False
    try:
        main(command)
    except Reached as happened:
        reached = True
        walk.reach(happened.stack)
    finally:
        sys.setprofile(None)
    return walk.result(event, reached)


def copy_spec(source: Path, root: Path, edit_generator: bool) -> Path:
    """The spec copied with its generator (a packaged spec's whole torchgen package: the host
    path runs it), sin's formula edited (`try` then has an edit to compile)."""
    if source.name == "packaged":
        shutil.copytree(source.parent, root / "torchgen",
                        ignore=shutil.ignore_patterns("__pycache__"))
        spec = root / "torchgen" / "packaged"
    else:
        spec = root / "spec"
        shutil.copytree(source, spec, ignore=shutil.ignore_patterns("__pycache__"))
    derivatives = spec / "autograd" / "derivatives.yaml"
    text = derivatives.read_text()
    if EDIT[0] not in text:
        sys.exit(f"sin's formula is not {EDIT[0].strip()!r} in {derivatives}")
    derivatives.write_text(text.replace(EDIT[0], EDIT[1], 1))
    if edit_generator:
        generator = spec / "autograd" / "gen_variable_type.py"
        source_text = generator.read_text()
        if STATEMENT[0] not in source_text:
            sys.exit(f"{generator} does not hold {STATEMENT[0]!r}")
        generator.write_text(source_text.replace(*STATEMENT))
    return spec


def measure(name: str, spec_root: Path) -> dict:
    """One path in a fresh process, on a fresh copy of the spec and an empty cache."""
    with tempfile.TemporaryDirectory() as scratch:
        spec = copy_spec(spec_root, Path(scratch), name in EDITED_GENERATOR)
        done = subprocess.run([sys.executable, __file__, "--one", name, "--spec", str(spec),
                               "--scratch", scratch], capture_output=True, text=True)
    if done.returncode != 0 or not done.stdout.strip():
        sys.exit(f"{name}: the command failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spec", help="spec directory (default: the installed torch's)")
    parser.add_argument("--json", action="store_true", help="one JSON document")
    parser.add_argument("--paths", nargs="+", choices=list(PATHS), default=list(PATHS))
    parser.add_argument("--one", choices=list(PATHS), help=argparse.SUPPRESS)
    parser.add_argument("--scratch", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(run_one(args.one, Path(args.spec), Path(args.scratch))))
        return
    from gradshard.service.files.spec_location import locate_spec

    root = locate_spec(args.spec).root
    results = {name: measure(name, root) for name in args.paths}
    if args.json:
        print(json.dumps(results, indent=2))
        return
    for name, result in results.items():
        goal = next(g for key, g in GOALS.items() if key in name)
        state = "" if result["reached"] else "  (the event never happened)"
        print(f"{name:30} {result['through_count']:3} through (goal <= {goal})  "
              f"{result['count']:3} entered  {len(result['back_calls'])} back-calls{state}")
        print("    through: " + " → ".join(result["through"]))
        print("    entered: " + " → ".join(result["files"]))
        for back in result["back_calls"]:
            print(f"    back-call: {back}")


if __name__ == "__main__":
    main()
