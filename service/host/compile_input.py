"""What a host-path build compiles from: its generation's item values cut into units
(cache/graph/host_layout_group.py), served to the compile driver as a graph run's layout is
(service/compile/driver.py: CompileSource).

The generation is the build's own (`HostRun`, the worker's answer), or for a build that was up
to date the last one recorded for this spec and --out (its HostIndex: item hashes and what
they are of). The item values are read by the layout's tasks from the store, where the build
recorded them (those the generation made, and without a store all of them, are handed to the
engine's memory); --out's files are the generation's texts, or read back from --out, each
checked against the hash the build wrote. FunctionalInverses.h (service/host/aten_headers.py)
is kept in the store under the generator and the spec's native_functions.yaml and tags.yaml,
so a formula's edit does not ask the worker for it again.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from gradshard.cache.graph.host_layout_group import (HOST_COMPILE_LAYOUT, HostLayoutIndex,
                                                     python_files)
from gradshard.cache.store.database import blob_hash
from gradshard.cache.version import code_version
from gradshard.pipeline.layout.compile_layout import CompileLayout, ShardSettings
from gradshard.pipeline.problems import SpecFile
from gradshard.pipeline.records import Text, canonical_json, content_hash
from gradshard.pipeline.render.templating import TemplateSet
from gradshard.service.compile.driver import out_text
from gradshard.service.files.inputs import InputBytes, spec_template_sources, template_set
from gradshard.service.files.placement import index_names
from gradshard.service.files.spec_location import read_spec_file
from gradshard.service.generator.check import DEFAULT_TIMEOUT
from gradshard.service.graph_run import fresh_reads, new_engine
from gradshard.service.host.generation import (HostRun, generate_on_host, host_index,
                                               last_host_index, put_host_index)
from gradshard.service.host.item_values import (HostItems, ValueSource, entry_lines,
                                                function_kernels, node_entries,
                                                recorded_items)

if TYPE_CHECKING:
    from gradshard.cache.engine.core import Engine
    from gradshard.service.open_cache import OpenCache
    from gradshard.service.outcome import BuildRequest

__all__ = ["HostCompileInput", "host_compile_input", "layout_index"]

INVERSES = "FunctionalInverses.h"
INVERSES_TASK = "host aten header"  # the tasks row naming a FunctionalInverses.h text
_IDENTIFIER = re.compile(r"[A-Za-z_]\w*")


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
        inputs = self.inputs
        value = engine.group(HOST_COMPILE_LAYOUT, [
            engine.literal(self.index),
            engine.literal(TemplateSet(spec_template_sources(inputs.spec_templates))),
            engine.literal(template_set(inputs.templates, inputs.compiled)),
            engine.text(inputs.location.layout), engine.literal(settings)], "compile layout")
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
        values = self.items.values([self.items.kernels[f][0] for f in functions])
        entries.update((k.wrapper, k.entry) for f in functions
                       for k in function_kernels(self.items, f, values) if k.entry)
        return derivatives, entries


def host_compile_input(request: BuildRequest, session: OpenCache, run: HostRun | None,
                       inputs: InputBytes, out_dir: Path) -> HostCompileInput:
    """The compile input of the build's generation `run`, or (None: the build was up to date)
    of the last one recorded for this spec and --out; when the store no longer holds that
    one, the spec is generated again (the worker's memo, primed from the store, serves it)."""
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
        held += items.values(sorted(items.hashes)).values()
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
    text = session.host_worker(request.identity, DEFAULT_TIMEOUT).aten_header(INVERSES,
                                                                               request.location)
    if store is not None:
        digest = text_hash(text)
        store.put_blob(digest, "text", text.encode("utf-8"))
        store.put_task(key, INVERSES_TASK, digest, 0.0, code_version())
    return text


def text_hash(text: str) -> str:
    return blob_hash("text", text.encode("utf-8"))
