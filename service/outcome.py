"""What a build did: the record `gradshard build` reports and its compile step reads."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gradshard.service.files.inputs import InputBytes
from gradshard.service.files.outputs import WriteReport
from gradshard.service.files.spec_location import SpecLocation

if TYPE_CHECKING:
    from gradshard.service.graph_run import Generation, GraphResult


@dataclass
class BuildOutcome:
    status: str  # "built" or "up to date"
    location: SpecLocation
    out: Path
    cache: Path | None
    writes: WriteReport
    seconds: dict[str, float] = field(default_factory=dict)
    stats: Any = None  # the engine's EngineStats when the graph ran
    warnings: list[str] = field(default_factory=list)
    files: int = 0
    nodes: int = 0
    build_id: int = 0  # the cache's record of this build (0 without a cache)
    inputs: InputBytes | None = None  # what the build read (the compile step reads the same)
    compiled: Any = None  # the CompileReport when the build compiled
    verified: bool = False  # every task ran and was compared with the cache (--verify)
    graph: GraphResult | None = None  # the graph's run, whose layout the compile step reads
    generation: Generation | None = None  # the inputs as the graph read them
    tree: str = "flat"  # how the files are laid out under out (service/files/placement.py)
