"""One session of the cache: what a command (or the daemon, for its whole life) holds.

    Session ─ store      the SQLite store of the cache directory (opened on first use)
            ─ memory     what its engines remember between runs (cache/engine/memory.py: Memory)
            ─ compile    the compile cache's state: PCHs and stored objects found sound, the
                         hashes of files written or read (service/open_cache.py)
            ─ warnings   what the cache said on the way (damage found and set aside)
            ─ freeze_survivors  a long-lived process's housekeeping between builds (garbage)
            ─ close

Shake's RunState has this shape: opened once, run many times. The CLI opens one per command;
the daemon keeps one for its life, so a build after a save is answered from memory. No
command is a method of the session: the CLI and the daemon call each (service/build.py,
service/query/affected.py, ...) with it, and the command reads the store, the memory and the
compile cache's state from it (its OpenCache half, service/open_cache.py, which is all the
commands take).
"""

from __future__ import annotations

import gc

from gradshard.service.open_cache import OpenCache

__all__ = ["Session"]


class Session(OpenCache):
    """The cache, opened once, and its housekeeping (the CLI and the daemon hold one)."""

    def freeze_survivors(self) -> None:
        """Housekeeping of a long-lived process between builds (the daemon, once a build's
        result is published): collect garbage now and freeze what survives (gc.freeze), so
        that the collector's full passes during the next build walk that build's objects only,
        not the millions the session keeps in memory. Measured on 2.13: such a pass during an
        edit's build costs ~0.28 s, as much as the rest of the build. Unfreezing first lets
        this pass reclaim cycles the last build dropped, so nothing piles up frozen."""
        gc.unfreeze()
        gc.collect()
        gc.freeze()
