"""Sharded kernel files other than VariableType's: TraceType_0..9 and ADInplaceOrViewType_0..1,
each with its Everything file, built the way cache/graph/variable_type_group.py builds VariableType.

    functions (the family's order) ─► group.kernel_file ×file (its functions, by shard key):
        <family kernel task> ×function ─► assemble.<family> (its kernels, the spec template)
    every file's kernels, in the family's order ─► assemble.<family> (Everything)

A function's kernel task reads the function (and, for a family that needs it, its match) and
gradshard's templates, and gives the function's rendered kernels (none, one or several); a
file whose kernels' texts are unchanged is not assembled again, and an edit reaching one
file's functions maps only that file's tasks (the other files' groups answer from their
index). Which functions a family iterates, in which order and by which key it shards are
the family's (`KernelFamily`), decided by its pipeline module.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, NamedTuple, Sequence

from gradshard.cache.engine.core import Engine
from gradshard.cache.engine.jobs import group_of, Task
from gradshard.cache.engine.values import Value
from gradshard.cache.graph.group_records import RENDER, FailureLog, Labels, Outputs
from gradshard.pipeline.match.match_infos import FunctionMatch
from gradshard.pipeline.parse.native import NativeFunction
from gradshard.pipeline.problems import Failure
from gradshard.pipeline.releases import Release

__all__ = ["FAMILIES", "FamilyMember", "KernelFamily", "family_files", "family_of_file",
           "kernel_owners", "kernel_unit_fields", "register", "units_in_order"]


@dataclass(frozen=True)
class KernelFamily:
    """One sharded file family: its file stem and spec template, its kernel task (per
    function: (function, [match,] templates) → rendered kernels, fanned out, each with its
    `wrapper` name) and file task ((rendered kernels, spec template, layout, shard id) →
    Text), its shards (the items' shard keys → each file's positions, with `Everything`)
    and the dispatch key its kernels register at."""

    stem: str
    template: str
    kernel: Task
    file: Task
    shards: Callable[[Sequence[str], Release], dict[str, list[int]]]
    reads_match: bool
    dispatch_key: str


class FamilyMember(NamedTuple):
    """A function a family renders: its record, its match (when the family reads one), its
    name (the tasks' ident) and its shard key."""

    function: Value
    match: Value | None
    name: str
    shard_key: str


# Families by stem: the file group names its family by a Text input (part of its key).
FAMILIES: dict[str, KernelFamily] = {}


def register(family: KernelFamily) -> KernelFamily:
    FAMILIES[family.stem] = family
    return family


def family_of_file(file: str) -> KernelFamily | None:
    """The family whose file this is (`TraceType_3.cpp`), or None (VariableType's)."""
    stem = file.removesuffix(".cpp").removesuffix("Everything").rsplit("_", 1)[0]
    return FAMILIES.get(stem)


def family_files(engine: Engine, log: FailureLog, family: KernelFamily,
                 members: Sequence[FamilyMember], templates: Value, layout: Value,
                 spec_template: Value, release: Release) -> Outputs | None:
    """Every file of the family: a group per shard (as many as the release has), then
    Everything from their kernels (None when a file group has problems: they go to `log`)."""
    shards = family.shards([m.shard_key for m in members], release)
    shard_ids = [s for s in shards if s != "Everything"]
    indexes = engine.records(engine.groups([(KERNEL_FILE, _file_inputs(
        engine, family, [members[p] for p in shards[s]], templates, spec_template, layout, s),
        f"{family.stem}{s}.cpp") for s in shard_ids]))
    for index in indexes:
        log.add(RENDER, engine.problems([engine.ref(h, Failure) for h in index.failures if h]))
    if any(index.failures for index in indexes):
        return None
    units = units_in_order([m.name for m in members], indexes)
    name = f"{family.stem}Everything.cpp"
    everything = engine.run(family.file, [
        engine.collection([engine.ref(h, family.kernel.output) for _, h in units],
                          family.kernel.output),
        spec_template, layout, engine.text("Everything")], name)
    return Outputs(tuple(sorted([(name, everything.hash),
                                 *(f for index in indexes for f in index.files)])),
                   tuple(units))


def _file_inputs(engine: Engine, family: KernelFamily, members: list[FamilyMember],
                 templates: Value, spec_template: Value, layout: Value, shard: str
                 ) -> list[Value]:
    matches = [m.match for m in members if m.match is not None]
    return KERNEL_FILE.bind(
        stem=engine.text(family.stem),
        functions=engine.collection([m.function for m in members], NativeFunction),
        matches=engine.collection(matches, FunctionMatch),
        names=engine.literal(Labels(tuple(m.name for m in members))), templates=templates,
        spec_template=spec_template, layout=layout, shard=engine.text(shard))


def kernel_unit_fields(unit: str) -> tuple[str, str]:
    """The file and function of a kernel unit (`<file> <function> <n>`)."""
    file, function, _ = unit.split(" ")
    return file, function


def units_in_order(names: Sequence[str], indexes: list[Outputs]) -> list[tuple[str, str]]:
    """Every kernel unit (`<file> <function> <n>`, hash) of the file groups' indexes, in the
    order of their functions' names: Everything's."""
    by_function: dict[str, list[tuple[str, str]]] = {}
    for index in indexes:
        for unit in index.units:
            by_function.setdefault(kernel_unit_fields(unit[0])[1], []).append(unit)
    return [unit for name in names for unit in by_function.get(name, ())]


def kernel_owners(engine: Engine, idents: Sequence[str], kernel_lists: Sequence[Value]
                  ) -> list[tuple[str, int, Value]]:
    """Each function's kernels (a fanned-out list per function) as (function, n, kernel).
    A function whose match failed earlier is blocked: its phase reports it, not this file."""
    built = [(ident, kernels) for ident, kernels in zip(idents, kernel_lists)
             if not kernels.failed]
    per_function = engine.items_of([kernels for _, kernels in built])
    return [(ident, n, kernel) for (ident, _), items in zip(built, per_function)
            for n, kernel in enumerate(items)]


def kernel_file(engine: Engine, stem: Value, functions: Value, matches: Value, names: Value,
                templates: Value, spec_template: Value, layout: Value, shard: Value) -> Outputs:
    """One file of a family: its functions' kernels, each rendered, joined."""
    family = FAMILIES[engine.record(stem).text]
    log = FailureLog(engine)
    idents = engine.record(names).labels
    file = f"{family.stem}{engine.record(shard).text}.cpp"
    function_items = engine.items(functions)
    inputs = (list(zip(function_items, engine.items(matches))) if family.reads_match
              else [(f,) for f in function_items])
    kernel_lists = engine.map(family.kernel, [((*i, templates), ident)
                                              for i, ident in zip(inputs, idents)])
    log.close(RENDER)
    if log.phases:
        return Outputs((), (), failures=log.index())
    owners = kernel_owners(engine, idents, kernel_lists)
    text = engine.run(family.file, [
        engine.collection([k for _, _, k in owners], family.kernel.output), spec_template,
        layout, shard], file)
    return Outputs(((file, text.hash),), tuple((f"{file} {ident} {n}", kernel.hash)
                                               for ident, n, kernel in owners))


KERNEL_FILE = group_of("group.kernel_file", "render", kernel_file, labels={"stem": "family"})
