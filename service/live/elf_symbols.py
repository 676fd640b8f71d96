"""ELF symbol tables for `gradshard try`: which symbols a patch's objects need, which torch's
libraries export, and where torch's own copy of a function it does not export lives.

libtorch_cpu.so exports neither the FunctionsManual helpers formulas call (mul_tensor_backward
…) nor VariableType::unpack, which every kernel calls: they are in its `.symtab` (as local,
hidden functions), not its `.dynsym`. A patch reaches them through a trampoline whose slot
holds the address of torch's copy: the library's load address (that of an exported symbol,
less its value) plus the symbol's value (service/live/patch_sources.py: trampoline_source).

pyelftools reads the ELF header; the section headers and the symbol tables are read as numpy
arrays: libtorch_cpu's `.symtab` (~530,000 symbols, a 76 MB `.strtab`) is scanned in ~0.2 s
where iterating it in pyelftools takes ~20 s, and a g++ object's ~9,000 sections (a COMDAT
group per template instance) in a millisecond where pyelftools's lookup by name takes 0.15 s.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import Iterable

from gradshard.cache.errors import EnvironmentFailure

__all__ = ["SYMBOL_NAME", "hidden_functions", "load_anchor", "undefined_symbols"]

# symbols a trampoline may be written for: what the assembler takes as a name, nothing else
SYMBOL_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.$]*\Z")

_STT_FUNC = 2
_STV_HIDDEN = 2
_STB_LOCAL, _STB_GLOBAL, _STB_WEAK = 0, 1, 2
_SHN_UNDEF = 0
_SHT_SYMTAB, _SHT_DYNSYM = 2, 11
_ELF64_SYM = [("name", "<u4"), ("info", "u1"), ("other", "u1"), ("shndx", "<u2"),
              ("value", "<u8"), ("size", "<u8")]
_ELF64_SHDR = [("name", "<u4"), ("type", "<u4"), ("flags", "<u8"), ("addr", "<u8"),
               ("offset", "<u8"), ("size", "<u8"), ("link", "<u4"), ("info", "<u4"),
               ("addralign", "<u8"), ("entsize", "<u8")]


def undefined_symbols(objects: Iterable[Path]) -> set[str]:
    """The global symbols the objects reference and none of them defines."""
    undefined, defined = set(), set()
    for path in objects:
        symbols, text = _table(path, _SHT_SYMTAB)
        bind = symbols["info"] >> 4
        public = ((bind == _STB_GLOBAL) | (bind == _STB_WEAK)) & (symbols["name"] != 0)
        missing = symbols["shndx"] == _SHN_UNDEF
        undefined.update(_names(text, symbols["name"][public & missing]))
        defined.update(_names(text, symbols["name"][public & ~missing]))
    return undefined - defined


def _names(text: bytes, offsets) -> list[str]:
    return [text[start:text.index(b"\0", start)].decode() for start in offsets.tolist()]


def load_anchor(library: Path) -> tuple[str, int]:
    """An exported function of the library (name and value), whose address in a process,
    less its value, is where the library is loaded."""
    status = library.stat()
    return _anchor(library, status.st_size, status.st_mtime_ns)


@functools.lru_cache(maxsize=len(("libtorch_cpu", "libtorch_python")))
def _anchor(library: Path, size: int, mtime_ns: int) -> tuple[str, int]:
    import numpy as np  # the `try` extra

    symbols, text = _table(library, _SHT_DYNSYM)
    exported = np.nonzero(((symbols["info"] & 0xF) == _STT_FUNC)
                          & ((symbols["info"] >> 4) == _STB_GLOBAL)
                          & (symbols["shndx"] != _SHN_UNDEF) & (symbols["value"] != 0))[0]
    if not len(exported):
        raise EnvironmentFailure(f"{library} exports no function",
                                 "`gradshard try` needs the installed torch's libraries")
    first = symbols[exported[0]]
    start = int(first["name"])
    return text[start:text.index(b"\0", start)].decode(), int(first["value"])


def _table(library: Path, kind: int):
    """The first symbol table of that section type as a numpy array of Elf64_Sym, and its
    string table's bytes (both empty when the file has none: stripped)."""
    import numpy as np
    from elftools.common.exceptions import ELFError
    from elftools.elf.elffile import ELFFile

    with library.open("rb") as stream:
        try:
            elf = ELFFile(stream)
            count = elf.num_sections()  # e_shnum, or section 0's size past 0xff00 sections
        except ELFError as failure:
            raise EnvironmentFailure(f"{library} is not an ELF file: {failure}",
                                     "`gradshard try` reads x86-64 ELF objects") from failure
        if elf.elfclass != 64 or not elf.little_endian:
            raise EnvironmentFailure(f"{library} is not a 64-bit little-endian ELF file",
                                     "`gradshard try` reads x86-64 ELF objects")
        sections = np.frombuffer(_read(stream, library, elf.header["e_shoff"], count * 64),
                                 dtype=_ELF64_SHDR)
        found = np.nonzero(sections["type"] == kind)[0]
        if not len(found) or sections[found[0]]["link"] >= count:
            return np.frombuffer(b"", dtype=_ELF64_SYM), b""
        table = sections[found[0]]
        strings = sections[table["link"]]
        data = _read(stream, library, int(table["offset"]), int(table["size"]))
        text = _read(stream, library, int(strings["offset"]), int(strings["size"]))
    usable = len(data) - len(data) % 24  # whole Elf64_Sym entries only
    return np.frombuffer(data[:usable], dtype=_ELF64_SYM), text


def _read(stream, library: Path, offset: int, size: int) -> bytes:
    """`size` bytes at `offset`, all of them, or the file is damaged."""
    stream.seek(offset)
    data = stream.read(size)
    if len(data) != size:
        raise EnvironmentFailure(f"{library} is truncated: {size} bytes at {offset} are past "
                                 "its end", "`gradshard try` reads x86-64 ELF objects")
    return data


def hidden_functions(library: Path, names: set[str]) -> dict[str, int]:
    """The value of each named function the library defines without exporting it, from its
    `.symtab` (a name defined twice at different values is left out: which copy would be
    meant is unknown)."""
    status = library.stat()
    values = _hidden_table(library, status.st_size, status.st_mtime_ns)
    found = {name: values.get(name.encode(), ()) for name in names}
    return {name: v[0] for name, v in found.items() if len(v) == 1}


@functools.lru_cache(maxsize=len(("libtorch_cpu", "libtorch_python")))
def _hidden_table(library: Path, size: int, mtime_ns: int) -> dict[bytes, tuple[int, ...]]:
    """Every hidden function's values, by name: scanned once per library file in a process
    (the daemon's next patch finds them in memory; size and time tell a reinstalled torch)."""
    symbols, text = _table(library, _SHT_SYMTAB)
    # the linker makes a hidden function local (GNU ld also clears its visibility, lld keeps
    # it): a local symbol under a function's external mangled name is such a function (a
    # static or anonymous-namespace one is mangled otherwise: _ZL…, _GLOBAL__N_)
    wanted = (((symbols["info"] & 0xF) == _STT_FUNC) & (symbols["shndx"] != _SHN_UNDEF)
              & (((symbols["info"] >> 4) == _STB_LOCAL) | ((symbols["other"] & 3) == _STV_HIDDEN)))
    values: dict[bytes, set[int]] = {}
    for start, value in zip(symbols["name"][wanted].tolist(), symbols["value"][wanted].tolist()):
        end = text.find(b"\0", start)
        values.setdefault(text[start:end if end >= 0 else len(text)], set()).add(value)
    return {name: tuple(v) for name, v in values.items()}
