"""How the suite's two workers share it (pytest-xdist; README: pytest -n 2). tests/conftest.py
hands xdist GroupScheduling and orders the collection with longest_first.

The workers are not pinned to a core each: measured on 2 cores, the whole generated set's
compile took 1,099 s at -j1 on one core against 953 s at -j2 on both beside the other worker
(and 362 s alone), so each worker's compiles use both cores.

A group runs whole in one worker: a module's tests stay together (its module-scoped fixtures
are built once), every `try` module goes with the others (one try_workspace per compiler, its
PCH built once), and modules that share a session's memo are one group. (xdist's own
`--dist loadgroup` does not group under pytest 9.2, whose node ids it can no longer rename.)
"""

from __future__ import annotations

from xdist.scheduler import LoadScopeScheduling

# test_affected's truth and test_incremental's clean side are one clean build per edit
# (support/graph_run.py: clean_build, remembered for the session)
SHARED = {"tests/test_affected.py": "edits", "tests/test_incremental.py": "edits"}
TRY_MODULES = "tests/test_try"

# The groups that take minutes, longest first (on 2 cores, 2026-12-02): started first, so that
# neither worker is left running one of them alone at the end. A stale order costs only balance.
LONGEST_FIRST = ("edits", "tests/test_compile_full.py", "try", "tests/test_host_path.py",
                 "tests/test_releases.py",
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
