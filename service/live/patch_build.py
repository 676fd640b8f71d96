"""Building a `gradshard try` patch: its units compiled against the installed torch, linked
into a shared library the worker loads (service/live/worker.py).

Everything a patch is built from and into lives in a per-user directory (`try_directory`:
mode 0700, owned by this user, on this machine), never in the cache directory: the library
is loaded and run, and the guide's rule is that nothing read from a restorable cache is
executed. Within it every file is named by the hash of what made it:

    include/<h>/torch/csrc/autograd/generated/   the struct-less Functions.h, the spec's
                                                 VariableType.h and python_functions.h
    pch/<h>/patch.h, .gch                        the patch's one PCH: every header its parts
                                                 include; with clang, patch.h.o: the PCH's
                                                 code (-fpch-codegen), and .undefined: its
                                                 undefined symbols
    src/<namespace>/gradshard_patch/nodes.h      the patch's structs
    obj/<h>.part.cpp                             each part (nodes, Python classes, kernels,
                                                 registrations)
    obj/<h>.cpp, obj/<h>.o                        each unit, which includes its parts, by its
                                                 parts, PCH and flags (and a checkout's
                                                 FunctionsManual.cpp, a unit of its own);
                                                 .o.undefined: the object's undefined names
    lib/<h>/patch.so, sum                         by its objects and the hidden functions its
                                                 trampolines jump to; sum: the library's hash
    symbols/<h>.json                             which of torch's hidden functions a set of
                                                 undefined names needs (libtorch_cpu's symbol
                                                 table is read once, not per edit)
    stubs/<h>/lib<name>.so, sum.json             empty libraries named as torch's, which the
                                                 patch links against (_link_stubs)
    compilers.json                               compiler.py's ABI probes, per compiler file

An edit that leaves every part alone keeps the unit's object, and a library is rebuilt at a
new path (a process cannot load a second library from the path of one it holds). ninja
builds the PCH and the objects; an flock on the directory serializes builds.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Sequence

import xxhash

from gradshard.cache.errors import CompileError, EnvironmentFailure, UsageError
from gradshard.pipeline.layout.compile_layout import (AUTOGRAD_PCH, PYTHON_PCH, VARIABLE_TYPE_PCH,
                                                      CompileUnit, pch_header)
from gradshard.pipeline.render.templating import jinja_module
from gradshard.service.compile.diagnostics import diagnose
from gradshard.service.compile.toolchain import Toolchain, ninja_binary
from gradshard.service.files.outputs import write_atomic
from gradshard.service.live.compiler import TRY_CXX_VARIABLE
from gradshard.service.live.elf_symbols import (SYMBOL_NAME, hidden_functions, load_anchor,
                                                undefined_symbols)
from gradshard.service.live.patch_sources import PATCH_HEADER, PatchSources, trampoline_source
from gradshard.service.live.plan import PatchPlan, patch_templates
from gradshard.service.live.try_directory import (locked, prune_try_directory, read_memo,
                                                  try_directory)
from gradshard.service.ninja_manifest import Manifest, build_file_error, command_text

__all__ = ["build_patch"]

# the libraries whose hidden functions a patch may call, searched in this order
TORCH_LIBRARIES = ("libtorch_cpu.so", "libtorch_python.so")
# the libraries a patch names as needed (linked against stubs of them: _link_stubs)
LINK_LIBRARIES = ("torch_cpu", "torch_python", "c10")
# a checkout's FunctionsManual.cpp (service/live/plan.py: checkout_manual): its object is
# named by its text like the others, so it compiles once, and again when it is edited
MANUAL_UNIT = "FunctionsManual.cpp"
# the compile layout's PCH each part would start from (templates/codegen/compile_units.j2),
# whose includes open the patch's PCH in this order (Python.h's first)
PART_PCHS = {"nodes.cpp": AUTOGRAD_PCH, "python_classes.cpp": PYTHON_PCH,
             "kernels.cpp": VARIABLE_TYPE_PCH, "registrations.cpp": VARIABLE_TYPE_PCH}
PCH_ORDER = (PYTHON_PCH, AUTOGRAD_PCH, VARIABLE_TYPE_PCH)
# the PCH's code (clang's -fpch-codegen) in a section per function and datum: the link keeps
# only what the patch reaches
PCH_CODE_FLAGS = ("-ffunction-sections", "-fdata-sections")
LINKERS = ("lld", "gold")  # the fastest first (_linker)


@dataclass(frozen=True)
class PatchLibrary:
    """A built patch: the library, and the slots its trampolines jump through (each torch
    library's exported anchor function and value, then each hidden function's library and
    value)."""

    path: Path
    slots: dict
    sum: str  # xxh3-128 of the library, checked by the worker before it loads it
    inputs: tuple[Path, ...] = ()  # what linked it besides the units' objects (for the prune)
    note: str = ""  # the try directory is over its limit with this build's own files


def build_patch(plan: PatchPlan, toolchain: Toolchain, torch_lib: Path, jobs: int,
                cache: Path | None = None) -> PatchLibrary:
    sources = plan.sources
    if sources is None:
        raise UsageError("nothing to patch", "name an op, or edit a formula")
    root = try_directory(cache)
    with locked(root):
        written = _write_sources(root, plan, sources, toolchain)
        _run_ninja(root, written, toolchain, jobs, plan)
        library = _link(root, written, toolchain, torch_lib)
        used = [written.include, written.own_include, written.pch.header.parent,
                library.path.parent, *library.inputs,
                *(path for u in written.units for path in (u.source, u.object)),
                *(path for u in written.units for _, path in u.parts)]
        note = prune_try_directory(root, used)
        return replace(library, note=note or "")


@dataclass(frozen=True)
class _Unit:
    name: str  # its parts' names joined by "+", or FunctionsManual.cpp
    source: Path
    object: Path
    with_pch: bool
    parts: tuple[tuple[str, Path], ...] = ()  # nodes.cpp, python_classes.cpp, kernels.cpp …

    @property
    def undefined(self) -> Path:
        """The memo of its object's undefined symbols."""
        return self.object.with_name(self.object.name + ".undefined")


@dataclass(frozen=True)
class _Pch:
    """The patch's precompiled header (its .gch beside it) and, with clang, the object of
    its code (-fpch-codegen), linked into every patch."""

    header: Path
    code: Path | None

    @property
    def compiled(self) -> Path:
        return self.header.with_name(self.header.name + ".gch")

    @property
    def undefined(self) -> Path:
        """The memo of the code object's undefined symbols."""
        return self.header.with_name(self.header.name + ".o.undefined")


@dataclass(frozen=True)
class _Written:
    include: Path  # the generated headers' directory
    own_include: Path  # the patch's nodes.h's
    pch: _Pch
    units: tuple[_Unit, ...]


def _write_sources(root: Path, plan: PatchPlan, sources: PatchSources,
                   toolchain: Toolchain) -> _Written:
    include = _content_dir(root / "include", plan.includes)
    own = root / "src" / sources.namespace
    _keep_text(own / PATCH_HEADER, sources.header)
    rule = patch_rule(toolchain)
    texts = dict(sources.units())
    pch = _write_pch(root, include, toolchain,
                     [(name, texts[name]) for group in rule.units for name in group], rule)
    context = [sources.header, str(own)]
    units = [_joined_unit(root, group, texts, context, pch, toolchain) for group in rule.units]
    units += [_unit(root, name, texts[name], context, None, toolchain) for name in rule.apart]
    if plan.manual:
        units.append(_unit(root, MANUAL_UNIT, plan.manual, [str(own)], pch, toolchain))
    return _Written(include, own, pch, tuple(units))


@dataclass(frozen=True)
class PatchRule:
    """How a compiler builds a patch, measured on sin's (nodes and kernels edited): the units
    compiled against the PCH, each the parts it includes (ninja compiles them at once, each
    only when one of its parts changed); the parts compiled apart, without the PCH; and
    whether the PCH's code is compiled once into an object of its own (clang's
    -fpch-codegen)."""

    units: tuple[tuple[str, ...], ...]
    apart: tuple[str, ...]
    pch_code: bool
    # c10::TypeKinds whose SingleElementType the PCH instantiates (templates/live/patch.j2)
    pch_instantiations: tuple[str, ...] = ()


# clang instantiates in the PCH what its headers leave pending (-fpch-instantiate-templates),
# but not the virtual members of a class template whose vtable they use: every unit does
# those at its end (clang's Sema::DefineUsedVTables), 0.22 s of an empty unit's 0.42 s with
# torch's headers, 0.08 s of each of sin's nodes and kernels units. Torch's are c10's
# SingleElementType ones (ATen/core/jit_type.h): explicit instantiations in the PCH do them
# once, their code in the PCH's object.
CLANG_PCH_INSTANTIATIONS = ("ListType", "FutureType", "AwaitType", "RRefType")
# clang: a unit per part, the PCH's instantiations and code done once. A formula edit
# compiles the nodes and the kernels, side by side; the registrations and the Python classes
# only when a signature or a struct changes.
CLANG_RULE = PatchRule((("nodes.cpp",), ("kernels.cpp",), ("registrations.cpp",),
                        ("python_classes.cpp",)), (), True, CLANG_PCH_INSTANTIATIONS)
# g++ instantiates what the PCH's headers leave pending again in every unit (an empty unit
# costs ~2.9 s after the headers of the nodes and kernels, 7.2 s with Python's and
# pybind11's besides), so the Python classes, which only a struct change changes, are a
# unit of their own without the PCH. The nodes and the kernels still compile apart, side by
# side: 4.2 s against 4.7 s as one unit.
GCC_RULE = PatchRule((("nodes.cpp",), ("kernels.cpp",), ("registrations.cpp",)),
                     ("python_classes.cpp",), False)


def patch_rule(toolchain: Toolchain) -> PatchRule:
    return CLANG_RULE if toolchain.is_clang() else GCC_RULE


def _write_pch(root: Path, include: Path, toolchain: Toolchain,
               parts: Sequence[tuple[str, str]], rule: PatchRule) -> _Pch:
    """The patch's one PCH: the compile layout's PCH header of each of the unit's parts
    (Python.h's first, as Python asks), then every header the parts include. A formula edit
    keeps it: its text is the spec's includes, not the patch's code."""
    templates = patch_templates()
    kinds = {PART_PCHS[name] for name, _ in parts}
    directives = [line for kind in PCH_ORDER if kind in kinds
                  for line in pch_header(kind, templates).splitlines()]
    directives += [line for _, text in parts for line in text.splitlines()]
    includes = [line for line in dict.fromkeys(directives)
                if line.startswith("#include") and PATCH_HEADER not in line]
    text = str(jinja_module(templates, "patch.j2").patch_pch(includes, rule.pch_instantiations))
    directory = root / "pch" / _hash([str(include), toolchain.identity(), text,
                                      str(rule.pch_code)])
    header = directory / "patch.h"
    _keep_text(header, text)
    return _Pch(header, directory / "patch.h.o" if rule.pch_code else None)


def _joined_unit(root: Path, group: Sequence[str], texts: dict[str, str],
                 context: Sequence[str], pch: _Pch, toolchain: Toolchain) -> _Unit:
    """A unit of the PCH that includes its parts, each written at a path of its own."""
    parts = tuple((name, _written(root / "obj", texts[name], "part.cpp")) for name in group)
    text = str(jinja_module(patch_templates(), "patch.j2").patch_unit(
        [str(path) for _, path in parts]))
    return _unit(root, "+".join(group), text, context, pch, toolchain, parts)


def _unit(root: Path, name: str, text: str, context: Sequence[str], pch: _Pch | None,
          toolchain: Toolchain, parts: tuple[tuple[str, Path], ...] = ()) -> _Unit:
    """A unit named by its text and what else decides its object (the structs' header, its
    include directory, the PCH, the toolchain)."""
    key = _hash([text, *context, str(pch.header) if pch else "", toolchain.identity()])
    source = root / "obj" / f"{key}.cpp"
    _keep_text(source, text)
    return _Unit(name, source, source.with_suffix(".o"), pch is not None, parts)


def _written(directory: Path, text: str, suffix: str) -> Path:
    """A file named by its text (written when missing or damaged: _keep_text)."""
    path = directory / f"{_hash([text])}.{suffix}"
    _keep_text(path, text)
    return path


def _content_dir(base: Path, files: Sequence[tuple[str, str]]) -> Path:
    directory = base / _hash([f"{p}\n{t}" for p, t in files])
    for path, text in files:
        target = directory / path
        _keep_text(target, text)
    return directory


def _keep_text(path: Path, text: str) -> None:
    """A source named by its text, written when it is missing or not that text (damaged):
    rewritten only then, since ninja rebuilds what depends on a file whose time changed."""
    data = text.encode()
    try:
        if path.read_bytes() == data:
            return
    except OSError:
        pass
    _write(path, data)


def _write(path: Path, data: bytes) -> None:
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    write_atomic(path, data)


def _hash(parts: Sequence[str]) -> str:
    digest = xxhash.xxh3_128()
    for part in parts:
        digest.update(part.encode())
        digest.update(b"\0")
    return digest.hexdigest()


def _run_ninja(root: Path, written: _Written, toolchain: Toolchain, jobs: int,
               plan: PatchPlan) -> None:
    """The PCH (and its code's object, with clang) once, then the units."""
    ninja_file = root / "build.ninja"
    _write(ninja_file, _manifest(written, toolchain).data())
    done = subprocess.run([ninja_binary(), "-f", str(ninja_file), "-k", "0",
                           "-j", str(max(1, jobs))], cwd=root, capture_output=True, text=True)
    if done.returncode != 0:
        log = done.stdout + done.stderr
        raise (build_file_error(log, str(ninja_file), ninja_file)
               or _compile_error(written, log, plan, ninja_file))


# Every compile writes the headers it read (ninja's deps): a torch installed again over the
# same path (new headers, same PCH key) rebuilds the PCH and the units, rather than clang
# refusing a PCH whose headers changed on every `try`, or g++ using it. -MQ: the target
# quoted for the depfile's make syntax (a space in the try directory).
# Each compile writes its output in place, with no temporary renamed by a shell of ours:
# ninja records an output in its log only when its command succeeded, so a failed edge's
# output is rebuilt by the next run, and on an interrupt it deletes the output of every
# running edge whose rule has a depfile (every rule here). A compiler deletes its output
# when it fails; one killed may leave it, so a failure is read from ninja's FAILED lines,
# not only from a missing output (_failed). Builds are serialized by the directory's flock:
# no other build reads a half-written PCH.
DEPFILE = "-MD -MF $out.d -MQ $out -o $out"


def _manifest(written: _Written, toolchain: Toolchain) -> Manifest:
    """The build's rules: the patch's own header, then the generated ones, then torch's. A
    unit checks the PCH's headers by their times, not their content (build's
    -fpch-validate-input-files-content, 0.1 s a unit): the generated headers are written once
    at a path named by their content, and torch's change times when they change."""
    # the PCH's commands must not name the patch's own directory: ninja rebuilds an output
    # whose command changed, and the PCH serves every patch
    common = [*toolchain.flags, "-Winvalid-pch", f"-I{written.include}",
              *(f"-I{d}" for d in toolchain.includes)]
    pch = written.pch
    manifest = Manifest("@generated by gradshard: the build of a `gradshard try` patch")
    manifest.variable("cxx", command_text([toolchain.cxx]))
    manifest.variable("flags", command_text(common))
    pch_flags = command_text(_pch_flags(toolchain))  # none with g++
    _rule(manifest, "pch", " ".join(filter(None, ["$cxx $flags", pch_flags,
                                                  "-x c++-header $in"])), "PCH")
    _rule(manifest, "pch_code", f"$cxx $flags {command_text(PCH_CODE_FLAGS)} -c $in",
          "PCH code")
    _rule(manifest, "cxx", "$cxx $own $flags $pch -c $in", "CXX")
    _rule(manifest, "cxx_alone", "$cxx $own $flags -c $in", "CXX")
    manifest.build([pch.compiled], "pch", [pch.header])
    if pch.code is not None:
        manifest.build([pch.code], "pch_code", [pch.compiled])
    own = {"own": command_text([f"-I{written.own_include}"])}
    for unit in written.units:
        if unit.with_pch:
            manifest.build([unit.object], "cxx", [unit.source], implicit=[pch.compiled],
                           variables={"pch": command_text(["-include", pch.header]), **own})
        else:
            manifest.build([unit.object], "cxx_alone", [unit.source], variables=own)
    return manifest


def _rule(manifest: Manifest, name: str, command: str, what: str) -> None:
    """A ninja rule writing $out, with its headers as deps."""
    manifest.rule(name, f"{command} {DEPFILE}", f"{what} $out", depfile="$out.d", deps="gcc")


def _pch_flags(toolchain: Toolchain) -> list[str]:
    """The build's PCH flags (clang: the pending instantiations done in the PCH), and with
    clang the headers' inline code emitted once, into the PCH's object, not by every unit:
    sin's patch unit compiles in 1.1 s with it, 2.5 s without (clang 14, -O0)."""
    return [*toolchain.pch_flags(), *(("-fpch-codegen",) if toolchain.is_clang() else ())]


def _compile_error(written: _Written, log: str, plan: PatchPlan, ninja_file: Path) -> Exception:
    """The compiler's errors placed at their formulas (service/compile/diagnostics.py), as
    build's: the patch's unit is a merged unit whose parts hold the nodes and kernels. A PCH
    that does not build is no formula's error: the headers' or the compiler's. ninja failing
    with no compile failed is ninja's own error, not the compiler's."""
    sources = plan.sources
    assert sources is not None
    pch = written.pch
    if _failed(pch.compiled, log) or (pch.code is not None and _failed(pch.code, log)):
        return EnvironmentFailure(
            f"the patch's precompiled header did not build:\n{log.strip()[-4000:]}",
            f"the torch headers or the compiler fail on their own; ${TRY_CXX_VARIABLE} or --cxx "
            "names another compiler")
    units = written.units
    failed = [u for u in units if _failed(u.object, log)]
    if not failed:
        return EnvironmentFailure(f"ninja failed, and no compile did:\n{log.strip()[-4000:]}",
                                  f"ninja's own error, not the compiler's: see {ninja_file}")
    pieces = [*((name, path) for unit in units for name, path in unit.parts),
              *((unit.name, unit.source) for unit in units if not unit.parts)]
    parts = [_part_unit(name, path, sources) for name, path in pieces]
    merged = [_merged_unit(u, sources) for u in failed]
    logs = {u.name: "FAILED: ".join(["", *_failure_blocks(log, u.object)]) or log
            for u in failed}
    # the source paths are absolute: the "compile directory" they are read from is /
    diagnostics = diagnose(merged, [*merged, *parts], logs, Path("/"), plan.derivatives_text,
                           dict(plan.node_entries))
    return CompileError(diagnostics, tuple(u.name for u in failed), log, str(plan.derivatives))


def _failed(output: Path, log: str) -> bool:
    """No output, or ninja says its edge failed (a compiler killed may leave a partial one)."""
    return not output.exists() or bool(_failure_blocks(log, output))


def _failure_blocks(log: str, output: Path) -> list[str]:
    """The parts of ninja's log that are this output's compile: from its `FAILED:` line to the
    next one (two failed units would otherwise each report the other's errors)."""
    # the first line names the outputs, each followed by a space, as they are (a path may
    # hold spaces), after `[code=1] ` from ninja 1.12 on
    named = f" {output} "
    return [block for block in log.split("FAILED: ")[1:]
            if named in " " + block.split("\n", 1)[0]]


def _merged_unit(unit: _Unit, sources: PatchSources) -> CompileUnit:
    """A failed unit as diagnose sees it: a merged unit naming its parts, or a part alone."""
    if not unit.parts:
        return _part_unit(unit.name, unit.source, sources)
    return CompileUnit(unit.name, str(unit.source), False, "", (), (), (), 0,
                       tuple(name for name, _ in unit.parts))


def _part_unit(name: str, path: Path, sources: PatchSources) -> CompileUnit:
    """A part (or a unit compiled alone) as diagnose sees it: its nodes or kernels, and the
    line each starts at."""
    shard = {"nodes.cpp": sources.nodes_unit, "kernels.cpp": sources.kernels_unit}.get(name)
    nodes = (shard.nodes or shard.kernels) if shard else ()
    return CompileUnit(name, str(path), False, "", (), nodes, shard.node_lines if shard else (), 0)


def _link(root: Path, written: _Written, toolchain: Toolchain, torch_lib: Path) -> PatchLibrary:
    """Trampolines for torch's hidden functions the objects call, then the library: its
    entry points exported, the rest local and what nothing reaches dropped (the PCH's code
    holds every inline function of torch's headers; a patch uses a few)."""
    undefined = [_undefined(unit.object, unit.undefined) for unit in written.units]
    objects = [unit.object for unit in written.units]
    if written.pch.code is not None:
        objects.append(written.pch.code)
        undefined.append(_undefined(written.pch.code, written.pch.undefined))
    symbols, memo = _hidden_symbols(root, torch_lib, set().union(*undefined))
    anchors = {library: load_anchor(torch_lib / library) for library in TORCH_LIBRARIES}
    key = _hash([*(str(o) for o in objects), toolchain.identity(), str(torch_lib),
                 json.dumps(symbols), json.dumps(anchors)])
    directory = root / "lib" / key
    library = directory / "patch.so"
    trampolines = _trampolines(root, [s[0] for s in symbols], toolchain)
    exports = _written(root / "obj", str(jinja_module(patch_templates(), "patch.j2")
                                         .version_script()), "map")
    stubs = _link_stubs(root, toolchain)
    digest = _library_sum(directory)
    if digest is None:
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        _run([toolchain.cxx, *_linker(), "-shared", "-o", f"{library}.tmp", *map(str, objects),
              str(trampolines), f"-L{stubs}", "-Wl,--push-state,--no-as-needed",
              *(f"-l{name}" for name in LINK_LIBRARIES), "-Wl,--pop-state",
              *_linker_words("-rpath", str(torch_lib)), "-Wl,-Bsymbolic", "-Wl,--gc-sections",
              *_linker_words(f"--version-script={exports}")])
        os.replace(f"{library}.tmp", library)
        digest = xxhash.xxh3_128_hexdigest(library.read_bytes())
        _write(directory / "sum", digest.encode())
    slots = {"anchors": anchors, "symbols": symbols}
    return PatchLibrary(library, slots, digest, (memo, trampolines, exports, stubs))


def _linker_words(*words: str) -> list[str]:
    """Linker words holding a path, each passed as it is: -Wl, would cut one at a comma."""
    return [flag for word in words for flag in ("-Xlinker", word)]


def _link_stubs(root: Path, toolchain: Toolchain) -> Path:
    """Empty libraries named as torch's, for the link: a patch records them as needed
    (DT_NEEDED), and the loader finds torch's own through the rpath and binds the patch's
    undefined names to them when the worker loads it, as it would have. Linked against
    torch's own, lld reads libtorch_cpu's dynamic symbols on every edit (36 ms of its
    120 ms); a shared library may leave names undefined, so it needs none of them. Made
    again when one is missing or no longer matches the sum kept beside them."""
    directory = root / "stubs" / _hash([toolchain.identity(), *LINK_LIBRARIES])
    stubs = [directory / f"lib{name}.so" for name in LINK_LIBRARIES]
    if read_memo(directory / "sum.json") != _stubs_sum(stubs):
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        for stub in stubs:
            _run([toolchain.cxx, "-shared", "-o", f"{stub}.tmp", f"-Wl,-soname,{stub.name}",
                  "-x", "c++", os.devnull])
            os.replace(f"{stub}.tmp", stub)
        _write(directory / "sum.json", json.dumps(_stubs_sum(stubs)).encode())
    return directory


def _stubs_sum(stubs: Sequence[Path]) -> str:
    try:
        return xxhash.xxh3_128_hexdigest(b"".join(stub.read_bytes() for stub in stubs))
    except OSError:
        return "missing"


def _library_sum(directory: Path) -> str | None:
    """The sum of the library already linked there, when it still matches its bytes; None
    when it must be linked (again): missing, or damaged since, which would otherwise be
    refused by the worker on every `try`."""
    try:
        recorded = (directory / "sum").read_text()
        actual = xxhash.xxh3_128_hexdigest((directory / "patch.so").read_bytes())
    except (OSError, UnicodeDecodeError):
        return None
    return actual if recorded == actual else None


def _hidden_symbols(root: Path, torch_lib: Path, needed: set[str]) -> tuple[list[list], Path]:
    """(name, library, value) of each hidden function of torch's the objects call. Reading
    libtorch_cpu's symbol table takes a second, so the answer is kept in the try directory
    by the libraries' identities and the names asked: the next edit asks the same. A memo
    that is not such a list (damaged) is computed again."""
    identities = [f"{torch_lib / name}\0{(torch_lib / name).stat().st_size}\0"
                  f"{(torch_lib / name).stat().st_mtime_ns}" for name in TORCH_LIBRARIES]
    memo = root / "symbols" / f"{_hash([*identities, *sorted(needed)])}.json"
    kept = read_memo(memo)
    if isinstance(kept, list) and all(_is_symbol(entry) for entry in kept):
        return kept, memo
    symbols: list[list] = []
    for library in TORCH_LIBRARIES:
        found = hidden_functions(torch_lib / library, needed)
        symbols += [[name, library, value] for name, value in sorted(found.items())
                    if SYMBOL_NAME.match(name)]
        needed = needed - set(found)
    _write(memo, json.dumps(symbols).encode())
    return symbols, memo


def _is_symbol(entry: object) -> bool:
    """[name, library, value] as _hidden_symbols writes it: a symbol the trampolines may name,
    one of torch's libraries, an address."""
    return (isinstance(entry, list) and len(entry) == 3 and isinstance(entry[0], str)
            and bool(SYMBOL_NAME.match(entry[0])) and entry[1] in TORCH_LIBRARIES
            and isinstance(entry[2], int) and entry[2] >= 0)


def _linker() -> list[str]:
    """The fastest linker installed: a patch with the PCH's 28 MB object links in 0.17 s with
    lld, 0.43 s with gold and 1.0 s with the default (bfd)."""
    for name in LINKERS:
        if shutil.which(f"ld.{name}"):
            return [f"-fuse-ld={name}"]
    return []


def _undefined(path: Path, memo: Path) -> set[str]:
    """An object's undefined symbols, kept in a memo beside it by the object's size and time
    (the PCH's object's 7,000 names take 2 s to read; the unit an edit left alone is not
    read again), and read again when the memo is not for this object or not names."""
    status = path.stat()
    identity = [status.st_size, status.st_mtime_ns]
    kept = read_memo(memo)
    if (isinstance(kept, dict) and kept.get("object") == identity
            and isinstance(kept.get("names"), list)
            and all(isinstance(name, str) for name in kept["names"])):
        return set(kept["names"])
    names = undefined_symbols([path])
    _write(memo, json.dumps({"object": identity, "names": sorted(names)}).encode())
    return names


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
