"""Paths that ninja and the shell read their own way (a space, `$`, `:`, `|`, quotes, `$(…)`)
in every directory a build or a `try` names: the spec, --out, --cache and the try directory.
Both write their ninja file through service/ninja_manifest.py; ninja refusing one is said
to be gradshard's build file, never the compiler's fault.

The module is checked against the real ninja (a copy rule over such paths); the build
compiles the mini spec's merged formula unit and its PCH at such paths; `try` builds sin's
patch in the session's try workspace, whose directories all have such names (conftest.py).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from support.compile import MERGED_UNIT, merged_build
from support.specs import MINI_SPEC, SPACED

from gradshard.cache.errors import UsageError
from gradshard.pipeline.problems import InternalError
from gradshard.service.cli import main
from gradshard.service.compile.toolchain import ninja_binary
from gradshard.service.live.compiler import TRY_CXX_VARIABLE
from gradshard.service.live.try_directory import TRY_DIRECTORY_VARIABLE, try_directory
from gradshard.service.ninja_manifest import Manifest, build_file_error, command_text

# every character ninja's build lines or /bin/sh read specially, one name each (not a tab:
# ninja's log is tab-separated, so an output named with one is built again on every run)
NAMES = ("plain", "a space", "two  spaces", "dollar$x", "dollar$ space", "dollars$$x",
         "colon:x", "bar|x", "bar$|x", "it's", 'say "hi"', "$(touch pwned)", "`touch pwned2`",
         "hash #x", "back\\slash", "semi;colon & amp")
# and as a hostile one might: nothing in it may run
HOSTILE = f"{SPACED}|x $(touch pwned) `touch pwned2`;"


@pytest.mark.compiler
def test_ninja_reads_every_path_as_written(tmp_path):
    """Each name copied by ninja twice: through $in/$out (ninja quotes them for the shell)
    and through a command of literal words (command_text); every copy lands at its own path
    with its own text, nothing in a name runs, and a second run has nothing to do (the build
    lines name the very files the commands wrote)."""
    root = tmp_path / f"root {SPACED}"
    root.mkdir()
    manifest = Manifest("a test")
    manifest.rule("copy", "cp $in $out", "COPY $out")
    manifest.rule("run", "$command", "RUN $out")
    for index, name in enumerate(NAMES):
        source = root / f"in {name}"
        source.write_text(name)
        manifest.build([root / f"out {name}"], "copy", [source])
        literal = root / f"literal{index} {name}"
        manifest.build([literal], "run", [source],
                       variables={"command": command_text(["cp", source, literal])})
    (root / "build.ninja").write_bytes(manifest.data())

    def ninja(*args: str) -> str:
        done = subprocess.run([ninja_binary(), "-C", str(root), *args], capture_output=True,
                              text=True, cwd=tmp_path, timeout=60)
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stdout

    ninja()
    for index, name in enumerate(NAMES):
        assert (root / f"out {name}").read_text() == name
        assert (root / f"literal{index} {name}").read_text() == name
    assert "no work to do" in ninja("-n", "-d", "explain")
    assert not list(tmp_path.rglob("pwned*"))


@pytest.mark.compiler
def test_a_line_break_is_refused_and_a_refused_file_is_named(tmp_path):
    """A path with a line break: a usage error. A build file ninja refuses (two edges of one
    output): gradshard's own file, at its line; a failed command is no such refusal."""
    with pytest.raises(UsageError, match="line break"):
        command_text(["a\nb"])
    with pytest.raises(UsageError, match="line break"):
        Manifest("a test").build([tmp_path / "a\rb"], "phony")
    root = tmp_path / f"root {SPACED}"
    root.mkdir()
    manifest = Manifest("a test")
    manifest.rule("fail", "false", "FAIL $out")
    manifest.build([root / "x y"], "fail")
    given = root / "build.ninja"
    given.write_bytes(manifest.data())
    failed = subprocess.run([ninja_binary(), "-f", str(given)], capture_output=True, text=True,
                            cwd=root, timeout=60)
    assert failed.returncode != 0
    assert build_file_error(failed.stdout + failed.stderr, str(given), given) is None
    given.write_bytes(manifest.data() + b"build twice: phony\nbuild twice: phony\n")
    refused = subprocess.run([ninja_binary(), "-f", str(given)], capture_output=True, text=True,
                             cwd=root, timeout=60)
    error = build_file_error(refused.stdout + refused.stderr, str(given), given)
    assert isinstance(error, InternalError), refused.stderr
    assert f"gradshard's own build file {given} at line" in str(error)
    assert "multiple rules generate" in str(error) and "not the compiler's" in str(error)


def with_broken_build_file(monkeypatch, module, writer: str) -> None:
    """`module.writer` (the function writing its build.ninja) made to add a second edge for
    an output, which ninja refuses before it runs anything."""
    original = getattr(module, writer)

    def write(path: Path, data: bytes) -> None:
        original(path, data + b"\nbuild twice: phony\nbuild twice: phony\n"
                 if path.name == "build.ninja" else data)

    monkeypatch.setattr(module, writer, write)


@pytest.mark.compiler
def test_build_compiles_with_hostile_spec_out_and_cache_paths(capsys, tmp_path, monkeypatch):
    """The mini spec, --out and --cache under names with a space, `$`, `|`, quotes and
    `$(…)`: the merged formula unit compiles (its PCH at the cache's path), and nothing in a
    name runs (ninja runs every command through /bin/sh). A build file ninja refuses is
    reported as gradshard's own (exit 4), not as units that failed to compile."""
    from gradshard.service.compile import ninja as compile_ninja

    monkeypatch.chdir(tmp_path)
    spec = tmp_path / f"spec {HOSTILE}"
    shutil.copytree(MINI_SPEC, spec)
    out, cache = tmp_path / f"out {HOSTILE}", tmp_path / f"cache {HOSTILE}"
    code, report, err = merged_build(capsys, spec, out, cache)
    assert code == 0, err
    assert report["compile"]["compiled"] == [MERGED_UNIT]
    assert list(cache.glob("pch/*/autograd.h.gch"))  # built at the cache's path, not seeded
    assert (out / "compile" / "obj" / f"{MERGED_UNIT}.o").is_file()
    assert not list(tmp_path.rglob("pwned*")) and not list(out.rglob("pwned*"))
    (out / "compile" / "obj" / f"{MERGED_UNIT}.o").unlink()
    with monkeypatch.context() as patched:
        with_broken_build_file(patched, compile_ninja, "write_atomic")
        code, _, err = merged_build(capsys, spec, out, cache)
    assert code == 4, err
    assert f"gradshard's own build file {out / 'compile' / 'build.ninja'}" in err, err
    assert "multiple rules generate twice" in err and "failed to compile" not in err


@pytest.mark.compiler
@pytest.mark.slow
def test_try_builds_in_hostile_try_spec_and_cache_paths(capsys, try_workspace):
    """`try sin` in the session's workspace, whose try directory, spec copy and cache are
    named with a space, `$` and quotes: sin's patch builds, loads and passes. Before it,
    a build file ninja refuses is said to be gradshard's, with no hint at the compiler."""
    from gradshard.service.live import patch_build as live_build

    spec, cache = try_workspace
    directory = try_directory()
    assert SPACED in str(directory) and SPACED in str(spec) and SPACED in str(cache)
    where = ("sin", "--spec", str(spec), "--cache", str(cache), "--dtype", "float64")
    with pytest.MonkeyPatch.context() as patched:
        with_broken_build_file(patched, live_build, "_write")
        code = main(["try", *where])
    err = capsys.readouterr().err
    assert code == 4, err
    assert f"gradshard's own build file {directory / 'build.ninja'}" in err, err
    assert "compiler" not in err.replace("not the compiler's", "")
    code = main(["try", *where])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "PASS sin" in captured.out + captured.err
    assert str(spec / "autograd" / "derivatives.yaml") in captured.out + captured.err
    assert list(directory.glob("lib/*/patch.so"))


def test_a_try_directory_with_a_double_quote_is_refused(capsys, tmp_path, packaged_spec,
                                                         monkeypatch):
    """A `"` is the one character (a line break aside) a try directory's path may not hold:
    a patch's unit includes its parts by path (`#include "PATH"`). Refused before anything
    is built, naming the directory and the variable to set."""
    directory = tmp_path / 'try "quoted"'
    monkeypatch.setenv(TRY_DIRECTORY_VARIABLE, str(directory))
    monkeypatch.setenv(TRY_CXX_VARIABLE, "g++")
    code = main(["try", "sin", "--spec", str(packaged_spec), "--cache", str(tmp_path / "c")])
    err = capsys.readouterr().err
    assert code == 2, err
    assert f"the try directory {directory} has a '\"'" in err and TRY_DIRECTORY_VARIABLE in err
    assert not directory.exists()
