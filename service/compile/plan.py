"""The compile plan and its prepared units: where the compile directory and the cache are,
the compile directory's files, each unit's key and each kind of precompiled header.

A unit's key hashes its source, the generated headers it includes, the toolchain and its
PCH's key (which hashes the PCH's text, the prelude, the toolchain and the installed headers'
fingerprint): an object stored under a key is served only to the same compile.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import xxhash

from gradshard.cache.objects.object_cache import (PCH_MISSING, RECORD_BYTES, forget_pch, pch_lock,
                                                  pch_problem, remove_pch_leftovers)
from gradshard.cache.store.directory import OBJECTS, PCHS
from gradshard.cache.store.regular_files import read_regular
from gradshard.pipeline.layout.compile_layout import PRELUDE_PATH, CompileLayout, CompileUnit
from gradshard.service.compile.toolchain import Toolchain
from gradshard.service.files.outputs import (KnownHashes, OutputSync, UnsafeOutputName,
                                             cache_damage, stat_signature, sync_outputs,
                                             write_atomic, write_changed)

if TYPE_CHECKING:
    from gradshard.cache.store.database import Store

__all__ = ["CompileDirSync", "CompilePlan", "PreparedUnit", "check_pchs", "prepare_units",
           "read_bounded", "sync_compile_dir"]

FILE_LIST = ".gradshard-files.json"  # what the last sync wrote, so stale files are removed


@dataclass(frozen=True)
class CompilePlan:
    """Where things go: the compile directory, the cache's PCH and object stores."""

    directory: Path
    cache: Path
    toolchain: Toolchain
    jobs: int
    # what this build found damaged in the cache and made again, for the build's report
    warnings: list[str] = field(default_factory=list, compare=False)
    # the session's stored objects found matching their sums, by the stat signatures of
    # their two files then (sound_object)
    sound_objects: dict[str, tuple] = field(default_factory=dict, compare=False)

    @property
    def objects(self) -> Path:
        return self.cache / OBJECTS


def sync_compile_dir(plan: CompilePlan, layout: CompileLayout, store: Store | None,
                     known: KnownHashes | None = None) -> CompileDirSync:
    """The first step of making the compile directory hold the layout's files: the files
    that differ (the caller loads their texts and hands them to `write`). The layout's names
    come from the cache: sync_outputs checks each before making its directory or writing
    it."""
    files = dict(layout.files)
    try:
        sync = sync_outputs(plan.directory, files, known)
    except UnsafeOutputName as unsafe:
        raise cache_damage(unsafe, store) from None
    return CompileDirSync(plan, sync)


@dataclass(frozen=True)
class CompileDirSync:
    """The compile directory's files that differ from the layout's (`stale`), to write."""

    plan: CompilePlan
    sync: OutputSync

    @property
    def stale(self) -> list[str]:
        return self.sync.stale

    def write(self, texts: dict[str, str]) -> int:
        """Write the stale files (`texts`: theirs), remove what the last sync wrote that
        the layout no longer has, and list the files; returns how many were written."""
        listing = self.plan.directory / FILE_LIST
        previous = read_file_list(listing, self.plan.warnings)
        report = self.sync.write(texts, previous)
        write_changed(listing, json.dumps(sorted(self.sync.files)).encode())
        return len(report.written)


def read_file_list(listing: Path, warnings: list[str]) -> list[str]:
    """The names the last sync wrote (none before the first). A list that is not a JSON list
    of names (damaged, or no file: a FIFO) is named in a warning and what is not a name in it
    ignored: files it no longer names may be left behind, never others removed."""
    try:
        loaded = json.loads(read_regular(listing, RECORD_BYTES))
    except FileNotFoundError:
        return []
    except (OSError, ValueError):
        loaded = None
    names = [n for n in loaded if isinstance(n, str)] if isinstance(loaded, list) else []
    if not isinstance(loaded, list) or len(names) != len(loaded):
        warnings.append(f"the compile directory's file list {listing} is damaged: what is not "
                        "a file name in it was ignored (files of an earlier build may be left)")
    return names


def pch_key(plan: CompilePlan, layout: CompileLayout, fingerprint: str, kind: str) -> str:
    """A precompiled header depends on its text, the prelude it includes, the toolchain and
    the installed headers."""
    files = dict(layout.files)
    return xxhash.xxh3_128_hexdigest("\0".join((
        plan.toolchain.identity(), *plan.toolchain.pch_flags(), fingerprint,
        files[f"pch/{kind}.h"], files[PRELUDE_PATH])).encode())


def unit_key(plan: CompilePlan, files: dict[str, str], unit: CompileUnit, source_hash: str,
             pch: str) -> str:
    return xxhash.xxh3_128_hexdigest("\0".join((
        plan.toolchain.identity(), pch, unit.source, source_hash,
        *(f"{h}={files[h]}" for h in unit.headers))).encode())


@dataclass(frozen=True)
class PreparedUnit:
    """One edge of build.ninja: a compile, or a splice of part objects over a stored one."""

    unit: CompileUnit
    source: str  # path as the compiler sees it (relative to the compile directory, or absolute)
    output: str
    key: str
    pch: str  # absolute path of the PCH's header
    parts: tuple[str, ...] = ()  # a splice: the part objects, linked over `base`
    base: str = ""  # a splice: the merged unit's stored object

    @property
    def is_splice(self) -> bool:
        return bool(self.base)


def prepare_units(plan: CompilePlan, layout: CompileLayout, out_files: dict[str, str],
                  out_dir: Path, fingerprint: str
                  ) -> tuple[list[PreparedUnit], list[PreparedUnit], dict[str, Path]]:
    """The units and the merged units with their keys, and each kind's PCH header, for the
    installed headers of this fingerprint."""
    kinds = sorted({u.pch for u in (*layout.units, *layout.merged)})
    pch_headers = {kind: cached_pch_header(plan, kind, pch_key(plan, layout, fingerprint, kind))
                   for kind in kinds}
    files = dict(layout.files)
    units = [prepare_unit(plan, files, u, out_files, out_dir, pch_headers) for u in layout.units]
    merged = [prepare_unit(plan, files, u, out_files, out_dir, pch_headers)
              for u in layout.merged]
    return units, merged, pch_headers


def cached_pch_header(plan: CompilePlan, kind: str, key: str) -> Path:
    """The PCH's header in the cache, as its key says it is (the key hashes its text): a
    header that differs is written again, and a PCH built from it is not used."""
    header = plan.cache / PCHS / key / f"{kind}.h"
    text = (plan.directory / "pch" / f"{kind}.h").read_bytes()
    if read_bounded(header, len(text)) != text:
        if header.exists():
            plan.warnings.append(f"{header} differs from the text its key names (damaged): "
                                 "written again, and its precompiled header rebuilt")
            forget_pch(Path(f"{header}.gch"))
        header.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(header, text)
    return header


def check_pchs(plan: CompilePlan, pch_headers: dict[str, Path],
               sound: dict[str, tuple[int, ...]]) -> None:
    """Once per build, before ninja: a PCH that does not match the sum recorded when it was
    built (a restored cache, a disk error) is removed, so its edge builds it again; the
    temporaries of killed PCH builds are removed. Under the PCH's lock: a build building it
    holds the lock, so its temporary is never taken for a leftover. `sound` is the session's
    memory of the PCHs it found matching (by their stat signature, which holds the change
    time no write can leave as it was): a daemon's builds do not hash ~1.4 GB again each."""
    for header in pch_headers.values():
        gch = Path(f"{header}.gch")
        with pch_lock(gch):
            leftovers = remove_pch_leftovers(gch)
            check_pch(plan, gch, sound)
        if leftovers:
            plan.warnings.append(f"removed {len(leftovers)} temporary file(s) a killed "
                                 f"build of {gch} left")


def check_pch(plan: CompilePlan, gch: Path, sound: dict[str, tuple[int, ...]]) -> None:
    """One PCH, under its lock: hashed against its sum unless the session found it sound at
    the stat signature it has now; removed when it does not match (missing is no damage:
    its edge builds it)."""
    signature = stat_signature(gch)
    if signature is not None and sound.get(str(gch)) == signature:
        return
    sound.pop(str(gch), None)
    problem = pch_problem(gch)
    if problem is None and signature is not None:
        sound[str(gch)] = signature
    elif problem != PCH_MISSING:
        forget_pch(gch)
        plan.warnings.append(f"the precompiled header {gch} {problem}: removed, and rebuilt")


def prepare_unit(plan: CompilePlan, files: dict[str, str], unit: CompileUnit,
                 out_files: dict[str, str], out_dir: Path,
                 pch_headers: dict[str, Path]) -> PreparedUnit:
    if unit.from_out:
        source, source_hash = str((out_dir / unit.source).resolve()), out_files[unit.source]
    else:
        source, source_hash = unit.source, files[unit.source]
    key = unit_key(plan, files, unit, source_hash, pch_headers[unit.pch].parent.name)
    return PreparedUnit(unit, source, f"obj/{unit.name}.o", key, str(pch_headers[unit.pch]))


def read_bounded(path: Path, limit: int) -> bytes | None:
    """The file's bytes; None when it is missing, unreadable, no regular file or larger
    than `limit` (what reads it then takes it for damaged or absent)."""
    try:
        return read_regular(path, limit)
    except OSError:
        return None
