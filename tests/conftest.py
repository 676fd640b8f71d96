"""Fixtures and hooks only: what test modules share otherwise is in tests/support."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Callable

import pytest
from support.compile import PchSeed
from support.graph_run import CodegenInputs, codegen_inputs
from support.programs import install_programs
from support.scheduling import GroupScheduling, longest_first
from support.specs import SPACED
from support.temporary import ModuleTemporaries

from gradshard.cache.store.verdicts import STATE_VARIABLE
from gradshard.service.files.bytecode import compile_bytecode
from gradshard.service.files.spec_location import locate_spec
from gradshard.service.live.compiler import TRY_CXX_VARIABLE
from gradshard.service.live.try_directory import TRY_DIRECTORY_VARIABLE

# The compilers `try` may choose (service/live/compiler.py), the one it prefers first. Every
# `try` test runs with clang++; those marked `every_try_compiler` (what depends on the
# compiler: a patch compiled, linked and loaded, a hidden helper reached, a compiler's own
# diagnostic placed) also with g++, the fallback, so that each behaviour is checked once per
# compiler and no test repeats another's work.
TRY_COMPILERS = ("clang++", "g++")

# The suite compiles at -O0 ($CXXFLAGS comes after the toolchain's -O2, and the last -O
# wins), in this process and every one it starts: what the compile tests prove (the
# generated C++ compiles, links, loads, registers, and its symbols are where they should
# be) does not depend on the optimizer, which is most of an -O2 compile's time. A
# $CXXFLAGS of the caller's is kept; the option tests clear it themselves.
os.environ.setdefault("CXXFLAGS", "-O0")


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch) -> Path:
    """Every test gets its own gradshard cache and its own machine state (the generator
    verdicts: cache/store/verdicts.py); the user's are never touched."""
    cache = tmp_path / "gradshard-cache"
    monkeypatch.setenv("GRADSHARD_CACHE", str(cache))
    monkeypatch.setenv(STATE_VARIABLE, str(tmp_path / "gradshard-state"))
    return cache


@pytest.fixture(scope="session")
def packaged_spec() -> Path:
    """The real 2.13 spec shipped inside the installed torchgen (the dev extra installs it)."""
    return locate_spec(None).root


@pytest.fixture(scope="session")
def packaged_codegen_inputs(packaged_spec) -> CodegenInputs:
    """What the build hands the native codegen's stages for the packaged spec (the modules of
    TraceType, ADInplaceOrViewType and ViewFuncs time theirs over it)."""
    return codegen_inputs(packaged_spec)


def pytest_configure(config) -> None:
    config.stash[ModuleTemporaries.KEY] = ModuleTemporaries()
    if not hasattr(config, "workerinput"):  # the controller, before any worker starts
        # the suite starts thousands of gradshard processes from an editable install: under
        # PYTHONDONTWRITEBYTECODE (CI's machines set it) each would compile every module it
        # imports (~0.9 s a process) without this
        compile_bytecode()


@pytest.fixture(scope="session", autouse=True)
def temporary_root(tmp_path_factory, pytestconfig) -> Path:
    """The session's base temporary directory, told to the module clean-up below."""
    root = tmp_path_factory.getbasetemp()
    pytestconfig.stash[ModuleTemporaries.KEY].root = root
    return root


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    if report.failed:
        item.config.stash[ModuleTemporaries.KEY].failed_modules.add(item.module.__name__)
    return report


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item, nextitem):
    """The disk is shared with CI and a whole run makes ~30 GB of builds: a module's
    directories (its module-scoped fixtures') go when its last test has torn down, unless one
    of its tests failed. pytest itself removes a passed test's tmp_path
    (tmp_path_retention_policy = "failed" in pyproject.toml)."""
    result = yield
    if nextitem is None or nextitem.module is not item.module:
        item.config.stash[ModuleTemporaries.KEY].module_ended(item.module.__name__)
    return result


@pytest.fixture(scope="session")
def seeded_pchs(tmp_path_factory, pytestconfig) -> Callable[[Path], Path]:
    """A function giving a cache directory the session's precompiled headers of the mini
    spec's Functions units (support/compile.py: PchSeed), built once, on first use."""
    root = tmp_path_factory.mktemp("pch-seed")
    pytestconfig.stash[ModuleTemporaries.KEY].session_owned.add(root)
    return PchSeed(root).seed


def pytest_collection_modifyitems(items) -> None:
    """The long groups first (support/scheduling.py), the same order in every worker."""
    items[:] = [items[i] for i in longest_first([item.nodeid for item in items])]


def pytest_xdist_make_scheduler(config, log):
    """With -n: each group of tests whole in one worker (support/scheduling.py)."""
    return GroupScheduling(config, log)


def pytest_generate_tests(metafunc) -> None:
    """`try_compiler`, which try_workspace takes: clang++ for every `try` test, and g++ as
    well for those marked `every_try_compiler` (session-scoped: one workspace per compiler)."""
    if "try_workspace" in metafunc.fixturenames:
        every = metafunc.definition.get_closest_marker("every_try_compiler") is not None
        metafunc.parametrize("try_compiler", TRY_COMPILERS if every else TRY_COMPILERS[:1],
                             scope="session")


@pytest.fixture(scope="session")
def try_workspace(try_compiler, tmp_path_factory, packaged_spec, pytestconfig):
    """For the `gradshard try` tests of every module, once per compiler try builds patches
    with (clang++, installed by the suite when missing, and g++: $GRADSHARD_TRY_CXX): a copy
    of the packaged spec and a cache (yielded), and one private try directory
    ($GRADSHARD_TRY_DIR), so that its PCH and the objects of unchanged units are built once
    per compiler. A test that edits the spec copy restores it (try/finally): it is shared."""
    if try_compiler.startswith("clang"):
        install_programs(try_compiler, "ld.lld")  # the fast path README's apt line installs
    root = tmp_path_factory.mktemp("try")
    pytestconfig.stash[ModuleTemporaries.KEY].session_owned.add(root)
    # every directory named as a user might (support/specs.py: SPACED), so that each try
    # test also proves try's build file and commands read such paths as written
    spec, cache = root / f"spec {SPACED}", root / f"cache {SPACED}"
    shutil.copytree(packaged_spec, spec, ignore=shutil.ignore_patterns("__pycache__", "*.py"))
    directory = root / f"try {SPACED}"
    directory.mkdir(mode=0o700)
    directory.chmod(0o700)  # whatever the umask: try refuses a directory others may write
    with pytest.MonkeyPatch.context() as environment:
        environment.setenv(TRY_DIRECTORY_VARIABLE, str(directory))
        environment.setenv(TRY_CXX_VARIABLE, try_compiler)
        yield spec, cache
    shutil.rmtree(root, ignore_errors=True)  # the next compiler's PCH needs the disk
