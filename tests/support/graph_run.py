"""The build graph run on a spec in this process without a store (every task runs, nothing is
written), as `gradshard check` runs it: the spec's records (cache/graph/spec_records.py), its
generated files, and each node's and binding's generated code; or its parse and match alone;
or what the build hands the native codegen's stages (codegen_inputs); each unit's code, for
`affected`'s truth (generated_units, diff; clean_build, once per edited spec); and a build on a store (engine_build), for the
incremental tests."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import xxhash

from gradshard.cache.engine.core import Engine
from gradshard.cache.engine.stats import EngineStats
from gradshard.cache.graph.build_graph import spec_sides
from gradshard.cache.graph.kernel_family import family_of_file
from gradshard.cache.graph.spec_records import SpecRecords, side_records
from gradshard.cache.store.database import Store
from gradshard.cache.version import code_version
from gradshard.pipeline.match.match_infos import FunctionMatch
from gradshard.pipeline.parse.native import NativeFunction
from gradshard.pipeline.parse.source import split_entries
from gradshard.pipeline.parse.spec import decode_spec, entry_label
from gradshard.pipeline.problems import SpecFile
from gradshard.pipeline.records import Text
from gradshard.pipeline.releases import DEFAULT_RELEASE, release_named
from gradshard.pipeline.render.python.files import RenderedBinding
from gradshard.pipeline.render.template_names import ALL_TEMPLATES
from gradshard.pipeline.render.templating import TemplateSet
from gradshard.pipeline.render.variable_type_files import RenderedKernel, library_key
from gradshard.service.files.inputs import (gradshard_templates, read_inputs, spec_file_bytes,
                                            spec_templates)
from gradshard.service.files.placement import FLAT, Placement, index_names
from gradshard.service.files.spec_location import locate_spec
from gradshard.service.graph_run import DecodedInputs, GraphResult
from gradshard.service.graph_run import run_graph as run_decoded
from gradshard.service.query.analysis import analyze, prepare, records_of


def spec_records(spec_dir: str | Path) -> SpecRecords:
    """What the graph knows of the spec; SpecError when it has problems."""
    return analyze(prepare(locate_spec(str(spec_dir))))


class CodegenInputs(NamedTuple):
    """What the build hands the native codegen's stages (TraceType, ADInplaceOrViewType,
    ViewFuncs) for a spec: its native functions; the functions with derived kernels'
    candidates in C++-name order, each with its match (None without infos); gradshard's
    templates and the spec's; and the spec's layout."""

    functions: list[NativeFunction]
    items: list[tuple[NativeFunction, FunctionMatch | None]]
    templates: TemplateSet
    spec_templates: TemplateSet
    layout: str


def codegen_inputs(spec_dir: str | Path) -> CodegenInputs:
    records = spec_records(spec_dir)
    location = locate_spec(str(spec_dir))
    functions = {str(fn.func.name): fn for fn in records.native_functions}
    return CodegenInputs(list(records.native_functions),
                         [(functions[m.function], m if m.infos is not None else None)
                          for m in records.matches], gradshard_templates(),
                         spec_templates(location, ALL_TEMPLATES), location.layout)


def parsed_records(spec_dir: str | Path) -> SpecRecords:
    """What the graph's parse and match know of the spec (its native and autograd sides: no
    bindings, no nodes, no templates); SpecError when they find problems."""
    texts = decode_spec(spec_file_bytes(locate_spec(str(spec_dir))))
    engine = Engine(None, code_version())
    return side_records(engine, *spec_sides(engine, texts, release_named(DEFAULT_RELEASE)), texts)


@dataclass(frozen=True)
class GraphRun:
    decoded: DecodedInputs
    result: GraphResult

    @property
    def records(self) -> SpecRecords:
        return records_of(self.result)

    def files(self, tree: str = FLAT) -> dict[str, str]:
        """Every generated file's text, by its name under --out in `tree` (service/files/placement.py)."""
        names = index_names(self.result.files, Placement(tree))
        texts = self.result.load(sorted(names.values()))
        return {placed: texts[name] for placed, name in names.items()}

    def nodes(self) -> dict[str, tuple[str, ...]]:
        """Each backward node's generated code: declaration, definition, Python class and
        Python properties."""
        engine = self.result.engine
        return {op: tuple(t.text for t in engine.records(list(engine.items(
            engine.ref_collection(pieces, Text))))) for op, pieces in self.result.index.nodes}

    def bindings(self) -> dict[str, RenderedBinding]:
        """Each Python binding's generated code, by its Python name."""
        engine = self.result.engine
        bindings = self.result.index.bindings
        made = engine.records([engine.ref(h, RenderedBinding) for _, h in bindings])
        return {name: rendered for (name, _), rendered in zip(bindings, made)}


    def kernels(self) -> dict[tuple[str, str, str], tuple[str, str]]:
        """Each autograd kernel's definition and registration, by (wrapper, dispatch key,
        file)."""
        engine = self.result.engine
        kernels = {}
        index = self.result.index
        for unit, code in index.kernels + index.family_kernels:
            file = unit.split(" ")[0]
            family = family_of_file(file)
            made = engine.record(engine.ref(code, family.kernel.output if family
                                              else RenderedKernel))
            key = family.dispatch_key if family else library_key(made.key)
            kernels[(made.wrapper, key, file)] = (made.definition, made.registration)
        return kernels


def run_graph(spec_dir: str | Path) -> GraphRun:
    decoded = prepare(locate_spec(str(spec_dir)))
    return GraphRun(decoded, run_decoded(decoded, None))


def generated_files(spec_dir: str | Path, tree: str = FLAT) -> dict[str, str]:
    return run_graph(spec_dir).files(tree)


def generated_units(spec_dir: Path) -> dict[str, dict[str, object]]:
    """Without a cache: each node's four pieces, each binding's text, each file."""
    return _units(run_graph(spec_dir))


def _units(run: GraphRun) -> dict[str, dict[str, object]]:
    entries = {}
    for e in split_entries(SpecFile.DERIVATIVES, run.decoded.texts.derivatives):
        entries[entry_label(e)] = e.text
    return {"nodes": run.nodes(), "bindings": run.bindings(), "files": run.files(),
            "kernels": run.kernels(), "derivatives": entries}


class CleanBuild(NamedTuple):
    """A spec's build without a cache, as digests: its files by their flat names under --out
    (what the incremental tests compare with torchgen's) and generated_units' pieces (what
    `affected` is checked against)."""

    files: dict[str, str]
    units: dict[str, dict[str, str]]


# A session builds each edited spec once: test_affected's truth and test_incremental's clean
# side are the same build of the same edit (by the spec's inputs, not its directory).
_CLEAN_BUILDS: dict[str, CleanBuild] = {}


def clean_build(spec_dir: Path) -> CleanBuild:
    """The spec's build without a cache, remembered by its inputs' hashes (wherever it lies)."""
    fingerprint = read_inputs(locate_spec(str(spec_dir))).fingerprint()
    fingerprint.pop("root")  # a copy elsewhere builds the same files (the graph's view)
    key = xxhash.xxh3_128_hexdigest(repr(sorted(fingerprint.items())).encode())
    if key not in _CLEAN_BUILDS:
        run = run_graph(spec_dir)
        units = _units(run)
        _CLEAN_BUILDS[key] = CleanBuild(
            {name: _digest(text) for name, text in units["files"].items()},
            {part: {name: _digest(repr(value)) for name, value in pieces.items()}
             for part, pieces in units.items()})
    return _CLEAN_BUILDS[key]


def _digest(text: str) -> str:
    return xxhash.xxh3_128_hexdigest(text.encode())


def diff(before: dict, after: dict) -> dict[str, str]:
    changes = {k: "added" for k in after if k not in before}
    changes.update({k: "removed" for k in before if k not in after})
    changes.update({k: "changed" for k in after if k in before and before[k] != after[k]})
    return changes


def engine_build(spec_dir: Path, cache: Path | None) -> tuple[dict[str, str], EngineStats]:
    """The build graph on a spec (no output directory): its files as `gradshard build` writes
    them flat (the first stage of VariableType.cpp, an intermediate, left out), and what
    ran."""
    decoded = DecodedInputs.decode(read_inputs(locate_spec(str(spec_dir))))
    warnings: list[str] = []
    store = Store.open(cache, warnings.append) if cache is not None else None
    try:
        result = run_decoded(decoded, store, build_id=1)
        names = index_names(result.files, Placement(FLAT))
        texts = result.load(sorted(names.values()))
        files = {placed: texts[name] for placed, name in names.items()}
    finally:
        if store is not None:
            store.close()
    assert not warnings
    return files, result.stats
