"""A spec's generator: the code that would generate from it, found beside the spec and named
by a hash of its sources.

A spec's generator is its autograd generators (a wheel's torchgen/packaged/autograd/*.py, a
checkout's tools/autograd/*.py) and the torchgen package that goes with them (the wheel's
torchgen/, the checkout's torchgen/). Where the spec has autograd generators but no torchgen
beside them, the installed torchgen goes with them; where it has no generator files at all (a
hand-made spec), it is generated as the installed torchgen would generate it. Both are said.

The hash covers every .py file of the torchgen package (not its packaged/ spec) and of the
autograd generators' directory, each under a name that does not depend on the layout
("torchgen/api/cpp.py", "autograd/gen_variable_type.py"), so the same release hashes alike
from a wheel and from a checkout. Reading them costs a few milliseconds; a process remembers
the hash of sources whose stat signatures have not changed (the daemon asks on every save).
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

import xxhash

from gradshard.cache.errors import EnvironmentFailure
from gradshard.pipeline.releases import DEFAULT_RELEASE
from gradshard.service.defaults import installed_torchgen
from gradshard.service.files.spec_location import SpecLocation, locate_spec
from gradshard.service.generator.known import KNOWN_GENERATORS

__all__ = ["GeneratorIdentity", "Origin", "generator_hash", "identify_generator",
           "identify_sources", "installed_generator", "source_bytes", "source_name"]

_CHECKOUT_AUTOGRAD = "tools/autograd"


class Origin:
    """Where a spec's generator was found (said by every command that names it)."""

    BESIDE = "beside the spec"
    INSTALLED_TORCHGEN = "the spec's autograd generators with the installed torchgen"
    INSTALLED = "none beside the spec: the installed torchgen's"
    NONE = "none: no generator beside the spec and no torchgen installed"
    NO_TORCHGEN = "autograd generators beside the spec, but no torchgen to run them with"


@dataclass(frozen=True)
class GeneratorIdentity:
    """A spec's generator: the hash of its sources ("" when there is none), the release the
    table names it (None: unknown), whether gradshard reproduces it, where its torchgen and
    autograd generators are, and how they were found."""

    hash: str
    release: str | None
    reproduced: bool
    torchgen: Path | None
    autograd: Path | None
    origin: str
    # Two fields made from the others, not properties: a build reads them without entering
    # this module. `known`: gradshard writes what this generator writes (it is never run to
    # check). `rules_release`: the release whose rules gradshard builds this spec with (its
    # own when gradshard reproduces it, else the default; pipeline/releases.py).
    known: bool = field(init=False)
    rules_release: str = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "known", self.reproduced or self.hash == "")
        object.__setattr__(self, "rules_release", self.release
                           if self.reproduced and self.release else DEFAULT_RELEASE)

    @property
    def short(self) -> str:
        return self.hash[:12] if self.hash else "none"

    @property
    def name(self) -> str:
        """How gradshard names it: `torchgen 2.13.0`, or `an unknown generator`."""
        return f"torchgen {self.release}" if self.release else "an unknown generator"

    @property
    def label(self) -> str:
        """Its name and short hash, as messages name it: `torchgen 2.14.x (2cce99c8a4b9)`."""
        return f"{self.name} ({self.short})"

    def describe(self) -> str:
        """One line: which generator, whether gradshard knows it, where it was found."""
        if self.hash == "":
            return (f"generator: {self.origin}; gradshard generates as torchgen "
                    f"{DEFAULT_RELEASE}, unchecked")
        if self.reproduced:
            state = "known: gradshard reproduces it"
        elif self.release:
            state = (f"recognised, not reproduced by gradshard (it generates as torchgen "
                     f"{DEFAULT_RELEASE})")
        else:
            state = f"not known to gradshard (it generates as torchgen {DEFAULT_RELEASE})"
        return f"generator: {self.label}, {state}; {self._where()}"

    def _where(self) -> str:
        if self.torchgen is None:  # known by its sources alone (a git revision's)
            return self.origin
        if self.origin == Origin.BESIDE:
            return f"torchgen at {self.torchgen}"
        return f"{self.origin} ({self.torchgen})"

    def source_directories(self) -> list[tuple[Path, bool]]:
        """The directories of this generator's sources found beside its spec, as (directory,
        recursive): the autograd generators' (flat) and, when beside too, torchgen's whole.
        An installed torchgen is not the spec's to edit."""
        beside = []
        if self.origin == Origin.BESIDE and self.torchgen is not None:
            beside.append((self.torchgen, True))
        if self.origin in (Origin.BESIDE, Origin.INSTALLED_TORCHGEN) and self.autograd:
            beside.append((self.autograd, False))
        return beside

    def to_json(self) -> dict:
        return {"hash": self.hash or None, "release": self.release, "known": self.known,
                "reproduced": self.reproduced,
                "torchgen": str(self.torchgen) if self.torchgen else None,
                "autograd": str(self.autograd) if self.autograd else None,
                "origin": self.origin}


def identify_generator(location: SpecLocation) -> GeneratorIdentity:
    """The spec's generator, found beside it or else the installed torchgen's."""
    autograd = _autograd_beside(location)
    torchgen = _torchgen_beside(location) if autograd is not None else None
    origin = Origin.BESIDE
    if autograd is None:
        installed = installed_torchgen()
        torchgen, autograd = installed, installed / "packaged/autograd" if installed else None
        origin = Origin.INSTALLED if installed else Origin.NONE
    elif torchgen is None:
        torchgen, origin = installed_torchgen(), Origin.INSTALLED_TORCHGEN
        if torchgen is None:
            return GeneratorIdentity("", None, False, None, autograd, Origin.NO_TORCHGEN)
    if torchgen is None or autograd is None or not _sources(autograd, "autograd"):
        return GeneratorIdentity("", None, False, None, None, Origin.NONE)
    digest = generator_hash(torchgen, autograd)
    known = KNOWN_GENERATORS.get(digest)
    return GeneratorIdentity(digest, known.release if known else None,
                             bool(known and known.reproduced), torchgen, autograd, origin)


def installed_generator() -> GeneratorIdentity | None:
    """The installed torch's generator (its torchgen's packaged one), or None without one."""
    torchgen = installed_torchgen()
    if torchgen is None or not (torchgen / "packaged").is_dir():
        return None
    return identify_generator(SpecLocation(torchgen / "packaged", "packaged"))


def _autograd_beside(location: SpecLocation) -> Path | None:
    """The directory of the spec's autograd generators, when it holds any."""
    directory = (location.root / "autograd" if location.layout == "packaged"
                 else location.root / _CHECKOUT_AUTOGRAD)
    return directory if _sources(directory, "autograd") else None


def _torchgen_beside(location: SpecLocation) -> Path | None:
    """The torchgen package that goes with the spec: the one the packaged directory is part
    of, or the checkout's."""
    candidate = (location.root.parent if location.layout == "packaged"
                 else location.root / "torchgen")
    if (candidate / "__init__.py").is_file() and (candidate / "model.py").is_file():
        return candidate
    return None


MAX_DIRECTORIES = 2000  # torchgen has ~20

# (path, size, mtime_ns) of every source → the hash: a process hashes unchanged sources once
_remembered: dict[tuple, str] = {}


def generator_hash(torchgen: Path, autograd: Path) -> str:
    """xxh3-128 of the generator's sources, each under its layout-free name."""
    sources = _sources(torchgen, "torchgen") + _sources(autograd, "autograd")
    signature = tuple((str(path), *_stat(path)) for _, path in sources)
    if signature not in _remembered:
        _remembered.clear()  # one generator at a time is the common case; keep memory flat
        _remembered[signature] = _sources_hash((name, path.read_bytes())
                                               for name, path in sources)
    return _remembered[signature]


def identify_sources(sources: list[tuple[str, bytes]], origin: str) -> GeneratorIdentity:
    """A generator known by its sources' bytes alone (a git revision's), each under its
    layout-free name (`source_name`): named by the same hash as one read from files."""
    if not any(name.startswith("autograd/") for name, _ in sources):
        return GeneratorIdentity("", None, False, None, None, origin)  # as _sources finds none
    digest = _sources_hash(sources)
    known = KNOWN_GENERATORS.get(digest)
    return GeneratorIdentity(digest, known.release if known else None,
                             bool(known and known.reproduced), None, None, origin)


def source_name(relative: str, label: str) -> str | None:
    """The layout-free name of a file at `relative` (a POSIX path) under a generator
    directory: torchgen's .py files but its packaged/ spec and caches, the autograd
    generators' directory's own .py files; None for any other file."""
    parts = relative.split("/")
    if not relative.endswith(".py") or "__pycache__" in parts:
        return None
    if label == "autograd":
        return f"autograd/{relative}" if len(parts) == 1 else None
    return f"torchgen/{relative}" if parts[0] != "packaged" else None


def source_bytes(directory: Path, label: str) -> list[tuple[str, bytes]]:
    """A generator directory's sources read, by their layout-free names."""
    return [(name, path.read_bytes()) for name, path in _sources(directory, label)]


def _hashed_order(source: tuple[str, bytes]) -> tuple[bool, str]:
    """The hash's order: torchgen's sources by name, then the autograd generators'."""
    return (not source[0].startswith("torchgen/"), source[0])


def _sources_hash(sources: Iterable[tuple[str, bytes]]) -> str:
    """xxh3-128 over (name, bytes) pairs, in one order whatever order they come in (files
    and a git revision's blobs list them differently)."""
    digest = xxhash.xxh3_128()
    for name, data in sorted(sources, key=_hashed_order):
        # a name that is no UTF-8 (os.walk and git give such names as surrogates)
        digest.update(f"{name}\0{len(data)}\0".encode(errors="surrogateescape"))
        digest.update(data)
    return digest.hexdigest()


def _stat(path: Path) -> tuple[int, int]:
    status = path.stat()
    return status.st_size, status.st_mtime_ns


def _sources(directory: Path, label: str) -> list[tuple[str, Path]]:
    """Every .py file of a generator directory, by its layout-free name, sorted. torchgen's
    packaged/ is its spec (and its autograd generators, hashed as `autograd/`), not torchgen;
    the autograd generators are one flat directory."""
    if not directory.is_dir():
        return []
    files = ([p for p in directory.glob("*.py") if p.is_file()] if label == "autograd"
             else _python_files(directory))
    named = ((source_name(p.relative_to(directory).as_posix(), label), p) for p in files)
    return sorted((name, path) for name, path in named if name is not None)


def _python_files(torchgen: Path) -> list[Path]:
    """torchgen's .py files but its packaged/ spec, through symbolic links to directories
    (a staged or vendored torchgen links its subpackages), each directory once (a link back
    up the tree would otherwise never end)."""
    found, seen = [], set()
    for top, directories, files in os.walk(torchgen, followlinks=True):
        if len(seen) > MAX_DIRECTORIES:  # a link to / must not walk the machine each build
            raise EnvironmentFailure(
                f"{torchgen} holds more than {MAX_DIRECTORIES} directories: not a torchgen "
                f"package (a symbolic link out of it?)", "point --spec at a torchgen's "
                "packaged spec or a PyTorch checkout", str(torchgen))
        status = os.stat(top)
        if (status.st_dev, status.st_ino) in seen:
            directories[:] = []
            continue
        seen.add((status.st_dev, status.st_ino))
        skipped = {"__pycache__", "packaged"} if Path(top) == torchgen else {"__pycache__"}
        directories[:] = sorted(d for d in directories if d not in skipped)
        found.extend(Path(top) / f for f in files if f.endswith(".py"))
    return [p for p in found if p.is_file()]


def main(argv: list[str]) -> int:
    """`python -m gradshard.service.generator.identity [SPEC]`: the hash to put in the table."""
    location = locate_spec(argv[0] if argv else None)
    identity = identify_generator(location)
    print(identity.hash)
    print(identity.describe())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
