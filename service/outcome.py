"""What a build was asked (BuildRequest: made once, its cache keys with it) and what it did
(BuildOutcome: made once, when the build has ended; `gradshard build` and the daemon report
it). Neither holds the graph run or its engine: the compile is given the run itself
(service/build.py).

This module imports no pipeline: a no-op build never loads it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Mapping

from gradshard.pipeline.problems import Problem
from gradshard.service.files.outputs import WriteReport
from gradshard.service.files.placement import Placement
from gradshard.service.files.spec_location import SpecLocation
from gradshard.service.generator.check import AUTO, HOST, GeneratorCheck, GeneratorVerdict
from gradshard.service.generator.identity import GeneratorIdentity

if TYPE_CHECKING:
    from gradshard.cache.engine.stats import EngineStats
    from gradshard.service.compile.report import CompileReport

__all__ = ["BuildOutcome", "BuildRequest"]


@dataclass(frozen=True)
class BuildRequest:
    """One build's request: the spec, where its files go and how they are placed there
    (service/files/placement.py), whether every task runs to be compared with the cache
    (--verify), how the spec's generator is checked (service/generator/check.py) and which
    generator it is; and the build's keys in the cache (the spec's root and --out, resolved)."""

    location: SpecLocation
    out: Path
    placement: Placement
    verify: bool
    spec_key: str
    out_key: str
    check: GeneratorCheck
    identity: GeneratorIdentity

    @classmethod
    def of(cls, location: SpecLocation, out: Path, placement: Placement, verify: bool,
           check: GeneratorCheck, identity: GeneratorIdentity) -> BuildRequest:
        """The request, with its keys; `identity`: the spec's generator, identified once by
        the caller (service/generator/identity.py: identify_generator)."""
        return cls(location, out, placement, verify, str(location.root.resolve()),
                   str(out.resolve()), check, identity)

    @property
    def on_host(self) -> bool:
        """Whether the spec's own generator writes the files (service/host/): `host`, or
        `auto` on a generator gradshard does not reproduce (any release it was not ported to,
        a checkout at main, an edited torchgen). `auto` on a reproduced generator takes the
        ported path, which is faster on the same work."""
        if self.check.path == HOST:
            return True
        return self.check.path == AUTO and not self.identity.known

    def generator_words(self, stamp: str) -> dict[str, str]:
        """What the build's fingerprint adds of its generator: which one, how it is checked,
        what this machine found (service/generator/check.py: verdict_stamp) and which path
        wrote the files."""
        words = {"generator": self.identity.hash, "generator-check": self.check.mode,
                 "generator-verdicts": stamp}
        if self.on_host:  # the ported path's words stay as they were: its builds up to date
            words["generator-path"] = HOST
        return words


@dataclass(frozen=True)
class BuildOutcome:
    status: str  # "built" or "up to date"
    location: SpecLocation
    out: Path
    cache: Path | None
    writes: WriteReport
    seconds: Mapping[str, float]  # by stage, and "total" (the files' part of the build)
    stats: EngineStats | None  # what the engine ran and reused, when the graph ran
    warnings: tuple[str, ...]  # what the cache and the compile said on the way
    files: int
    nodes: int
    build_id: int  # the cache's record of this build (0 without a cache)
    compiled: CompileReport | None  # None: --codegen-only
    verified: bool  # every task ran and was compared with the cache (--verify)
    tree: str  # how the files are laid out under out (service/files/placement.py)
    generator: GeneratorVerdict  # the spec's generator, and what its check found
    # what gradshard's own rules found in a spec the generator accepted (the host path: the
    # generator is the authority, these are warnings; `check` reports them as errors)
    findings: tuple[Problem, ...] = ()
