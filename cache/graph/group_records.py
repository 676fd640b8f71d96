"""What the build graph's groups hand each other (cache/graph/build_graph.py, cache/graph/bindings_group.py):
their inputs and index records, and what every group body does alike — splitting a spec
file into entry values, and keeping the problems its tasks found, phase by phase.

A group's problems are task outputs (`Failure`s: cache/engine/core.py), kept by phase, in the
order torchgen's stages run:

    split   a file that is not a list of entries: nothing else is looked at
    parse   per entry, then across entries (native functions, tags, derivatives, deprecated)
    match   every function's infos
    bind    backward nodes and Python bindings
    render  the spec's templates

The build reports the problems of the first phase that has any (cache/graph/build_graph.py:
build_index), as the stages would have stopped there; later phases ran on what parsed and are
not reported.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable, NamedTuple, Sequence

from gradshard.cache.engine.codec import encode_hash
from gradshard.cache.engine.core import Engine
from gradshard.cache.engine.values import Value
from gradshard.pipeline.formulas.names import FormulaSources
from gradshard.pipeline.parse.source import Entry, split_entries
from gradshard.pipeline.parse.spec import SpecTexts, entry_label
from gradshard.pipeline.problems import Failure, Problem, SpecFile
from gradshard.pipeline.records import Record
from gradshard.pipeline.releases import Release
from gradshard.pipeline.render.templating import TemplateSet

__all__ = ["AutogradSide", "BIND", "BLOCKED", "BuildIndex", "BuildInputs", "EntryValue",
           "FailureLog", "FunctionNames", "Labels", "MATCH", "NONE_FAILED", "NativeOutputs",
           "NativeSide", "Outputs", "PARSE", "PHASES", "Positions", "RENDER", "SPLIT",
           "entry_values", "parsed", "pick", "split_failed"]

SPLIT, PARSE, MATCH, BIND, RENDER = range(5)
PHASES = ("split", "parse", "match", "bind", "render")

# A blocked task's output (an input of it failed): it reports nothing.
BLOCKED = encode_hash(Failure())


@dataclass(frozen=True)
class BuildInputs:
    """Everything a build reads: the spec's texts and templates, and gradshard's templates."""

    texts: SpecTexts
    spec_templates: TemplateSet
    templates: TemplateSet
    layout: str
    release: Release  # the rules of the spec's torchgen release (pipeline/releases.py)
    formulas: FormulaSources = FormulaSources()  # what the formula check's names come from


@dataclass(frozen=True, slots=True)
class FunctionNames(Record):
    """The operator names of the native functions, in list order (how tasks are named)."""

    names: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Labels(Record):
    """Entry labels (spec.py: entry_label): those of the entries that failed to parse."""

    labels: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Positions(Record):
    """Native functions by position in the function list: those the match plan gave a
    match, in the order of the matches."""

    positions: tuple[int, ...] = ()


# The Labels of a side whose entries all parsed (known without reading it).
NONE_FAILED = encode_hash(Labels())


@dataclass(frozen=True, slots=True)
class NativeSide(Record):
    # each "" when the files did not split (then `failures` says why)
    functions: str = ""  # collection of NativeFunction: the YAML ones, then the generated ones
    names: str = ""  # FunctionNames
    summaries: str = ""  # collection of FunctionSummary
    tag_names: str = ""  # TagNames
    failed: str = ""  # Labels of the native entries that failed to parse
    tags: str = ""  # collection of Tag: the tags that parsed
    failures: tuple[str, ...] = ()  # per phase: a Failure, or "" (see FailureLog)
    generated: int = 0  # how many of the functions torchgen's rules generate (`check` counts)


@dataclass(frozen=True, slots=True)
class NativeOutputs(Record):
    """The files of the native side alone: the Python bindings' index and the native codegen's
    (TraceType, variable_factories.h, annotated_fn_args.py), both Outputs."""

    bindings: str
    codegen: str


@dataclass(frozen=True, slots=True)
class AutogradSide(Record):
    # the first four "" when derivatives.yaml did not split (then `failures` says why)
    loaded: str = ""  # collection of EntryInfos as loaded: numbered entries, then view copies
    foreach: str = ""  # collection of EntryInfos matching adds: the synthesized foreach ones
    entries: str = ""  # collection of DerivativeEntry: every entry that parsed, in file order
    matches: str = ""  # collection of FunctionMatch, one per step of the match plan
    view_order: str = ""  # ViewOrder of the functions
    buckets: str = ""  # DerivativeBuckets: the functions by signature, for the entries to find
    matched: str = ""  # Positions: the function of each match
    dispatch_keys: str = ""  # DispatchKeys: the keys derivatives.yaml uses
    view_matches: str = ""  # collection of FunctionMatch: what the view group reads of each
    failures: tuple[str, ...] = ()
    findings: str = ""  # FormulaFindings: the formula check's, of every entry (not failures)
    keyed_infos: int = 0  # what `check` counts: every entry's infos, one per dispatch key,
    infos_with_nodes: int = 0  # those with a backward node,
    matched_functions: int = 0  # and the functions that use infos


@dataclass(frozen=True, slots=True)
class Outputs(Record):
    """A group's files (name → text hash) and units (node or binding → hash of its code);
    for nodes, each one's python_functions shard key (its info name)."""

    files: tuple[tuple[str, str], ...]
    units: tuple[tuple[str, str], ...]
    keys: tuple[str, ...] = ()
    records: str = ""  # the collection of the units' records: BackwardNodes in units' order;
    #                   for the bindings, the deprecated signatures
    python_nodes: int = 0  # how many of the nodes, from the first, have a Python class
    failures: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class BuildIndex(Record):
    """What a build produced: every file, and the generated code of every node and binding
    (by hash), which is what `affected` compares; or, for a spec with problems, nothing but
    `failures` (a Failure: every problem, placed at its line)."""

    files: tuple[tuple[str, str], ...]
    nodes: tuple[tuple[str, str], ...]
    bindings: tuple[tuple[str, str], ...]
    node_keys: tuple[str, ...]  # each node's python_functions shard key, as in nodes
    node_records: str  # the collection of the nodes' BackwardNode records, as in nodes
    python_nodes: int  # how many of nodes, from the first, python_functions* bind
    native: str = ""  # the NativeSide index
    autograd: str = ""  # the AutogradSide index
    python: str = ""  # the python bindings group's Outputs
    failures: str = ""
    kernels: tuple[tuple[str, str], ...] = ()  # each VariableType kernel ("<file> <function>
    #                                              <n>") by the hash of its code
    family_kernels: tuple[tuple[str, str], ...] = ()  # TraceType's and ADInplaceOrViewType's
    #                                                   (cache/graph/kernel_family.py), alike


class EntryValue(NamedTuple):
    """One entry of a spec file: its text as a value, its label (the ident of its tasks)."""

    value: Value
    label: str
    entry: Entry


def entry_values(engine: Engine, file: SpecFile, text: Value) -> list[EntryValue]:
    """The file's entries; raises SpecError when the file is not a list of entries."""
    source = engine.record(text).text
    return [EntryValue(engine.text(e.text), entry_label(e), e)
            for e in split_entries(file, source)]


def pick(values: Sequence[Value], positions: Sequence[int]) -> list[Value]:
    return [values[p] for p in positions]


def parsed(values: Sequence[Value], entries: Sequence[EntryValue]
           ) -> list[tuple[Value, EntryValue]]:
    """The entries whose task did not fail, with its output."""
    return [(v, e) for v, e in zip(values, entries) if not v.failed]


class FailureLog:
    """The problems a group body's tasks gave (cache/engine/core.py: Engine.failures), phase by
    phase, kept in its index as one persisted Failure per phase."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.taken: set[str] = {BLOCKED}
        self.phases: dict[int, list[Problem]] = {}

    def take(self) -> list[Value]:
        """The failed outputs given since the last take (blocked ones aside)."""
        new = [v for v in self.engine.failures() if v.hash not in self.taken]
        self.taken.update(v.hash for v in new)
        return new

    def close(self, phase: int, merge: Callable[[list[Problem]], list[Problem]] = list) -> None:
        """The failures given since the last take are `phase`'s (merged by `merge`)."""
        self.add(phase, merge(self.engine.problems(self.take())))

    def place(self, phase: int, values: Sequence[Value], entries: Sequence[EntryValue]) -> None:
        """Per-entry tasks' failures, each problem placed at its entry's line (entries that
        share a label are told apart so)."""
        failed = [(v, e.entry) for v, e in zip(values, entries) if v.failed and v.hash != BLOCKED]
        records = self.engine.records([v for v, _ in failed])
        self.add(phase, [at_entry(p, entry) for f, (_, entry) in zip(records, failed)
                         for p in f.problems])
        self.taken.update(v.hash for v, _ in failed)

    def add(self, phase: int, problems: Sequence[Problem]) -> None:
        if problems:
            self.phases.setdefault(phase, []).extend(problems)

    def index(self) -> tuple[str, ...]:
        """Each phase's problems as one persisted Failure ("" for a phase without any), up
        to the last phase that has some: what the group's index keeps."""
        if not self.phases:
            return ()
        return tuple(self._failure(self.phases.get(phase, []))
                     for phase in range(max(self.phases) + 1))

    def _failure(self, problems: list[Problem]) -> str:
        if not problems:
            return ""
        return self.engine.literal(Failure(tuple(problems)), persist=True).hash


def at_entry(problem: Problem, entry: Entry) -> Problem:
    if problem.line is not None:
        return problem
    return replace(problem, line=entry.line + problem.line_in_entry)


def split_failed(engine: Engine, problems: Sequence[Problem]) -> tuple[str, ...]:
    """The index failures of a group whose spec file is not a list of entries."""
    log = FailureLog(engine)
    log.add(SPLIT, problems)
    return log.index()
