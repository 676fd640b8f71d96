"""The graph run: a spec's inputs decoded into the records the build graph reads
(DecodedInputs), the graph run over them on an engine (run_graph), and what a finished run
gives (GraphResult): its files and their texts, the compile layout over them, the manifest a
build records.

A run is told its store and its engine memory (the session's: service/open_cache.py); it calls
back into nothing above it. Imported only when there is work (it loads the whole pipeline).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterator, TypeVar

from gradshard.cache.engine.codec import encode
from gradshard.cache.engine.core import Engine, StaleCache
from gradshard.cache.engine.memory import Memory
from gradshard.cache.engine.stats import EngineStats
from gradshard.cache.engine.values import Value
from gradshard.cache.graph.build_graph import build_index, located_findings
from gradshard.cache.graph.group_records import AutogradSide, BuildIndex, BuildInputs
from gradshard.cache.graph.layout_group import COMPILE_LAYOUT
from gradshard.cache.graph.manifest import ENTRY_STAMPS, EntryStamp, EntryStamps, Manifest
from gradshard.cache.store.database import Store, blob_hash
from gradshard.cache.version import code_version
from gradshard.pipeline.formulas.names import SCOPE_TEMPLATES, FormulaSources
from gradshard.pipeline.layout.compile_layout import CompileLayout, ShardSettings
from gradshard.pipeline.parse.spec import SpecTexts, decode_spec
from gradshard.pipeline.problems import YAML_FILES, Problem, SpecError, SpecFile
from gradshard.pipeline.records import Text
from gradshard.pipeline.releases import release_named
from gradshard.pipeline.render.templating import TemplateSet
from gradshard.pipeline.render.variable_type_files import RenderedKernel
from gradshard.service.files.inputs import InputBytes, spec_template_sources, template_set
from gradshard.service.generator.identity import identify_generator

__all__ = ["BuiltSpec", "DecodedInputs", "FreshRead", "GraphResult", "built_spec",
           "formula_sources", "fresh_reads", "new_engine", "recorded_spec", "run_graph"]

T = TypeVar("T")


def new_engine(store: Store | None, memory: Memory, build_id: int = 0,
               force_groups: bool = False, verify: bool = False) -> Engine:
    """The one place an engine is made: over the session's store and memory, for one run."""
    return Engine(store, code_version(), build_id=build_id, force_groups=force_groups,
                  memory=memory, verify=verify)


def build_entering_groups(failed: Engine, inputs: BuildInputs) -> tuple[Engine, str, BuildIndex]:
    """The graph again, every group entered: what a run needs when a value an index names is
    gone from the cache (cache/engine/core.py: StaleCache); the missing values are recomputed.
    How a graph run recovers from a stale cache (a host layout enters its groups on an engine
    of its own: host/generation.py: host_compile_input)."""
    engine = new_engine(failed.store, failed.memory, failed.build_id, force_groups=True,
                        verify=failed.verify)
    try:
        index_hash, index = build_index(engine, inputs)
    finally:
        engine.finish()
    return engine, index_hash, index


def fresh_reads() -> Iterator[FreshRead]:
    """The two tries at reading what a run made: when a value an index names is gone from the
    cache (StaleCache), the first ends quietly and the caller runs the graph again entering
    every group before the second, in which it is an error (how the readers of a run recover
    from a stale cache; the caller runs its own code, nothing calls back):

        for read in fresh_reads():
            with read:
                return work()
            run.rerun_entering_groups()
    """
    yield FreshRead(last=False)
    yield FreshRead(last=True)


@dataclass(frozen=True)
class FreshRead:
    """One try at reading a run (fresh_reads): a StaleCache leaving it ends it quietly, but
    for the last."""

    last: bool

    def __enter__(self) -> FreshRead:
        return self

    def __exit__(self, kind: type | None, error: BaseException | None, trace: object) -> bool:
        return isinstance(error, StaleCache) and not self.last


@dataclass(frozen=True)
class DecodedInputs:
    """One spec's inputs decoded: its texts, and the records the graph reads."""

    texts: SpecTexts
    inputs: BuildInputs

    @classmethod
    def decode(cls, raw: InputBytes, release: str | None = None) -> DecodedInputs:
        """A file that is not text, or a missing template, is a spec problem here. The
        rules are those of the release the inputs name (a git revision's generator:
        query/revision.py), else `release`'s (the spec's generator's rules_release, when the
        caller has identified it already: a build, a generator check), else those of the
        spec's own generator (service/generator/identity.py), identified here."""
        texts = decode_spec(raw.yaml)
        rules = release_named(raw.release or release
                              or identify_generator(raw.location).rules_release)
        spec_templates = TemplateSet(spec_template_sources(raw.spec_templates))
        inputs = BuildInputs(texts, spec_templates, template_set(raw.templates, raw.compiled),
                             raw.location.layout, rules, formula_sources(raw, spec_templates))
        return cls(texts, inputs)


def formula_sources(raw: InputBytes, spec_templates: TemplateSet) -> FormulaSources:
    """What the formula check reads besides the spec: the helper header (a header that is
    not UTF-8 is read with its odd bytes replaced: only its names matter) and the templates
    that bring names into the formulas' scope."""
    header, data = raw.helpers if raw.helpers is not None else ("", b"")
    texts = dict(spec_templates.sources)
    return FormulaSources(header, data.decode("utf-8", errors="replace"),
                          tuple(texts[name] for name in SCOPE_TEMPLATES if name in texts))


def run_graph(decoded: DecodedInputs, store: Store | None, memory: Memory | None = None,
              build_id: int = 0, verify: bool = False, commit: bool = True) -> GraphResult:
    """The graph on an engine over `store` and `memory` (a session's, or a fresh memory); a
    spec the graph rejects is reported with every problem located. `verify` runs every task
    and records where the cache disagrees (cache/engine/stats.py: Disagreement). Without
    `commit`, what a successful run computed stays staged: the caller finishes the engine
    (a build does, once its files are written). A rejected spec's problems, and a run that
    recovered from a stale cache, are committed all the same."""
    engine = new_engine(store, memory if memory is not None else Memory(), build_id,
                        verify=verify)
    try:
        index_hash, index = build_index(engine, decoded.inputs)
    except StaleCache:
        engine, index_hash, index = build_entering_groups(engine, decoded.inputs)
    except SpecError:
        engine.finish()  # the problems are outputs too: the next run reports them cached
        raise
    if commit:
        engine.finish()
    return GraphResult(engine, index_hash, index, decoded, dict(engine.stats.seconds))


@dataclass
class GraphResult:
    """A finished graph run over decoded inputs: the files (name → content hash), how to read
    them, the compile layout over them and the manifest of the run (all on the run's own
    engine: a build runs the graph once, its compile included). Recovering from a stale cache
    replaces the engine and the index in place."""

    engine: Engine
    index_hash: str
    index: BuildIndex
    decoded: DecodedInputs
    seconds: dict[str, float] = field(default_factory=dict)

    @property
    def files(self) -> dict[str, str]:
        return dict(self.index.files)

    @property
    def nodes(self) -> int:
        return len(self.index.nodes)

    @property
    def stats(self) -> EngineStats:
        return self.engine.stats

    def finish(self) -> None:
        """Commit what the run's engine staged."""
        self.engine.finish()

    def load(self, names: list[str]) -> dict[str, str]:
        """The texts of these output files; a file gone from the cache is rebuilt."""
        files = self.files
        return self.texts({n: files[n] for n in names})

    def texts(self, hashes: dict[str, str]) -> dict[str, str]:
        """Texts by path, for paths → text hashes this run produced."""
        return self._fresh(lambda: self._read(hashes))

    def _read(self, hashes: dict[str, str]) -> dict[str, str]:
        records = self.engine.records([self.engine.ref(h, Text) for h in hashes.values()])
        return {path: r.text for path, r in zip(hashes, records)}

    def _fresh(self, read: Callable[[], T]) -> T:
        """read(), once more after the graph is run again entering every group when a value
        it reads is gone from the cache (fresh_reads)."""
        for attempt in fresh_reads():
            with attempt:
                return read()
            self.rerun_entering_groups()
        raise AssertionError("the last read returns or raises")

    def rerun_entering_groups(self) -> None:
        """Something an index names is gone from the cache: rebuild it (the files do not
        change)."""
        self.engine, self.index_hash, self.index = build_entering_groups(
            self.engine, self.decoded.inputs)

    def layout(self, settings: ShardSettings) -> CompileLayout:
        """The compile layout of this run's files: the layout group over the run's index, on
        the run's own engine (a verifying run verifies the layout's tasks too)."""
        return self._fresh(lambda: self._layout(settings))

    def _layout(self, settings: ShardSettings) -> CompileLayout:
        engine, inputs = self.engine, self.decoded.inputs
        value = engine.group(COMPILE_LAYOUT, COMPILE_LAYOUT.bind(
            index=engine.ref(self.index_hash, BuildIndex),
            spec_templates=engine.literal(inputs.spec_templates),
            templates=engine.literal(inputs.templates), layout=engine.text(inputs.layout),
            settings=engine.literal(settings)), "compile layout")
        layout = engine.record(value)
        if engine.store is not None:
            # gc keeps what the recorded builds' indexes reach: the layout compiled from one
            # too, so the next compile of a kept build runs no layout task
            engine.store.put_refs(self.index_hash, [value.hash])
        engine.finish()
        return layout

    def findings(self) -> tuple[Problem, ...]:
        """The formula check's findings of the run's spec, each at its line (warnings: the
        spec's generator accepts the formulas)."""
        return self._fresh(self._findings)

    def _findings(self) -> tuple[Problem, ...]:
        engine, index = self.engine, self.index
        if not index.autograd:
            return ()
        autograd = engine.record(engine.ref(index.autograd, AutogradSide))
        return located_findings(engine, self.decoded.texts, autograd)

    def placing(self) -> tuple[str, dict[str, str]]:
        """The derivatives.yaml text the run read (not as it is now) and each node's entry and
        each autograd kernel's (by wrapper name; read only when a compile failed)."""
        index, engine = self.index, self.engine
        entries = dict(zip((n for n, _ in index.nodes), index.node_keys))
        kernels = engine.records([engine.ref(code, RenderedKernel) for _, code in index.kernels])
        entries.update((k.wrapper, k.entry) for k in kernels if k.entry)
        return self.decoded.texts.derivatives, entries

    def manifest(self, spec: str, fingerprint: dict[str, str]) -> Manifest:
        """The manifest of this run; the entry stamps are tasks too (a file that did not
        change is not split again)."""
        stamps = self.entry_stamps()
        self.engine.finish()
        return Manifest(spec, self.decoded.inputs.layout, tuple(sorted(fingerprint.items())),
                        tuple(s.hash for s in stamps), self.index_hash)

    def built_spec(self) -> BuiltSpec:
        """The run's entries and index, read on its engine (which commits nothing here)."""
        engine = self.engine
        stamps = engine.records([engine.ref(v.hash, EntryStamps) for v in self.entry_stamps()])
        return BuiltSpec.of(stamps, self.index)

    def entry_stamps(self) -> list[Value]:
        """Each spec file's entry stamps, on the run's engine (committed with it)."""
        engine, texts = self.engine, self.decoded.texts
        return engine.map(ENTRY_STAMPS, [
            ((engine.text(f.value), engine.text(texts.text_of(f))), f.value)
            for f in YAML_FILES])

    def record(self, store: Store, build_id: int, spec: str, out: str,
               fingerprint: dict[str, str], files: dict[str, str]) -> None:
        """Keep the manifest; gc keeps what it reaches (the entry stamps, the build's index,
        and through it every output of the build). `files`: as written under the build's
        out (service/files/placement.py: placed_files)."""
        manifest = self.manifest(spec, fingerprint)
        codec, data = encode(manifest)
        name = blob_hash(codec, data)
        store.put_blob(name, codec, data)
        store.put_refs(name, [self.index_hash, *manifest.entries])
        store.flush(build_id)
        store.set_manifest(spec, out, build_id, fingerprint, files, name)


@dataclass(frozen=True)
class BuiltSpec:
    """A spec's entries (each one's stamp, by file) and the index of its build: what
    `affected` compares and `try` plans from."""

    entries: tuple[tuple[SpecFile, EntryStamp], ...]
    index: BuildIndex

    @classmethod
    def of(cls, stamps: list[EntryStamps], index: BuildIndex) -> BuiltSpec:
        return cls(tuple((SpecFile(s.file), stamp) for s in stamps for stamp in s.stamps), index)


def built_spec(inputs: InputBytes, store: Store | None, memory: Memory,
               commit: bool = True, release: str | None = None) -> BuiltSpec:
    """A spec's entries and its build's index (a graph run on the store and memory: cached
    like a build). Without `commit`, what the run computed stays staged, for the build in
    progress on the session to commit with its own (a check inside a build:
    service/daemon/try_checks.py). `release`: its generator's rules_release, when the
    caller knows it (DecodedInputs.decode)."""
    run = run_graph(DecodedInputs.decode(inputs, release), store, memory, commit=False)
    built = run.built_spec()
    if commit:
        run.engine.finish()
    return built


def recorded_spec(engine: Engine, manifest: Manifest) -> BuiltSpec:
    """The entries and index a build's manifest recorded."""
    stamps = engine.records([engine.ref(h, EntryStamps) for h in manifest.entries])
    return BuiltSpec.of(stamps, engine.record(engine.ref(manifest.index, BuildIndex)))
