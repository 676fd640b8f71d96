"""`gradshard affected`: what a spec edit changes, down to each node, binding and kernel.

Both sides are built on the engine (so the answer is the build's own, and cheap when
cached): the current spec, and the baseline, which is the last build of this spec recorded
in the cache, another spec directory (--against), or the spec files of a git revision
(--since). The comparison is by content hash: an entry whose text changed, a node or
binding whose generated code changed, a file whose bytes changed, an autograd kernel whose
code changed (named by the kernel's own record, read only for the kernels that changed).
Nothing is written.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from gradshard.cache.engine.core import Engine, StaleCache
from gradshard.cache.errors import UsageError
from gradshard.cache.graph.kernel_family import family_of_file, kernel_unit_fields
from gradshard.cache.graph.manifest import EntryStamp, HostIndex, Manifest
from gradshard.pipeline.layout.compile_layout import function_op
from gradshard.pipeline.problems import SpecFile
from gradshard.pipeline.render.variable_type_files import RenderedKernel, library_key
from gradshard.service.files.inputs import read_inputs
from gradshard.service.files.spec_location import SpecLocation, locate_spec
from gradshard.service.graph_run import BuiltSpec, built_spec, new_engine, recorded_spec
from gradshard.service.query.host_affected import host_index_of, host_side
from gradshard.service.query.revision import git_inputs

if TYPE_CHECKING:
    from gradshard.cache.store.database import LastBuild
    from gradshard.service.open_cache import OpenCache

__all__ = ["Affected", "OpChange", "affected", "affected_command", "affected_json", "compare",
           "affected_text", "changed_ops"]

ADDED, REMOVED, CHANGED = "added", "removed", "changed"


@dataclass(frozen=True)
class EntryChange:
    file: SpecFile
    name: str
    line: int
    change: str


@dataclass(frozen=True)
class KernelChange:
    """An autograd kernel whose code changed: its wrapper name, the dispatch key it is
    registered at, and its file."""

    name: str
    key: str
    file: str
    change: str


@dataclass(frozen=True)
class OpChange:
    """An op (function_op: sin for sin, sin_, sin.out) whose generated autograd code changed:
    a node it creates (its backward code) or a kernel of its (where its forward-mode code
    is, and what saves the node's inputs)."""

    op: str
    nodes: bool
    kernels: bool
    # which: the changed nodes it creates (MulBackward0) and its changed kernels by function
    # (mul.Tensor, mul_.Tensor): what `affected --tests` looks for in what tests reach
    node_names: tuple[str, ...] = ()
    kernel_functions: tuple[str, ...] = ()


@dataclass(frozen=True)
class Affected:
    baseline: str  # what the spec was compared with, in words
    entries: list[EntryChange]
    nodes: dict[str, str]  # name → change
    bindings: dict[str, str]
    files: dict[str, str]
    kernels: list[KernelChange]
    ops: tuple[OpChange, ...] = ()  # when asked for (affected --tests)
    entries_compared: bool = True  # not after a host build (its generator parses the spec)

    def entries_of(self, file: SpecFile) -> list[EntryChange]:
        return [e for e in self.entries if e.file is file]


def affected(location: SpecLocation, session: OpenCache, against: str | None,
             since: str | None, with_ops: bool = False) -> Affected:
    """What the spec's edits change since a baseline: the last build, a spec directory or a
    git revision; a cache found damaged on the way is set aside and it runs again, once.
    `with_ops`: also the ops whose autograd code changed (their kernels are read)."""
    for attempt in session.attempts():
        with attempt:
            return affected_command(location, session, against, since, with_ops)
    raise AssertionError("the last attempt returns or raises")


def affected_command(location: SpecLocation, session: OpenCache, against: str | None,
                     since: str | None, with_ops: bool = False) -> Affected:
    if against is None and since is None:
        host = _last_host_build(location, session)
        if host is not None:
            return _host_affected(location, session, *host, with_ops)
    current = built_spec(read_inputs(location), session.open(), session.memory)
    if against is not None:
        other = locate_spec(against)
        baseline = built_spec(read_inputs(other), session.open(), session.memory)
        words = f"the spec at {other.root}"
    elif since is not None:
        inputs, words = git_inputs(location, since)
        baseline = built_spec(inputs, session.open(), session.memory)
    else:
        baseline, words = _last_build(location, session)
    engine = new_engine(session.open(), session.memory)
    result = compare(baseline, current, words, engine)
    return replace(result, ops=changed_ops(baseline, current, engine)) if with_ops else result


def _last_host_build(location: SpecLocation, session: OpenCache
                     ) -> tuple[LastBuild, HostIndex] | None:
    """The last build of the spec and its index, when it took the host path."""
    store = session.open()
    last = store.latest_manifest(spec=str(location.root.resolve())) if store else None
    index = host_index_of(store, last.manifest) if last is not None else None
    return (last, index) if index is not None else None


def _host_affected(location: SpecLocation, session: OpenCache, last: LastBuild,
                   index: HostIndex, with_ops: bool) -> Affected:
    """After a host build: the spec's own generator run now, compared with that build
    (service/query/host_affected.py)."""
    if with_ops:
        raise UsageError(f"the last build of the spec at {location.root} took the host path: "
                         "`affected --tests` reads the ported path's kernels for now",
                         "build with --generator-path ported first")
    before, now = host_side(location, session, last.out, index)
    kernels = [KernelChange(name, "", "", change) for name, change in
               sorted(_changes(before["kernels"], now["kernels"]).items())]
    return Affected(f"the last build (#{last.build}, into {last.out}) on the host path: its "
                    f"generator run on the spec now (entries are not compared)", [],
                    _changes(before["nodes"], now["nodes"]),
                    _changes(before["bindings"], now["bindings"]),
                    _changes(before["files"], now["files"]), kernels, entries_compared=False)


def _last_build(location: SpecLocation, session: OpenCache) -> tuple[BuiltSpec, str]:
    store = session.open()
    last = store.latest_manifest(spec=str(location.root.resolve())) if store else None
    if last is not None:
        engine = new_engine(store, session.memory)
        try:
            manifest = engine.record(engine.ref(last.manifest, Manifest))
            words = f"the last build (#{last.build}, into {last.out})"
            return recorded_spec(engine, manifest), words
        except StaleCache:
            pass  # collected or damaged: as if never recorded
    raise UsageError(f"no build of the spec at {location.root} is recorded in the cache",
                     "run `gradshard build` first, or compare with --against DIR or "
                     "--since REV")


# ---------------------------------------------------------------------------------------------
# The comparison


def compare(baseline: BuiltSpec, current: BuiltSpec, words: str, engine: Engine) -> Affected:
    return Affected(words, _entry_changes(baseline.entries, current.entries),
                    _changes(baseline.index.nodes, current.index.nodes),
                    _changes(baseline.index.bindings, current.index.bindings),
                    _changes(baseline.index.files, current.index.files),
                    _kernel_changes(baseline.index.kernels + baseline.index.family_kernels,
                                    current.index.kernels + current.index.family_kernels, engine))


def changed_ops(baseline: BuiltSpec, current: BuiltSpec, engine: Engine
                ) -> tuple[OpChange, ...]:
    """The ops of the current spec whose VariableType kernels changed, or that create a node
    whose code changed (try's rule: service/live/plan.py _changed_ops)."""
    old_nodes = dict(baseline.index.nodes)
    changed_nodes = {n for n, h in current.index.nodes if old_nodes.get(n) != h}
    old_kernels = dict(baseline.index.kernels)
    units = list(current.index.kernels)
    records = engine.records([engine.ref(h, RenderedKernel) for _, h in units])
    nodes_of: dict[str, dict[str, None]] = {}  # op → its changed nodes, in order
    kernels_of: dict[str, dict[str, None]] = {}  # op → its changed kernels' functions
    for (unit, code), record in zip(units, records):
        function = kernel_unit_fields(unit)[1]
        op = function_op(function)
        nodes = nodes_of.setdefault(op, {})
        kernels = kernels_of.setdefault(op, {})
        if record.node in changed_nodes:
            nodes[record.node] = None
        if old_kernels.get(unit) != code:
            kernels[function] = None
    return tuple(OpChange(op, bool(nodes_of[op]), bool(kernels_of[op]), tuple(nodes_of[op]),
                          tuple(kernels_of[op]))
                 for op in sorted(nodes_of) if nodes_of[op] or kernels_of[op])


def _kernel_changes(before: tuple[tuple[str, str], ...], after: tuple[tuple[str, str], ...],
                    engine: Engine) -> list[KernelChange]:
    """Kernels by unit (`<file> <function> <n>`, cache/graph/variable_type_group.py); each changed
    one named by its RenderedKernel (the baseline's for a removed one)."""
    old, new = dict(before), dict(after)
    return [_kernel_change(unit, change, new[unit] if change != REMOVED else old[unit], engine)
            for unit, change in sorted(_changes(before, after).items())]


def _kernel_change(unit: str, change: str, code: str, engine: Engine) -> KernelChange:
    """A VariableType kernel, or one of another family's (cache/graph/kernel_family.py)."""
    file, function = kernel_unit_fields(unit)
    family = family_of_file(file)
    try:
        record = engine.record(engine.ref(
            code, family.kernel.output if family else RenderedKernel))
    except StaleCache:  # a baseline's kernel collected since: named by its function
        return KernelChange(function, "", file, change)
    key = family.dispatch_key if family else library_key(record.key)
    return KernelChange(record.wrapper, key, file, change)


def _changes(before: tuple[tuple[str, str], ...], after: tuple[tuple[str, str], ...]
             ) -> dict[str, str]:
    old, new = dict(before), dict(after)
    changes = {}
    for name in new:
        if name not in old:
            changes[name] = ADDED
        elif old[name] != new[name]:
            changes[name] = CHANGED
    for name in old:
        if name not in new:
            changes[name] = REMOVED
    return changes


def _entry_changes(before: tuple[tuple[SpecFile, EntryStamp], ...],
                   after: tuple[tuple[SpecFile, EntryStamp], ...]) -> list[EntryChange]:
    """Entries by file and name (the n-th entry of a repeated name pairs with the n-th);
    an entry that only moved is unchanged."""
    old, new = _keyed(before), _keyed(after)
    changes = []
    for key, stamp in new.items():
        if key not in old:
            changes.append(EntryChange(key[0], stamp.label, stamp.line, ADDED))
        elif old[key].hash != stamp.hash:
            changes.append(EntryChange(key[0], stamp.label, stamp.line, CHANGED))
    changes.extend(EntryChange(key[0], stamp.label, stamp.line, REMOVED)
                   for key, stamp in old.items() if key not in new)
    return sorted(changes, key=lambda c: (list(SpecFile).index(c.file), c.line, c.name))


def _keyed(stamps: tuple[tuple[SpecFile, EntryStamp], ...]
           ) -> dict[tuple[SpecFile, str, int], EntryStamp]:
    seen: Counter[tuple[SpecFile, str]] = Counter()
    keyed = {}
    for file, stamp in stamps:
        seen[(file, stamp.label)] += 1
        keyed[(file, stamp.label, seen[(file, stamp.label)])] = stamp
    return keyed


# ---------------------------------------------------------------------------------------------
# Reporting

_FILE_KEYS = (("derivatives", SpecFile.DERIVATIVES), ("native_functions", SpecFile.NATIVE_FUNCTIONS),
              ("tags", SpecFile.TAGS), ("deprecated", SpecFile.DEPRECATED))


_TITLES = {"derivatives": "derivatives entries", "native_functions": "native functions",
           "tags": "tags", "deprecated": "deprecated signatures"}


def affected_json(result: Affected, location: SpecLocation) -> dict:
    """Lists under the keys the issue names: entries with file:line, nodes and bindings by
    name, files by path; `changes` says how each one changed."""
    report: dict = {"ok": True, "against": result.baseline}
    for key, file in _FILE_KEYS:
        report[key] = [{"name": e.name, "file": str(location.path_of(file)), "line": e.line,
                        "change": e.change} for e in result.entries_of(file)] \
            if result.entries_compared else None
    report["autograd_nodes"] = sorted(result.nodes)
    report["python_bindings"] = sorted(result.bindings)
    report["kernels"] = [{"name": k.name, "key": k.key, "file": k.file} for k in result.kernels]
    report["files"] = sorted(result.files)
    report["changes"] = {"autograd_nodes": result.nodes, "python_bindings": result.bindings,
                         "kernels": {f"{k.name} {k.key}": k.change for k in result.kernels},
                         "files": result.files}
    return report


def affected_text(result: Affected, location: SpecLocation) -> str:
    lines = [f"gradshard affected: compared with {result.baseline}"]
    for key, file in _FILE_KEYS:
        entries = result.entries_of(file)
        if result.entries_compared and (
                entries or file in (SpecFile.DERIVATIVES, SpecFile.NATIVE_FUNCTIONS)):
            lines.append(f"  {_TITLES[key]} ({len(entries)})")
            lines.extend(f"    {e.change:8} {e.name}  {location.path_of(file)}:{e.line}"
                         for e in entries)
    kernels = {f"{k.name} ({k.key}, {k.file})" if k.key else k.name: k.change
               for k in result.kernels}
    for title, changes in (("autograd nodes", result.nodes), ("python bindings", result.bindings),
                           ("autograd kernels", kernels), ("files", result.files)):
        lines.append(f"  {title} ({len(changes)})")
        lines.extend(f"    {change:8} {name}" for name, change in sorted(changes.items()))
    return "\n".join(lines)
