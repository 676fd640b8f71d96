"""One session of the cache: what a command (or the daemon, for its whole life) holds and does.

    Session ─ store      the SQLite store of the cache directory (opened on first use)
            ─ memory     what its engines remember between runs (cache/engine/memory.py: Memory)
            ─ warnings   what the cache said on the way (damage found and set aside)
            ─ build      generate, then compile, as one build of the cache (service/build.py)
            ─ compile    a build's generated C++, from its own graph run (service/compile/driver.py)
            ─ affected   what the spec's edits change (service/query/affected.py)
            ─ settle     a long-lived process's housekeeping between builds (garbage)
            ─ close

Shake's RunState has this shape: opened once, run many times. The CLI opens one per command;
the daemon keeps one for its life, so a build after a save is answered from memory. The
commands take the session's cache half (service/open_cache.py: OpenCache), so none of them
imports this module: it sits above them.
"""

from __future__ import annotations

import gc
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from gradshard.service.open_cache import OpenCache
from gradshard.service.files.placement import Placement

if TYPE_CHECKING:
    from gradshard.service.query.affected import Affected
    from gradshard.service.compile.driver import CompileOptions
    from gradshard.service.compile.report import CompileReport
    from gradshard.service.outcome import BuildOutcome
    from gradshard.service.files.spec_location import SpecLocation


class Session(OpenCache):
    """The cache, opened once, and what is done with it (the CLI and the daemon call these)."""

    def build(self, location: SpecLocation, out: Path, options: CompileOptions | None = None,
              progress: Callable[[str], None] | None = None, verify: bool = False,
              generated: Callable[[], None] | None = None,
              placement: Placement | None = None) -> BuildOutcome:
        """Generate the spec's files into `out` (placed as `placement` says: service/files/placement.py),
        then compile them (unless `options` is None: --codegen-only), as one build of the
        cache: one lease, one graph run, one retry; `generated` runs between the two."""
        from gradshard.service.build import build_and_compile, ignore_progress

        return build_and_compile(location, out, self, options, progress or ignore_progress,
                                 verify, generated, placement or Placement())

    def compile(self, built: BuildOutcome, options: CompileOptions,
                progress: Callable[[str], None]) -> CompileReport:
        """Compile what a build generated, from the layout of the build's own graph run."""
        from gradshard.service.build import compile_outcome

        return compile_outcome(built, self, options, progress)

    def affected(self, location: SpecLocation, against: str | None,
                 since: str | None) -> Affected:
        """What the spec's edits change since a baseline: the last build, a spec directory
        or a git revision."""
        from gradshard.service.query.affected import affected_command

        return self.retrying(partial(affected_command, location, self, against, since))

    def settle(self) -> None:
        """Housekeeping of a long-lived process between builds (the daemon, once a build's
        result is published): collect garbage now and freeze what survives (gc.freeze), so
        that the collector's full passes during the next build walk that build's objects only,
        not the millions the session keeps in memory. Measured on 2.13: such a pass during an
        edit's build costs ~0.28 s, as much as the rest of the build. Unfreezing first lets
        this pass reclaim cycles the last build dropped, so nothing piles up frozen."""
        gc.unfreeze()
        gc.collect()
        gc.freeze()
