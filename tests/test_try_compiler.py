"""The compiler `try` builds patches with (service/live/compiler.py): --cxx, then
$GRADSHARD_TRY_CXX, else the first clang++ >= 14 that uses libstdc++ with torch's C++ ABI,
else g++; $CXX is build's only. Fake compilers on a private PATH say what version they are
and hand the ABI probe to the real compiler (or refuse it, as a libc++ clang would)."""

from __future__ import annotations

import shutil
import stat
from pathlib import Path

import pytest
from support.programs import install_programs

from gradshard.cache.errors import UsageError
from gradshard.service.files.spec_location import locate_spec
from gradshard.service.live import compiler
from gradshard.service.live.command import torch_library_dir
from gradshard.service.live.compiler import TRY_CXX_VARIABLE, choose_try_compiler
from gradshard.service.live.try_directory import try_directory

LIBCXX = "#error \"not libstdc++\""


def fake_compiler(directory: Path, name: str, version: str, probe: str = "") -> Path:
    """A script named `name` that prints `version` for --version and otherwise runs the real
    g++ (or fails the probe the way `probe` says)."""
    real = (directory / "g++").resolve()
    body = (f"echo '<stdin>:3:2: error: {probe}' >&2; exit 1" if probe else f'exec {real} "$@"')
    path = directory / name
    path.write_text(f"#!/bin/sh\nif [ \"$1\" = --version ]; then echo '{version}'; exit 0; fi\n"
                    f"{body}\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


@pytest.fixture
def private_path(tmp_path, monkeypatch) -> Path:
    """A PATH of fake compilers and the real g++ (the fallback), and nothing else: the
    machine's own clang++ stays out of sight."""
    directory = tmp_path / "bin"
    directory.mkdir()
    (directory / "g++").symlink_to(shutil.which("g++"))
    monkeypatch.setenv("PATH", str(directory))
    monkeypatch.delenv(TRY_CXX_VARIABLE, raising=False)
    monkeypatch.setenv("CXX", "c++-from-cxx-never-used")
    for cached in (compiler._abi_refusal, compiler._version_line):
        cached.cache_clear()
    return directory


def choose(cxx: str | None = None):
    return choose_try_compiler(locate_spec(None), cxx, torch_library_dir())


def test_torch_is_read_as_using_the_cxx11_abi():
    """torch 2.13's wheels are built with _GLIBCXX_USE_CXX11_ABI=1."""
    assert compiler.torch_uses_cxx11_abi(torch_library_dir()) is True


def test_without_clang_g_plus_plus_is_chosen_and_the_faster_path_named(private_path):
    chosen = choose()
    assert Path(chosen.toolchain.cxx).name == "g++"
    assert "no clang++ installed" in chosen.why and "apt-get install clang" in chosen.why
    assert chosen.json()["clang"] is False


def test_the_first_usable_clang_is_chosen_over_g_plus_plus(private_path):
    fake_compiler(private_path, "clang++", "clang version 13.0.1", "")
    fake_compiler(private_path, "clang++-16", "Ubuntu clang version 16.0.6", LIBCXX)
    usable = fake_compiler(private_path, "clang++-15", "clang version 15.0.7")
    chosen = choose()
    assert chosen.toolchain.cxx == str(usable)
    assert "the fastest installed" in chosen.why
    assert chosen.json()["version"] == "clang version 15.0.7"


def test_a_clang_that_is_too_old_or_uses_libcxx_is_skipped_and_said(private_path):
    fake_compiler(private_path, "clang++", "clang version 13.0.1")
    fake_compiler(private_path, "clang++-17", "clang version 17.0.1", LIBCXX)
    chosen = choose()
    assert Path(chosen.toolchain.cxx).name == "g++"
    assert "clang 13 is older than 14" in chosen.why
    assert "does not use libstdc++" in chosen.why


def test_the_flag_then_the_variable_override_and_cxx_does_not(private_path, monkeypatch):
    usable = fake_compiler(private_path, "clang++", "clang version 16.0.6")
    gxx = str(private_path / "g++")
    monkeypatch.setenv(TRY_CXX_VARIABLE, gxx)
    assert choose().toolchain.cxx == gxx and choose().why == f"named by ${TRY_CXX_VARIABLE}"
    assert choose(str(usable)).toolchain.cxx == str(usable)
    assert choose(str(usable)).why == "named by --cxx"
    monkeypatch.delenv(TRY_CXX_VARIABLE)
    assert choose().toolchain.cxx == str(usable)  # $CXX (set by the fixture) is not read


def test_a_named_compiler_with_another_abi_is_refused(private_path):
    libcxx = fake_compiler(private_path, "clang++", "clang version 16.0.6", LIBCXX)
    with pytest.raises(UsageError) as refused:
        choose(str(libcxx))
    assert "does not use libstdc++" in str(refused.value)
    assert "--cxx" in refused.value.hint


@pytest.mark.compiler
def test_the_installed_clang_passes_the_probe(monkeypatch):
    """The real clang++ (installed by the suite) is usable: libstdc++ and the C++11 ABI."""
    install_programs("clang++")
    monkeypatch.delenv(TRY_CXX_VARIABLE, raising=False)
    chosen = choose()
    assert chosen.toolchain.is_clang(), chosen.why


def test_the_probe_is_remembered_until_the_compiler_changes(private_path):
    """The ABI probe (a compile, 0.2 s) runs once per compiler file, not once per `try`."""
    log = private_path / "probes"
    clang = fake_compiler(private_path, "clang++", "clang version 16.0.6")
    text = clang.read_text().replace("exec ", f"echo probe >> {log}; exec ", 1)
    clang.write_text(text)
    for _ in range(3):
        compiler._abi_refusal.cache_clear()  # a new process: only the try directory remembers
        assert choose().toolchain.cxx == str(clang)
    assert log.read_text().count("probe") == 1
    clang.write_text(text + "# upgraded\n")
    compiler._abi_refusal.cache_clear()
    choose()
    assert log.read_text().count("probe") == 2


def test_a_named_clang_older_than_14_is_refused(private_path):
    old = fake_compiler(private_path, "clang++-13", "clang version 13.0.1")
    with pytest.raises(UsageError) as refused:
        choose(str(old))
    assert "clang 13 is older than 14" in str(refused.value)


def test_a_probe_that_dies_silently_is_a_reason_and_asked_again(private_path):
    """A compiler killed without a word (empty stderr) is skipped with a reason, not a
    traceback; an answer of a compiler that could not run is not remembered."""
    dying = private_path / "clang++"
    dying.write_text("#!/bin/sh\nif [ \"$1\" = --version ]; then echo 'clang version 16.0.6'; "
                     "exit 0; fi\nkill -9 $$\n")
    dying.chmod(0o755)
    chosen = choose()
    assert Path(chosen.toolchain.cxx).name == "g++"
    assert "clang++: it cannot compile a C++20 unit: exit status -9" in chosen.why
    remembered = (try_directory() / "compilers.json").read_text()
    assert str(dying.resolve()) not in remembered
