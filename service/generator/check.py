"""The build's generator check: which of gradshard's files are served as they are, and which
from the spec's real generator.

A known generator (service/generator/known.py: one gradshard reproduces) is never run: its
files are gradshard's. Any other is run once per (generator, spec) on this machine and every
file compared (`verdict_for`); what it found is kept in this machine's ledger
(cache/store/verdicts.py) under (the generator's hash, the spec's: `spec_hash`), and the
files that differ are served from the real generator's text, never gradshard's. The key is
never gradshard's hash of a file: the real generator's output is not a function of it (it
reads what gradshard does not, a comment or a key, and prints what it likes), so a spec not
checked here under its generator runs it, whatever gradshard's files, and an undo is served
its own spec's texts.

The modes (`--generator-check`): `check` (the default) serves the real files and reports the
difference once per (generator, spec); `strict` makes any difference an error (for CI);
`skip` serves gradshard's files unchecked, and every build's summary says so. The daemon
checks `later`: it writes gradshard's files first and runs the generator in the background
(`complete`), then builds again, which serves what the check found.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field, replace
from typing import Callable, Mapping

import xxhash

from gradshard.cache.errors import GeneratorFailed, GeneratorMismatch, UsageError
from gradshard.cache.store.database import blob_hash
from gradshard.cache.store.verdicts import CheckRecord, VerdictLedger
from gradshard.service.files.inputs import read_inputs
from gradshard.service.files.spec_location import SpecLocation
from gradshard.service.generator.compare import mismatch_report
from gradshard.service.generator.identity import GeneratorIdentity, Origin

__all__ = ["AUTO", "CHECK", "DEFAULT_TIMEOUT", "GENERATOR_MODES", "GENERATOR_PATHS", "HOST",
           "HOST_STAMP", "PORTED", "GeneratorCheck", "GeneratorVerdict", "SKIP",
           "SPEC_CHANGED", "STRICT", "State", "UNCHECKED_STAMP", "check_now",
           "complete", "failed_verdict", "host_net", "host_verdict", "real_texts",
           "recorded_verdict", "served_files", "spec_hash", "verdict_for", "verdict_stamp"]

CHECK, STRICT, SKIP = "check", "strict", "skip"
GENERATOR_MODES = (CHECK, STRICT, SKIP)
# which code writes a build's files (`--generator-path`): the spec's own generator, run by
# gradshard's worker (service/host/); gradshard's renderers (the ported path); or auto: the
# ported path for a generator it reproduces, the host path for any other where the build
# writes files only (the host path does not compile yet: service/outcome.py BuildRequest)
HOST, PORTED, AUTO = "host", "ported", "auto"
GENERATOR_PATHS = (AUTO, HOST, PORTED)
HOST_STAMP = "host"  # a host build's verdict stamp: its files are the generator's own
# the ledger's spec column for the host path's net (`host_net`): once per generator
HOST_NET = "host path"
DEFAULT_TIMEOUT = 900.0  # seconds; a whole run takes ~5 s on 2 cores
# the stamp of a spec not yet checked (State.UNCHECKED is "no generator"): never up to date
UNCHECKED_STAMP = "unchecked"
SPEC_CHANGED = "the spec changed while its generator ran"  # nothing recorded: check again


class State:
    """What a build knows of its files against its generator."""

    KNOWN = "known"  # a generator gradshard reproduces: never run
    UNCHECKED = "unchecked"  # no generator to check against (said)
    SKIPPED = "skipped"  # --generator-check skip
    MATCHES = "matches"  # run and compared: every file the same
    DIFFERS = "differs"  # run and compared: the differing files served from it
    PENDING = "pending"  # the daemon checks in the background
    FAILED = "failed"  # the generator failed (raised, exited, killed, timed out): unverified
    HOST = "host"  # the host path: the files are the generator's own (service/host/)


@dataclass(frozen=True)
class GeneratorCheck:
    """How a build checks its generator: the mode, the generator's time limit, whether the
    check may wait until after the files are written (the daemon's `later`), and which path
    writes the files (`path`, one of GENERATOR_PATHS)."""

    mode: str = CHECK
    timeout: float = DEFAULT_TIMEOUT
    later: bool = False
    path: str = AUTO

    def __post_init__(self) -> None:
        if self.mode not in GENERATOR_MODES:
            raise UsageError(f"--generator-check {self.mode}: not a mode",
                             "one of " + ", ".join(GENERATOR_MODES))
        if self.path not in GENERATOR_PATHS:
            raise UsageError(f"--generator-path {self.path}: not a path",
                             "one of " + ", ".join(GENERATOR_PATHS))
        if not self.timeout > 0:
            raise UsageError(f"--generator-timeout {self.timeout}: not a positive number of "
                             "seconds", f"e.g. {int(DEFAULT_TIMEOUT)}")


@dataclass(frozen=True)
class GeneratorVerdict:
    """What the build serves: per file it differs on (index name), the real generator's
    hash ("" when the real generator writes no such file); the files still to check (the
    daemon's), the loud report when this (generator, spec) differs for the first time, and
    why the check failed."""

    identity: GeneratorIdentity
    mode: str
    state: str
    spec: str
    real: Mapping[str, str] = field(default_factory=dict)
    differing: tuple[str, ...] = ()  # the files served from the real generator (or left out)
    pending: tuple[str, ...] = ()
    checked: tuple[str, ...] = ()  # the files this build (or background check) ran it for
    ours: Mapping[str, str] = field(default_factory=dict, repr=False)  # for `complete`
    report: str | None = None
    failure: str | None = None
    seconds: float = 0.0

    def summary(self) -> str:
        """The build summary's line (every build: what was served, or that it is unchecked)."""
        name = self.identity.label
        return {
            State.KNOWN: f"generator: {name}, known" + (
                "" if self.identity.origin == Origin.BESIDE else f" ({self.identity.origin})"),
            State.UNCHECKED: f"generator: none found ({self.identity.origin}); files unchecked",
            State.SKIPPED: f"generator: {name}, not known; check skipped "
                           f"(--generator-check skip): gradshard's files are unverified",
            State.MATCHES: f"generator: {name}, not known; checked: every file the same",
            State.DIFFERS: f"generator: {name}, not known; {len(self.differing)} files differ and "
                           f"are written from it: {', '.join(self.differing)}",
            State.PENDING: f"generator: {name}, not known; {len(self.pending)} files being "
                           f"checked in the background",
            State.FAILED: f"generator: {name}, not known; it failed, gradshard's files are "
                          f"unverified: {self.failure}",
            State.HOST: f"generator: {name}, run on the host path (its own code wrote every "
                        f"file)" + self._net(),
        }[self.state]

    def _net(self) -> str:
        """What the host path's net found, when it ran (host_net)."""
        if self.failure:
            return f"; its whole run to check the host path failed: {self.failure}"
        if self.differing:
            return (f"; {len(self.differing)} files differ from its whole run: "
                    f"{', '.join(self.differing)}")
        if self.checked:
            return (f"; checked against its whole run: every file the same "
                    f"({self.seconds:.1f} s, once per generator)")
        return ""

    def to_json(self) -> dict:
        return {"generator": self.identity.to_json(), "summary": self.summary(),
                "check": self.mode, "state": self.state,
                "differing": list(self.differing), "pending": list(self.pending),
                "checked": list(self.checked),
                "failure": self.failure, "seconds": round(self.seconds, 3)}


def spec_hash(fingerprint: Mapping[str, str]) -> str:
    """The spec's identity for verdicts: the hash of its inputs' fingerprint
    (service/files/inputs.py: InputBytes.fingerprint), which hashes every file the
    generator reads from the spec as bytes (the four YAML files, every template torchgen
    renders), not gradshard's reading of them, with gradshard's code and templates (so
    gradshard's files, which the record is a difference from, are a function of it too),
    the layout and the spec's place (its root directory: torchgen prints its templates' path
    relative to itself, so the same bytes elsewhere are another output). A copy of the spec
    in another directory, or a checkout at another path, is therefore another spec: its first
    build runs an unknown generator again (a known one is never run)."""
    return xxhash.xxh3_128_hexdigest(json.dumps(dict(sorted(fingerprint.items()))).encode())


def verdict_stamp(identity: GeneratorIdentity, check: GeneratorCheck, spec: str,
                  ledger: VerdictLedger) -> str:
    """What a build's up-to-date check compares of its generator: nothing to check (""), the
    files this machine found differing for this spec, or "unchecked" (never up to date)."""
    if identity.known or check.mode == SKIP:
        return ""
    record = ledger.check_record(identity.hash, spec)
    if record is None:
        return UNCHECKED_STAMP
    # the real hashes too: a later run (`gradshard generator`) may record other real texts
    return xxhash.xxh3_64_hexdigest(json.dumps([dict(record.served),
                                                dict(record.extra)]).encode())


def verdict_for(identity: GeneratorIdentity, check: GeneratorCheck, location: SpecLocation,
           spec: str, ours: Mapping[str, str], load_ours: Callable[[list[str]], dict[str, str]],
           ledger: VerdictLedger) -> GeneratorVerdict:
    """The verdict for a build's files (`ours`: index name → hash): this spec's record in
    the ledger, else a run of the generator now, or (later) pending, serving gradshard's
    files meanwhile. Raises GeneratorFailed when the generator fails and GeneratorMismatch
    for a difference under `strict`."""
    verdict = GeneratorVerdict(identity, check.mode, _first_state(identity, check), spec)
    if verdict.state == State.UNCHECKED and check.mode == STRICT:
        raise GeneratorFailed(f"no generator to check the files against: {identity.origin}",
                              hint="--generator-check strict needs the spec's generator: "
                                   "install torch, or put its torchgen beside the spec")
    if verdict.state != State.PENDING:
        return verdict
    started = time.perf_counter()
    record = ledger.check_record(identity.hash, spec)
    if record is None and check.later:  # no other spec's texts: gradshard's, said pending
        return replace(verdict, pending=tuple(sorted(ours)), ours=dict(ours))
    checked: tuple[str, ...] = ()
    if record is None:
        record = _run_and_record(identity, location, spec, ours, ledger, check.timeout)
        checked = tuple(sorted(ours))
    verdict = replace(_from_record(verdict, record, ours), checked=checked,
                      seconds=time.perf_counter() - started)
    return _reported(verdict, ours, load_ours, ledger, check)


def complete(verdict: GeneratorVerdict, location: SpecLocation, ledger: VerdictLedger,
             timeout: float, started: Callable[[int], None] | None = None) -> GeneratorVerdict:
    """The daemon's background check of a pending verdict: the generator run on the spec and
    what it found recorded (the next build serves it); the verdict says what differs.
    `started` is given the generator's process group (the daemon stops it)."""
    begun = time.perf_counter()
    record = _run_and_record(verdict.identity, location, verdict.spec, verdict.ours, ledger,
                             timeout, started)
    return replace(_from_record(verdict, record, verdict.ours), checked=verdict.pending,
                   pending=(), seconds=time.perf_counter() - begun)


def check_now(identity: GeneratorIdentity, location: SpecLocation, spec: str,
              ours: Mapping[str, str], load_ours: Callable[[list[str]], dict[str, str]],
              ledger: VerdictLedger, timeout: float) -> GeneratorVerdict:
    """`gradshard generator`: the generator run now, whatever this machine recorded and
    whether or not gradshard knows it, every file compared and recorded, any difference
    reported."""
    started = time.perf_counter()
    record = _run_and_record(identity, location, spec, ours, ledger, timeout)
    verdict = _from_record(GeneratorVerdict(identity, CHECK, State.MATCHES, spec), record, ours)
    report = None
    if verdict.real:
        report = _report(verdict, ours, load_ours, ledger)
        ledger.mark_reported(identity.hash, spec)
    return replace(verdict, report=report, checked=tuple(sorted(ours)),
                   seconds=time.perf_counter() - started)


def host_verdict(identity: GeneratorIdentity, check: GeneratorCheck,
                 spec: str) -> GeneratorVerdict:
    """A host-path build's: the generator wrote the files itself."""
    return GeneratorVerdict(identity, check.mode, State.HOST, spec)


def host_net(identity: GeneratorIdentity, check: GeneratorCheck, location: SpecLocation,
             spec: str, ours: Mapping[str, str], load_ours: Callable[[list[str]], dict[str, str]],
             ledger: VerdictLedger) -> GeneratorVerdict:
    """A host-path build's verdict, its files written: on the generator's first host build
    on this machine (and on every build under `strict`), the generator's whole run on the
    spec compared with them. The net checks the worker (its memo, its captured files), so it
    runs once per generator, not per spec: a save costs none. A difference is reported
    (under `strict`, an error); the files written stay the host path's."""
    verdict = host_verdict(identity, check, spec)
    if check.mode == SKIP or not identity.hash or (
            check.mode != STRICT and ledger.check_record(identity.hash, HOST_NET) is not None):
        return verdict
    started = time.perf_counter()
    try:
        record = _run_and_record(identity, location, spec, ours, ledger, check.timeout,
                                 recorded_as=HOST_NET)
    except GeneratorFailed as failure:
        if check.mode == STRICT:
            raise
        return replace(verdict, failure=str(failure), seconds=time.perf_counter() - started)
    differing = dict(record.served)
    verdict = replace(verdict, checked=tuple(sorted(ours)), differing=tuple(sorted(differing)),
                      seconds=time.perf_counter() - started)
    if not differing:
        return verdict
    report = mismatch_report(identity.label, _both_texts(
        replace(verdict, real=differing), ours, load_ours, ledger), heading=(
        f"the host path wrote {len(differing)} files otherwise than a whole run of "
        f"{identity.label} on the same spec: a fault of gradshard's worker, or a generator "
        f"whose output is not a function of its spec (the files are kept as written):"))
    if check.mode == STRICT:
        raise GeneratorMismatch(verdict.differing, report,
                                "build with --no-cache to take the worker's memo out, and "
                                "report the difference")
    return replace(verdict, report=report)


def recorded_verdict(identity: GeneratorIdentity, check: GeneratorCheck, spec: str,
                     ledger: VerdictLedger) -> GeneratorVerdict:
    """What an up-to-date build says of its generator: what this machine recorded for the
    spec (the files it serves were written by the build that checked)."""
    verdict = GeneratorVerdict(identity, check.mode, _first_state(identity, check), spec)
    if verdict.state != State.PENDING:
        return verdict
    record = ledger.check_record(identity.hash, spec)
    differing = record.differing if record else ()
    return replace(verdict, state=State.DIFFERS if differing else State.MATCHES,
                   differing=differing)


def failed_verdict(identity: GeneratorIdentity, check: GeneratorCheck, spec: str,
                   failure: GeneratorFailed) -> GeneratorVerdict:
    """The generator failed: gradshard's own files are served, unverified."""
    return GeneratorVerdict(identity, check.mode, State.FAILED, spec, failure=str(failure))


def served_files(files: Mapping[str, str], verdict: GeneratorVerdict) -> dict[str, str]:
    """The build's files (index name → hash) as served: the real generator's where it
    differs, without the files it does not write."""
    served = {n: h for n, h in files.items() if verdict.real.get(n, h) != ""}
    served.update({n: h for n, h in verdict.real.items() if h})
    return served


def _first_state(identity: GeneratorIdentity, check: GeneratorCheck) -> str:
    if identity.hash == "":
        return State.UNCHECKED
    if identity.reproduced:
        return State.KNOWN
    return State.SKIPPED if check.mode == SKIP else State.PENDING


def _from_record(verdict: GeneratorVerdict, record: CheckRecord,
                 ours: Mapping[str, str]) -> GeneratorVerdict:
    """The verdict as this spec's record says: its differing files (and those only the real
    generator writes) served from the real generator."""
    real = dict(record.served)
    return replace(verdict, state=State.DIFFERS if real else State.MATCHES, real=real,
                   differing=tuple(sorted(real)), ours=dict(ours))


def _run_and_record(identity: GeneratorIdentity, location: SpecLocation, spec: str,
                    ours: Mapping[str, str], ledger: VerdictLedger, timeout: float,
                    started: Callable[[int], None] | None = None,
                    recorded_as: str | None = None) -> CheckRecord:
    """Run the generator on the spec as it is on disk and record what differs under (its
    generator, the spec, or `recorded_as`); a spec saved meanwhile is not what was built, and
    is never recorded as checked."""
    from gradshard.service.generator.runner import run_generator  # only when one runs

    output = run_generator(identity, location, timeout, started)
    if spec_hash(read_inputs(location).fingerprint()) != spec:
        raise GeneratorFailed(SPEC_CHANGED,
                              hint="build again: the check runs on the spec as it is then")
    _check_text(output.files)
    real = {n: blob_hash("text", data) for n, data in output.files.items()}  # as files are
    differing = {n: real.get(n, "") for n, mine in ours.items() if real.get(n, "") != mine}
    extra = {n: h for n, h in real.items() if n not in ours}
    texts = {real[n]: output.files[n] for n in [*differing, *extra] if n in output.files}
    ledger.record(identity.hash, recorded_as or spec, texts, {**differing, **extra}, extra)
    return CheckRecord({**differing, **extra}, extra, False)


def _check_text(files: Mapping[str, bytes]) -> None:
    """Generated files are UTF-8 text: anything else is served by no build (its text could
    not be written as it is)."""
    for name, data in files.items():
        try:
            data.decode("utf-8")
        except UnicodeDecodeError as error:
            raise GeneratorFailed(f"the spec's generator wrote {name}, which is not UTF-8 text "
                                  f"(byte {error.start})",
                                  hint="a generator writes C++ and Python text; check it") \
                from None


def _reported(verdict: GeneratorVerdict, ours: Mapping[str, str],
              load_ours: Callable[[list[str]], dict[str, str]], ledger: VerdictLedger,
              check: GeneratorCheck) -> GeneratorVerdict:
    """The loud report, once per (generator, spec), and always under `strict` (an error)."""
    if not verdict.real:
        return verdict
    record = ledger.check_record(verdict.identity.hash, verdict.spec)
    if record is not None and record.reported and check.mode != STRICT:
        return verdict
    report = _report(verdict, ours, load_ours, ledger)
    if check.mode == STRICT:
        raise GeneratorMismatch(verdict.differing, report,
                                "--generator-check check writes the real generator's files "
                                "instead; gradshard reproduces torchgen 2.13.0")
    # marked reported by the build once it is shown (a failed compile shows it next time)
    return replace(verdict, report=report)


def _report(verdict: GeneratorVerdict, ours: Mapping[str, str],
            load_ours: Callable[[list[str]], dict[str, str]], ledger: VerdictLedger) -> str:
    """The report of the verdict's differing files, both sides' texts loaded."""
    return mismatch_report(verdict.identity.label, _both_texts(verdict, ours, load_ours, ledger))


def _both_texts(verdict: GeneratorVerdict, ours: Mapping[str, str],
                load_ours: Callable[[list[str]], dict[str, str]],
                ledger: VerdictLedger) -> dict[str, tuple[str | None, str | None]]:
    mine = load_ours([n for n in verdict.real if n in ours])
    both = {}
    for name, digest in verdict.real.items():
        data = ledger.real_text(digest) if digest else None
        both[name] = (mine.get(name), data.decode("utf-8", "replace") if data else None)
    return both


def real_texts(names: list[str], verdict: GeneratorVerdict,
               ledger: VerdictLedger) -> dict[str, str]:
    """The real generator's texts of served files (by index name), each checked against its
    hash; a text the ledger lost is a failure of the check, never gradshard's text instead
    (its verdicts are forgotten, so the next build runs the generator again)."""
    texts = {}
    for name in names:
        data = ledger.real_text(verdict.real[name])
        if data is None:
            ledger.forget(verdict.identity.hash)
            raise GeneratorFailed(f"the real generator's {name} is missing from this "
                                  f"machine's verdicts", hint="build again: the check reruns")
        texts[name] = data.decode("utf-8")  # checked when recorded (_check_text)
    return texts
