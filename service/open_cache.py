"""The cache directory as a session holds it: the store, the engine memory, the compile
cache's state (precompiled headers and stored objects found sound, the hashes of files
written or read) and the warnings given on the way.

The commands (service/build.py, service/query/affected.py, service/query/analysis.py,
service/live/plan.py, service/compile/driver.py) take this and read what they need from it;
it calls none of them. The session (service/session.py) is one of these. A damaged database
is set aside (`recover`) and the work runs again, and everything remembered of it goes with
it: that came from the damaged file too.

This module imports no pipeline: a no-op build never loads it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Iterator

from gradshard.cache.store.database import Store, StoreDamaged, set_aside
from gradshard.cache.store.verdicts import VerdictLedger
from gradshard.service.defaults import state_directory
from gradshard.service.files.outputs import KnownHashes

if TYPE_CHECKING:
    from gradshard.cache.engine.memory import Memory
    from gradshard.service.host.client import HostWorker

__all__ = ["Attempt", "OpenCache"]


@dataclass
class OpenCache:
    """One command's (or the daemon's) view of the cache: the store (if any), the engine
    memory, the warnings given, and the compile cache's state: the precompiled headers found
    sound (gch path → stat signature, service/compile/plan.py: check_pchs), the stored
    objects found sound, and the hashes of the files its builds wrote or read."""

    directory: Path | None
    warnings: list[str] = field(default_factory=list)
    store: Store | None = None
    _memory: Memory | None = None
    sound_pchs: dict[str, tuple[int, ...]] = field(default_factory=dict)
    # the stored objects found matching their sums (service/compile/plan.py: sound_object)
    sound_objects: dict[str, tuple] = field(default_factory=dict)
    # the files its builds wrote or read, by stat signature (service/files/outputs.py)
    known_hashes: KnownHashes = field(default_factory=KnownHashes)
    _verdicts: VerdictLedger | None = None
    # the host path's workers (service/host/client.py), by generator hash: warm for the
    # session's life (the daemon's), closed with it
    host_workers: dict[str, HostWorker] = field(default_factory=dict)

    def open(self) -> Store | None:
        if self.directory is not None and self.store is None:
            self.store = Store.open(self.directory, self.warnings.append)
        return self.store

    @property
    def verdicts(self) -> VerdictLedger:
        """This machine's generator verdicts (cache/store/verdicts.py): never in the cache
        directory (its state directory is looked up on first use), opened only when a spec's
        generator is not a known one."""
        if self._verdicts is None:
            self._verdicts = VerdictLedger(state_directory())
        return self._verdicts

    @property
    def memory(self) -> Memory:
        """What this session's engines remember between runs (task keys → outputs, hashes →
        records; cache/engine/memory.py: Memory), made on first use, so that a build with nothing
        to do never imports the engine."""
        if self._memory is None:
            from gradshard.cache.engine.memory import Memory

            self._memory = Memory()
        return self._memory

    def reset(self) -> Store | None:
        """Replace a damaged store by an empty one."""
        self.set_aside()
        return self.open()

    def set_aside(self) -> None:
        """Move a damaged store out of the way (the next open starts an empty one), and
        forget what is remembered of it (a memo row naming a crafted value would answer the
        next build from memory)."""
        if self.store is not None:
            self.store.close()
            self._memory = None
            set_aside(self.store.path)
            self.store = None

    def close(self) -> None:
        if self.store is not None:
            self.store.close()
        if self._verdicts is not None:
            self._verdicts.close()
        for worker in self.host_workers.values():
            worker.close()
        self.host_workers.clear()

    def recover(self, damage: StoreDamaged) -> None:
        """The store was found damaged: say so, and set it aside for an empty one."""
        self.warnings.append(f"the cache database {damage}; it was set aside and rebuilt")
        self.reset()

    def attempts(self) -> Iterator[Attempt]:
        """A command's two attempts at its work: a cache found damaged in the first is set
        aside and the work runs again; in the second, the damage is the command's error. The
        caller runs its work itself (no callback into it):

            for attempt in session.attempts():
                with attempt:
                    return work()
        """
        yield Attempt(self, last=False)
        yield Attempt(self, last=True)


@dataclass(frozen=True)
class Attempt:
    """One attempt at a command's work (OpenCache.attempts): a StoreDamaged leaving it is
    recovered from, but for the last."""

    session: OpenCache
    last: bool

    def __enter__(self) -> Attempt:
        return self

    def __exit__(self, kind: type | None, error: BaseException | None, trace: object) -> bool:
        if isinstance(error, StoreDamaged) and not self.last:
            self.session.recover(error)
            return True
        return False
