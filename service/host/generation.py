"""A host build's generation: the spec's own generator, run by the session's worker for it
(`host_worker`; client.py is a leaf this module drives), its memo primed from the store when
the worker is fresh; what the generation made is kept with the build (`HostRun.record`) and
cut into what its compile reads (`host_compile_input`). `try` asks its generations here too
(service/live/host_patch.py), and reads their item values (`read_values`).

The store keeps, per build, a HostManifest naming a HostIndex (cache/graph/manifest.py): the
generator's hash, every file's text hash and every item value the generation used (item key
→ value hash). The item values are blobs of JSON text, each checked against its hash when
read, and handed to a fresh worker as data (its memo), never run. A fresh worker gets the
values of the last host build of the same spec by the same generator: into this --out if
there was one, else into any; a CLI build is one fresh worker, the daemon keeps its worker
warm and primes it once.

While the worker generates, gradshard's own rules check the spec in this process (the parse
and match stages, on the session's cache: an edit re-checks only what it reached). On the
host path the generator is the authority on its spec, so what they find is reported as
warnings (`HostRun.findings`); `check` keeps them as errors.

The compile's input is the build's own generation, or for a build that was up to date the
last one recorded for this spec and --out (its HostIndex: item hashes and what they are of),
its item values cut into units (cache/graph/host_layout_group.py) and served to the compile
driver as a graph run's layout is (service/compile/driver.py: CompileSource). The layout's
tasks read the item values from the store, where the build recorded them (those the
generation made, and without a store all of them, are handed to the engine's memory);
--out's files are the generation's texts, or read back from --out, each checked against the
hash the build wrote. FunctionalInverses.h (service/host/aten_headers.py) is kept in the
store under the generator and the spec's native_functions.yaml and tags.yaml, so a formula's
edit does not ask the worker for it again.
"""

from __future__ import annotations

import json
import re
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

from gradshard.cache.engine.codec import decode, encode
from gradshard.cache.engine.stats import EngineStats
from gradshard.cache.graph.build_graph import spec_findings
from gradshard.cache.graph.manifest import HostIndex, HostManifest
from gradshard.cache.store.database import Store, blob_hash
from gradshard.cache.version import code_version
from gradshard.pipeline.formulas.names import FormulaSources
from gradshard.pipeline.layout.compile_layout import CompileLayout, ShardSettings
from gradshard.pipeline.layout.host_values import rendered_kernels
from gradshard.pipeline.parse.source import split_entries
from gradshard.pipeline.parse.spec import SpecTexts, decode_spec, entry_label
from gradshard.pipeline.problems import InternalError, Problem, SpecError, SpecFile
from gradshard.pipeline.records import Text, canonical_json, content_hash
from gradshard.pipeline.releases import RELEASES, Release, release_named
from gradshard.pipeline.render.templating import TemplateSet
from gradshard.pipeline.render.variable_type_files import RenderedKernel
from gradshard.service.files.inputs import (InputBytes, read_spec_file, spec_template_sources,
                                            template_set)
from gradshard.service.files.placement import index_names
from gradshard.service.files.spec_location import SpecLocation
from gradshard.service.generator.check import DEFAULT_TIMEOUT
from gradshard.service.generator.identity import GeneratorIdentity
from gradshard.service.generator.runner import check_runnable, generator_environment
from gradshard.service.graph_run import formula_sources, fresh_reads, new_engine
from gradshard.service.host.client import HostAnswer, HostWorker
from gradshard.service.host.item_values import (HostItems, ValueSource, item_value,
                                                node_entries, recorded_items)
from gradshard.service.host.items import NewItem
from gradshard.service.open_cache import OpenCache
from gradshard.service.outcome import BuildRequest

if TYPE_CHECKING:
    from gradshard.cache.engine.core import Engine
    # imported where a build compiles: a --codegen-only build, `try` and the queries never
    # load the compile's modules
    from gradshard.cache.graph.host_layout_group import HostLayoutIndex

__all__ = ["Generating", "HostCompileInput", "HostOutput", "HostRun", "begin_generation",
           "entry_lines", "function_kernels", "generate_on_host", "host_compile_input",
           "host_index", "host_records", "host_worker", "last_host_index", "layout_index",
           "own_rule_findings", "put_host_index", "read_record", "read_values",
           "remembered_values", "start_worker"]

INVERSES = "FunctionalInverses.h"
INVERSES_TASK = "host aten header"  # the tasks row naming a FunctionalInverses.h text
_IDENTIFIER = re.compile(r"[A-Za-z_]\w*")


@dataclass(frozen=True)
class HostOutput:
    """One generation: every file by its posix name, the item values it computed (for the
    store), the hash of every value it used, its item counts and the worker's seconds."""

    files: dict[str, bytes]
    items: tuple[NewItem, ...]
    used: dict[str, str]  # item key → the hash of its value (blob_hash "text")
    stats: dict[str, Any]
    seconds: float
    # item key → (its function, its subject, its part: items.py `subject`, `item_part`), of
    # the used keys known
    subjects: dict[str, tuple[str, str, str]] = field(default_factory=dict)


@dataclass
class HostRun:
    """One host-path generation, for the build to write and record: the files by name (text
    hashes, as builds record them), their texts, and what the worker ran and reused."""

    generator: str
    layout: str
    output: HostOutput
    seconds: dict[str, float]
    findings: tuple[Problem, ...] = ()  # gradshard's own rules' (warnings on this path)
    files: dict[str, str] = field(init=False)
    nodes: int = 0  # the host path does not count nodes yet

    def __post_init__(self) -> None:
        self.files = {name: blob_hash("text", data) for name, data in self.output.files.items()}

    @property
    def stats(self) -> EngineStats:
        """Item calls by qualified function: run (`run`), served from the memo (`reused`)."""
        stats = self.output.stats
        return EngineStats(run=Counter(stats.get("runs", {})),
                           reused=Counter(stats.get("hits", {})),
                           seconds=Counter(self.seconds))

    def load(self, names: list[str]) -> dict[str, str]:
        return {name: self.output.files[name].decode("utf-8") for name in names}

    def finish(self) -> None:
        """Nothing staged: record() writes what the generation made."""

    def record(self, store: Store, build_id: int, spec: str, out: str,
               fingerprint: dict[str, str], files: dict[str, str]) -> None:
        """Keep the new item values, the index and the manifest; gc keeps what the manifest
        reaches (the index, and through it every value the generation used)."""
        index_name = put_host_index(store, host_index(self.generator, self.output, self.files),
                                    self.output)
        manifest = HostManifest(spec, self.layout, tuple(sorted(fingerprint.items())),
                                index_name)
        manifest_name = _put(store, manifest)
        store.put_refs(manifest_name, [index_name])
        store.flush(build_id)
        store.set_manifest(spec, out, build_id, fingerprint, files, manifest_name)


def generate_on_host(request: BuildRequest, session: OpenCache, inputs: InputBytes
                     ) -> HostRun:
    """The spec's files, as its own generator writes them; gradshard's rules check the spec
    meanwhile (`inputs`: the spec's, as the command read them)."""
    worker, starting = start_worker(session, request.identity, request.check.timeout)
    store = session.open()
    # a fresh worker's memo starts from the values of this spec's last host build
    prime = last_host_index(store, request) if worker.generations == 0 and store else None
    generating = begin_generation(session, worker, starting, request.identity, request.location,
                                  prime)
    began = time.perf_counter()
    try:
        findings = own_rule_findings(request, session, inputs)
    except BaseException:
        generating.abandon()
        raise
    checked = time.perf_counter() - began
    run = generating.run()
    run.seconds["rules"] = checked
    run.findings = findings
    return run


def host_worker(session: OpenCache, identity: GeneratorIdentity, timeout: float
                ) -> HostWorker:
    """The session's worker for the generator, started on first use; one that failed is
    replaced, and the worker of another generator (the spec's generator was edited) ends:
    one at a time (each holds the whole spec parsed)."""
    worker = session.host_workers.get(identity.hash)
    if worker is None or not worker.running:
        for other in session.host_workers.values():  # an edited generator's last one
            other.close()
        session.host_workers.clear()
        check_runnable(identity)
        worker = HostWorker(identity, timeout, generator_environment(identity))
        session.host_workers[identity.hash] = worker
    worker.timeout = timeout
    return worker


def start_worker(session: OpenCache, identity: GeneratorIdentity, timeout: float
                 ) -> tuple[HostWorker, float]:
    """The session's worker for the generator (started now if need be), and the seconds
    that took."""
    began = time.perf_counter()
    worker = host_worker(session, identity, timeout)
    return worker, time.perf_counter() - began


@dataclass
class Generating:
    """A generation asked of the session's worker, its answer not read yet: the caller does
    its own work meanwhile (the answer waits in the pipe), then reads it (`run`), or, when its
    own work failed, closes the worker unread (`abandon`)."""

    worker: HostWorker
    generator: str
    location: SpecLocation
    seconds: dict[str, float]
    sent: float

    def run(self) -> HostRun:
        output = _output(self.worker, self.worker.generated(self.location))
        seconds = dict(self.seconds, generate=time.perf_counter() - self.sent)
        return HostRun(self.generator, self.location.layout, output, seconds)

    def abandon(self) -> None:
        self.worker.close()


def begin_generation(session: OpenCache, worker: HostWorker, starting: float,
                     identity: GeneratorIdentity, location: SpecLocation,
                     prime: HostIndex | None, deliver: Sequence[str] | None = None
                     ) -> Generating:
    """One generation by the session's `worker` (`starting`: the seconds its start took);
    a fresh worker's memo starts from the values of `prime` in the store (a build's: the last
    host build of this spec; `try`'s: its recorded generation). `deliver`: the files whose
    texts are wanted (default: all; `try` reads two headers)."""
    store = session.open()
    began = time.perf_counter()
    remember = {}
    if worker.generations == 0 and store is not None and prime is not None:
        remember = remembered_values(store, prime)
        worker.value_subjects.update((key, (function, subject, part))
                                     for key, function, subject, part in prime.subjects)
        worker.value_hashes.update((key, digest) for key, (digest, _) in remember.items())
    primed = time.perf_counter()
    worker.send_generate(location, {key: text for key, (_, text) in remember.items()}, deliver)
    return Generating(worker, identity.hash, location,
                      {"worker start": starting, "prime": primed - began}, primed)


def _output(worker: HostWorker, answer: HostAnswer) -> HostOutput:
    """The worker's answer with the hash of every value it used and what each is of: the
    worker's memo, as this process keeps it, learns the values the generation computed."""
    try:
        worker.value_hashes.update((item.key, blob_hash("text", item.value.encode("utf-8")))
                                   for item in answer.items)
        worker.value_subjects.update((item.key, (item.function, item.subject, item.part))
                                     for item in answer.items)
        used = {key: worker.value_hashes[key] for key in answer.used}
    except (AttributeError, KeyError, TypeError, ValueError) as error:
        raise worker.unreadable(error) from None
    subjects = {key: worker.value_subjects[key] for key in used if key in worker.value_subjects}
    return HostOutput(answer.files, answer.items, used, answer.stats, answer.seconds, subjects)


def own_rule_findings(request: BuildRequest, session: OpenCache, inputs: InputBytes
                      ) -> tuple[Problem, ...]:
    """What gradshard's own rules find in the spec, each at its line; none when they accept
    it. A generator gradshard reproduces is checked by its release's rules. Any other's
    release is not known: a problem is kept only when the rules of every release gradshard
    knows find it (2.11's spec has `Dimname` arguments, which 2.12's rules accept and 2.13's
    refuse: no finding), checked first by the default release's (on a spec they accept, the
    only check). The formula check's findings are those of the release whose rules leave
    the fewest entries out."""
    identity = request.identity
    rules = release_named(identity.rules_release)  # a field: identity.py is not entered
    releases = [rules] if identity.reproduced else \
        [rules, *(r for r in RELEASES.values() if r != rules)]
    try:
        texts = decode_spec(inputs.yaml)
        formulas = formula_sources(inputs, TemplateSet(spec_template_sources(
            inputs.spec_templates)))
    except SpecError as error:
        return tuple(error.problems)
    found: tuple[Problem, ...] | None = None
    findings: tuple[Problem, ...] = ()
    fewest = -1
    for release in releases:
        try:
            mine, checked = _rule_problems(session, texts, release, formulas)
        except InternalError as error:  # gradshard's fault: the generator's build goes on
            session.warnings.append(f"gradshard's own rules could not check the spec "
                                    f"({error}); the generator accepted it")
            return ()
        if fewest < 0 or len(mine) < fewest:  # the rules that check the most entries
            fewest, findings = len(mine), checked
        if found is None:
            found = mine
        else:
            same = {_where(problem) for problem in mine}
            found = tuple(problem for problem in found if _where(problem) in same)
        if not found:
            break
    return (*(found or ()), *findings)


def _rule_problems(session: OpenCache, texts: SpecTexts, release: Release,
                   formulas: FormulaSources) -> tuple[tuple[Problem, ...], tuple[Problem, ...]]:
    engine = new_engine(session.open(), session.memory)
    try:
        return spec_findings(engine, texts, release, formulas)
    finally:
        engine.finish()  # the problems are values too: the next build reads them cached


def _where(problem: Problem) -> tuple:
    return (problem.file, problem.entry, problem.rule, problem.line)


def remembered_values(store: Store, index: HostIndex) -> dict[str, tuple[str, str]]:
    """The item values of a host build's index (key → (value hash, JSON text)); a value whose
    blob is gone or damaged is left out (the item runs)."""
    found = store.blobs(sorted({digest for _, digest in index.items}))
    remembered = {}
    for key, digest in index.items:
        blob = found.get(digest)
        if blob is not None and blob.codec == "text":
            try:
                remembered[key] = (digest, blob.data.decode("utf-8"))
            except UnicodeDecodeError:
                continue  # a value no worker wrote: the item runs
    return remembered


def last_host_index(store: Store, request: BuildRequest) -> HostIndex | None:
    """The index of the last host build of this spec by this generator: into this --out if
    there was one, else into any."""
    for last in (store.last_build(request.spec_key, request.out_key),
                 store.latest_manifest(spec=request.spec_key)):
        if last is None:
            continue
        _, index = host_records(store, last.manifest)
        if index is not None and index.generator == request.identity.hash:
            return index
    return None


def host_index(generator: str, output: HostOutput, files: dict[str, str]) -> HostIndex:
    """A generation's HostIndex: its files' text hashes (none for `try`'s, which writes no
    file), the values it used and what their items are of."""
    return HostIndex(generator, tuple(sorted(files.items())), tuple(sorted(output.used.items())),
                     tuple(sorted((key, *of) for key, of in output.subjects.items())))


def put_host_index(store: Store, index: HostIndex, output: HostOutput) -> str:
    """Stage the values the generation computed and its index, which refs every value it
    used (gc keeps them while something reaches the index); the index's name."""
    for item in output.items:
        store.put_blob(output.used[item.key], "text", item.value.encode("utf-8"))
    name = _put(store, index)
    store.put_refs(name, sorted(set(output.used.values())))
    return name


def host_records(store: Store, manifest: str) -> tuple[HostManifest | None, HostIndex | None]:
    """A recorded build's HostManifest and its HostIndex, each None when it is not one (a
    ported build's manifest), or gone or damaged."""
    host = read_record(store, manifest, HostManifest)
    return host, read_record(store, host.index, HostIndex) if host is not None else None


def read_record(store: Store, name: str, kind: type) -> object | None:
    """The record `name` as `kind`, or None: gone, damaged, or another kind of record (a
    ported build's manifest)."""
    blob = store.blobs([name]).get(name)
    if blob is None or blob.codec != "json:" + kind.__name__:
        return None
    try:
        return decode(blob, kind)
    except (TypeError, ValueError, KeyError):
        return None


def _put(store: Store, record: HostIndex | HostManifest) -> str:
    codec, data = encode(record)
    name = blob_hash(codec, data)
    store.put_blob(name, codec, data)
    return name


def read_values(items: HostItems, keys: Sequence[str]) -> dict[str, str]:
    """The JSON texts of a generation's item values `keys`: from its worker's memo (when it
    made them), then the store's blobs, each checked against its hash (Store.blobs)."""
    source, hashes = items.source, items.hashes
    found = source.worker.values(keys) if source.worker is not None else {}
    missing = [hashes[key] for key in keys if key not in found and key in hashes]
    blobs = source.store.blobs(missing) if source.store is not None and missing else {}
    for key in keys:
        blob = blobs.get(hashes.get(key, ""))
        if key not in found and blob is not None and blob.codec == "text":
            found[key] = blob.data.decode("utf-8", errors="replace")
    return found


def function_kernels(items: HostItems, function: str,
                     values: dict[str, str]) -> list[RenderedKernel]:
    """A function's autograd kernels, one per dispatch key, with their nodes and entries."""
    return rendered_kernels(item_value(values, items.kernels[function][0]),
                            items.kernel_nodes[function])


def entry_lines(derivatives: str) -> dict[str, int]:
    """Each derivatives entry's label and first line (empty when the text does not split:
    the generator read it, so only the placing is lost)."""
    try:
        entries = split_entries(SpecFile.DERIVATIVES, derivatives)
    except SpecError:
        return {}
    lines: dict[str, int] = {}
    for entry in entries:
        lines.setdefault(entry_label(entry), entry.line)
    return lines


@dataclass
class HostCompileInput:
    """A host build's generation, as the compile driver reads a graph run: the files --out
    holds, the layout over them, texts by hash, and where a compile error is placed. The
    engine holds --out's texts (and, without a store, the item values) in its memory."""

    session: OpenCache
    request: BuildRequest
    index: HostLayoutIndex
    items: HostItems
    inputs: InputBytes
    held: tuple[str, ...]  # the texts the engine is given besides the store's
    engine: Engine | None = None

    @property
    def files(self) -> dict[str, str]:
        return dict(self.index.files)

    def layout(self, settings: ShardSettings) -> CompileLayout:
        """The layout group on the session's engine; a value its index names that the store
        lost is made again, every group entered (as a graph run recovers)."""
        self._engine()
        for read in fresh_reads():
            with read:
                return self._layout(settings, self.engine)
            self._engine(force_groups=True)
        raise AssertionError("the last read returns or raises")

    def _layout(self, settings: ShardSettings, engine: Engine) -> CompileLayout:
        from gradshard.cache.graph.host_layout_group import HOST_COMPILE_LAYOUT

        inputs = self.inputs
        value = engine.group(HOST_COMPILE_LAYOUT, HOST_COMPILE_LAYOUT.bind(
            index=engine.literal(self.index),
            spec_templates=engine.literal(
                TemplateSet(spec_template_sources(inputs.spec_templates))),
            templates=engine.literal(template_set(inputs.templates, inputs.compiled)),
            layout=engine.text(inputs.location.layout), settings=engine.literal(settings)),
            "compile layout")
        layout = engine.record(value)
        engine.finish()
        return layout

    def _engine(self, force_groups: bool = False) -> Engine:
        self.engine = new_engine(self.session.open(), self.session.memory,
                                 force_groups=force_groups)
        for text in self.held:
            self.engine.literal(Text(text))
        return self.engine

    def texts(self, hashes: dict[str, str]) -> dict[str, str]:
        engine = self.engine or self._engine()
        records = engine.records([engine.ref(h, Text) for h in hashes.values()])
        return {path: r.text for path, r in zip(hashes, records)}

    def placing(self) -> tuple[str, dict[str, str]]:
        """derivatives.yaml as it is now (the generation read it moments ago) and the entry
        of each node and kernel (by wrapper): only when a compile failed."""
        path = self.request.location.path_of(SpecFile.DERIVATIVES)
        derivatives = (read_spec_file(path) or b"").decode("utf-8", errors="replace")
        entries = node_entries(self.items, entry_lines(derivatives))
        functions = sorted(self.items.kernels)
        values = read_values(self.items, [self.items.kernels[f][0] for f in functions])
        entries.update((k.wrapper, k.entry) for f in functions
                       for k in function_kernels(self.items, f, values) if k.entry)
        return derivatives, entries


def host_compile_input(request: BuildRequest, session: OpenCache, run: HostRun | None,
                       inputs: InputBytes, out_dir: Path) -> HostCompileInput:
    """The compile input of the build's generation `run`, or (None: the build was up to date)
    of the last one recorded for this spec and --out; when the store no longer holds that
    one, the spec is generated again (the worker's memo, primed from the store, serves it)."""
    from gradshard.cache.graph.host_layout_group import python_files
    from gradshard.service.compile.driver import out_text

    store = session.open()
    index = last_host_index(store, request) if run is None and store is not None else None
    if run is None and index is None:
        run = generate_on_host(request, session, inputs)
        if store is not None:  # the values the layout's tasks read, staged with the index
            put_host_index(store, host_index(run.generator, run.output, run.files),
                           run.output)
    if index is None:
        index = host_index(run.generator, run.output, run.files)
    # what --out holds (not the first stage, templates/VariableType.cpp, nor another
    # subset's files)
    written = index_names(dict(index.files), request.placement).values()
    files = {name: digest for name, digest in index.files if name in written}
    names = [n for n in files if n.endswith((".cpp", ".h"))]
    texts = (run.load(names) if run is not None
             else {n: out_text(out_dir / n, files[n]) for n in names})
    worker = session.host_workers.get(request.identity.hash)
    items = recorded_items(index, ValueSource(
        worker if worker is not None and worker.running else None, store))
    held = list(texts.values())
    if store is None:  # no store to read the item values from: the worker's, in memory
        held += read_values(items, sorted(items.hashes)).values()
    elif run is not None:  # what the generation made (the store has the rest)
        held += [item.value for item in run.output.items]
    python = {name: texts[name] for name in python_files(list(files))}
    inverses = _inverses(request, session, inputs)
    held.append(inverses)
    return HostCompileInput(session, request,
                            layout_index(items, files, python, text_hash(inverses)), items,
                            inputs, tuple(held))


def layout_index(items: HostItems, files: dict[str, str], python: dict[str, str],
                 inverses: str) -> HostLayoutIndex:
    """The nodes (by name) with both pieces, each function's kernels with the nodes of its
    keys that are among them, and the nodes each python_functions file names."""
    from gradshard.cache.graph.host_layout_group import HostLayoutIndex

    nodes = tuple((name, pieces["declaration"][1], pieces["definition"][1])
                  for name, pieces in sorted(items.nodes.items())
                  if "declaration" in pieces and "definition" in pieces)
    known = {name for name, _, _ in nodes}
    kernels = tuple((function, digest, json.dumps(
        {key: [node if node in known else "", entry]
         for key, (node, entry) in items.kernel_nodes[function].items()}, sort_keys=True))
        for function, (_, digest) in sorted(items.kernels.items()))
    named = tuple((name, tuple(sorted(known.intersection(_IDENTIFIER.findall(text)))))
                  for name, text in sorted(python.items()))
    return HostLayoutIndex(nodes, kernels, tuple(sorted(files.items())), named, inverses)


def _inverses(request: BuildRequest, session: OpenCache, inputs: InputBytes) -> str:
    """FunctionalInverses.h: the store's for this generator and native spec, else the
    worker's (then kept there)."""
    fingerprint = inputs.fingerprint()
    key = content_hash(canonical_json([
        INVERSES_TASK, INVERSES, request.identity.hash,
        fingerprint[f"spec/{SpecFile.NATIVE_FUNCTIONS.value}"],
        fingerprint[f"spec/{SpecFile.TAGS.value}"]]))
    store = session.open()
    found = store.memo([key]).get(key) if store is not None else None
    blob = store.blobs([found]).get(found) if found is not None else None
    if blob is not None and blob.codec == "text":
        return blob.data.decode("utf-8")
    text = host_worker(session, request.identity, DEFAULT_TIMEOUT).aten_header(
        INVERSES, request.location)
    if store is not None:
        digest = text_hash(text)
        store.put_blob(digest, "text", text.encode("utf-8"))
        store.put_task(key, INVERSES_TASK, digest, 0.0, code_version())
    return text


def text_hash(text: str) -> str:
    return blob_hash("text", text.encode("utf-8"))
