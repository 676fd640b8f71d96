"""The host worker: a process that runs one spec's own generator, again and again, with its
item functions memoized (items.py) and its files captured in memory (capture.py).

    python -P -B -m gradshard.service.host.worker GENERATORS TORCHGEN

GENERATORS is the spec's autograd generators' directory, TORCHGEN the torchgen package that
must be the one imported (the client puts its parent first on PYTHONPATH and fixes
PYTHONHASHSEED). The worker speaks JSON, one object per line: on stdin the client's requests,
on stdout its answers (whatever the generator prints goes to stderr). First it answers
`{"ready": ...}`, then one answer per request:

    {"request": "generate", "spec": ROOT, "layout": "packaged"|"checkout",
     "remember": [[KEY, VALUE], ...]}
        → {"files": {NAME: TEXT}, "items": [[FUNCTION, KEY, VALUE], ...], "used": [KEY, ...],
           "stats": {...}, "seconds": S}
        | {"failure": {"message": ..., "traceback": ...}}

`remember` adds memo values (the store's, for a fresh worker); `items` are the values this
generation computed, for the store, and `used` the keys of every value it used (what the
build's index keeps; a value no build uses any more is the store's garbage). A generation runs generate_code's autograd part
(driver.run_generators) after clearing every parse cache torchgen keeps in module globals
(`_GLOBAL_…_CACHE` dicts, functools caches): they are keyed by path, and the spec's files at
that path may have changed since the last generation. Whatever the generator raises,
SystemExit included, is a failure answer; the worker goes on. It ends at end of input.
"""

from __future__ import annotations

import json
import os
import re
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import IO, Any

from gradshard.service.generator.driver import (PACKAGE, check_torchgen,
                                                load_generator_modules, name_generate_code,
                                                run_generators)
from gradshard.service.host.capture import CapturedFiles
from gradshard.service.host.items import ItemMemo

__all__ = ["Worker", "main"]

_GLOBAL_CACHE = re.compile(r"_GLOBAL_\w*CACHE\Z")
_REGEX_CACHE = 1 << 16


class Worker:
    """One loaded generator, its memo and its captured files."""

    def __init__(self, generators: Path, memo: ItemMemo | None = None) -> None:
        self.modules = load_generator_modules(generators)
        self.memo = memo or ItemMemo()
        self.memo.install(PACKAGE)
        self.captured = CapturedFiles()
        self.captured.install()
        self.out = os.path.join(tempfile.mkdtemp(prefix="gradshard-host-"), "out")
        os.makedirs(self.out)

    def generate(self, root: Path, layout: str) -> dict[str, Any]:
        began = time.perf_counter()
        clear_parse_caches()
        self.memo.begin_generation()
        self.captured.begin_generation(self.out)
        run_generators(self.modules, root, layout, self.out)
        return {"files": self.captured.files,
                "items": [[item.function, item.key, item.value] for item in self.memo.new],
                "used": sorted(self.memo.used),
                "stats": self.memo.stats.to_json(),
                "seconds": round(time.perf_counter() - began, 3)}

    def answer(self, request: dict[str, Any]) -> dict[str, Any]:
        if request.get("request") != "generate":
            return {"failure": {"message": f"unknown request {request.get('request')!r}",
                                "traceback": ""}}
        self.memo.values.update((key, value) for key, value in request.get("remember", ()))
        try:
            return self.generate(Path(request["spec"]), request["layout"])
        except BaseException as error:  # noqa: BLE001 -- SystemExit too: the generator's
            return {"failure": {"message": f"{type(error).__name__}: {error}",
                                "traceback": traceback.format_exc()}}


def clear_parse_caches() -> None:
    """Empty what torchgen and the generators keep between calls, keyed by path."""
    for name, module in list(sys.modules.items()):
        if not (name.startswith(("torchgen.", PACKAGE + ".")) or name == "torchgen"):
            continue
        for attribute, value in list(vars(module).items()):
            if _GLOBAL_CACHE.match(attribute) and isinstance(value, dict):
                value.clear()
            elif callable(getattr(value, "cache_clear", None)) and \
                    getattr(value, "__module__", None) == name:
                value.cache_clear()


def serve(worker: Worker, requests: IO[str], answers: IO[str]) -> None:
    for line in requests:
        if line.strip():
            _send(answers, worker.answer(json.loads(line)))


def _send(answers: IO[str], message: dict[str, Any]) -> None:
    answers.write(json.dumps(message, ensure_ascii=False, separators=(",", ":")) + "\n")
    answers.flush()


def widen_regex_cache() -> None:
    """load_derivatives builds a regular expression per saved name and formula (~15,000 on
    2.13's spec), past `re`'s cache of 512: every generation compiled them all again (a third
    of a warm generation). A bigger cache changes no result, only how often one is compiled."""
    if isinstance(getattr(re, "_MAXCACHE", None), int):
        re._MAXCACHE = max(re._MAXCACHE, _REGEX_CACHE)  # type: ignore[attr-defined]


def main(argv: list[str]) -> int:
    generators, torchgen = (Path(argument) for argument in argv)
    widen_regex_cache()
    answers = os.fdopen(os.dup(1), "w", encoding="utf-8")  # the protocol's own stdout
    os.dup2(2, 1)  # whatever the generator prints goes to stderr
    sys.stdout = sys.stderr
    try:
        check_torchgen(torchgen)
        name_generate_code()
        worker = Worker(generators)
    except BaseException as error:  # noqa: BLE001 -- the client reports it, then ends us
        _send(answers, {"failure": {"message": f"{type(error).__name__}: {error}",
                                    "traceback": traceback.format_exc()}})
        return 1
    _send(answers, {"ready": {"pid": os.getpid()}})
    serve(worker, sys.stdin, answers)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
