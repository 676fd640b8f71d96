"""The code version covers every cache/ module that defines a task, a group or a record
(or how a task runs): a change there must give new task keys, so that a cache written by
other code is never reused."""

from __future__ import annotations

import re
from pathlib import Path

from gradshard.cache import version

CACHE = Path(version.__file__).resolve().parent
DEFINES_TASKS = re.compile(r"\b(Task|Group)\(|\(Record\):")


def test_every_module_that_defines_tasks_or_records_is_hashed():
    hashed = dict(version._SOURCES)["gradshard.cache"]
    defining = {p.name for p in CACHE.glob("*.py") if DEFINES_TASKS.search(p.read_text())}
    assert defining, "no cache module defines a task?"
    assert defining <= set(hashed), f"not in the code version: {sorted(defining - set(hashed))}"


def test_the_engine_and_its_children_are_hashed():
    hashed = dict(version._SOURCES)["gradshard.cache"]
    assert {"engine.py", "split.py"} <= set(hashed)
