"""The Python API of `gradshard try`: a spec's edited kernels installed in the current process.

    from gradshard.service import patching
    with patching.patch(spec="~/pytorch"):
        ...  # torch runs the edited formulas here
    # and torch's own kernels again here

The patch is planned and built as `gradshard try` builds it (service/live/plan.py,
service/live/patch_build.py), then loaded and installed in this process (service/live/worker.py)
instead of a worker's. A library stays loaded after the block (a process cannot unload code
that nodes still alive may run); its kernels and Python classes are what the block removes.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Iterator, Sequence

from gradshard.service.live.plan import PatchPlan

__all__ = ["patch"]


@contextlib.contextmanager
def patch(spec: str | None = None, names: Sequence[str] = (), cache: str | None = None,
          cxx: str | None = None, jobs: int = 0) -> Iterator[PatchPlan]:
    """Install the kernels of the ops `spec` changes (or of the ops named) for the block;
    yields the plan (its `patched` ops, and the others with their reasons). `jobs`: compiles
    at once, 0 (as `try -j`'s default) the machine's cores."""
    plan, library, _ = planned_patch(spec, names, cache, cxx, jobs)
    if library is None:
        yield plan
        return
    from gradshard.service.live.worker import install, load_library

    loaded = load_library(library.path, library.slots, library.sum)
    handle = install(loaded)
    try:
        yield plan
    finally:
        loaded.gradshard_patch_uninstall(handle)


def planned_patch(spec: str | None, names: Sequence[str], cache: str | None, cxx: str | None,
                  jobs: int):
    """The plan, its built library (None when there is nothing to patch) and the compiler
    chosen, in a session of its own on the cache."""
    from gradshard.service.defaults import default_cache_dir
    from gradshard.service.files.spec_location import locate_spec
    from gradshard.service.live.command import plan_and_build
    from gradshard.service.options import jobs_of
    from gradshard.service.session import Session

    location = locate_spec(str(Path(spec).expanduser()) if spec else None)
    session = Session(Path(cache) if cache else default_cache_dir())
    try:
        return plan_and_build(location, session, tuple(names), cxx, jobs_of(jobs))
    finally:
        session.close()
