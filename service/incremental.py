"""Running the build graph for a spec: its inputs as records, the engine run, the manifest.

Imported only when a build has work to do (it loads the whole pipeline).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Callable, TypeVar

from gradshard.cache.compile_group import COMPILE_LAYOUT
from gradshard.cache.engine import Engine, EngineStats, Memory, StaleCache, encode
from gradshard.cache.graph import BuildIndex, BuildInputs, build
from gradshard.cache.manifest import ENTRY_STAMPS, Manifest
from gradshard.cache.store import Store, blob_hash
from gradshard.cache.version import code_version
from gradshard.pipeline.compile_layout import CompileLayout, ShardSettings
from gradshard.pipeline.errors import YAML_FILES, RuleViolation, SpecError
from gradshard.pipeline.records import Text
from gradshard.pipeline.render import TemplateSet
from gradshard.pipeline.spec import SpecTexts, decode_spec

from .build import rejected
from .inputs import InputBytes, spec_template_sources, template_sources

T = TypeVar("T")


# What this process remembers of each cache it has used (see cache/engine.py: Memory).
_MEMORIES: dict[Path, Memory] = {}


def forget_memory(path: Path) -> None:
    """Drop what this process remembers of the cache at `path` (it was set aside: its memo
    could name values the new cache does not hold)."""
    _MEMORIES.pop(path.resolve(), None)


def memory_of(store: Store | None) -> Memory:
    """The process's memory of this store's cache (a fresh one without a store)."""
    if store is None:
        return Memory()
    return _MEMORIES.setdefault(store.path.resolve(), Memory())


@dataclass
class GraphResult:
    """A finished graph run: the files (name → content hash) and how to read them."""

    engine: Engine
    index_hash: str
    index: BuildIndex
    inputs: BuildInputs
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

    def load(self, names: list[str]) -> dict[str, str]:
        """The texts of these output files; a file gone from the cache is rebuilt."""
        try:
            return self._texts(names)
        except StaleCache:
            self.engine = Engine(self.engine.store, code_version(),
                                 generation=self.engine.generation, force_groups=True,
                                 memory=self.engine.memory)
            self.index_hash, self.index = build(self.engine, self.inputs)
            self.engine.finish()
            return self._texts(names)

    def _texts(self, names: list[str]) -> dict[str, str]:
        files = self.files
        records = self.engine.records([self.engine.ref(files[n], Text) for n in names])
        return {n: r.text for n, r in zip(names, records)}


@dataclass(frozen=True)
class Generation:
    """One spec's build: its inputs decoded into the records the graph reads."""

    texts: SpecTexts
    inputs: BuildInputs

    @classmethod
    def prepare(cls, raw: InputBytes) -> Generation:
        texts = decode_spec(raw.yaml)
        inputs = BuildInputs(texts, TemplateSet(spec_template_sources(raw.spec_templates)),
                             TemplateSet(template_sources(raw.templates)), raw.location.layout)
        return cls(texts, inputs)

    def run(self, store: Store | None, build_id: int, verify: bool = False) -> GraphResult:
        """The graph on the engine; a spec the graph rejects is reported with every problem
        located (the straight pipeline collects them). `verify` runs every task and records
        where the cache disagrees (cache/engine.py: Disagreement)."""
        try:
            engine, index_hash, index = entering_groups_if_stale(
                partial(self.run_graph, store, build_id, verify=verify))
        except (SpecError, RuleViolation) as error:
            raise rejected(error, self.straight) from None
        return GraphResult(engine, index_hash, index, self.inputs,
                           {stage: s for stage, s in engine.stats.seconds.items()})

    def run_graph(self, store: Store | None, build_id: int, force_groups: bool,
                  verify: bool = False) -> tuple[Engine, str, BuildIndex]:
        engine = Engine(store, code_version(), generation=build_id, force_groups=force_groups,
                        memory=memory_of(store), verify=verify)
        index_hash, index = build(engine, self.inputs)
        engine.finish()
        return engine, index_hash, index

    def straight(self) -> None:
        from gradshard.pipeline.codegen import analyze, generate  # only to report errors

        generate(analyze(self.texts), self.inputs.templates, self.inputs.spec_templates,
                 self.inputs.layout)

    def manifest(self, result: GraphResult, spec: str, fingerprint: dict[str, str]) -> Manifest:
        """The manifest of a finished run; the entry stamps are tasks too (a file that did not
        change is not split again)."""
        engine = result.engine
        stamps = engine.map(ENTRY_STAMPS, [
            ((engine.text(f.value), engine.text(self.texts.text_of(f))), f.value)
            for f in YAML_FILES])
        engine.finish()
        return Manifest(spec, self.inputs.layout, tuple(sorted(fingerprint.items())),
                        tuple(s.hash for s in stamps), result.index_hash)

    def record(self, store: Store, build_id: int, spec: str, out: str,
               fingerprint: dict[str, str], result: GraphResult) -> None:
        """Keep the manifest; gc keeps what it reaches (the entry stamps, the build's index,
        and through it every output of the build)."""
        manifest = self.manifest(result, spec, fingerprint)
        codec, data = encode(manifest)
        name = blob_hash(codec, data)
        store.put_blob(name, codec, data)
        store.put_refs(name, [result.index_hash, *manifest.entries])
        store.flush(build_id)
        store.set_manifest(spec, out, build_id, fingerprint, result.files, name)


@dataclass
class LayoutResult:
    """The compile layout of a build, and how to read the texts it names."""

    engine: Engine
    layout: CompileLayout
    index: BuildIndex

    @property
    def out_files(self) -> dict[str, str]:
        """The build's --out files (name → text hash)."""
        return dict(self.index.files)

    def load(self, hashes: dict[str, str]) -> dict[str, str]:
        """Texts by path, for paths → text hashes of the layout."""
        records = self.engine.records([self.engine.ref(h, Text) for h in hashes.values()])
        return {path: r.text for path, r in zip(hashes, records)}


def compile_layout(generation: Generation, store: Store | None, build_id: int,
                   settings: ShardSettings, verify: bool = False) -> LayoutResult:
    """The build's compile layout: the graph (answered by its index when nothing changed),
    then the layout group over the index. `verify` runs every task of both and records where
    the cache disagrees (`build --verify`)."""
    return entering_groups_if_stale(partial(_compile_layout, generation, store, build_id,
                                            settings, verify=verify))


def entering_groups_if_stale(run: Callable[[bool], T]) -> T:
    """run(force_groups=False); if something an index names is gone from the cache, run again
    with every group entered, which recomputes what is missing."""
    try:
        return run(False)
    except StaleCache:
        return run(True)


def _compile_layout(generation: Generation, store: Store | None, build_id: int,
                    settings: ShardSettings, force_groups: bool,
                    verify: bool = False) -> LayoutResult:
    engine, index_hash, index = generation.run_graph(store, build_id, force_groups, verify)
    inputs = generation.inputs
    value = engine.group(COMPILE_LAYOUT, [
        engine.ref(index_hash, BuildIndex), engine.literal(inputs.spec_templates),
        engine.literal(inputs.templates), engine.text(inputs.layout), engine.literal(settings)],
        "compile layout")
    layout = engine.records([value])[0]
    engine.finish()
    return LayoutResult(engine, layout, index)
