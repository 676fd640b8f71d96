"""What a `gradshard try` patches: the ops whose kernels or nodes a spec generates differently
from the installed torch's own spec (or the ops named), each with its autograd kernels and
the backward nodes they create, read from the spec's build (the session's graph run, cached
like any build's).

An op here is what a formula reaches together (pipeline/layout/compile_layout.py: function_op): sin
covers sin, sin_ and sin.out. Ops that cannot be patched are kept with the reason, for the
report.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

from gradshard.cache.engine.core import Engine
from gradshard.cache.graph.group_records import AutogradSide, BuildIndex, NativeSide
from gradshard.pipeline.layout.compile_layout import function_op
from gradshard.pipeline.parse.native import NativeFunction
from gradshard.pipeline.problems import SpecFile
from gradshard.pipeline.records import Text, canonical_json, content_hash
from gradshard.pipeline.render.templating import TemplateSet, warm_templates
from gradshard.pipeline.render.variable_type_files import DispatchKeys, RenderedKernel
from gradshard.service.files.inputs import (compiled_template_bytes, gradshard_template_bytes,
                                            read_inputs, read_spec_file, spec_templates,
                                            template_set)
from gradshard.service.files.spec_location import SpecLocation, locate_spec
from gradshard.service.generator.check import HOST, PORTED
from gradshard.service.generator.identity import GeneratorIdentity, identify_generator
from gradshard.service.graph_run import GraphResult, built_spec, new_engine
from gradshard.service.host.generation import entry_lines
from gradshard.service.host.item_values import HostItems, node_entries
from gradshard.service.live.host_patch import (PATCH_HEADERS, begin_host_items,
                                               changed_bindings, changed_functions,
                                               generation_key, host_items, host_parts, op_code,
                                               op_functions, op_nodes, recorded_index,
                                               schema_changed)
from gradshard.service.live.patch_sources import (PatchNode, PatchSources, patch_includes,
                                                  patch_sources)

if TYPE_CHECKING:
    from gradshard.service.open_cache import OpenCache

__all__ = ["PYTHON_ONLY", "PatchOp", "PatchPlan", "patch_templates", "plan_patch"]

# where a checkout keeps the helpers formulas call (torch's own FunctionsManual)
MANUAL_HEADER = "torch/csrc/autograd/FunctionsManual.h"
MANUAL_SOURCE = "torch/csrc/autograd/FunctionsManual.cpp"


NO_KERNEL = ("no autograd kernel of its own in VariableType (a CompositeImplicitAutograd "
             "function, one with only a fallback registration, or not an op of this spec)")
PYTHON_ONLY = ("only its Python binding differs from the installed torch's: try patches "
               "autograd kernels and nodes, not torch._C's bindings (rebuild PyTorch for these)")


@dataclass(frozen=True)
class PatchOp:
    """An op `try` checks: its kernels' wrapper names, the nodes they create, and where its
    formulas are (the derivatives entry and its line), or why it cannot be patched."""

    name: str
    functions: tuple[str, ...]
    nodes: tuple[str, ...]
    entry: str = ""
    line: int = 0
    reason: str = ""
    code: str = ""  # the hash of its kernels' and nodes' code: what a warm checker compares


@dataclass(frozen=True)
class PatchPlan:
    """The ops, and the patch's sources when there is anything to patch."""

    spec: SpecLocation
    baseline: str
    ops: tuple[PatchOp, ...]
    sources: PatchSources | None
    includes: tuple[tuple[str, str], ...]
    derivatives: Path
    derivatives_text: str = ""  # as the build read it: compile errors are placed in it
    node_entries: tuple[tuple[str, str], ...] = ()  # node or kernel wrapper → its entry
    manual: str = ""  # a checkout's FunctionsManual.cpp, compiled into the patch
    path: str = PORTED  # whose code the patch is: gradshard's renderers', or the generator's

    @property
    def patched(self) -> tuple[PatchOp, ...]:
        return tuple(op for op in self.ops if not op.reason)


@dataclass(frozen=True)
class _Built:
    """One spec's build, read for a patch: every kernel (by its unit), every node's code."""

    index: BuildIndex
    engine: Engine
    kernels: dict[str, RenderedKernel]  # "<function> <n>" → kernel
    kernel_hashes: dict[str, str]  # "<function> <n>" → the kernel record's hash
    nodes: dict[str, str]  # node name → hash of its four pieces
    functions_key: str  # the hash of the native functions' collection
    entry_lines: dict[str, int]  # derivatives entry label → its first line
    bindings: dict[str, str]  # Python binding (torch.sin, Tensor.sin_) → its code's hash
    derivatives: str  # derivatives.yaml's text as the build read it

    @functools.cached_property
    def functions(self) -> dict[str, NativeFunction]:
        """Every native function by name: decoded only when the two specs' collections
        differ (3,100 schemas parsed again: half a second of every fresh `try`)."""
        engine = self.engine
        items = engine.items(engine.ref_collection(self.functions_key, NativeFunction))
        return {str(f.name): f for f in engine.records(items)}


def plan_patch(location: SpecLocation, session: OpenCache, names: Sequence[str],
               run: GraphResult | None = None,
               identity: GeneratorIdentity | None = None) -> PatchPlan:
    """The patch of the ops named, else of those whose code differs from the installed
    torch's spec. `run`: the graph run of a build in progress on the session, which the plan
    reads instead of running the graph again (the daemon's check: its rows stay staged until
    that build commits them, after the check). `identity`: the spec's generator, when the
    caller has identified it (else it is, here)."""
    identity = identity or identify_generator(location)
    if not identity.known:  # the spec's own generator's code: the host path's items
        return _plan_on_host(location, session, names, identity)
    current = _read_build(location, session, run, release=identity.rules_release)
    if names:
        ops, baseline = _named_ops(current, names), "the ops named"
    else:
        installed = locate_spec(None)  # the installed torchgen's packaged spec
        if installed.root.resolve() == location.root.resolve():
            ops, baseline = (), f"the installed torch's own spec ({installed.root})"
        else:
            ops = _changed_ops(current, _read_build(installed, session, commit=run is None))
            baseline = f"the installed torch's own spec ({installed.root})"
    ops = tuple(_placed(op, current) for op in ops)
    return _with_sources(location, current, ops, baseline)


def _read_build(location: SpecLocation, session: OpenCache, run: GraphResult | None = None,
                commit: bool = True, release: str | None = None) -> _Built:
    """The spec's build: read from `run` when given (the spec as that run read it), else from
    a graph run of its own (committed unless `commit` is false)."""
    if run is not None:
        side, engine = run.built_spec(), run.engine
        derivatives = run.decoded.texts.text_of(SpecFile.DERIVATIVES)
    else:
        inputs = read_inputs(location)
        side = built_spec(inputs, session.open(), session.memory, commit, release)
        engine = new_engine(session.open(), session.memory)
        derivatives = inputs.yaml[SpecFile.DERIVATIVES].decode(errors="replace")
    units = [(u.split(" ", 1)[1], h) for u, h in side.index.kernels]
    records = engine.records([engine.ref(h, RenderedKernel) for _, h in units])
    native = engine.record(engine.ref(side.index.native, NativeSide))
    lines = {stamp.label: stamp.line for file, stamp in side.entries
             if file is SpecFile.DERIVATIVES}
    return _Built(side.index, engine, dict(zip((u for u, _ in units), records)), dict(units),
                  dict(side.index.nodes), native.functions, lines,
                  dict(side.index.bindings), derivatives)


def _changed_ops(current: _Built, baseline: _Built) -> list[PatchOp]:
    changed_nodes = {n for n, h in current.nodes.items() if baseline.nodes.get(n) != h}
    reached = {function_op(_function(u)) for u, k in current.kernels.items()
               if k.node in changed_nodes or baseline.kernels.get(u) != k}
    schema_changed = set() if current.functions_key == baseline.functions_key else {
        function_op(name) for name, f in current.functions.items()
        if name in baseline.functions and str(f.func) != str(baseline.functions[name].func)}
    ops = [_op(current, name, "the op's schema differs from the installed torch's"
               if name in schema_changed else "") for name in sorted(reached)]
    bindings = set(current.bindings) | set(baseline.bindings)
    python_only = sorted(b for b in bindings if current.bindings.get(b) != baseline.bindings.get(b)
                         and function_op(b.rsplit(".", 1)[-1]) not in reached)
    return ops + [PatchOp(b, (), (), reason=PYTHON_ONLY) for b in python_only]


def _named_ops(current: _Built, names: Sequence[str]) -> list[PatchOp]:
    by_node = {k.node: function_op(_function(u)) for u, k in current.kernels.items() if k.node}
    ops: dict[str, PatchOp] = {}
    for name in names:
        op = by_node.get(name) or function_op(name.split("(", 1)[0].strip())
        ops.setdefault(op, _op(current, op, ""))
    return list(ops.values())


def _function(unit: str) -> str:
    return unit.rsplit(" ", 1)[0]


def _functions_of(current: _Built, op: str) -> list[str]:
    return [u for u, k in current.kernels.items() if function_op(_function(u)) == op and k.definition]


def _op(current: _Built, op: str, reason: str) -> PatchOp:
    units = _functions_of(current, op)
    kernels = [current.kernels[u] for u in units]
    nodes = tuple(dict.fromkeys(k.node for k in kernels if k.node in current.nodes))
    if not units and not reason:
        reason = NO_KERNEL
    code = content_hash(canonical_json([[(u, current.kernel_hashes[u]) for u in units],
                                        [(n, current.nodes[n]) for n in nodes]]))
    return PatchOp(op, tuple(dict.fromkeys(_function(u) for u in units)), nodes, reason=reason,
                   code=code)


def _placed(op: PatchOp, current: _Built) -> PatchOp:
    """The op with its derivatives entry and that entry's line."""
    entries = [k.entry for u, k in current.kernels.items()
               if function_op(_function(u)) == op.name and k.entry]
    if not entries:
        return op
    return replace(op, entry=entries[0], line=current.entry_lines.get(entries[0], 0))


def _with_sources(location: SpecLocation, current: _Built, ops: Sequence[PatchOp],
                  baseline: str) -> PatchPlan:
    patched = [op for op in ops if not op.reason]
    derivatives = location.path_of(SpecFile.DERIVATIVES)
    if not patched:
        return PatchPlan(location, baseline, tuple(ops), None, (), derivatives)
    engine, index = current.engine, current.index
    wanted = {f for op in patched for f in op.functions}
    kernels = [k for u, k in current.kernels.items() if _function(u) in wanted]
    node_names = list(dict.fromkeys(n for op in patched for n in op.nodes))
    nodes = _patch_nodes(engine, index, node_names)
    templates, spec = _templates(location)
    autograd = engine.record(engine.ref(index.autograd, AutogradSide))
    keys = engine.record(engine.ref(autograd.dispatch_keys, DispatchKeys))
    layout = location.layout
    sources = patch_sources(nodes, kernels, keys, spec, templates, layout)
    files = dict(index.files)
    texts = engine.records([engine.ref(files[n], Text)
                            for n in ("VariableType.h", "python_functions.h")])
    includes = patch_includes(spec, layout, texts[0].text, texts[1].text)
    header, manual = checkout_manual(location)
    entries = dict(zip((n for n, _ in index.nodes), index.node_keys))
    entries.update((k.wrapper, k.entry) for k in kernels if k.entry)
    return PatchPlan(location, baseline, tuple(ops), sources, includes + header, derivatives,
                     current.derivatives, tuple(entries.items()), manual)


def checkout_manual(location: SpecLocation) -> tuple[tuple[tuple[str, str], ...], str]:
    """A checkout's FunctionsManual.h (an include, ahead of the installed torch's) and
    FunctionsManual.cpp (a unit of the patch), so that a formula may call a helper written
    there; nothing for a packaged spec, whose helpers are the installed torch's."""
    if location.layout != "checkout":
        return (), ""
    texts = []
    for name in (MANUAL_HEADER, MANUAL_SOURCE):
        data = read_spec_file(location.root / name, missing_ok=True)
        texts.append(data.decode(errors="replace") if data is not None else "")
    if not texts[0] or not texts[1]:
        return (), ""
    return ((MANUAL_HEADER, texts[0]),), texts[1]


def _patch_nodes(engine: Engine, index: BuildIndex, names: Sequence[str]) -> list[PatchNode]:
    code = dict(index.nodes)
    python = set(n for n, _ in index.nodes[:index.python_nodes])
    pieces = engine.items_of([engine.ref_collection(code[n], Text) for n in names])
    nodes = []
    for name, items in zip(names, pieces):
        # render.node's pieces: declaration, definition, Python class, Python properties
        texts = [t.text for t in engine.records(list(items))]
        nodes.append(PatchNode(name, *texts, python=name in python))
    return nodes


LIVE_TEMPLATES = "gradshard.templates.live"
PATCH_MODULES = ("patch.j2", "compile_units.j2")  # what a patch's sources and PCH render


def patch_templates() -> TemplateSet:
    """The build's templates (a patch renders nodes and kernels as the build does) and the
    patch's own (templates/live), which no build task reads."""
    sources = {**gradshard_template_bytes(), **gradshard_template_bytes(LIVE_TEMPLATES)}
    return template_set(sources, {**compiled_template_bytes(),
                                  **compiled_template_bytes(LIVE_TEMPLATES)})


def _templates(location: SpecLocation) -> tuple[TemplateSet, TemplateSet]:
    return patch_templates(), spec_templates(location, (
        "Functions.h", "Functions.cpp", "python_functions.h", "python_functions.cpp",
        "VariableType.cpp", "VariableType.h"))


def _plan_on_host(location: SpecLocation, session: OpenCache, names: Sequence[str],
                  identity: GeneratorIdentity) -> PatchPlan:
    """The plan from the spec's own generator's items (service/live/host_patch.py): ops
    named, else those whose items differ from its generation of the installed torch's spec."""
    installed = locate_spec(None)
    same_generator = identify_generator(installed).hash == identity.hash
    # the installed spec's generation, recorded by an earlier `try`: the baseline, and what
    # a fresh worker starts from (most of the spec's items are the same)
    recorded = recorded_index(session.open(), generation_key(identity, installed)) \
        if same_generator else None
    generation = begin_host_items(session, identity, location, prime=recorded)
    try:  # the patch's templates compiled while the worker generates (~0.3 s a process)
        warm_templates(patch_templates(), PATCH_MODULES)
    except BaseException:
        generation.abandon()
        raise
    current = generation.items()
    if names:
        wanted, baseline, python_only = _host_named(current, names), "the ops named", []
    else:
        baseline = f"the installed torch's own spec ({installed.root})"
        if installed.root.resolve() == location.root.resolve():
            wanted, python_only = {}, []
        else:
            before = host_items(session, identity, installed, recorded)
            functions = changed_functions(current, before)
            moved = schema_changed(current, before, functions)
            wanted = {op: "the op's schema differs from the installed torch's"
                      if op in moved else "" for op in sorted({function_op(f) for f in functions})}
            python_only = [b for b in changed_bindings(current, before)
                           if function_op(b) not in wanted]
    functions = {op: op_functions(current, op) for op in wanted}
    every = [f for found in functions.values() for f in found]
    parts = host_parts(current, every, op_nodes(current, every))
    defined = {f for f in every if any(k.definition for k in parts.kernels_of(f))}
    derivatives_text = read_spec_file(location.path_of(SpecFile.DERIVATIVES)).decode(
        errors="replace")
    lines = entry_lines(derivatives_text)
    placed = node_entries(current, lines)
    ops = []
    for op, reason in wanted.items():
        mine = tuple(f for f in functions[op] if f in defined)
        nodes = op_nodes(current, mine)
        if not mine and not reason:
            reason = NO_KERNEL
        entry = next((placed[n] for n in nodes if n in placed), "")
        ops.append(PatchOp(op, mine, nodes, entry, lines.get(entry, 0), reason,
                           op_code(current, mine, nodes)))
    ops += [PatchOp(b, (), (), reason=PYTHON_ONLY) for b in python_only]
    patched = [op for op in ops if not op.reason]
    derivatives = location.path_of(SpecFile.DERIVATIVES)
    if not patched:
        return PatchPlan(location, baseline, tuple(ops), None, (), derivatives, path=HOST)
    chosen = {f for op in patched for f in op.functions}
    node_names = list(dict.fromkeys(n for op in patched for n in op.nodes))
    nodes = [n for n in parts.nodes if n.name in node_names]
    kernels = [k for f in every if f in chosen for k in parts.kernels_of(f)]
    templates, spec = _templates(location)
    sources = patch_sources(nodes, kernels, parts.keys, spec, templates, location.layout)
    files = current.files
    includes = patch_includes(spec, location.layout,
                              *(_generated(files, name) for name in PATCH_HEADERS))
    header, manual = checkout_manual(location)
    entries = {**placed, **{k.wrapper: placed[k.node] for k in kernels if k.node in placed}}
    return PatchPlan(location, baseline, tuple(ops), sources, includes + header, derivatives,
                     derivatives_text, tuple(entries.items()), manual, HOST)


def _host_named(current: HostItems, names: Sequence[str]) -> dict[str, str]:
    """The ops named: by a node's name (the op whose kernel creates it) or a function's."""
    by_node = {node: function_op(f) for f, keys in current.kernel_nodes.items()
               for node, _ in keys.values() if node}
    return {by_node.get(name) or function_op(name.split("(", 1)[0].strip()): ""
            for name in names}


def _generated(files: dict[str, bytes], name: str) -> str:
    """A generated file's text by its base name, wherever the generation placed it."""
    found = [data for path, data in files.items() if path.rsplit("/", 1)[-1] == name]
    return found[0].decode("utf-8") if found else ""
