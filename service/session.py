"""One session of the cache: what a command (or the daemon, for its whole life) holds.

    Session ─ store      the SQLite store of the cache directory (opened on first use)
            ─ memory     what this session's engines remember between runs (task keys →
                         outputs, hashes → records; cache/engine.py: Memory)
            ─ warnings   what the cache said on the way (damage found and set aside)
            ─ codegen / compile / affected     (service/build.py, service/affected.py)

Shake's RunState has this shape: opened once, run many times. The CLI opens one per command;
the daemon keeps one, so a build after a save is answered from memory. A damaged database
is set aside and the work runs again (`retrying`), and everything the session remembers of
it goes with it: that came from the damaged file too.

This module imports no pipeline: a no-op build never loads it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Callable, TypeVar

from gradshard.cache.store import Store, StoreDamaged, set_aside

if TYPE_CHECKING:
    from gradshard.cache.engine import Memory

    from .affected import Affected
    from .build import BuildOutcome
    from .compile import CompileOptions, CompileReport
    from .incremental import Generation, GraphResult
    from .spec_location import SpecLocation

T = TypeVar("T")


@dataclass
class Session:
    """One command's (or the daemon's) view of the cache: the store (if any), the engine
    memory and the warnings given."""

    directory: Path | None
    warnings: list[str] = field(default_factory=list)
    store: Store | None = None
    _memory: Memory | None = None

    def open(self) -> Store | None:
        if self.directory is not None and self.store is None:
            self.store = Store.open(self.directory, self.warnings.append)
        return self.store

    @property
    def memory(self) -> Memory:
        """What this session's engines remember between runs (made on first use, so that a
        build with nothing to do never imports the engine)."""
        if self._memory is None:
            from gradshard.cache.engine import Memory  # the pipeline's records come with it

            self._memory = Memory()
        return self._memory

    def reset(self) -> Store | None:
        """Replace a damaged store by an empty one."""
        self.set_aside()
        return self.open()

    def set_aside(self) -> None:
        """Move a damaged store out of the way (the next open starts an empty one), and
        forget what this session remembers of it: that came from the damaged file too (a
        memo row naming a crafted value would answer the next build from memory)."""
        if self.store is not None:
            self.store.close()
            self._memory = None
            set_aside(self.store.path)
            self.store = None

    def close(self) -> None:
        if self.store is not None:
            self.store.close()

    # -----------------------------------------------------------------------------------------
    # What a session does: the CLI and the daemon call these

    def build(self, location: SpecLocation, out: Path, options: CompileOptions | None = None,
              progress: Callable[[str], None] | None = None,
              verify: bool = False) -> BuildOutcome:
        """Generate the spec's files into `out`, then compile them (unless `options` is None:
        --codegen-only), as one build of the cache (service/build.py)."""
        from .build import build_and_compile, ignore_progress

        return build_and_compile(location, out, self, options, progress or ignore_progress,
                                 verify)

    def compile(self, built: BuildOutcome, options: CompileOptions,
                progress: Callable[[str], None]) -> CompileReport:
        """Compile what a build generated, from the layout of the build's own graph run
        (service/compile.py)."""
        from .compile import compile_generated

        return compile_generated(built, self, options, progress)

    def affected(self, location: SpecLocation, against: str | None,
                 since: str | None) -> Affected:
        """What the spec's edits change since a baseline (service/affected.py)."""
        from .affected import affected_command

        return self.retrying(partial(affected_command, location, self, against, since))

    def run_graph(self, generation: Generation, build_id: int = 0,
                  verify: bool = False) -> GraphResult:
        """The build graph over these inputs, on the session's store and memory."""
        return generation.run(self.open(), build_id, verify, self.memory)

    def retrying(self, work: Callable[[], T]) -> T:
        """work(); a cache found damaged on the way is set aside and work runs again."""
        try:
            return work()
        except StoreDamaged as damage:
            self.warnings.append(f"the cache database {damage}; it was set aside and rebuilt")
            self.reset()
            return work()
