"""The tests part of a code lens: how many of PyTorch's gradient tests reach an entry's ops,
as `affected --tests` finds them (service/gradient_tests/query.py: the installed torch's
OpInfos, and the index of what their samples reach, kept in the cache directory). Found on a
thread of its own (the first index takes minutes to observe), the lenses refreshed when it
is known; without the `try` extra the part says so."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Callable

from gradshard.cache.errors import UsageError
from gradshard.service.query.affected import OpChange

__all__ = ["TestCounts"]

MISSING_EXTRA = "tests: needs the [try] extra"
FINDING = "tests: finding…"


class TestCounts:
    __test__ = False  # not a pytest class

    def __init__(self, cache: Path, on_found: Callable[[], None]) -> None:
        self.cache = cache
        self.on_found = on_found
        self.found: dict[str, str] = {}  # the ops (as JSON) → the lens's words
        self.thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="tests")
        self.extra: bool | None = None

    def words(self, ops: list[dict]) -> str:
        """The lens's tests part for these ops: the count when known, else that it is being
        found (and it is, from now)."""
        if not self._has_extra():
            return MISSING_EXTRA
        key = json.dumps(ops, sort_keys=True)
        if key not in self.found:
            self.found[key] = FINDING
            self.thread.submit(self._find, key, ops)
        return self.found[key]

    def _has_extra(self) -> bool:
        if self.extra is None:
            from gradshard.service.live.command import check_extra

            try:
                check_extra("the code lens's tests")
                self.extra = True
            except UsageError:
                self.extra = False
        return self.extra

    def _find(self, key: str, ops: list[dict]) -> None:
        from gradshard.service.gradient_tests.query import gradient_tests

        changes = [OpChange(o["op"], o["nodes"], o["kernels"], tuple(o["node_names"]),
                            tuple(o["kernel_functions"])) for o in ops]
        try:
            tests = gradient_tests(changes, self.cache, [])
            count = len(tests.ids)
            self.found[key] = f"{count} test{'' if count == 1 else 's'}"
        except Exception as error:  # noqa: BLE001 (said in the lens, never the server's end)
            self.found[key] = f"tests: unknown ({type(error).__name__}: {error})"[:120]
        self.on_found()
