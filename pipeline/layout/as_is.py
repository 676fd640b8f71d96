"""The compile layout when --out holds the real generator's files: gradshard's own units of a
family whose files differ are replaced by the family's torchgen files, compiled as they are
from --out (no fine shards there).

A build whose spec belongs to a generator gradshard does not reproduce runs that generator,
and where a generated file differs --out gets the real one. gradshard's units of its family
are cut from gradshard's records, so they would compile gradshard's code, not what --out
holds. Everything else of the layout stays: a family whose files are all gradshard's has
torchgen's files equal to the real ones, and its units are a re-cut of those texts.

A family is the torchgen files PyTorch compiles for one generator's output, with their
generated headers: Functions (Functions.cpp, Functions.h), VariableType (VariableType_k.cpp,
VariableType.h), TraceType_k, ADInplaceOrViewType_k, python_functions_k (python_functions.h),
ViewFuncs (ViewFuncs.cpp, ViewFuncs.h), variable_factories.h (a header only: its unit includes
it and nothing else) and each Python binding file (python_return_types.cpp with
python_return_types.h). The *Everything.cpp files, the first stage (templates/VariableType.cpp)
and annotated_fn_args.py are never compiled (PyTorch's build does not compile them), so they
name no family. Torchgen's shards are compiled, as PyTorch's build compiles them.

The rules for headers, the safe general ones:

- Every unit includes the generated headers by their torch path
  (torch/csrc/autograd/generated/X.h) and finds them first in the compile directory's
  include/, which holds a copy of each (--out cannot be put first instead: its flat tree has
  no torch/csrc/autograd/generated/ directory). A header that differs is copied there from
  --out, so every unit, gradshard's and the as-is ones, sees what PyTorch's build sees; a
  family whose files are the same compiled against it is what PyTorch compiles. The
  precompiled headers include these copies: the driver keys them on the copies too.
- Functions.h is the exception: the compile directory holds it cut in two (a struct-less
  prelude at its torch path, each node's struct in include/gradshard/nodes/), and that cut is
  gradshard's. A torchgen file that creates or reads nodes (Functions.cpp, VariableType_k.cpp,
  python_functions_k.cpp) needs Functions.h whole at its torch path, where gradshard's units
  of those three families include the prelude and then the structs (which would be defined
  twice). So the three node families go as-is together, with Functions.h whole (--out's, real
  or not) in the compile directory, whenever any file of theirs or Functions.h differs.
- A unit of several small binding files includes their copies; one of them differing, each
  of its files compiles from --out alone (the unit's text is gradshard's, rendered for all of
  them).

An as-is unit lists every generated header copy (their texts are part of its key), as the
binding files compiled from --out always have; its size, which only orders the compiles, is
its share of the family's units. gradshard's files for the units replaced stay in the
compile directory, uncompiled: a build without real files writes none of them again.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Mapping, Sequence

from gradshard.pipeline.layout.compile_layout import (AUTOGRAD_PCH, GENERATED_DIR, PYTHON_PCH,
                                                      SOURCE_DIR, VARIABLE_TYPE_PCH, CompileLayout,
                                                      CompileUnit)
from gradshard.pipeline.records import Record

__all__ = ["AsIsLayout", "FAMILIES", "Family", "GENERATED_HEADERS", "NODE_FAMILIES",
           "as_is_layout"]

# The generated headers the compile directory holds a copy of (at GENERATED_DIR/<name>).
GENERATED_HEADERS = ("Functions.h", "VariableType.h", "ViewFuncs.h", "python_functions.h",
                     "python_return_types.h", "variable_factories.h")
BINDINGS_DIR = f"{SOURCE_DIR}/bindings/"  # the copies a unit of small binding files includes
# gradshard's own headers (node structs, VariableType.cpp's head) and sources
OWN_PATHS = ("include/gradshard/", f"{SOURCE_DIR}/")
# a binding file's generated header belongs to its family
BINDING_HEADERS = {"python_return_types.h": "python_return_types.cpp"}


@dataclass(frozen=True, slots=True)
class Family(Record):
    """A family: the torchgen files PyTorch compiles for it (`files`, a pattern of index
    names; "" for none), its generated headers, the names of gradshard's units for it
    (`units`, a pattern) and the precompiled header its files compile from (that of
    gradshard's units, whose includes are theirs)."""

    name: str
    files: str
    headers: tuple[str, ...]
    units: str
    pch: str

    def compiles(self, name: str) -> bool:
        return bool(self.files) and re.fullmatch(self.files, name) is not None

    def owns_unit(self, unit: CompileUnit) -> bool:
        return bool(self.units) and re.fullmatch(self.units, unit.name) is not None

    def has(self, name: str) -> bool:
        return name in self.headers or self.compiles(name)


FUNCTIONS = Family("Functions", r"Functions\.cpp", ("Functions.h",), r"Functions_.+",
                   AUTOGRAD_PCH)
VARIABLE_TYPE = Family("VariableType", r"VariableType_\d+\.cpp", ("VariableType.h",),
                       r"VariableType(Forward)?_.+", VARIABLE_TYPE_PCH)
PYTHON_FUNCTIONS = Family("python_functions", r"python_functions_\d+\.cpp",
                          ("python_functions.h",), r"python_functions_\d+", PYTHON_PCH)
TRACE_TYPE = Family("TraceType", r"TraceType_\d+\.cpp", (), r"TraceType_part-\d+",
                    VARIABLE_TYPE_PCH)
INPLACE_OR_VIEW = Family("ADInplaceOrViewType", r"ADInplaceOrViewType_\d+\.cpp", (),
                         r"ADInplaceOrViewType_part-\d+", VARIABLE_TYPE_PCH)
VIEW_FUNCS = Family("ViewFuncs", r"ViewFuncs\.cpp", ("ViewFuncs.h",), "ViewFuncs",
                    VARIABLE_TYPE_PCH)
# a header only: its unit includes the copy, which then holds --out's text
VARIABLE_FACTORIES = Family("variable_factories", "", ("variable_factories.h",), "",
                            VARIABLE_TYPE_PCH)
FAMILIES = (FUNCTIONS, VARIABLE_TYPE, PYTHON_FUNCTIONS, TRACE_TYPE, INPLACE_OR_VIEW, VIEW_FUNCS,
            VARIABLE_FACTORIES)
# their torchgen files need Functions.h whole, their units its cut (the module docstring)
NODE_FAMILIES = (FUNCTIONS, VARIABLE_TYPE, PYTHON_FUNCTIONS)


@dataclass(frozen=True, slots=True)
class AsIsLayout(Record):
    """The layout to compile, the compile directory's files that hold an --out file's text
    (path → index name; its hash in the layout is that file's), and gradshard's units no
    longer compiled (their objects must not be linked beside their replacements)."""

    layout: CompileLayout
    copies: tuple[tuple[str, str], ...] = ()
    dropped: tuple[str, ...] = ()


def as_is_layout(layout: CompileLayout, files: Mapping[str, str],
                 real: Mapping[str, str]) -> AsIsLayout:
    """The layout with each family that has a real file compiled as it is from --out.
    `files`: the files --out holds (index name → hash), `real`: those that are the real
    generator's (index name → the real text's hash; "" for a file of gradshard's the real
    generator does not write, which --out then lacks). No real file: the layout as it is."""
    # a file the real generator does not write, or writes alone, changes its family too
    families = touched_families(real)
    real = {name: digest for name, digest in real.items() if name in files}
    bindings = touched_bindings(layout.units, real)
    copies = header_copies(layout, real, families)
    if not (families or bindings or copies):
        return AsIsLayout(layout)
    kept, dropped = replaced_units(layout.units, families, bindings)
    added = [u for f in families for u in family_units(f, layout, files)]
    added += [u for pack in dropped for u in dissolved(pack, bindings)]
    gone = {u.name for u in dropped}
    # a merged unit includes its parts' sources: with one of them gone it is gradshard's code
    merged = [m for m in layout.merged if not gone.intersection(m.parts)]
    gone.update(m.name for m in layout.merged if gone.intersection(m.parts))
    texts = dict(layout.files)
    # the copy holds --out's text: the real one, or Functions.h whole as gradshard wrote it
    texts.update((path, real.get(name, files[name])) for path, name in copies)
    return AsIsLayout(CompileLayout(tuple(sorted(texts.items())), (*kept, *added),
                                    tuple(merged)), tuple(copies), tuple(sorted(gone)))


def replaced_units(units: Sequence[CompileUnit], families: Sequence[Family],
                   bindings: set[str]) -> tuple[list[CompileUnit], list[CompileUnit]]:
    """gradshard's units kept, and those replaced: the families' and the packs of a real
    binding file (a pack's text, gradshard's, includes its members' copies)."""
    kept, dropped = [], []
    for unit in units:
        replaced = any(f.owns_unit(unit) for f in families) or packed_members(unit) & bindings
        (dropped if replaced else kept).append(unit)
    return kept, dropped


def touched_families(real: Mapping[str, str]) -> list[Family]:
    """The families with a real file; the node families all three when one of them is."""
    families = [f for f in FAMILIES if any(f.has(name) for name in real)]
    if any(f in NODE_FAMILIES for f in families):
        # Functions.h whole is in the compile directory: no unit can include its cut
        families = [f for f in FAMILIES if f in families or f in NODE_FAMILIES]
    return families


def touched_bindings(units: Sequence[CompileUnit], real: Mapping[str, str]) -> set[str]:
    """The binding files (index names) with a real file or a real header of their own."""
    names = {m for unit in units for m in binding_members(unit)}
    wanted = {BINDING_HEADERS.get(name, name) for name in real}
    return names & wanted


def binding_members(unit: CompileUnit) -> tuple[str, ...]:
    """The binding files a unit compiles: one from --out, or the copies a pack includes."""
    if unit.pch != PYTHON_PCH:
        return ()
    if unit.from_out:
        return (unit.source,)
    return tuple(sorted(packed_members(unit)))


def packed_members(unit: CompileUnit) -> set[str]:
    return {h.removeprefix(BINDINGS_DIR) for h in unit.headers if h.startswith(BINDINGS_DIR)}


def header_copies(layout: CompileLayout, real: Mapping[str, str],
                  families: Sequence[Family]) -> list[tuple[str, str]]:
    """The compile directory's generated headers that hold --out's text: each real one, and
    Functions.h whole when the node families compile as they are."""
    held = {path for path, _ in layout.files}
    names = [n for n in GENERATED_HEADERS if n in real]
    if any(f in NODE_FAMILIES for f in families) and "Functions.h" not in names:
        names.append("Functions.h")  # whole, not the prelude: the as-is files use its structs
    copies = [(f"{GENERATED_DIR}/{name}", name) for name in names]
    return [(path, name) for path, name in copies if path in held]


def family_units(family: Family, layout: CompileLayout,
                 files: Mapping[str, str]) -> list[CompileUnit]:
    """A family's torchgen files as units compiled from --out."""
    names = sorted(n for n in files if family.compiles(n))
    owned = [u for u in layout.units if family.owns_unit(u)]
    # by their torch path, as PyTorch's build includes them: every copy keys the unit
    headers = tuple(p for p, _ in layout.files if p.startswith(f"{GENERATED_DIR}/"))
    # and what else gradshard's units of it included that is not gradshard's own
    # (FunctionalInverses.h: the wheel lacks it, the compile directory holds it)
    extra = tuple(dict.fromkeys(h for u in owned for h in u.headers
                                if h not in headers and not _own_header(h)))
    # compile times only order the compiles: an even share of the family's units
    size = sum(u.size for u in owned) // max(len(names), 1)
    return [CompileUnit(n.removesuffix(".cpp"), n, True, family.pch, (*headers, *extra), (), (),
                        size) for n in names]


def _own_header(path: str) -> bool:
    """A header of gradshard's own (a node's struct, VariableType.cpp's head, a pack's copy):
    no file of --out includes it."""
    return path.startswith(OWN_PATHS)


def dissolved(pack: CompileUnit, bindings: set[str]) -> list[CompileUnit]:
    """Each binding file of a pack holding a real one, compiled from --out alone (a unit of
    gradshard's including them all has no place for --out's text)."""
    members = sorted(packed_members(pack))
    if not set(members) & bindings:
        return []
    headers = tuple(h for h in pack.headers if not h.startswith(BINDINGS_DIR))
    size = pack.size // len(members)
    return [replace(pack, name=m.removesuffix(".cpp"), source=m, from_out=True, headers=headers,
                    size=size) for m in members]
