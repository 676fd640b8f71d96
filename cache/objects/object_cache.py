"""What ninja runs for every compile, splice and precompiled header: the content-addressed
object cache in front of the compiler.

    python -m gradshard.cache.objects.object_cache STORE KEY OUTPUT -- COMMAND...
    python -m gradshard.cache.objects.object_cache --pch GCH REPORT -- COMMAND...

The key (computed by gradshard: the unit's text, its generated headers, the toolchain and
the header fingerprint; for a splice, its base object and parts) names the entry in STORE:
`<key>.o`, its depfile `<key>.d` (a splice has none) and `<key>.sum`, the xxh3-128 of each,
written last (its presence marks the entry whole). A stored object whose bytes match its
sums is copied to OUTPUT with its depfile and nothing runs. One that does not (a restored
cache is input: truncated, flipped bytes) is removed with a warning, and COMMAND runs (the
launcher, if any, leads a compile) and its object and depfile are stored. The compiler's
messages go to OUTPUT.log for gradshard to place at their source; a failed unit leaves no
object. OUTPUT.how, one JSON object, says what happened: `how` ("cached", "compiled",
"failed"), `warnings`, and for a failure that is not the compiler's errors, `failure` (a
signal, or the OSError that stopped it: a full disk, a read-only cache).

With --pch, COMMAND builds the precompiled header GCH (`-o` is added: a temporary beside it,
renamed into place, then its sum `GCH.sum` written) under an exclusive lock (`GCH.lock`), so
concurrent builds build it once and a reader holding the lock never sees half of one;
REPORT.log and REPORT.how say how it went. Nothing runs through a shell.

Everything read from STORE is read as cache/store/regular_files.py reads input: a FIFO, a
device or a file beyond any object's size there is damage, never waited on or read whole.

Imports a few standard modules and xxhash only (no dataclasses, no typing: ~10 ms more a
start): it starts once per unit.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import signal
import stat
import subprocess
import sys
import tempfile
from collections import namedtuple
from collections.abc import Iterator
from pathlib import Path

import xxhash

from gradshard.cache.store.regular_files import (FileTooLarge, RefusedFile, open_regular,
                                                 read_regular)

__all__ = ["DamagedEntry", "Entry", "PCH_MISSING", "RECORD_BYTES", "content_sum", "forget",
           "forget_pch", "is_key", "load", "pch_lock", "pch_problem", "remove_pch_leftovers",
           "save", "stored", "stored_object"]

KEY_LENGTH = 32  # an xxh3-128 hex digest: object keys, splice keys and content sums
_HEX = frozenset("0123456789abcdef")
# The most read of a file in the cache: an object or depfile (the largest are ~600 MB, and
# are read whole), a precompiled header (~500 MB, hashed as it is read), a JSON record (sums,
# a merged unit's record, the header memo, a file list: kilobytes).
OBJECT_BYTES = 1 << 30
PCH_BYTES = 4 << 30
RECORD_BYTES = 16 << 20


def is_key(text: object) -> bool:
    """A key read from the cache names a file: only lowercase hex of the right length, so
    it can hold no separator, no `..` and no absolute part."""
    return isinstance(text, str) and len(text) == KEY_LENGTH and set(text) <= _HEX


def content_sum(data: bytes) -> str:
    return xxhash.xxh3_128_hexdigest(data)


def stored(store: Path, key: str) -> Path:
    if not is_key(key):
        raise ValueError(f"not an object key: {key!r}")
    return store / key[:2] / key


def stored_object(store: Path, key: str) -> Path:
    return stored(store, key).with_suffix(".o")


class DamagedEntry(Exception):
    """A stored file that does not match the sum stored with it."""

    def __init__(self, path: Path, reason: str) -> None:
        super().__init__(f"{path} {reason}")
        self.path = path
        self.reason = reason


# A stored object's bytes and its depfile's (None: a splice has none).
Entry = namedtuple("Entry", ("object", "depfile"))


def load(store: Path, key: str) -> Entry | None:
    """The stored entry, its bytes checked against its sums; None when there is none (no
    sums: never stored, stored by a gradshard that wrote none, or interrupted)."""
    entry = stored(store, key)
    sums = _read_sums(entry.with_suffix(".sum"))
    if sums is None:
        return None
    depfile = None
    if "depfile" in sums:
        depfile = _checked(entry.with_suffix(".d"), sums["depfile"])
    return Entry(_checked(entry.with_suffix(".o"), sums["object"]), depfile)


def _read_sums(path: Path) -> dict[str, str] | None:
    try:
        sums = json.loads(read_regular(path, RECORD_BYTES))
    except FileNotFoundError:
        return None
    except RefusedFile as refused:
        raise DamagedEntry(path, refused.reason) from None
    except (OSError, ValueError):
        raise DamagedEntry(path, "cannot be read as sums") from None
    if (not isinstance(sums, dict) or not is_key(sums.get("object"))
            or not all(k in ("object", "depfile") and is_key(v) for k, v in sums.items())):
        raise DamagedEntry(path, "does not hold an object's sums")
    return sums


def _checked(path: Path, expected: str) -> bytes:
    try:
        data = read_regular(path, OBJECT_BYTES)
    except FileNotFoundError:
        raise DamagedEntry(path, "is missing beside its sums") from None
    except RefusedFile as refused:
        raise DamagedEntry(path, refused.reason) from None
    if content_sum(data) != expected:
        raise DamagedEntry(path, "does not match its stored sum (damaged)")
    return data


def save(store: Path, key: str, entry: Entry) -> None:
    """Store an entry, its sums last: of the bytes written, so a reader checks exactly them."""
    path = stored(store, key)
    sums = {"object": content_sum(entry.object)}
    try:
        if entry.depfile is not None:
            sums["depfile"] = content_sum(entry.depfile)
            _write_atomic(path.with_suffix(".d"), entry.depfile)
        _write_atomic(path.with_suffix(".o"), entry.object)
        _write_atomic(path.with_suffix(".sum"), json.dumps(sums, sort_keys=True).encode())
    except OSError:
        forget(store, key)  # a full disk: what was written of the entry only takes space
        raise


def forget(store: Path, key: str) -> None:
    """Remove an entry (a damaged one: the next compile stores it again). A cache that
    cannot be written keeps it; the entry stays a miss either way."""
    for suffix in (".sum", ".o", ".d"):
        with contextlib.suppress(OSError):
            stored(store, key).with_suffix(suffix).unlink(missing_ok=True)


def _write_atomic(target: Path, data: bytes) -> None:
    """Written beside and renamed; an OSError names the target (a write's own names no
    file), so gradshard can say what could not be written."""
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.")
    except OSError as error:
        raise OSError(error.errno, error.strerror, str(target)) from None
    try:
        with os.fdopen(handle, "wb") as file:
            file.write(data)
        os.replace(temporary, target)
    except OSError as error:
        Path(temporary).unlink(missing_ok=True)
        raise OSError(error.errno, error.strerror, str(target)) from None
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


# ---------------------------------------------------------------------------------------------
# One unit or splice


class Outcome(namedtuple("Outcome", ("how", "warnings", "failure"), defaults=((), None))):
    """What OUTPUT.how records for gradshard: how ("cached", "compiled", "failed"), the
    warnings, and a failure the compiler's messages do not tell (a signal, an OSError)."""

    __slots__ = ()

    def to_json(self) -> str:
        record = {"how": self.how, "warnings": list(self.warnings)}
        if self.failure is not None:
            record["failure"] = self.failure
        return json.dumps(record)


def cached_entry(store: Path, key: str) -> tuple[Entry | None, tuple[str, ...]]:
    """The stored entry, or None; a damaged one is removed and named in a warning."""
    try:
        return load(store, key), ()
    except DamagedEntry as damage:
        forget(store, key)
        return None, (f"the stored object {damage}: removed, and made again",)


def serve_or_run(store: Path, key: str, output: Path, command: list[str]) -> Outcome:
    entry, warnings = cached_entry(store, key)
    if entry is not None:
        if entry.depfile is not None:
            _write_atomic(Path(f"{output}.d"), entry.depfile)
        _write_atomic(output, entry.object)
        return Outcome("cached", warnings)
    output.unlink(missing_ok=True)
    done = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    if done.stdout or done.returncode != 0:
        Path(f"{output}.log").write_bytes(done.stdout)  # warnings too: kept for --raw
    if done.returncode != 0:
        output.unlink(missing_ok=True)
        return Outcome("failed", warnings, exit_failure(command, done.returncode))
    depfile = Path(f"{output}.d")
    save(store, key, Entry(output.read_bytes(),
                           depfile.read_bytes() if depfile.is_file() else None))
    return Outcome("compiled", warnings)


def exit_failure(command: list[str], returncode: int) -> dict | None:
    """A command killed by a signal (the OOM killer, a timeout, a user): none of its own
    messages say so. A plain failure's reasons are in its log."""
    if returncode >= 0:
        return None
    number = -returncode
    try:
        name = signal.Signals(number).name
    except ValueError:
        name = "an unknown signal"
    return {"kind": "signal", "program": Path(command[0]).name, "signal": number, "name": name}


def os_failure(error: OSError) -> dict:
    """An OSError as OUTPUT.how records it, for gradshard to report (ENOSPC: exit 2)."""
    return {"kind": "os", "errno": error.errno or 0,
            "message": error.strerror or str(error),
            "path": None if error.filename is None else str(error.filename)}


def run_unit(store: Path, key: str, output: Path, command: list[str]) -> int:
    how = Path(f"{output}.how")
    Path(f"{output}.log").unlink(missing_ok=True)
    try:
        outcome = serve_or_run(store, key, output, command)
    except OSError as error:
        output.unlink(missing_ok=True)  # not stored: the next build compiles it again
        outcome = Outcome("failed", failure=os_failure(error))
    return _record(how, outcome)


def _record(how: Path, outcome: Outcome) -> int:
    try:
        how.write_text(outcome.to_json())
    except OSError as error:  # the compile directory itself is full: tell ninja at least
        print(f"gradshard: cannot write {how}: {error.strerror}", file=sys.stderr)
        return 1
    return 0 if outcome.how != "failed" else 1


# ---------------------------------------------------------------------------------------------
# Precompiled headers


@contextlib.contextmanager
def pch_lock(gch: Path) -> Iterator[None]:
    """The PCH's lock: held by its builder while it builds, and by a build checking it; the
    kernel releases it when its holder dies, so a temporary found under it is a leftover."""
    with open(_lock_file(Path(f"{gch}.lock")), "r+b") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def _lock_file(path: Path) -> int:
    """The lock file, open. A symbolic link, FIFO or device there came with the cache: it is
    replaced by a file of our own, never followed, opened or waited on (a lock holds no
    data)."""
    with contextlib.suppress(FileNotFoundError):
        if not stat.S_ISREG(os.lstat(path).st_mode):
            path.unlink()
    return os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC,
                   0o644)


PCH_MISSING = "is missing"


def pch_problem(gch: Path) -> str | None:
    """Why the PCH cannot be used (PCH_MISSING, or its damage); None when it matches the sum
    recorded when it was built. Hashing ~450 MB takes ~0.1 s: once per build and PCH."""
    if not gch.is_file():
        return PCH_MISSING
    try:
        recorded = json.loads(read_regular(Path(f"{gch}.sum"), RECORD_BYTES))
    except FileNotFoundError:
        return "has no recorded sum (built by an older gradshard, or interrupted)"
    except RefusedFile as refused:
        return f"has a sum that {refused.reason}"
    except (OSError, ValueError):
        return "has an unreadable sum"
    if not isinstance(recorded, dict) or not is_key(recorded.get("xxh3_128")):
        return "has an unreadable sum"
    if recorded.get("size") != gch.stat().st_size:
        return "is truncated or grown (damaged)"
    try:
        matches = _file_sum(gch) == recorded["xxh3_128"]
    except RefusedFile as refused:
        return refused.reason
    return None if matches else "does not match its recorded sum (damaged)"


def _file_sum(path: Path) -> str:
    """The file's xxh3-128, hashed as it is read (a PCH is ~500 MB): of a regular file up to
    PCH_BYTES only (RefusedFile otherwise)."""
    digest = xxhash.xxh3_128()
    read = 0
    with open_regular(path, PCH_BYTES) as file:
        while read <= PCH_BYTES and (chunk := file.read(1 << 22)):
            digest.update(chunk)
            read += len(chunk)
    if read > PCH_BYTES:
        raise FileTooLarge(path, read, PCH_BYTES)
    return digest.hexdigest()


def remove_pch_leftovers(gch: Path) -> list[Path]:
    """The temporaries of PCH builds that died (call with the lock held: no live builder
    has one). A PCH temporary is as large as the PCH, up to ~550 MB."""
    leftovers = sorted(gch.parent.glob(f"{gch.name}.tmp*"))
    for path in leftovers:
        path.unlink(missing_ok=True)
    return leftovers


def forget_pch(gch: Path) -> None:
    for path in (Path(f"{gch}.sum"), gch):
        path.unlink(missing_ok=True)


def build_pch(gch: Path, command: list[str], log: Path) -> Outcome:
    with pch_lock(gch):
        if pch_problem(gch) is None:
            return Outcome("cached")  # another build made it while this one waited
        remove_pch_leftovers(gch)
        temporary = Path(f"{gch}.tmp{os.getpid()}")
        try:
            return _compile_pch(gch, temporary, command, log)
        finally:
            temporary.unlink(missing_ok=True)


def _compile_pch(gch: Path, temporary: Path, command: list[str], log: Path) -> Outcome:
    done = subprocess.run([*command, "-o", str(temporary)], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT)
    if done.stdout or done.returncode != 0:
        log.write_bytes(done.stdout)
    if done.returncode != 0:
        return Outcome("failed", failure=exit_failure(command, done.returncode))
    recorded = {"size": temporary.stat().st_size, "xxh3_128": _file_sum(temporary)}
    forget_pch(gch)
    os.replace(temporary, gch)
    _write_atomic(Path(f"{gch}.sum"), json.dumps(recorded).encode())
    return Outcome("compiled")


def run_pch(gch: Path, report: Path, command: list[str]) -> int:
    log = Path(f"{report}.log")
    log.unlink(missing_ok=True)
    try:
        outcome = build_pch(gch, command, log)
    except OSError as error:
        outcome = Outcome("failed", failure=os_failure(error))
    return _record(Path(f"{report}.how"), outcome)


def main(argv: list[str]) -> int:
    if len(argv) < 5 or argv[3] != "--":
        print("usage: object_cache STORE KEY OUTPUT -- COMMAND...\n"
              "       object_cache --pch GCH REPORT -- COMMAND...", file=sys.stderr)
        return 2
    if argv[0] == "--pch":
        return run_pch(Path(argv[1]), Path(argv[2]), argv[4:])
    if not is_key(argv[1]):
        print(f"object_cache: not an object key: {argv[1]!r}", file=sys.stderr)
        return 2
    return run_unit(Path(argv[0]), argv[1], Path(argv[2]), argv[4:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
