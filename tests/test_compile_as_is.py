"""The compile of the real generator's files (pipeline/layout/as_is.py, compile_generated's
`real_files`): on the packaged spec's layout, which of gradshard's units a real file replaces
by torchgen's files compiled from --out, and the headers rule; then one compile through ninja
of two small as-is files of the mini spec, placed as in a PyTorch checkout."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
from support.compile import suite_flags
from support.graph_run import run_graph
from support.specs import MINI_SPEC

from gradshard.cache.store.database import blob_hash
from gradshard.pipeline.layout.as_is import AsIsLayout, as_is_layout
from gradshard.pipeline.layout.compile_layout import (GENERATED_DIR, PRELUDE_PATH, CompileLayout,
                                                      CompileUnit, ShardSettings)
from gradshard.service.compile.driver import CompileOptions, compile_generated
from gradshard.service.compile.plan import check_layout
from gradshard.service.files.placement import Placement, generated_dir
from gradshard.service.files.spec_location import locate_spec
from gradshard.service.generator.check import GeneratorCheck
from gradshard.service.generator.identity import identify_generator
from gradshard.service.open_cache import OpenCache
from gradshard.service.outcome import BuildRequest

REAL = "f" * 32  # a real file's hash: any the build's files do not hold
NODE_UNITS = re.compile(r"Functions(_.+)?|VariableType(Forward)?_.+|python_functions_\d+")
VARIABLE_TYPE_UNITS = re.compile(r"VariableType(Forward)?_.+")


@pytest.fixture(scope="module")
def packaged(packaged_spec) -> tuple[CompileLayout, dict[str, str]]:
    """The packaged spec's compile layout and its build's files (index name → hash)."""
    result = run_graph(packaged_spec).result
    return result.layout(ShardSettings()), result.files


def as_is(packaged, *names: str) -> AsIsLayout:
    """The layout with these files the real generator's; checked as the driver checks it."""
    layout, files = packaged
    real = {name: REAL for name in names}
    made = as_is_layout(layout, files, real)
    check_layout(made.layout, {**files, **real}, None)  # raises on a unit it cannot compile
    return made


def from_out(layout: CompileLayout) -> dict[str, CompileUnit]:
    return {u.name: u for u in layout.units if u.from_out}


def kept(layout: CompileLayout, pattern: re.Pattern) -> list[CompileUnit]:
    return [u for u in layout.units if not pattern.fullmatch(u.name)]


def test_no_real_file_leaves_the_layout_as_it_is(packaged):
    layout, _ = packaged
    assert as_is(packaged) == AsIsLayout(layout)
    # files PyTorch's build never compiles change no unit
    never = ("VariableTypeEverything.cpp", "TraceTypeEverything.cpp", "annotated_fn_args.py",
             "templates/VariableType.cpp", "python_torch_functionsEverything.cpp")
    assert as_is(packaged, *never) == AsIsLayout(layout)


def test_a_real_variable_type_file_compiles_the_node_families_as_they_are(packaged):
    """VariableType_3.cpp: no kernel unit of gradshard's is left, the ten VariableType_k.cpp
    compile from --out, and so do Functions.cpp and python_functions_k.cpp (their files need
    Functions.h whole, which the compile directory then holds); the other families keep
    their units."""
    layout, files = packaged
    made = as_is(packaged, "VariableType_3.cpp")
    new = from_out(made.layout)
    assert not [u for u in made.layout.units if NODE_UNITS.fullmatch(u.name) and not u.from_out]
    assert not made.layout.merged  # formula and kernel units merged: all gradshard's
    expected = {f"VariableType_{k}" for k in range(10)} | {"Functions"} | {
        f"python_functions_{k}" for k in range(5)}
    assert expected <= set(new) and "VariableTypeEverything" not in new
    assert all(new[n].source == f"{n}.cpp" for n in expected)
    assert new["VariableType_3"].pch == "variable_type" and new["Functions"].pch == "autograd"
    assert kept(made.layout, NODE_UNITS) == kept(layout, NODE_UNITS)  # every other family
    assert dict(made.layout.files)[PRELUDE_PATH] == files["Functions.h"]  # whole
    assert made.copies == ((PRELUDE_PATH, "Functions.h"),)
    assert {u.name for u in layout.units if VARIABLE_TYPE_UNITS.fullmatch(u.name)} <= set(
        made.dropped)


def test_the_files_the_real_generator_writes_are_the_familys_units(packaged):
    """A shard only gradshard writes (the real generator has fewer) and one only the real
    generator writes: the family compiles what --out holds, no more, no less."""
    layout, files = packaged
    served = {n: h for n, h in files.items() if n != "TraceType_9.cpp"}
    served["TraceType_10.cpp"] = REAL
    made = as_is_layout(layout, served, {"TraceType_9.cpp": "", "TraceType_10.cpp": REAL})
    check_layout(made.layout, served, None)
    trace = sorted(n for n in from_out(made.layout) if n.startswith("TraceType"))
    assert trace == sorted([f"TraceType_{k}" for k in range(9)] + ["TraceType_10"])


def test_a_real_trace_type_file_replaces_its_family_only(packaged):
    layout, _ = packaged
    made = as_is(packaged, "TraceType_4.cpp")
    parts = re.compile(r"TraceType_part-\d+")
    assert not [u for u in made.layout.units if parts.fullmatch(u.name)]
    assert sorted(n for n in from_out(made.layout) if n.startswith("TraceType")) == [
        f"TraceType_{k}" for k in range(10)]
    assert kept(made.layout, re.compile(r"TraceType_.+")) == kept(layout, parts)
    assert (made.layout.files, made.layout.merged, made.copies) == (layout.files, layout.merged,
                                                                    ())


def test_a_real_binding_file_in_a_shared_unit_compiles_its_files_alone(packaged):
    layout, _ = packaged
    made = as_is(packaged, "python_enum_tag.cpp")
    pack = next(u for u in layout.units if u.name == "python_bindings_0")
    members = sorted(h.rsplit("/", 1)[1] for h in pack.headers if h.startswith("src/bindings/"))
    new = from_out(made.layout)
    assert "python_bindings_0" not in {u.name for u in made.layout.units}
    assert all(new[m.removesuffix(".cpp")].source == m for m in members)
    assert made.layout.files == layout.files and made.dropped == ("python_bindings_0",)


def test_a_real_header_is_copied_and_replaces_its_family(packaged):
    """A differing header is what every unit sees (the compile directory's copy holds --out's
    text); Functions.h whole takes the node families with it."""
    layout, _ = packaged
    factories = as_is(packaged, "variable_factories.h")  # a header only: its unit stays
    path = f"{GENERATED_DIR}/variable_factories.h"
    assert factories.layout.units == layout.units
    assert factories.copies == ((path, "variable_factories.h"),)
    changed = {p for p, h in factories.layout.files if dict(layout.files)[p] != h}
    assert changed == {path} and dict(factories.layout.files)[path] == REAL
    types = as_is(packaged, "python_return_types.h")  # its binding file's family
    assert "python_return_types" in from_out(types.layout)
    assert not [u for u in types.layout.units if NODE_UNITS.fullmatch(u.name) and u.from_out]
    functions = as_is(packaged, "Functions.h")
    assert dict(functions.layout.files)[PRELUDE_PATH] == REAL
    assert kept(functions.layout, NODE_UNITS) == kept(layout, NODE_UNITS)
    assert {"Functions", "VariableType_0", "python_functions_4"} <= set(
        from_out(functions.layout))


# the real files compiled, each with a function of its own added (found in its object)
MARKED = (("python_enum_tag.cpp", "tag"), ("python_functions_2.cpp", "functions"))
TREE = "pytorch"  # --out as a PyTorch checkout: the files in torch/csrc/autograd/generated/


def _ignore(line: str) -> None:
    """ninja's progress lines, for nobody."""


def _symbols(path: Path) -> str:
    return subprocess.run(["nm", str(path)], capture_output=True, text=True, check=True).stdout


def _marked(out_dir: Path, name: str, line: str) -> str:
    """Make --out's file the real generator's: its text with a line of its own added."""
    path = out_dir / name
    text = f"{path.read_text()}{line}\n"
    path.write_text(text)
    return blob_hash("text", text.encode())  # as builds record --out's files


def _marker(stem: str) -> str:
    return f'extern "C" int gradshard_real_{stem}() {{ return 1; }}'


@pytest.mark.compiler
def test_the_driver_compiles_real_files_from_out(tmp_path):
    """Through ninja, placed as in a checkout (--tree pytorch): a real python_enum_tag.cpp
    (packed with the other binding files otherwise) and python_functions_2.cpp (whose nodes
    need Functions.h whole) compile from --out; the compile directory holds the real
    python_return_types.h; and another real text is another object (its key hashes it)."""
    run = run_graph(MINI_SPEC)
    out = tmp_path / "out"
    for name, text in run.files(TREE).items():
        (out / name).parent.mkdir(parents=True, exist_ok=True)
        (out / name).write_text(text)
    out_dir = generated_dir(out, TREE)
    real = {name: _marked(out_dir, name, _marker(stem)) for name, stem in MARKED}
    real["python_return_types.h"] = _marked(out_dir, "python_return_types.h", "// real")
    location = locate_spec(str(MINI_SPEC))
    request = BuildRequest.of(location, out, Placement(TREE), False, GeneratorCheck(),
                              identify_generator(location))
    options = CompileOptions(units=("python_enum_tag", "python_functions_2"),
                             flags=suite_flags())
    report = compile_generated(request, 0, run.result, OpenCache(None), options, _ignore, real)
    assert sorted(report.compiled) == ["python_enum_tag", "python_functions_2"]
    compile_dir = out / "compile"
    commands = {e["output"]: e["file"] for e in json.loads(
        (compile_dir / "compile_commands.json").read_text())}
    assert commands["obj/python_enum_tag.o"] == str((out_dir / "python_enum_tag.cpp").resolve())
    assert "gradshard_real_tag" in _symbols(compile_dir / "obj" / "python_enum_tag.o")
    assert "gradshard_real_functions" in _symbols(compile_dir / "obj" / "python_functions_2.o")
    generated = compile_dir / "include" / "torch" / "csrc" / "autograd" / "generated"
    assert (generated / "python_return_types.h").read_text().endswith("// real\n")
    assert (generated / "Functions.h").read_text() == (out_dir / "Functions.h").read_text()
    # another real text: compiled again, never the stored object of the first
    real["python_enum_tag.cpp"] = _marked(out_dir, "python_enum_tag.cpp", _marker("again"))
    options = CompileOptions(units=("python_enum_tag",), flags=suite_flags())
    report = compile_generated(request, 0, run.result, OpenCache(None), options, _ignore, real)
    assert report.compiled == ["python_enum_tag"]
    assert "gradshard_real_again" in _symbols(compile_dir / "obj" / "python_enum_tag.o")
