"""The host worker: a process that runs one spec's own generator, again and again, with its
item functions memoized (items.py) and its files captured in memory (capture.py).

    python -P -B -m gradshard.service.host.worker GENERATORS TORCHGEN

GENERATORS is the spec's autograd generators' directory, TORCHGEN the torchgen package that
must be the one imported (the client puts its parent first on PYTHONPATH and fixes
PYTHONHASHSEED). The worker speaks JSON, one object per line: on stdin the client's requests,
on stdout its answers (whatever the generator prints goes to stderr). First it answers
`{"ready": ...}`, then one answer per request:

    {"request": "generate", "spec": ROOT, "layout": "packaged"|"checkout",
     "remember": [[KEY, VALUE], ...], "deliver": [NAME, ...] (optional: only those texts)}
        → {"names": [NAME, ...], "files": {NAME: TEXT},
           "items": [[FUNCTION, KEY, VALUE, SUBJECT], ...],
           "used": [KEY, ...], "stats": {...}, "seconds": S}
        | {"failure": {"message": ..., "traceback": ..., "kind": "generator"|"worker"}}
    {"request": "values", "keys": [KEY, ...]} → {"values": {KEY: VALUE}} (those it holds)
    {"request": "aten_header", "name": "FunctionalInverses.h", "spec": ROOT, "layout": ...}
        → {"text": TEXT} | {"failure": ...}   (aten_headers.py)

`names` are every file the generation wrote, in order; `files` the texts of those not
delivered with the same text by the worker's last answer (a formula's edit changes a few of
~40 files: tens of megabytes less to encode and read). `remember` adds memo values (the
store's, for a fresh worker); `items` are the values this generation computed, for the
store, and `used` the keys of every value it used (what the build's index keeps; a value no
build uses any more is the store's garbage). A generation runs generate_code's autograd part
(driver.run_generators) after emptying the parse caches torchgen keeps in module globals
that could be stale (`ParseCaches`: they are keyed by path, and the spec's files at that
path may have changed since the last generation). Whatever the generator raises, SystemExit
included, is a failure answer of kind "generator" (what it computed meanwhile is forgotten);
what fails in the worker's own part (a bad request, a write outside the output directory,
memory) is of kind "worker". The worker goes on; it ends at end of input.
"""

from __future__ import annotations

import gc
import json
import os
import re
import sys
import time
import traceback
from pathlib import Path
from typing import IO, Any

import xxhash

from gradshard.service.generator.generate_code import (PACKAGE, check_torchgen,
                                                load_generator_modules, name_generate_code,
                                                run_generators, spec_paths)
from gradshard.service.host.aten_headers import ATEN_HEADERS, aten_header
from gradshard.service.host.capture import CapturedFiles, OutsideOutput
from gradshard.service.host.items import ItemMemo

__all__ = ["ParseCaches", "Worker", "main"]

_GLOBAL_CACHE = re.compile(r"_GLOBAL_\w*CACHE\Z")
NATIVE, TAGS = "native_functions.yaml", "tags.yaml"
GENERATOR, WORKER = "generator", "worker"  # whose failure an answer reports
_REGEX_CACHE = 1 << 16
_YOUNG_THRESHOLD = 50_000  # allocations between the youngest generation's collections


class Worker:
    """One loaded generator, its memo and its captured files."""

    def __init__(self, generators: Path, memo: ItemMemo | None = None) -> None:
        self.modules = load_generator_modules(generators)
        self.memo = memo or ItemMemo()
        self.memo.install(PACKAGE)
        self.captured = CapturedFiles()
        self.captured.install()
        self.caches = ParseCaches()
        self.delivered: dict[str, str] = {}  # the files of the last answer: name → text
        # under the working directory the client made (removed with it): nothing is written
        # there, but a generator may look
        self.out = os.path.join(os.getcwd(), "out")
        os.makedirs(self.out, exist_ok=True)

    def generate(self, root: Path, layout: str,
                 deliver: list[str] | None = None) -> dict[str, Any]:
        began = time.perf_counter()
        changed = self.caches.refresh(root, layout)
        # the parsed native functions live on: their argument keys stay true
        self.memo.begin_generation(keep_keys=not changed & {NATIVE, TAGS})
        self.captured.begin_generation(self.out)
        try:
            run_generators(self.modules, root, layout, self.out)
        except BaseException:
            # what this generation computed is not handed over: forgotten, so that no later
            # generation uses a value the client never saw
            for item in self.memo.new:
                self.memo.values.pop(item.key, None)
            raise
        finally:
            self.caches.confirm(root, layout)
        files = {name: text for name, text in self.captured.files.items()
                 if deliver is None or name in deliver}
        changed = {name: text for name, text in files.items()
                   if self.delivered.get(name) != text}
        self.delivered = files
        return {"names": list(files), "files": changed,
                "items": [[item.function, item.key, item.value, item.subject, item.part]
                          for item in self.memo.new],
                "used": list(self.memo.used),
                "stats": {**self.memo.stats.to_json(),
                          "substitutions": self.captured.substitutions},
                "seconds": round(time.perf_counter() - began, 3)}

    def answer(self, request: dict[str, Any]) -> dict[str, Any]:
        if request.get("request") == "values":
            return self.values(request)
        if request.get("request") == "aten_header":
            return self.aten_header(request)
        if request.get("request") != "generate":
            return {"failure": {"message": f"unknown request {request.get('request')!r}",
                                "traceback": "", "kind": WORKER}}
        try:
            self.memo.values.update((key, value) for key, value in request["remember"])
            root, layout = Path(request["spec"]), request["layout"]
            deliver = request.get("deliver")
            if deliver is not None and not all(isinstance(n, str) for n in deliver):
                raise ValueError("`deliver` names no files")
        except (KeyError, TypeError, ValueError) as error:
            return _failure(error, WORKER)
        try:
            return self.generate(root, layout, deliver)
        except (OutsideOutput, MemoryError) as error:  # not the spec's doing
            return _failure(error, WORKER)
        except BaseException as error:  # noqa: BLE001 -- SystemExit too: the generator's
            return _failure(error, GENERATOR)

    def values(self, request: dict[str, Any]) -> dict[str, Any]:
        """The memo's values (JSON text) of the keys asked for that it holds."""
        keys = request.get("keys")
        if not isinstance(keys, list):
            return {"failure": {"message": "a values request names no keys", "traceback": "",
                                "kind": WORKER}}
        held = self.memo.values
        return {"values": {key: held[key] for key in keys if isinstance(key, str) and key in held}}

    def aten_header(self, request: dict[str, Any]) -> dict[str, Any]:
        """An ATen header the autograd files include (aten_headers.py), for the spec the
        request names; a failure of the generator's is of its kind, as a generation's."""
        try:
            name, root, layout = request["name"], Path(request["spec"]), request["layout"]
            if name not in ATEN_HEADERS:
                raise ValueError(f"no ATen header {name!r} is written here")
            native, tags, _ = spec_paths(root, layout)
        except (KeyError, TypeError, ValueError) as error:
            return _failure(error, WORKER)
        if not self.caches.current(root, layout):
            # parsed fresh; the next generation then takes every spec file as changed (its
            # memo's argument keys are not kept across what it did not see)
            self.caches.refresh(root, layout)
            self.caches.forget()
        try:
            return {"text": aten_header(name, native, tags)}
        except MemoryError as error:
            return _failure(error, WORKER)
        except BaseException as error:  # noqa: BLE001 -- the generator's
            return _failure(error, GENERATOR)


class ParseCaches:
    """torchgen's parse caches, kept between generations while the spec files they were read
    from are unchanged, emptied otherwise.

    They are keyed by path, and the spec's files at a path change between generations. Those
    whose source files are known (KEPT, torchgen 2.9.1 to 2.14.1's names) are emptied when one
    of those files' bytes changed, or when another spec is generated: a formula's edit
    parses derivatives.yaml again, not native_functions.yaml. Any other `_GLOBAL_…_CACHE` dict
    or functools cache of torchgen and the generators is emptied before every generation.
    tests/test_host_worker.py generates one spec over edits in one worker and compares."""

    # (module, attribute) → the spec files its entries are read from. Not load_derivatives'
    # _GLOBAL_LOAD_DERIVATIVE_CACHE: a generation changes what it holds (gen_autograd adds the
    # foreach infos it synthesizes to the dict gen_autograd_python read first), so a kept one
    # gives the next generation's Python bindings nodes a fresh run does not have.
    KEPT = {("torchgen.gen", "_GLOBAL_PARSE_NATIVE_YAML_CACHE"): (NATIVE, TAGS),
            ("torchgen.gen", "_GLOBAL_PARSE_TAGS_YAML_CACHE"): (TAGS,),
            ("torchgen.gen", "parse_tags_yaml"): (TAGS,)}

    def __init__(self) -> None:
        self.spec: tuple[str, str] | None = None
        self.digests: dict[str, str] = {}

    def refresh(self, root: Path, layout: str) -> set[str]:
        """Empty what is stale for the spec at root; the spec files that changed."""
        digests = _spec_digests(root, layout)
        same_spec = self.spec == (os.fspath(root), layout)
        changed = {name for name, digest in digests.items()
                   if not same_spec or self.digests.get(name) != digest}
        self.spec, self.digests = (os.fspath(root), layout), digests
        for name, module in list(sys.modules.items()):
            if name == "torchgen" or name.startswith(("torchgen.", PACKAGE + ".")):
                _refresh_module(name, module, changed)
        return changed

    def current(self, root: Path, layout: str) -> bool:
        """Whether the kept caches hold the spec at root as its files are now."""
        return (self.spec == (os.fspath(root), layout)
                and _spec_digests(root, layout) == self.digests)

    def confirm(self, root: Path, layout: str) -> None:
        """After a generation: a spec file saved while it ran (its parse may hold either
        text) makes the next generation empty every cache."""
        if _spec_digests(root, layout) != self.digests:
            self.forget()

    def forget(self) -> None:
        """The next generation empties every cache, whatever spec it is of."""
        self.spec, self.digests = None, {}


def _refresh_module(name: str, module: Any, changed: set[str]) -> None:
    for attribute, value in list(vars(module).items()):
        sources = ParseCaches.KEPT.get((name, attribute))
        if sources is not None and not changed.intersection(sources):
            continue
        if _GLOBAL_CACHE.match(attribute) and isinstance(value, dict):
            value.clear()
        elif callable(getattr(value, "cache_clear", None)) and \
                getattr(value, "__module__", None) == name:
            value.cache_clear()


def _spec_digests(root: Path, layout: str) -> dict[str, str]:
    """The hashes of the spec files the kept caches are read from."""
    native, tags, _ = spec_paths(root, layout)
    return {NATIVE: _digest(native), TAGS: _digest(tags)}


def _digest(path: str) -> str:
    """The file's bytes' hash ("" when it cannot be read: the generator says why)."""
    try:
        with open(path, "rb") as file:
            return xxhash.xxh3_128_hexdigest(file.read())
    except OSError:
        return ""


def _failure(error: BaseException, kind: str) -> dict[str, Any]:
    return {"failure": {"message": f"{type(error).__name__}: {error}",
                        "traceback": traceback.format_exc(), "kind": kind}}


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


def freeze_survivors() -> None:
    """The loaded generator frozen out of the collector's passes, and its young objects
    collected less often: a generation makes millions of objects and few cycles, and the
    default thresholds walk them again and again (~6% of a fresh worker's generation on
    2.13's spec). What a generation leaves is still collected."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(_YOUNG_THRESHOLD, 20, 100)


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
        _send(answers, _failure(error, WORKER))
        return 1
    freeze_survivors()
    _send(answers, {"ready": {"pid": os.getpid()}})
    serve(worker, sys.stdin, answers)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
