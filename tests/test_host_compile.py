"""`gradshard build` compiling on the host path (service/host/generation.py,
cache/graph/host_layout_group.py): the units are cut from the spec's own generator's item
values, so a formula's edit recompiles the unit holding its node (a backward formula) or its
op's kernel unit (a forward formula), never a torchgen shard; the units' texts are the
generator's (an edited generator's statement is in its kernel unit); an up-to-date build cuts
the same layout from the last recorded generation; a compile error is placed at its entry."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Callable

import pytest
from support.compile import run_build, suite_flags
from support.specs import DERIVATIVES, installed_torchgen, stage_packaged_spec

from gradshard.cache.errors import CompileError
from gradshard.cache.graph.host_layout_group import HostLayoutIndex
from gradshard.pipeline.layout.compile_layout import ShardSettings
from gradshard.service.build import build_and_compile
from gradshard.service.compile.driver import CompileOptions
from gradshard.service.files.inputs import read_inputs
from gradshard.service.files.placement import Placement
from gradshard.service.files.spec_location import locate_spec
from gradshard.service.generator.check import HOST, SKIP, GeneratorCheck
from gradshard.service.generator.identity import identify_generator
from gradshard.service.outcome import BuildOutcome, BuildRequest
from gradshard.service.host.generation import (generate_on_host, host_compile_input,
                                               layout_index)
from gradshard.service.host.item_values import HostItems, ValueSource
from gradshard.service.session import Session

HOST_CHECK = GeneratorCheck(mode=SKIP, path=HOST)
# each op's kernel unit registers its own kernels (no merged unit): the tests compile a few
SHARDS = ShardSettings(merged_kernel_base=0)
SIN_BACKWARD = "  self: grad * self.cos().conj()\n  result: auto_element_wise\n"
SIN_BACKWARD_EDITED = "  self: grad * self.cos().conj() * 2\n  result: auto_element_wise\n"
SIN_FORWARD_EDITED = "  self: grad * self.cos().conj() * 2\n  result: self_t * self_p.cos()\n"
BROKEN = "  self: grad * self.cos().conj() * undefined_name\n  result: auto_element_wise\n"


def _edit(spec: Path, old: str, new: str) -> None:
    path = spec / DERIVATIVES
    text = path.read_text()
    assert text.count(old) == 1, old
    path.write_text(text.replace(old, new))


def _node_unit(out: Path, node: str) -> str:
    """The Functions unit whose source defines `node`'s apply."""
    defines = re.compile(rf"\b{node}::apply\(")
    found = [p.stem for p in (out / "compile" / "src").glob("Functions_*.cpp")
             if defines.search(p.read_text())]
    assert len(found) == 1, found
    return found[0]


def _builder(tmp_path: Path) -> tuple[Path, Path, Session, Callable[..., BuildOutcome]]:
    """A staged copy of the installed spec, its --out, a session, and its host build
    compiling the units named."""
    _, spec = stage_packaged_spec(tmp_path / "spec")
    out, session = tmp_path / "out", Session(tmp_path / "cache")
    location = locate_spec(str(spec))

    def build(*units: str) -> BuildOutcome:
        options = CompileOptions(units=units, flags=suite_flags(), shards=SHARDS)
        return build_and_compile(location, out, session, options, check=HOST_CHECK)

    return spec, out, session, build


@pytest.mark.compiler
@pytest.mark.slow
def test_a_formula_edit_recompiles_its_node_unit_and_its_kernel_unit(tmp_path):
    spec, out, session, build = _builder(tmp_path)
    first = build("VariableType_sin")
    assert "run on the host path" in first.generator.summary()
    assert first.compiled.compiled == ["VariableType_sin"]
    unit = _node_unit(out, "SinBackward0")
    kernel = (out / "compile" / "src" / "VariableType_sin.cpp").read_text()
    # the generator's own kernels (its statements: `grad_fn` as gen_variable_type writes it)
    assert "c10::intrusive_ptr<SinBackward0> grad_fn;" in kernel
    assert "sin_(c10::DispatchKeySet ks, at::Tensor & self)" in kernel
    assert build("VariableType_sin", unit).compiled.compiled == [unit]

    # the node's definition, and the kernels' forward formula (auto_element_wise: torchgen
    # derives it from this one)
    _edit(spec, SIN_BACKWARD, SIN_BACKWARD_EDITED)
    edited = build("VariableType_sin", unit)
    assert edited.status == "built"
    assert sorted(edited.compiled.compiled) == sorted([unit, "VariableType_sin"])
    assert "self.cos().conj() * 2" in (out / "compile" / "src" / f"{unit}.cpp").read_text()

    _edit(spec, SIN_BACKWARD_EDITED, SIN_FORWARD_EDITED)  # the forward formula alone
    forward = build("VariableType_sin", unit)
    assert forward.compiled.compiled == ["VariableType_sin"]
    kernel = (out / "compile" / "src" / "VariableType_sin.cpp").read_text()
    assert "self_t * self_p.cos()" in kernel

    again = build("VariableType_sin", unit)  # up to date: the last generation's layout
    assert again.status == "up to date" and again.compiled.compiled == []
    session.close()


@pytest.mark.compiler
@pytest.mark.slow
def test_a_compile_error_is_placed_at_its_formula(tmp_path):
    spec, out, session, build = _builder(tmp_path)
    build("VariableType_sin")
    unit = _node_unit(out, "SinBackward0")
    _edit(spec, SIN_BACKWARD, BROKEN)
    with pytest.raises(CompileError) as raised:
        build(unit)
    (found,) = [d for d in raised.value.diagnostics if "undefined_name" in d.message]
    line = next(n for n, text in enumerate((spec / DERIVATIVES).read_text().splitlines(), 1)
                if "undefined_name" in text)
    assert found.entry.startswith("sin") and found.node == "SinBackward0"
    assert found.line == line and found.variables == "self"
    session.close()


def test_the_layout_index_keeps_what_the_layout_can_hold():
    """Nodes with both pieces, in name order; a kernel's node that the generation does not
    define (a node of torch's own) is no header to include; a python_functions file names
    the nodes its text mentions, not a longer identifier that starts with one."""
    items = HostItems(
        files={},
        kernels={"sin": ("k1", "v1"), "cos": ("k2", "v2")},
        kernel_nodes={"sin": {"Default": ("SinBackward0", "sin")},
                      "cos": {"Default": ("NotImplemented", "cos")}},
        nodes={"SinBackward0": {"declaration": ("d1", "h1"), "definition": ("d2", "h2")},
               "CosBackward0": {"declaration": ("d3", "h3")}},
        bindings={}, source=ValueSource(None, None))
    python = {"python_functions_0.cpp": "addClass<SinBackward0>(...); SinBackward0Extra x;",
              "python_functions_1.cpp": "nothing here"}
    index = layout_index(items, {"Functions.h": "f"}, python, "inverses")
    assert isinstance(index, HostLayoutIndex)
    assert index.nodes == (("SinBackward0", "h1", "h2"),)
    kernels = dict((f, nodes) for f, _, nodes in index.kernels)
    assert kernels == {"cos": '{"Default": ["", "cos"]}',
                       "sin": '{"Default": ["SinBackward0", "sin"]}'}
    assert dict(index.python_nodes) == {"python_functions_0.cpp": ("SinBackward0",),
                                        "python_functions_1.cpp": ()}



def _units_of(layout) -> dict[str, object]:
    return {unit.name: unit for unit in layout.units}


@pytest.mark.slow
def test_the_layout_without_a_store_and_after_the_store_lost_the_generation(tmp_path):
    """--no-cache: the item values are the worker's, held in the engine's memory. An up-to-date
    build whose recorded generation the store no longer holds generates again. Both cut the
    same layout as the build's own generation (no compile: the layout is what differs)."""
    _, spec = stage_packaged_spec(tmp_path / "spec")
    location = locate_spec(str(spec))
    request = BuildRequest.of(location, tmp_path / "out", Placement(), False, HOST_CHECK,
                              identify_generator(location))
    inputs = read_inputs(location)
    layouts = []
    for directory in (None, tmp_path / "cache"):
        session = Session(directory)
        run = generate_on_host(request, session, inputs)
        layout = host_compile_input(request, session, run, inputs, tmp_path / "out")
        layouts.append(layout.layout(SHARDS))
        texts = layout.texts(dict(layouts[-1].files))
        node_unit = next(text for path, text in texts.items()
                         if path.startswith("src/Functions_") and " SinBackward0::apply(" in text)
        assert "grad * self.cos().conj()" in node_unit
        session.close()
    assert layouts[0] == layouts[1]

    # a build recorded, then its manifest gone from the store: generated again
    session = Session(tmp_path / "cache2")
    build_and_compile(location, tmp_path / "out", session, check=HOST_CHECK)
    store = session.open()
    last = store.last_build(request.spec_key, request.out_key)
    store.forget([last.manifest])
    again = host_compile_input(request, session, None, inputs, tmp_path / "out")
    assert again.layout(SHARDS) == layouts[0]
    session.close()


def test_a_subset_is_not_compiled_on_the_host_path(tmp_path, capsys):
    """The host path's units are cut from every file the generator writes: a subset, which
    --out would then lack, is refused before anything is generated or written."""
    code, _, err = run_build(capsys, installed_torchgen() / "packaged", tmp_path / "out",
                             tmp_path / "cache", "--generator-path", "host", "--subset",
                             "libtorch")
    assert code == 2 and "--subset" in err and "--codegen-only" in err
    assert not (tmp_path / "out").exists()
