"""gradshard's side of a host worker (worker.py): starting it, asking it for a generation,
ending it. A leaf of the host path: generation.py drives it, and what it answers is read
here without entering another of gradshard's modules (generation.py hashes the values).

A `HostWorker` is one process for one generator identity, started as the generator check's
runner starts the driver (service/generator/runner.py: in the environment its caller got
from `generator_environment`, the generator's torchgen first on PYTHONPATH; its own session
and process group, a fresh empty working directory, no bytecode written), with
PYTHONHASHSEED fixed so that what the generator iterates in hash order comes out the same in
every worker. It stays up between generations (the daemon and `try` keep theirs warm);
`close` kills its whole group.

What can end a generation:
- the generator raised on the spec: a SpecError, its message at the spec entry torchgen's
  context names (`in …native_functions.yaml:LINE`), exit 1; the worker goes on;
- the worker's own part failed, it died, answered what is not the protocol, or ran past its
  time limit: a GeneratorFailed (exit 8), the worker killed, the last lines of its error
  output as detail.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

from gradshard.cache.errors import GeneratorFailed
from gradshard.pipeline.problems import Problem, SpecError, SpecFile
from gradshard.service.files.spec_location import SpecLocation
from gradshard.service.generator.identity import GeneratorIdentity
from gradshard.service.report.rules import GENERATOR_RAISED_RULE
from gradshard.service.generator.runner import end_group
from gradshard.service.host.items import NewItem

__all__ = ["HASH_SEED", "HostAnswer", "HostWorker"]

HASH_SEED = "0"
_WORKER_MODULE = "gradshard.service.host.worker"
_DETAIL_LINES = 20
_READ_BYTES = 1 << 20
# torchgen's context line (torchgen/context.py: native_function_manager, f.loc): "in
# native_functions.yaml line /…/native_functions.yaml:123:"
_LOCATED = re.compile(r"(?P<path>[^\s:]+\.yaml):(?P<line>\d+)")


@dataclass(frozen=True)
class HostAnswer:
    """One generation as the worker answered it: every file by its posix name, the item
    values it computed (for the store), the keys of every value it used, its item counts and
    the worker's seconds."""

    files: dict[str, bytes]
    items: tuple[NewItem, ...]
    used: tuple[str, ...]  # item keys
    stats: dict[str, Any]
    seconds: float


class HostWorker:
    """A worker process running `identity`'s generator (checked runnable by the caller:
    runner.py's check_runnable), in `environment`."""

    def __init__(self, identity: GeneratorIdentity, timeout: float,
                 environment: Mapping[str, str]) -> None:
        self.identity = identity
        self.timeout = timeout
        self._awaiting = False  # a generation asked whose answer is not read yet
        self.generations = 0
        # what the worker's memo holds, as generation.py keeps it (it hashes the values):
        # key → the hash of its value, and key → (function, subject, part) of those values
        # (the items' own, and the store's it was handed with `remember`); they end with
        # the process
        self.value_hashes: dict[str, str] = {}
        self.value_subjects: dict[str, tuple[str, str, str]] = {}
        self._scratch = Path(tempfile.mkdtemp(prefix="gradshard-worker-")).absolute()
        self._errors = open(self._scratch / "stderr", "w+b")
        self._process = self._start(environment)
        self._pending = b""
        self._delivered: dict[str, bytes] = {}  # the files of its last answer
        self._deliver: frozenset[str] | None = None  # the files the last request wanted
        # its `ready` is read with the first answer: the worker loads its generator while
        # the caller prepares that request (a fresh `try` reads the store's values meanwhile)
        self._starting = True

    def _start(self, generator_environment: Mapping[str, str]) -> subprocess.Popen:
        seeded = dict(generator_environment, PYTHONHASHSEED=HASH_SEED)
        command = [sys.executable, "-P", "-B", "-m", _WORKER_MODULE,
                   os.fspath(self.identity.autograd), os.fspath(self.identity.torchgen)]
        try:
            return subprocess.Popen(command, cwd=self._scratch, env=seeded,
                                    bufsize=0, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                    stderr=self._errors, start_new_session=True)
        except OSError as error:
            self.close()
            raise GeneratorFailed(f"{self._named()} could not be started: "
                                  f"{error.strerror or error}",
                                  hint=f"check {sys.executable}") from None

    def send_generate(self, location: SpecLocation, remember: Mapping[str, str] | None = None,
                      deliver: Sequence[str] | None = None) -> None:
        """Ask for every file the generator writes for the spec at `location`; the answer
        waits in the pipe until `generated` reads it (the caller works meanwhile; the time
        limit counts from then). `remember` adds values to the worker's memo first (key →
        its JSON text: the store's, for a fresh worker). `deliver`: the only files
        whose texts are wanted (`try` reads two headers; the others are tens of megabytes to
        encode and read). A caller whose own work fails meanwhile closes the worker unread:
        the next one (generation.py: host_worker starts it) shares no delivered files or memo with
        this client."""
        remember = remember or {}
        request = {"request": "generate", "spec": os.fspath(location.root),
                   "layout": location.layout,
                   "remember": [[key, text] for key, text in remember.items()]}
        self._deliver = None if deliver is None else frozenset(deliver)
        if deliver is not None:
            request["deliver"] = sorted(self._deliver)
        self._send(request)
        self._awaiting = True  # until `generated` reads the answer, or the worker closes

    def generated(self, location: SpecLocation) -> HostAnswer:
        """The answer to `send_generate`: the files, or the generator's failure raised."""
        answer = self._answer("generating")
        self._awaiting = False
        self.generations += 1
        self._raise_failure(answer, location, "failed")
        try:
            return self._output(answer)
        except (AttributeError, KeyError, TypeError, ValueError) as error:
            raise self.unreadable(error) from None

    def generate(self, location: SpecLocation, remember: Mapping[str, str] | None = None,
                 deliver: Sequence[str] | None = None) -> HostAnswer:
        """`send_generate`, then `generated`: nothing to do meanwhile."""
        self.send_generate(location, remember, deliver)
        return self.generated(location)

    def unreadable(self, error: Exception) -> GeneratorFailed:
        """An answer not as the protocol says (`error`: what reading it raised): the worker
        is done for."""
        return self._failed(f"answered what gradshard cannot read ({error!r})")

    def _output(self, answer: dict[str, Any]) -> HostAnswer:
        items = tuple(NewItem(*item) for item in answer["items"])
        used = tuple(answer["used"])
        changed = answer["files"]
        names = [n for n in answer["names"] if self._deliver is None or n in self._deliver]
        files = {name: changed[name].encode("utf-8") if name in changed else self._delivered[name]
                 for name in names}
        self._delivered = files  # what the worker's next answer leaves out when unchanged
        return HostAnswer(files, items, used, answer["stats"], float(answer["seconds"]))

    def values(self, keys: Sequence[str]) -> dict[str, str]:
        """The JSON texts of the item values the worker's memo holds among `keys` (a
        generation's used keys: all of them)."""
        self._send({"request": "values", "keys": list(keys)})
        answer = self._answer("reading item values")
        values = answer.get("values")
        if not isinstance(values, dict) or not all(isinstance(v, str) for v in values.values()):
            raise self._failed(f"answered what gradshard cannot read "
                               f"({str(answer.get('failure', answer))[:200]})")
        return values

    def aten_header(self, name: str, location: SpecLocation) -> str:
        """An ATen header the spec's autograd files include (worker.py: aten_header)."""
        self._send({"request": "aten_header", "name": name,
                    "spec": os.fspath(location.root), "layout": location.layout})
        answer = self._answer(f"writing {name}")
        self._raise_failure(answer, location, f"failed to write {name}")
        text = answer.get("text")
        if not isinstance(text, str):
            raise self._failed(f"answered what gradshard cannot read ({str(answer)[:200]})")
        return text

    def _raise_failure(self, answer: dict[str, Any], location: SpecLocation, what: str) -> None:
        """An answer's failure: the generator's refusal of the spec (exit 1), else the
        worker's own (exit 8)."""
        failure = answer.get("failure")
        if failure is None:
            return
        failure = failure if isinstance(failure, dict) else {"message": str(failure)}
        if failure.get("kind") == "generator":
            raise _refusal(failure, location)
        raise self._failed(f"{what}: {failure.get('message', '')}",
                           str(failure.get("traceback", "")))

    @property
    def running(self) -> bool:
        """Alive, and not left with an answer nobody read (the session then replaces it:
        its next answer would be the unread one)."""
        return getattr(self, "_process", None) is not None and not self._awaiting

    def close(self) -> None:
        process = getattr(self, "_process", None)
        if process is not None:
            end_group(process)
            for stream in (process.stdin, process.stdout):
                with contextlib.suppress(OSError):  # a pipe the dead worker left
                    stream.close()
            self._process = None
        self._awaiting = False
        if not self._errors.closed:
            self._errors.close()
        shutil.rmtree(self._scratch, ignore_errors=True)  # its stderr, the worker's out/

    def __enter__(self) -> HostWorker:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    # -----------------------------------------------------------------------------------------

    def _send(self, message: dict[str, Any]) -> None:
        data = memoryview((json.dumps(message, ensure_ascii=False) + "\n").encode("utf-8"))
        try:
            while data:  # an unbuffered pipe may take part of tens of megabytes at a time
                data = data[os.write(self._process.stdin.fileno(), data):]
        except OSError:
            if self._starting:  # what it said before it ended (it could not load)
                self._answer("receiving its first request")
            raise self._failed(f"ended before it was asked to generate "
                               f"({self._ending()})") from None

    def _answer(self, doing: str) -> dict[str, Any]:
        if self._starting:
            self._starting = False
            self._answer("starting")
        line = self._read_line(doing)
        try:
            answer = json.loads(line)
        except ValueError:
            raise self._failed(f"answered what is not JSON while {doing}") from None
        if not isinstance(answer, dict):
            raise self._failed(f"answered what is not an object while {doing}")
        if doing == "starting" and "ready" not in answer:
            failure = answer.get("failure") or {}
            raise self._failed(f"could not load the generator: {failure.get('message', '')}",
                               failure.get("traceback", ""))
        return answer

    def _read_line(self, doing: str) -> bytes:
        """One line of the worker's answers (a generation's is tens of megabytes: read in
        chunks, each searched alone for the line's end)."""
        deadline = time.monotonic() + self.timeout
        stream = self._process.stdout
        chunks = [self._pending] if self._pending else []
        end = self._pending.find(b"\n")
        with selectors.DefaultSelector() as selector:
            selector.register(stream, selectors.EVENT_READ)
            while end < 0:
                remaining = deadline - time.monotonic()
                if remaining <= 0 or not selector.select(remaining):
                    raise self._failed(f"did not finish {doing} within {self.timeout:g} s",
                                       hint="give it longer with --generator-timeout SECONDS")
                chunk = os.read(stream.fileno(), _READ_BYTES)
                if not chunk:
                    raise self._failed(f"ended while {doing} ({self._ending()})")
                chunks.append(chunk)
                found = chunk.find(b"\n")
                if found >= 0:
                    end = sum(len(c) for c in chunks) - len(chunk) + found
        data = b"".join(chunks)
        self._pending = data[end + 1:]
        return data[:end]

    def _failed(self, what: str, detail: str = "", hint: str = "") -> GeneratorFailed:
        """The worker is done for: killed, and its failure said with its last error lines."""
        process = self._process
        if process is not None:
            end_group(process)
        detail = detail or self._tail()
        self.close()
        return GeneratorFailed(f"{self._named()} {what}", detail,
                               hint or "the worker runs the spec's own generator: its last "
                                       "lines say what went wrong")

    def _ending(self) -> str:
        """How the worker ended, read without reaping it (runner.py's rule: its pid, which
        is its group's id, stays taken until end_group has killed the group)."""
        if not hasattr(os, "waitid"):  # no WNOWAIT here: end_group reaps it
            return "it ended"
        deadline = time.monotonic() + 1.0
        while (ended := os.waitid(os.P_PID, self._process.pid,
                                  os.WEXITED | os.WNOHANG | os.WNOWAIT)) is None:
            if time.monotonic() > deadline:
                return "its output closed"
            time.sleep(0.01)
        if ended.si_code == os.CLD_EXITED:
            return f"exit status {ended.si_status}"
        try:
            return f"killed by {signal.Signals(ended.si_status).name}"
        except ValueError:
            return f"killed by signal {ended.si_status}"

    def _tail(self) -> str:
        if self._errors.closed:
            return ""
        self._errors.flush()
        self._errors.seek(0)
        text = self._errors.read().decode("utf-8", errors="replace")
        return "\n".join(text.rstrip().splitlines()[-_DETAIL_LINES:])

    def _named(self) -> str:
        return f"the host worker of {self.identity.label}"


def _refusal(failure: dict[str, Any], location: SpecLocation) -> SpecError:
    """The generator's own error on the spec, at the entry it names."""
    message = str(failure.get("message", "")) or "the generator raised"
    file, entry, line = _located(message, location)
    first = message.splitlines()[0]
    return SpecError([Problem(file, entry, GENERATOR_RAISED_RULE,
                              f"the spec's generator refused it: {first}",
                              "the generator's own message follows; it is the authority "
                              "on its spec:\n" + message, line=line)])


def _located(message: str, location: SpecLocation) -> tuple[SpecFile, str, int | None]:
    """The spec file, entry and line of what the generator was working on: the location
    torchgen's context puts in the message (`in native_functions.yaml line …yaml:LINE`), else
    the entry whose schema the message quotes (load_derivatives names the schema it could not
    match), else the derivatives unplaced."""
    for found in _LOCATED.finditer(message):
        name = Path(found["path"]).name
        for file in SpecFile:
            if file.value == name:
                rest = message[found.end():].lstrip(":").strip().splitlines()
                return file, (rest[0].strip() if rest else ""), int(found["line"])
    for file, key in ((SpecFile.DERIVATIVES, "- name:"), (SpecFile.NATIVE_FUNCTIONS, "- func:")):
        quoted = _quoted_entry(message, location, file, key)
        if quoted is not None:
            return (file, *quoted)
    return SpecFile.DERIVATIVES, "", None


def _quoted_entry(message: str, location: SpecLocation, file: SpecFile,
                  key: str) -> tuple[str, int] | None:
    """The longest entry of `file` whose schema the message quotes, and its line."""
    try:
        lines = location.path_of(file).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return None
    best: tuple[str, int] | None = None
    for number, text in enumerate(lines, 1):
        if text.startswith(key):
            schema = text[len(key):].strip()
            if schema and schema in message and (best is None or len(schema) > len(best[0])):
                best = (schema, number)
    return best
