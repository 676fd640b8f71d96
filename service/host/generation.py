"""A build's files on the host path: the spec's own generator, run by the session's worker for
it (service/open_cache.py: host_worker), its memo primed from the store when the worker is
fresh; what the generation made is kept with the build (`HostRun.record`).

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
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Sequence

from gradshard.cache.engine.codec import decode, encode
from gradshard.cache.graph.build_graph import spec_findings
from gradshard.cache.engine.stats import EngineStats
from gradshard.cache.graph.manifest import HostIndex, HostManifest
from gradshard.cache.store.database import Store, blob_hash
from gradshard.pipeline.formulas.names import FormulaSources
from gradshard.pipeline.parse.spec import SpecTexts, decode_spec
from gradshard.pipeline.problems import InternalError, Problem, SpecError
from gradshard.pipeline.releases import RELEASES, Release
from gradshard.service.files.spec_location import SpecLocation
from gradshard.service.generator.identity import GeneratorIdentity
from gradshard.pipeline.render.templating import TemplateSet
from gradshard.service.files.inputs import InputBytes, spec_template_sources
from gradshard.service.graph_run import formula_sources, new_engine
from gradshard.service.host.client import HostOutput, HostWorker
from gradshard.service.open_cache import OpenCache
from gradshard.service.outcome import BuildRequest

__all__ = ["Generating", "HostRun", "begin_generation", "generate_on_host", "host_index",
           "host_records", "last_host_index", "own_rule_findings", "put_host_index",
           "read_record", "remembered_values", "start_worker"]


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


def start_worker(session: OpenCache, identity: GeneratorIdentity, timeout: float
                 ) -> tuple[HostWorker, float]:
    """The session's worker for the generator (started now if need be), and the seconds
    that took."""
    began = time.perf_counter()
    worker = session.host_worker(identity, timeout)
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
        output = self.worker.generated(self.location)
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
    primed = time.perf_counter()
    worker.send_generate(location, remember, deliver)
    return Generating(worker, identity.hash, location,
                      {"worker start": starting, "prime": primed - began}, primed)


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
    releases = [identity.rules] if identity.reproduced else \
        [identity.rules, *(r for r in RELEASES.values() if r != identity.rules)]
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
