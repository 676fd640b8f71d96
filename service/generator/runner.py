"""Running a spec's own generator, to have what it writes to compare with gradshard's files.

A generator gradshard does not reproduce can only be checked by running it: the spec's
autograd generators with their torchgen, in a subprocess (generate_code.py beside this module),
because torchgen keeps its parse results in module globals keyed by path and because the
generator is not ours to trust with this process. The subprocess:

- imports that torchgen and nothing else of the same name: PYTHONPATH starts with the
  torchgen's parent directory, `-P` keeps the driver's directory off sys.path and the working
  directory is a fresh empty one;
- writes no bytecode (`-B`): the spec's directory, which the daemon watches, is left alone;
- is a process group of its own (a new session), killed whole at its time limit and on any
  way out of here, so that no process outlives a run;
- writes into a temporary directory, read back (regular files only, symbolic links never
  followed, each at most MAX_GENERATED_BYTES) and removed with the rest.

A generator that raises, exits (`sys.exit(2)`, `os._exit(5)`), ends on a signal or runs past
its time limit is a GeneratorFailed (exit 8) whose detail is the last lines of its error
output; so is a spec with no generator to run, and a generator directory without one of the
modules the driver imports (an incomplete copy: the hint names the file). Every path handed to
the subprocess is absolute (the spec's, the generator's: SpecLocation makes them so; the
output directory here). Only when the driver says it could not run what it was given
(generate_code.py: EXIT_DRIVER and its DRIVER_SAYS line, bad arguments included) is the failure
gradshard's: an InternalError (exit 4, a bug in gradshard), whose text carries the driver's
lines and says the generator is not to blame.
"""

from __future__ import annotations

import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Callable

from gradshard.cache.errors import GeneratorFailed
from gradshard.service.files.spec_location import SpecLocation
from gradshard.pipeline.problems import InternalError
from gradshard.service.generator.generate_code import (DRIVER_SAYS, EXIT_DRIVER, EXIT_GENERATOR,
                                                GENERATOR_MODULES)
from gradshard.service.generator.identity import GeneratorIdentity

__all__ = ["DRIVER", "GeneratorOutput", "MAX_GENERATED_BYTES", "check_runnable", "end_group",
           "generator_environment", "run_generator"]

DRIVER = Path(__file__).resolve().with_name("generate_code.py")
MAX_GENERATED_BYTES = 256 << 20  # per generated file; the largest real one is below 4 MiB
_DETAIL_LINES = 20  # of the generator's error output: a traceback's end and torchgen's context
_DETAIL_BYTES = 64 << 10  # read from the end of the error output for those lines
_TIMEOUT_HINT = "give it longer with --generator-timeout SECONDS"
_RAISED_HINT = ("the error is the generator's own: its last lines say which spec entry it "
                "could not generate")
_OURS_HINT = ("the failure is gradshard's, not the generator's: please report it with these "
              "lines; --generator-check skip builds without the check meanwhile")


@dataclass(frozen=True)
class GeneratorOutput:
    """What a generator wrote: each file's bytes by its posix name under the output directory
    (`templates/VariableType.cpp`, the first stage of VariableType, among them), and how long
    it ran."""

    files: dict[str, bytes]
    seconds: float


def run_generator(identity: GeneratorIdentity, location: SpecLocation, timeout: float,
                  started: Callable[[int], None] | None = None) -> GeneratorOutput:
    """Run the spec's generator on it and collect its files. `started` is called with the
    subprocess's pid, which is also its process group's id."""
    check_runnable(identity)
    scratch = Path(tempfile.mkdtemp(prefix="gradshard-generator-")).absolute()
    try:
        out = scratch / "out"  # beside it: cwd/ (empty, the working directory) and stderr
        out.mkdir()
        (scratch / "cwd").mkdir()
        begun = time.monotonic()
        _run(identity, _command(identity, location, out), scratch, timeout, started)
        seconds = time.monotonic() - begun
        return GeneratorOutput(_read_tree(out), seconds)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def check_runnable(identity: GeneratorIdentity) -> None:
    if identity.hash == "" or identity.torchgen is None or identity.autograd is None:
        raise GeneratorFailed(f"the spec has no generator to run ({identity.origin})",
                              hint="only a spec with a generator beside it, or an installed "
                                   "torchgen, can be checked against one")
    for module in GENERATOR_MODULES:  # the rest are found missing by the imports, in the run
        if not (identity.autograd / f"{module}.py").is_file():
            raise GeneratorFailed(f"{_named(identity)} is incomplete: its directory has no "
                                  f"{module}.py",
                                  hint=f"the spec's autograd generators ({identity.autograd}) "
                                       f"lack {module}.py: copy the whole directory, or "
                                       f"--generator-check skip builds without the check")


def _command(identity: GeneratorIdentity, location: SpecLocation, out: Path) -> list[str]:
    return [sys.executable, "-P", "-B", os.fspath(DRIVER), os.fspath(identity.autograd),
            os.fspath(location.root), location.layout, os.fspath(out),
            "--torchgen", os.fspath(identity.torchgen)]


def generator_environment(identity: GeneratorIdentity) -> dict[str, str]:
    """This process's environment with the generator's torchgen first on the path (a wheel's
    site directory, a checkout's root)."""
    environment = dict(os.environ)
    path = [os.fspath(identity.torchgen.parent), environment.get("PYTHONPATH", "")]
    environment["PYTHONPATH"] = os.pathsep.join(part for part in path if part)
    return environment


def _run(identity: GeneratorIdentity, command: list[str], scratch: Path, timeout: float,
         started: Callable[[int], None] | None) -> None:
    """Run the driver to its end, or kill its group at the time limit; raise if it failed."""
    errors_path = scratch / "stderr"
    with open(errors_path, "wb") as errors:
        process = _start(identity, command, scratch / "cwd", errors)
        try:
            if started is not None:
                started(process.pid)
            finished = _wait_unreaped(process, timeout)
        finally:
            end_group(process)
    if not finished:
        raise GeneratorFailed(f"{_named(identity)} did not finish within {timeout:g} s",
                              _tail(errors_path), _TIMEOUT_HINT)
    detail = _tail(errors_path) if process.returncode != 0 else ""
    if process.returncode == EXIT_DRIVER and _driver_said(detail):  # not the generator's
        raise InternalError(_driver_failure(identity, detail))
    if process.returncode != 0:
        raise GeneratorFailed(f"{_named(identity)} {_ending(process.returncode)}", detail,
                              _RAISED_HINT)


def _driver_said(detail: str) -> bool:
    """Whether the driver's own failure ended the run: its line is the last (generate_code.py), so
    a generator's `os._exit(3)` is not taken for it."""
    lines = detail.splitlines()
    return bool(lines) and lines[-1].startswith(DRIVER_SAYS)


def _driver_failure(identity: GeneratorIdentity, detail: str) -> str:
    """The InternalError's whole text: it is reported as its message alone (exit_codes.py:
    Report.ERROR), so the driver's lines and the hint are in it."""
    lines = [f"gradshard could not run {_named(identity)[:-1]}: its driver ended with exit "
             f"status {EXIT_DRIVER}"]
    lines.extend(f"  | {line}" for line in detail.splitlines())
    lines.append(f"  hint: {_OURS_HINT}")
    return "\n".join(lines)


def _start(identity: GeneratorIdentity, command: list[str], cwd: Path,
           errors: BinaryIO) -> subprocess.Popen:
    try:
        return subprocess.Popen(command, cwd=cwd, env=generator_environment(identity),
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=errors, start_new_session=True)
    except OSError as error:
        raise GeneratorFailed(f"{_named(identity)} could not be started: "
                              f"{error.strerror or error}",
                              hint=f"check {sys.executable}") from None


def _wait_unreaped(process: subprocess.Popen, timeout: float) -> bool:
    """Wait up to `timeout` s for the process to end (False: it did not), leaving it
    unreaped: its pid, which is its group's id, stays taken until end_group has killed
    whatever else of the group is left."""
    if not hasattr(os, "waitid"):  # no WNOWAIT: Popen.wait reaps; the group is killed after
        try:
            process.wait(timeout)
            return True
        except subprocess.TimeoutExpired:
            return False
    deadline, delay = time.monotonic() + timeout, 0.001
    options = os.WEXITED | os.WNOHANG | os.WNOWAIT
    while os.waitid(os.P_PID, process.pid, options) is None:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return False
        time.sleep(min(delay, remaining))
        delay = min(delay * 2, 0.05)
    return True


def end_group(process: subprocess.Popen) -> None:
    """Kill every process of the generator's group (the driver too, if it still runs) and
    reap the driver."""
    if process.returncode is None:  # else reaped already: its pid may be another's now
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass  # the group is gone already
    process.wait()


def _named(identity: GeneratorIdentity) -> str:
    return f"the spec's generator, {identity.label},"


def _ending(returncode: int) -> str:
    if returncode == EXIT_GENERATOR:  # the driver caught what it raised (or its sys.exit)
        return f"raised an error (exit status {returncode})"
    if returncode > 0:  # os._exit: the driver had no say
        return f"exited with status {returncode}"
    try:
        name = signal.Signals(-returncode).name
    except ValueError:
        name = f"signal {-returncode}"
    return f"was killed by {name}"


def _tail(path: Path) -> str:
    """The last _DETAIL_LINES lines of the generator's error output."""
    with open(path, "rb") as file:
        file.seek(max(0, os.fstat(file.fileno()).st_size - _DETAIL_BYTES))
        text = file.read().decode("utf-8", errors="replace")
    return "\n".join(text.rstrip().splitlines()[-_DETAIL_LINES:])


def _read_tree(root: Path) -> dict[str, bytes]:
    """Every regular file under root by its posix name, sorted; symbolic links (to files or
    directories) are neither followed nor read, so nothing outside root is."""
    files: dict[str, bytes] = {}
    pending = [""]
    while pending:
        relative = pending.pop()
        with os.scandir(root / relative) as entries:
            for entry in entries:
                name = f"{relative}/{entry.name}" if relative else entry.name
                if entry.is_dir(follow_symlinks=False):
                    pending.append(name)
                elif entry.is_file(follow_symlinks=False):
                    files[name] = _read_generated(entry.path, name)
    return dict(sorted(files.items()))


def _read_generated(path: str, name: str) -> bytes:
    """A generated file's bytes: opened without following a link or blocking, at most
    MAX_GENERATED_BYTES."""
    descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    with open(descriptor, "rb") as file:
        if not stat.S_ISREG(os.fstat(file.fileno()).st_mode):
            raise GeneratorFailed(f"the generator wrote {name}, which is not a regular file")
        data = file.read(MAX_GENERATED_BYTES + 1)
    if len(data) > MAX_GENERATED_BYTES:
        raise GeneratorFailed(f"the generator wrote {name}, larger than the limit of "
                              f"{MAX_GENERATED_BYTES >> 20} MiB")
    return data
