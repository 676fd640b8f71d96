"""Building a `gradshard try` patch: its units compiled against the installed torch, linked
into a shared library the worker loads (service/live/worker.py).

Everything a patch is built from and into lives in a per-user directory (`try_directory`:
mode 0700, owned by this user, on this machine), never in the cache directory: the library
is loaded and run, and the guide's rule is that nothing read from a restorable cache is
executed. Within it every file is named by the hash of what made it:

    include/<h>/torch/csrc/autograd/generated/   the struct-less Functions.h, the spec's
                                                 VariableType.h and python_functions.h
    pch/<h>/{autograd,variable_type,python}.h.gch  (the compile layout's three PCHs)
    src/<namespace>/gradshard_patch/nodes.h      the patch's structs
    obj/<h>.cpp, obj/<h>.o                        each unit, by its text, PCH and flags
    lib/<h>/patch.so, sum                         by its objects and the hidden functions its
                                                 trampolines jump to; sum: the library's hash

A unit whose text an edit left alone keeps its object (a formula edit recompiles the nodes
unit only), and a library is rebuilt at a new path (a process cannot load a second library
from the path of one it holds). ninja builds the PCHs and objects; an flock on the
directory serializes builds.
"""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import xxhash

from gradshard.cache.errors import CompileError, EnvironmentFailure, UsageError
from gradshard.pipeline.layout.compile_layout import (AUTOGRAD_PCH, PYTHON_PCH, VARIABLE_TYPE_PCH,
                                                      CompileUnit, pch_header)
from gradshard.service.compile.diagnostics import diagnose
from gradshard.service.compile.toolchain import Toolchain, ninja_binary
from gradshard.service.files.outputs import write_atomic
from gradshard.service.live.elf_symbols import (SYMBOL_NAME, hidden_functions, load_anchor,
                                                undefined_symbols)
from gradshard.service.live.patch_sources import PATCH_HEADER, PatchSources, trampoline_source
from gradshard.service.live.plan import PatchPlan, patch_templates
from gradshard.service.live.try_directory import prune_try_directory, try_directory

__all__ = ["build_patch"]

# the libraries whose hidden functions a patch may call, searched in this order
TORCH_LIBRARIES = ("libtorch_cpu.so", "libtorch_python.so")
LINK_LIBRARIES = ("-ltorch_cpu", "-ltorch_python", "-lc10")
# a checkout's FunctionsManual.cpp (service/live/plan.py: checkout_manual): its object is
# named by its text like the others, so it compiles once, and again when it is edited
MANUAL_UNIT = "FunctionsManual.cpp"
# which PCH each unit starts from (the compile layout's: templates/codegen/compile_units.j2)
UNIT_PCHS = {"nodes.cpp": AUTOGRAD_PCH, "python_classes.cpp": PYTHON_PCH,
             "kernels.cpp": VARIABLE_TYPE_PCH, MANUAL_UNIT: AUTOGRAD_PCH}


@dataclass(frozen=True)
class PatchLibrary:
    """A built patch: the library, and the slots its trampolines jump through (each torch
    library's exported anchor function and value, then each hidden function's library and
    value)."""

    path: Path
    slots: dict
    sum: str  # xxh3-128 of the library, checked by the worker before it loads it


def build_patch(plan: PatchPlan, toolchain: Toolchain, torch_lib: Path, jobs: int) -> PatchLibrary:
    sources = plan.sources
    if sources is None:
        raise UsageError("nothing to patch", "name an op, or edit a formula")
    root = try_directory()
    with _locked(root):
        units, include = _write_sources(root, plan, sources, toolchain)
        _run_ninja(root, units, include, toolchain, jobs, plan)
        library = _link(root, [u.object for u in units], toolchain, torch_lib)
        used = [include, library.path.parent, *{u.pch.parent for u in units},
                *{u.own_include for u in units},
                *(path for u in units for path in (u.source, u.object))]
        prune_try_directory(root, used)
        return library


@dataclass(frozen=True)
class _Unit:
    name: str  # nodes.cpp, python_classes.cpp, kernels.cpp
    source: Path
    object: Path
    pch: Path  # the PCH's header (its .gch beside it)
    own_include: Path


def _write_sources(root: Path, plan: PatchPlan, sources: PatchSources,
                   toolchain: Toolchain) -> tuple[list[_Unit], Path]:
    include = _content_dir(root / "include", plan.includes)
    own = root / "src" / sources.namespace
    _write(own / PATCH_HEADER, sources.header.encode())
    templates = patch_templates()
    pch_dir = root / "pch" / _hash([str(include), toolchain.identity(),
                                    *(pch_header(k, templates) for k in UNIT_PCHS.values())])
    units = []
    manual = ((MANUAL_UNIT, plan.manual),) if plan.manual else ()
    for name, text in (*sources.units(), *manual):
        pch = pch_dir / f"{UNIT_PCHS[name]}.h"
        if not pch.exists():
            _write(pch, pch_header(UNIT_PCHS[name], templates).encode())
        key = _hash([text, sources.header, str(pch), toolchain.identity(), str(own)])
        source = root / "obj" / f"{key}.cpp"
        if not source.exists():
            _write(source, text.encode())
        units.append(_Unit(name, source, source.with_suffix(".o"), pch, own))
    return units, include


def _content_dir(base: Path, files: Sequence[tuple[str, str]]) -> Path:
    directory = base / _hash([f"{p}\n{t}" for p, t in files])
    for path, text in files:
        target = directory / path
        if not target.exists():
            _write(target, text.encode())
    return directory


def _write(path: Path, data: bytes) -> None:
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    write_atomic(path, data)


def _hash(parts: Sequence[str]) -> str:
    digest = xxhash.xxh3_128()
    for part in parts:
        digest.update(part.encode())
        digest.update(b"\0")
    return digest.hexdigest()


class _locked:
    """An exclusive flock on the try directory for a build."""

    def __init__(self, root: Path) -> None:
        self.path = root / "lock"

    def __enter__(self) -> None:
        self.handle = open(self.path, "a")
        fcntl.flock(self.handle, fcntl.LOCK_EX)

    def __exit__(self, *exc) -> None:
        self.handle.close()


def _run_ninja(root: Path, units: list[_Unit], include: Path, toolchain: Toolchain, jobs: int,
               plan: PatchPlan) -> None:
    """The PCHs (once) and the objects; the patch's own header, then the generated ones,
    then torch's."""
    # the PCHs' command must not name the patch's own directory: ninja rebuilds an output
    # whose command changed, and the PCHs serve every patch
    common = [*toolchain.flags, "-Winvalid-pch", f"-I{include}",
              *(f"-I{d}" for d in toolchain.includes)]
    lines = [f"cxx = {toolchain.cxx}", f"flags = {' '.join(common)}",
             "rule pch", f"  command = $cxx $flags {' '.join(toolchain.pch_flags())} "
             "-x c++-header $in -o $out.tmp && mv $out.tmp $out", "  description = PCH $out",
             "rule cxx", f"  command = $cxx -I$own $flags {' '.join(toolchain.pch_use_flags())} "
             "-include $pch -c $in -o $out.tmp && mv $out.tmp $out", "  description = CXX $out"]
    for pch in sorted({u.pch for u in units}):
        lines.append(f"build {pch}.gch: pch {pch}")
    for unit in units:
        lines += [f"build {unit.object}: cxx {unit.source} | {unit.pch}.gch",
                  f"  pch = {unit.pch}", f"  own = {unit.own_include}"]
    ninja_file = root / "build.ninja"
    _write(ninja_file, ("\n".join(lines) + "\n").encode())
    done = subprocess.run([ninja_binary(), "-f", str(ninja_file), "-k", "0",
                           "-j", str(max(1, jobs))], cwd=root, capture_output=True, text=True)
    if done.returncode != 0:
        raise _compile_error(units, done.stdout + done.stderr, plan)


def _compile_error(units: list[_Unit], log: str, plan: PatchPlan) -> CompileError:
    """The compiler's errors placed at their formulas (service/compile/diagnostics.py), as build's."""
    sources = plan.sources
    assert sources is not None
    shards = {"nodes.cpp": sources.nodes_unit, "kernels.cpp": sources.kernels_unit}
    compile_units = []
    for unit in units:
        shard = shards.get(unit.name)
        nodes = (shard.nodes or shard.kernels) if shard else ()
        compile_units.append(CompileUnit(unit.name, str(unit.source), False, "", (), nodes,
                                         shard.node_lines if shard else (), 0))
    failed = [c for c, u in zip(compile_units, units) if not u.object.exists()]
    # the source paths are absolute: the "compile directory" they are read from is /
    diagnostics = diagnose(failed, compile_units, {u.name: log for u in failed}, Path("/"),
                           plan.derivatives_text, dict(plan.node_entries))
    return CompileError(diagnostics, tuple(u.name for u in failed), log, str(plan.derivatives))


def _link(root: Path, objects: list[Path], toolchain: Toolchain, torch_lib: Path) -> PatchLibrary:
    """Trampolines for torch's hidden functions the objects call, then the library."""
    needed = undefined_symbols(objects)
    symbols: list[tuple[str, str, int]] = []
    for library in TORCH_LIBRARIES:
        found = hidden_functions(torch_lib / library, needed)
        symbols += [(name, library, value) for name, value in sorted(found.items())
                    if SYMBOL_NAME.match(name)]
        needed -= set(found)
    anchors = {library: load_anchor(torch_lib / library) for library in TORCH_LIBRARIES}
    key = _hash([*(str(o) for o in objects), toolchain.identity(), str(torch_lib),
                 json.dumps(symbols), json.dumps(anchors)])
    directory = root / "lib" / key
    library = directory / "patch.so"
    slots = {"anchors": anchors, "symbols": symbols}
    if not (library.exists() and (directory / "sum").exists()):
        trampolines = _trampolines(root, [s[0] for s in symbols], toolchain)
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        _run([toolchain.cxx, "-shared", "-o", f"{library}.tmp", *map(str, objects),
              str(trampolines), f"-L{torch_lib}", *LINK_LIBRARIES,
              f"-Wl,-rpath,{torch_lib}", "-Wl,-Bsymbolic"])
        os.replace(f"{library}.tmp", library)
        _write(directory / "sum", xxhash.xxh3_128_hexdigest(library.read_bytes()).encode())
    return PatchLibrary(library, slots, (directory / "sum").read_text())


def _trampolines(root: Path, symbols: list[str], toolchain: Toolchain) -> Path:
    """The trampolines' object, named by its text: the next patch calling the same hidden
    functions links it again without compiling it."""
    text = trampoline_source(symbols, patch_templates())
    source = root / "obj" / f"{_hash([text, toolchain.identity()])}.trampolines.cpp"
    target = source.with_suffix(".o")
    if not target.exists():
        _write(source, text.encode())
        _run([toolchain.cxx, "-O2", "-fPIC", "-c", str(source), "-o", f"{target}.tmp"])
        os.replace(f"{target}.tmp", target)
    return target


def _run(command: list[str]) -> None:
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise EnvironmentFailure(f"linking the patch failed: {' '.join(command[:2])} …\n"
                                 f"{done.stderr.strip()}", "see the linker's message above")
