"""The compiler a `gradshard try` patch is built with, and why.

Patches are loaded into the installed torch, so the compiler must produce its ABI: libstdc++
(not libc++), with the _GLIBCXX_USE_CXX11_ABI setting torch's libraries were built with. Among
those, clang++ (14 or later) comes first: its PCH can hold the headers' template instantiations
and their code (service/live/patch_build.py), so a patch unit compiles in about a second, where GCC
instantiates the ~8,600 templates the headers leave pending again in every unit (measured on
sin's patch: clang 14, 1.1 s; g++ 12, 6.9 s). `--cxx`, then $GRADSHARD_TRY_CXX, choose one
outright; $CXX is `build`'s, not try's (a developer's CXX=g++ would otherwise cost every
save five seconds).
"""

from __future__ import annotations

import functools
import json
import re
import shutil
import subprocess
from dataclasses import dataclass, replace
from pathlib import Path

from gradshard.cache.errors import UsageError
from gradshard.service.compile.toolchain import Toolchain, find_toolchain
from gradshard.service.defaults import GRADSHARD_TRY_CXX, value_of
from gradshard.service.files.outputs import write_atomic
from gradshard.service.files.spec_location import SpecLocation
from gradshard.service.live.try_directory import read_memo, try_directory

__all__ = ["TRY_CXX_VARIABLE", "TryCompiler", "choose_try_compiler",
           "torch_uses_cxx11_abi"]

TRY_CXX_VARIABLE = GRADSHARD_TRY_CXX.variable
# A patch lives for a check, so it compiles at the level each compiler is fastest at: clang
# at -O0 (sin's unit: 1.1 s at -O0 against 5.7 s at -O1 without the PCH's code), g++ at -Og
# (sin's nodes and kernels side by side: 3.63 s against 4.01 s at -O0, g++ 12, five runs
# each: -Og's early inlining leaves fewer of the headers' inline functions to emit). Both
# keep IEEE arithmetic as -O2 does (no -ffast-math; ISO C++ mode, so no FMA contraction), so
# the gradients the checks compare are the same.
CLANG_PATCH_FLAGS = ("-O0",)
GCC_PATCH_FLAGS = ("-Og",)
MINIMUM_CLANG = 14  # -fpch-instantiate-templates and -fpch-codegen (clang 11) work with torch's headers from 14 on
MEMO_ENTRIES = 16  # compilers remembered (compilers.json): a machine has a few
CLANG_NAMES = ("clang++", *(f"clang++-{n}" for n in range(30, MINIMUM_CLANG - 1, -1)))
_CLANG_VERSION = re.compile(r"clang version (\d+)")
# compiled by the candidate: fails unless it uses libstdc++ with the ABI asked for
_ABI_PROBE = """#include <string>
#if !defined(__GLIBCXX__)
#error "not libstdc++"
#endif
#if _GLIBCXX_USE_CXX11_ABI != {abi}
#error "_GLIBCXX_USE_CXX11_ABI differs"
#endif
"""


@dataclass(frozen=True)
class TryCompiler:
    """The patch's toolchain and a line saying why it was chosen (the first line of `try`,
    and `compiler` in --json)."""

    toolchain: Toolchain
    why: str

    def json(self) -> dict:
        return {"cxx": self.toolchain.cxx, "version": self.toolchain.version,
                "clang": self.toolchain.is_clang(), "why": self.why}


def choose_try_compiler(location: SpecLocation, cxx: str | None, torch_lib: Path) -> TryCompiler:
    """--cxx, else $GRADSHARD_TRY_CXX, else the first ABI-compatible clang++ >= 14, else g++.
    The try directory is checked first: one that is refused (try_directory) is said before
    the spec is planned, even when this process has the compiler's probe in memory."""
    try_directory()
    named = cxx or value_of(GRADSHARD_TRY_CXX)
    abi = torch_uses_cxx11_abi(torch_lib)
    if named:
        origin = "--cxx" if cxx else f"${TRY_CXX_VARIABLE}"
        toolchain = _toolchain(location, named, origin)
        refusal = (_clang_refusal(toolchain.cxx, abi) if toolchain.is_clang()
                   else _abi_refusal(toolchain.cxx, abi))
        if refusal is not None:
            raise UsageError(f"the compiler {toolchain.cxx} ({origin}) cannot build patches for "
                             f"the installed torch: {refusal}",
                             f"name a g++, or a clang++ >= {MINIMUM_CLANG}, that uses libstdc++ "
                             f"(--cxx, ${TRY_CXX_VARIABLE})")
        return TryCompiler(toolchain, f"named by {origin}")
    skipped = []
    for name in CLANG_NAMES:
        path = shutil.which(name)
        refusal = _clang_refusal(path, abi) if path is not None else "absent"
        if refusal is None:
            return TryCompiler(_toolchain(location, path, name),
                               f"the fastest installed (clang++ >= {MINIMUM_CLANG} with "
                               "libstdc++ and torch's C++ ABI)")
        if path is not None:
            skipped.append(f"{name}: {refusal}")
    why = ("no usable clang++ (" + "; ".join(skipped) + ")" if skipped else
           "no clang++ installed") + "; `apt-get install clang lld` makes each try ~5 s faster"
    toolchain = _toolchain(location, "g++", why)
    refusal = _abi_refusal(toolchain.cxx, abi)
    if refusal is not None:
        raise UsageError(f"no compiler can build patches for the installed torch: {why}; "
                         f"g++: {refusal}", "install clang (apt-get install clang lld)")
    return TryCompiler(toolchain, why)


def _toolchain(location: SpecLocation, name: str, why: str):
    """The compiler's toolchain, or try's own error when it is not there (find_toolchain's
    names build's $CXX, which try does not read)."""
    try:
        toolchain = find_toolchain(location, name, (), (), "")
    except UsageError as error:
        if "is not on PATH" not in str(error):
            raise
        raise UsageError(f"the C++ compiler '{name}' is not on PATH ({why})",
                         f"install clang or g++ (apt-get install clang lld), or name one with "
                         f"--cxx or ${TRY_CXX_VARIABLE}") from None
    level = CLANG_PATCH_FLAGS if toolchain.is_clang() else GCC_PATCH_FLAGS
    return replace(toolchain, flags=(*toolchain.flags, *level))


@functools.lru_cache(maxsize=4)
def torch_uses_cxx11_abi(torch_lib: Path) -> bool:
    """Whether torch's libraries use libstdc++'s C++11 ABI: their exported names then carry
    its abi tag (`B5cxx11`), read from libc10.so without importing torch."""
    try:
        data = (torch_lib / "libc10.so").read_bytes()
    except OSError as error:
        raise UsageError(f"cannot read torch's libc10.so in {torch_lib}: {error.strerror}",
                         "pip install 'gradshard[try]'") from None
    return b"B5cxx11" in data


def _clang_refusal(path: str, abi: bool) -> str | None:
    """Why this clang++ cannot build patches (None when it can)."""
    version = _version_line(path)
    found = _CLANG_VERSION.search(version)
    if found is None:
        return f"not clang ({version or 'no version'})"
    if int(found.group(1)) < MINIMUM_CLANG:
        return f"clang {found.group(1)} is older than {MINIMUM_CLANG}"
    return _abi_refusal(path, abi)


@functools.lru_cache(maxsize=8)
def _abi_refusal(path: str, abi: bool) -> str | None:
    """The probe's answer, remembered in the try directory by the compiler file's identity
    (a compile costs 0.2 s of every `try`)."""
    memo = try_directory() / "compilers.json"
    key = _compiler_key(path, abi)
    known = _read_memo(memo)
    if key in known:
        return known[key] or None
    refusal, lasting = _probe(path, abi)
    if lasting:  # a compiler that could not run (killed, timed out) is asked again next time
        kept = list(known.items())[-(MEMO_ENTRIES - 1):]
        write_atomic(memo, json.dumps(dict([*kept, (key, refusal or "")])).encode())
    return refusal


def _compiler_key(path: str, abi: bool) -> str:
    status = Path(path).resolve().stat()
    return f"{Path(path).resolve()}\0{status.st_size}\0{status.st_mtime_ns}\0{int(abi)}"


def _read_memo(memo: Path) -> dict[str, str]:
    """The remembered answers; nothing when the file is missing or not what this writes."""
    known = read_memo(memo)
    if not isinstance(known, dict):
        return {}
    return {k: v for k, v in known.items() if isinstance(k, str) and isinstance(v, str)}


def _probe(path: str, abi: bool) -> tuple[str | None, bool]:
    """Why the compiler cannot build patches (None when it can), and whether that answer
    lasts as long as the compiler's file (not when it could not run at all)."""
    probe = _ABI_PROBE.format(abi=int(abi))
    try:
        done = subprocess.run([path, "-std=c++20", "-x", "c++", "-fsyntax-only", "-"],
                              input=probe, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"cannot run it: {error}", False
    if done.returncode == 0:
        return None, True
    if "not libstdc++" in done.stderr:
        return "it does not use libstdc++ (torch's standard library)", True
    if "ABI differs" in done.stderr:
        return f"its _GLIBCXX_USE_CXX11_ABI is not torch's ({int(abi)})", True
    last = (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]
    return f"it cannot compile a C++20 unit: {last[:200]}", done.returncode > 0


@functools.lru_cache(maxsize=16)
def _version_line(path: str) -> str:
    try:
        done = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return (done.stdout or done.stderr).split("\n", 1)[0].strip()
