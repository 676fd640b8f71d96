"""How the suite's two workers share it (pytest-xdist; README: pytest -n 2). tests/conftest.py
hands xdist GroupScheduling, orders the collection with longest_first, and gives each worker
its share of the processors (share_processors).

A group runs whole in one worker: a module's tests stay together (its module-scoped fixtures
are built once), every `try` module goes with the others (one try_workspace per compiler, its
PCH built once), and modules that share a session's memo are one group. (xdist's own
`--dist loadgroup` does not group under pytest 9.2, whose node ids it can no longer rename.)
"""

from __future__ import annotations

import os

from xdist.scheduler import LoadScopeScheduling

from gradshard.cache.engine import scheduler

# test_affected's truth and test_incremental's clean side are one clean build per edit
# (support/graph_run.py: clean_build, remembered for the session)
SHARED = {"tests/test_affected.py": "edits", "tests/test_incremental.py": "edits"}
TRY_MODULES = "tests/test_try"

# The groups that take minutes, longest first (on 2 cores, 2026-12-02): started first, so that
# neither worker is left running one of them alone at the end. A stale order costs only balance.
LONGEST_FIRST = ("edits", "tests/test_compile_full.py", "try", "tests/test_releases.py",
                 "tests/test_generator_check.py", "tests/test_compile.py",
                 "tests/test_compile_kernels.py", "tests/test_cache_bounds.py")


def group_of(nodeid: str) -> str:
    module = nodeid.split("::", 1)[0]
    if module.startswith(TRY_MODULES):
        return "try"
    return SHARED.get(module, module)


def longest_first(nodeids: list[str]) -> list[int]:
    """The collection's order: the long groups first, each group's tests together, the rest
    as collected."""
    rank = {group: place for place, group in enumerate(LONGEST_FIRST)}
    return sorted(range(len(nodeids)),
                  key=lambda i: (rank.get(group_of(nodeids[i]), len(rank)), i))


class GroupScheduling(LoadScopeScheduling):
    """xdist's scope scheduling (a scope is sent whole to the next worker free, in the
    collection's order: pyproject.toml turns its reordering by size off) over group_of."""

    def _split_scope(self, nodeid: str) -> str:
        return group_of(nodeid)


def share_processors() -> None:
    """In a worker, run on its share of the processors (and so do its children: ninja, g++,
    torchgen), which gradshard's default -j and its engine's forks count. Measured on 2
    cores: three g++ at once take a third more CPU time each than two (their working sets
    evict each other), and a worker compiling on both cores beside one running Python made
    the run's CPU time a tenth more than the sequential run's."""
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    count = os.environ.get("PYTEST_XDIST_WORKER_COUNT")
    if not worker or not count or not hasattr(os, "sched_setaffinity"):
        return
    index, count = int(worker.removeprefix("gw")), int(count)
    processors = sorted(os.sched_getaffinity(0))
    share = processors[index::count] or [processors[index % len(processors)]]
    os.sched_setaffinity(0, share)
    # The engine still forks as on the whole machine (its children share the worker's core),
    # so that every build under test in this process takes the fork paths it takes on CI's
    # two cores alone (cache/engine/scheduler.py).
    scheduler.processors = lambda: len(processors)
