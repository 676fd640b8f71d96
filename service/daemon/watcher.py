"""What the daemon watches: the spec files, the templates and the spec's generator, through a
watchdog observer whose events become Changes (debounced) for the builder to take, and the
checks that catch what events miss (a watched directory moved or replaced, an inotify queue
overflow that dropped events).

    watchdog observer ──► SpecWatcher ──► Changes ──► the builder (server.py: Daemon)

Changes is also the builder's inbox for the requests' jobs (protocol.py), which must run on
the builder's thread: the one that owns the cache's SQLite connection.
"""

from __future__ import annotations

import os
import threading
import time
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from watchdog.events import FileSystemEvent, FileSystemEventHandler
from watchdog.observers import Observer

from gradshard.pipeline.problems import YAML_FILES
from gradshard.service.files.spec_location import SpecLocation
from gradshard.service.generator.identity import identify_generator

__all__ = ["Changes", "SpecWatcher", "WATCH_CHECK", "Watched", "identity_of", "observe",
           "spec_signature", "stop_observing", "watches_moved"]

WATCH_CHECK = 0.5  # seconds between checks that the watched directories are still the same

# Each watched directory and which one it was when watching began (None: there was none).
Watched = dict[Path, tuple[int, int] | None]


@dataclass
class Changes:
    """What the watcher saw since the last build started; the builder waits for it."""

    condition: threading.Condition = field(default_factory=threading.Condition)
    paths: set[str] = field(default_factory=set)
    last_event: float = 0.0
    forced: bool = False  # a `build` request: no settling
    jobs: list[tuple[Callable[[], dict], Future]] = field(default_factory=list)

    def note(self, path: str) -> None:
        with self.condition:
            self.paths.add(path)
            self.last_event = time.monotonic()
            self.condition.notify_all()

    def force(self) -> None:
        with self.condition:
            self.forced = True
            self.paths.add("(build request)")
            self.condition.notify_all()

    def submit(self, job: Callable[[], dict]) -> Future:
        """Work for the builder's thread (the one that owns the cache's connection)."""
        done: Future = Future()
        with self.condition:
            self.jobs.append((job, done))
            self.condition.notify_all()
        return done

    def take_jobs(self) -> list[tuple[Callable[[], dict], Future]]:
        with self.condition:
            jobs, self.jobs = self.jobs, []
        return jobs

    def take(self, settle: float, stopping: threading.Event, patience: float) -> list[str] | None:
        """The changed paths once they have settled; [] when nothing changed for `patience`
        seconds or a job waits, None when stopping."""
        deadline = time.monotonic() + patience
        with self.condition:
            while not stopping.is_set():
                if self.jobs:
                    return []
                if self.paths:
                    quiet = time.monotonic() - self.last_event
                    if self.forced or quiet >= settle:
                        taken, self.paths, self.forced = sorted(self.paths), set(), False
                        return taken
                    self.condition.wait(settle - quiet)
                elif time.monotonic() >= deadline:
                    return []
                else:
                    self.condition.wait(deadline - time.monotonic())
        return None


class SpecWatcher(FileSystemEventHandler):
    """Notes every event touching a spec file, the templates directory or a source of the
    spec's generator found beside it (a saved tools/autograd/gen_variable_type.py changes
    which generator the spec has). Directory moves and deletions (a checkout switching
    branches) note a rescan: the next build re-reads all."""

    def __init__(self, location: SpecLocation, changes: Changes) -> None:
        self.files = {str(location.path_of(f).resolve()) for f in YAML_FILES}
        self.templates = str(location.templates.resolve())
        self.generator = [(str(d.resolve()), recursive) for d, recursive
                          in identify_generator(location).source_directories()]
        self.changes = changes

    def on_any_event(self, event: FileSystemEvent) -> None:
        if event.event_type in ("opened", "closed_no_write"):
            return
        paths = [p for p in (event.src_path, getattr(event, "dest_path", "")) if p]
        for path in map(os.fsdecode, paths):
            if (path in self.files or path.startswith(self.templates + os.sep)
                    or self._generator_source(path)):
                self.changes.note(path)
            elif event.is_directory and event.event_type in ("moved", "deleted"):
                self.changes.note(f"(rescan: {path} {event.event_type})")

    def _generator_source(self, path: str) -> bool:
        """A .py file in the generator's directories (identity.source_name's files, and a
        few more that never change the hash: a build finds that out)."""
        return path.endswith(".py") and any(
            path.startswith(directory + os.sep)
            and (recursive or os.path.dirname(path) == directory)
            for directory, recursive in self.generator)

    def directories(self) -> list[tuple[Path, bool]]:
        """What to watch, and whether recursively: the spec files' directories on their own
        (in a checkout, aten/src/ATen/native holds the whole of ATen's sources), the
        templates directory with everything below it, and the generator's beside the spec."""
        spec_dirs = sorted({Path(f).parent for f in self.files})
        return ([(d, False) for d in spec_dirs] + [(Path(self.templates), True)]
                + [(Path(d), recursive) for d, recursive in self.generator])


# ---------------------------------------------------------------------------------------------
# Watching, and noticing when the watch no longer sees what it should


def observe(location: SpecLocation, changes: Changes) -> tuple[Observer, Watched]:
    """A started observer noting the spec's changes into `changes`, and which directory each
    watched one was (a directory missing now is not watched: the periodic check notices
    when it appears)."""
    watcher = SpecWatcher(location, changes)
    observer = Observer()
    watched: Watched = {}
    for directory, recursive in watcher.directories():
        watched[directory] = identity_of(directory)
        if watched[directory] is not None:
            observer.schedule(watcher, str(directory), recursive=recursive)
    observer.start()
    return observer, watched


def stop_observing(observer: Observer) -> None:
    observer.stop()
    observer.join(timeout=5)


def watches_moved(watched: Watched, observer: Observer | None) -> bool:
    """Whether the watch must begin anew: a watched directory was deleted, moved or replaced
    since (its events go to the old one, or nowhere), or the observer's thread died."""
    current = {d: identity_of(d) for d in watched}
    return current != watched or not (observer and observer.is_alive())


def spec_signature(location: SpecLocation) -> tuple:
    """What the spec files and templates look like on disk (inode, size, mtime), and which
    generator the spec has (its hash: hashed again only when its sources' stats change): a
    change the watcher did not report shows here."""
    paths = [location.path_of(f) for f in YAML_FILES]
    if location.templates.is_dir():
        paths += sorted(location.templates.iterdir())
    stats = [(str(p), _stat(p)) for p in paths]
    return (tuple((p, s and (s.st_ino, s.st_size, s.st_mtime_ns)) for p, s in stats),
            identify_generator(location).hash)


def identity_of(directory: Path) -> tuple[int, int] | None:
    """Which directory is there (not its mtime: every save in it changes that)."""
    info = _stat(directory)
    return info and (info.st_dev, info.st_ino)


def _stat(path: Path) -> os.stat_result | None:
    try:
        return path.stat()
    except OSError:
        return None
