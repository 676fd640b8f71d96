"""The compile step's plans, without a compiler: formula shards and binding units as the
spec grows, merged formula groups, and when a merged unit's baseline lets an edit compile
its changed parts alone (tests/test_compile.py compiles them with g++)."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import pytest
import xxhash

from gradshard.cache.objects.object_cache import Entry, save
from gradshard.pipeline.layout.compile_layout import (CompileLayout, CompileUnit, ShardSettings,
                                                      binding_units, functions_shards, kernel_op,
                                                      merged_groups, shard_count, shard_name)
from gradshard.service.build import build_and_compile
from gradshard.service.compile.plan import CompilePlan, PreparedUnit, baseline_path, plan_merged
from gradshard.service.compile.toolchain import Toolchain
from gradshard.service.files.inputs import read_inputs
from gradshard.service.files.spec_location import locate_spec
from gradshard.service.graph_run import DecodedInputs, run_graph
from gradshard.service.session import Session

MM_FORWARD = "  result: at::mm(self_t, mat2_p) + at::mm(self_p, mat2_t)\n"
MM_FORWARD_EDIT = "  result: at::mm(self_p, mat2_t) + at::mm(self_t, mat2_p)\n"


def test_shards_are_stable_when_nodes_are_added():
    names = [f"Node{k}Backward0" for k in range(100)]
    before = functions_shards(names, 8)
    after = functions_shards(names + ["BrandNewBackward0"], 8)
    assert shard_count(100, 8) == shard_count(101, 8) == 16
    changed = [a for a, b in zip(before, after) if a != b]
    assert len(changed) == 1 and len(after) == len(before)
    assert [n for n, _ in before] == [n for n, _ in after]


@pytest.mark.parametrize("base", [1, 3])
def test_shards_split_in_two_when_the_spec_outgrows_them(base):
    names = [f"Node{k}Backward0" for k in range(64 * base)]
    small = functions_shards(names, 8, base)  # 8·base shards
    extra = [f"Extra{k}" for k in range(64 * base)]
    large = functions_shards(names + extra, 8, base)
    assert (len(small), len(large)) == (8 * base, 16 * base)
    # doubling the count splits each shard: every old pair of co-sharded nodes either stays
    # together or parts, never joins nodes of another shard
    home = {names[i]: k for k, members in small for i in members}
    every = names + extra
    for _, members in large:
        old = {home[every[i]] for i in members if every[i] in home}
        assert len(old) <= 1


def test_a_shard_keeps_its_name_when_another_empties():
    names = [f"Node{k}Backward0" for k in range(40)]
    count = shard_count(len(names), 8)
    full = {number: [names[i] for i in members] for number, members in functions_shards(names, 8)}
    emptied = min(full)
    kept = [n for n in names if n not in full[emptied]]
    assert shard_count(len(kept), 8) == count
    after = {number: [kept[i] for i in members] for number, members in functions_shards(kept, 8)}
    assert emptied not in after and all(after[k] == full[k] for k in after)
    assert shard_name("VariableType_k", 7, 384) == "VariableType_k007"
    assert shard_name("Functions_", 7, 12) == "Functions_07"


def test_an_ops_functional_and_in_place_kernels_share_its_unit():
    assert {kernel_op(f) for f in ("erfinv", "erfinv_")} == {"erfinv"}
    assert (kernel_op("max.values_out"), kernel_op("max.dim")) == ("max-out", "max")
    assert kernel_op("erfinv.out") == "erfinv-out"
    assert kernel_op("_foreach_add_.Scalar") == "_foreach_add"
    assert kernel_op("__iand__.Tensor") == "__iand__"


def test_small_binding_files_share_units_in_name_order():
    sizes = [("d.cpp", 50), ("a.cpp", 10), ("big.cpp", 500), ("c.cpp", 30), ("b.cpp", 70),
             ("e.cpp", 90)]
    assert binding_units(sizes, 100) == [("a.cpp", "b.cpp"), ("big.cpp",), ("c.cpp", "d.cpp"),
                                         ("e.cpp",)]
    # growing one file past the limit moves the files after it, never the ones before
    assert binding_units([*sizes[:4], ("b.cpp", 95), ("e.cpp", 90)], 100)[:2] == [
        ("a.cpp",), ("b.cpp",)]
    assert binding_units([], 100) == []


def test_merged_groups_are_runs_of_formula_units():
    assert merged_groups(24, 12) == [range(0, 12), range(12, 24)]
    assert merged_groups(30, 12) == [range(0, 12), range(12, 24), range(24, 30)]
    assert merged_groups(3, 12) == [range(0, 3)]
    assert merged_groups(24, 1) == merged_groups(24, 0) == merged_groups(1, 12) == []


def prepared_unit(root: Path, name: str, size: int, parts: tuple[str, ...] = (),
                  nodes: tuple[str, ...] = ()) -> PreparedUnit:
    """A formula unit of `size` bytes, its key made from its name."""
    unit = CompileUnit(name, f"src/{name}.cpp", False, "autograd", (), nodes, (), size, parts)
    return PreparedUnit(unit, unit.source, f"obj/{name}.o",
                        xxhash.xxh3_128_hexdigest(name.encode()), str(root / "pch" / "autograd.h"))


def merged_edges(plan: CompilePlan, layout: CompileLayout, units: list[PreparedUnit],
                 whole: PreparedUnit, changed: tuple[int, ...]) -> list[str]:
    """plan_merged's edges ("output <- parts" for a splice) with the parts numbered `changed`
    edited (a new key); units[0] is another unit, the rest the merged unit's parts."""
    other, *parts = units
    made = [replace(p, key=xxhash.xxh3_128_hexdigest(p.key.encode())) if k in changed else p
            for k, p in enumerate(parts)]
    return [e.output + (" <- " + " ".join(e.parts) if e.is_splice else "")
            for e in plan_merged(plan, layout, [other, *made], [whole])]


def test_merged_unit_plan_follows_its_baseline(tmp_path):
    """Without a baseline the merged unit compiles; with one, its changed parts compile and
    are spliced, unless compiling them would take longer than the merged unit."""
    parts = [prepared_unit(tmp_path, f"f_{k}", 100_000, nodes=(f"N{k}",))
             for k in range(4)]  # ~4.8 s each
    whole = prepared_unit(tmp_path, "f_0-3", 400_000, tuple(p.unit.name for p in parts))  # ~13.8 s
    other = prepared_unit(tmp_path, "python_functions_0", 1000)
    layout = CompileLayout((("src/f_0-3.cpp", "text"),), tuple(p.unit for p in parts),
                           (whole.unit,))
    plan = CompilePlan(tmp_path, tmp_path / "cache", Toolchain("g++", "g++ 12", (), (), ()), 1)

    def edges(*changed: int) -> list[str]:
        return merged_edges(plan, layout, [other, *parts], whole, changed)

    assert edges(1) == ["obj/python_functions_0.o", "obj/f_0-3.o"]  # no baseline yet
    record = baseline_path(plan, layout, whole.unit, whole.pch)
    record.parent.mkdir(parents=True)
    nodes = ["N0", "N1", "N2", "N3"]
    record.write_text(json.dumps({"object": whole.key, "nodes": nodes,
                                  "parts": {p.unit.name: p.key for p in parts}}))
    assert edges(1) == ["obj/python_functions_0.o", "obj/f_0-3.o"]  # its object is not stored
    save(plan.objects, whole.key, Entry(b"", None))
    assert edges() == ["obj/python_functions_0.o", "obj/f_0-3.o"]
    assert edges(1, 2) == ["obj/python_functions_0.o", "obj/parts/f_1.o", "obj/parts/f_2.o",
                           "obj/f_0-3.o <- obj/parts/f_1.o obj/parts/f_2.o"]
    assert edges(0, 1, 2) == ["obj/python_functions_0.o", "obj/f_0-3.o"]  # 14.4 s > 13.8 s
    record.write_text(json.dumps({"object": whole.key, "nodes": [*nodes, "Left"],
                                  "parts": {p.unit.name: p.key for p in parts}}))
    assert edges(1) == ["obj/python_functions_0.o", "obj/f_0-3.o"]  # a node left it


def test_an_edited_forward_formula_runs_the_layout_tasks_of_its_group_of_ops(tmp_path):
    """cache/graph/layout_group.py: the ops of each merged kernel unit are a group of their own,
    so a forward-formula edit (one op's kernels) re-renders that op's two units and the
    merged unit of its group; every other group answers from its index."""
    spec = shutil.copytree(locate_spec(None).root, tmp_path / "spec",
                           ignore=shutil.ignore_patterns("__pycache__", "*.py"))
    session = Session(tmp_path / "cache")
    try:
        layouts = []
        for edit in (None, "* 3"):
            if edit is not None:
                path = spec / "autograd" / "derivatives.yaml"
                path.write_text(path.read_text().replace(MM_FORWARD, MM_FORWARD_EDIT, 1))
            location = locate_spec(str(spec))
            build_and_compile(location, tmp_path / "out", session)
            # the layout as the build's compile reads it: on a graph run of the same inputs
            run = run_graph(DecodedInputs.decode(read_inputs(location)), session.open(),
                            session.memory)
            layouts.append(run.layout(ShardSettings()))
            runs = [r for r in run.stats.runs if r.stage == "layout"]
        ran = sorted(r.task for r in runs)
        assert ran == ["compile.forward_shard", "compile.kernel_shard",
                       "compile.merged_kernel_unit", "group.compile_kernels",
                       "group.compile_layout"], ran
        assert {r.ident for r in runs if r.task.endswith("_shard")} == {
            "kernels mm", "forward formulas mm"}
        before, after = (dict(layout.files) for layout in layouts)
        changed = sorted(path for path in after if before.get(path) != after[path])
        # the kernel calls the formula's function, the merged unit includes the parts
        assert changed == ["src/VariableTypeForward_mm.cpp"]
    finally:
        session.close()
