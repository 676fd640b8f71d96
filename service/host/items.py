"""The generator's item functions, memoized: what the host path runs once per changed input.

An item function turns one op's objects into its text (`gen_variable_type_func(fn)` is one
op's VariableType kernels and registrations; `process_function(info, template)` one backward
node). ITEM_FUNCTIONS names them per generator module; from torchgen 2.9.1 to 2.14.1 each one
is a module-level function with the same name and arguments, which its module's generator
looks up at call time, so replacing the module's attribute puts the memo in its way. What the
list does not name runs whole, every generation, and `ItemMemo.stats` says so (a function of
the list that a generator lacks is named as missing).

A call's key is (the function's qualified name, its arguments' key: keys.py); its value is the
item's return as JSON text, kept only when JSON gives it back exactly (str, int, float, bool,
None, lists, dicts with str keys: every item of the list returns those). A hit returns a fresh
copy, so a generator that extends a returned list cannot change the memo. A call whose
arguments cannot be keyed, or whose value cannot be kept, runs whole each time (`unkept`).

Standard library, xxhash and the generator only: this module runs in the host worker.
"""

from __future__ import annotations

import functools
import json
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable

from gradshard.service.host.keys import ArgumentKeys, KeyRefused
from gradshard.service.host.objects import OBJECT_ITEMS, ObjectItem, ObjectMemo, fresh_copy

__all__ = ["ITEM_FUNCTIONS", "ItemMemo", "ItemStats", "NewItem", "encode_value", "item_part",
           "subject"]

# module of the spec's autograd generators → its item functions
ITEM_FUNCTIONS: dict[str, tuple[str, ...]] = {
    "gen_variable_type": ("gen_variable_type_func",),
    "gen_autograd_functions": ("process_function",),
    "gen_trace_type": ("method_definition", "method_registration"),
    "gen_inplace_or_view_type": ("inplace_or_view_method_definition",
                                 "inplace_or_view_method_registration"),
    # should_generate_py_binding: a predicate, but called ~22,000 times a generation (by
    # gen_annotated_fn_args too): a third of a warm generation's bindings work
    "gen_python_functions": ("method_impl", "method_def", "should_generate_py_binding"),
    "gen_view_funcs": ("process_function",),
    "gen_variable_factories": ("process_function",),
    "gen_annotated_fn_args": ("gen_annotated_args",),
}


@dataclass(frozen=True)
class NewItem:
    """A value this generation computed: the store keeps it under its key."""

    function: str  # qualified: "gen_trace_type.method_definition"
    key: str
    value: str  # JSON text
    subject: str = ""  # what it is of: a node ("SinBackward0") or an op ("sin"): `subject`
    part: str = ""  # which part of its subject it makes, as JSON: `item_part`


def subject(args: tuple) -> str:
    """What an item call is of, for `affected`: its first argument's node name (a
    DifferentiabilityInfo's `op`; "" for one that makes no node), else the name of the schema
    it holds (a NativeFunction's, a pair's, through `.func`), else the operator name itself (a
    BaseOperatorName: its text); "" when none is."""
    if not args:
        return ""
    value = args[0]
    if hasattr(value, "op"):
        return value.op if isinstance(value.op, str) else ""
    for _ in range(3):  # pair → NativeFunction → FunctionSchema
        if hasattr(value, "name") and not hasattr(value, "func"):
            return str(value.name)
        if isinstance(getattr(value, "base", None), str):  # BaseOperatorName: `add_`
            return str(value)
        value = getattr(value, "func", None)
        if value is None:
            return ""
    return ""


def item_part(args: tuple, templates: dict[int, str]) -> str:
    """Which part of its subject an item call makes, for a `try` patch (service/live/
    host_patch.py), as JSON text ("" when nothing says): the module's template among its
    arguments, by its constant's name (process_function(info, FUNCTION_DEFINITION) is a
    node's definition, with PY_FUNCTION_DEFINITION its Python class); for an op with autograd
    infos per dispatch key (gen_variable_type_func's argument), each key's node and the
    derivatives entry it came from (the info's schema name: load_derivatives looks the entry's
    `name:` up among the schemas)."""
    for value in args:
        name = templates.get(id(value))
        if name is not None:
            return json.dumps({"template": name})
    infos = getattr(args[0], "info", None) if args else None
    if isinstance(infos, dict):
        nodes = {key: [info.op or "", str(info.func.func.name)] for key, info in infos.items()
                 if isinstance(getattr(info, "op", None), (str, type(None)))}
        return json.dumps({"nodes": nodes}, sort_keys=True)
    return ""


def module_templates(module: Any) -> dict[int, str]:
    """The module's templates (CodeTemplate constants), by identity: `item_part`."""
    return {id(value): name for name, value in vars(module).items()
            if type(value).__name__ == "CodeTemplate" and name.isupper()}


@dataclass
class ItemStats:
    """Per qualified function: calls served from the memo, run, and run whole because they
    could not be kept; the object items' apart (objects.py: served from the worker's memory
    only, so a fresh worker runs every one); seconds keying and running; the listed functions
    the generator lacks."""

    hits: Counter = field(default_factory=Counter)
    runs: Counter = field(default_factory=Counter)
    unkept: Counter = field(default_factory=Counter)
    object_hits: Counter = field(default_factory=Counter)
    object_runs: Counter = field(default_factory=Counter)
    seconds_keying: float = 0.0
    seconds_running: float = 0.0
    missing: tuple[str, ...] = ()

    def to_json(self) -> dict:
        return {"hits": dict(self.hits), "runs": dict(self.runs), "unkept": dict(self.unkept),
                "object_hits": dict(self.object_hits), "object_runs": dict(self.object_runs),
                "seconds_keying": round(self.seconds_keying, 3),
                "seconds_running": round(self.seconds_running, 3),
                "missing": list(self.missing)}


def encode_value(value: Any) -> str | None:
    """The value as JSON text, or None when JSON would not give it back exactly."""
    if not _plain(value):
        return None
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _plain(value: Any) -> bool:
    kind = type(value)
    if value is None or kind in (str, int, float, bool):
        return True
    if kind is list:
        return all(_plain(item) for item in value)
    if kind is dict:
        return all(type(key) is str and _plain(item) for key, item in value.items())
    return False


class ItemMemo:
    """The memo the item functions of one loaded generator consult."""

    def __init__(self) -> None:
        self.values: dict[str, str] = {}  # key → JSON text
        self.new: list[NewItem] = []
        # the keys this generation looked up and found or made, in the order of their first
        # call (the generator's: native_functions.yaml's for an op's kernels)
        self.used: dict[str, None] = {}
        self.stats = ItemStats()
        self.objects = ObjectMemo()
        self._decoded_values: dict[str, Any] = {}
        self._keys = ArgumentKeys()

    def begin_generation(self, keep_keys: bool = False) -> None:
        """Fresh counts; the argument keys of the objects that live on (`keep_keys`: the
        parse caches they came from were kept), else fresh keys."""
        if keep_keys:
            self._keys.forget_the_unused()
        else:  # the native functions were parsed again: the objects kept point at the old
            self._keys = ArgumentKeys()
            self.objects.forget()
        self.new = []
        self.used = {}
        self.stats = ItemStats(missing=self.stats.missing)

    def install(self, package: str) -> None:
        """Wrap every listed function of the generator package's modules (imported already),
        wherever a module of the package holds it."""
        missing = []
        listed = [(module, name, None) for module, names in ITEM_FUNCTIONS.items()
                  for name in names]
        listed += [(module, name, item) for module, items in OBJECT_ITEMS.items()
                   for name, item in items.items()]
        for module_name, name, item in listed:
            module = sys.modules.get(f"{package}.{module_name}")
            original = getattr(module, name, None) if module is not None else None
            if not callable(original):
                missing.append(f"{module_name}.{name}")
                continue
            qualified = f"{module_name}.{name}"
            if item is None:
                wrapper = self._wrap(qualified, original, module_templates(module))
            else:
                wrapper = self._wrap_object(qualified, item, original)
            self._replace(package, original, wrapper)
        self.stats.missing = tuple(missing)

    def _replace(self, package: str, original: Callable, wrapper: Callable) -> None:
        for module_name, module in list(sys.modules.items()):
            if module_name == package or module_name.startswith(package + "."):
                for attribute, value in vars(module).items():
                    if value is original:
                        setattr(module, attribute, wrapper)

    def _wrap(self, qualified: str, function: Callable, templates: dict[int, str]) -> Callable:
        @functools.wraps(function)
        def item(*args: Any, **kwargs: Any) -> Any:
            return self.call(qualified, function, args, kwargs, templates)

        return item

    def _wrap_object(self, qualified: str, object_item: ObjectItem,
                     function: Callable) -> Callable:
        @functools.wraps(function)
        def item(*args: Any, **kwargs: Any) -> Any:
            return self.call_object(qualified, object_item, function, args, kwargs)

        return item

    def call_object(self, qualified: str, item: ObjectItem, function: Callable, args: tuple,
                    kwargs: dict) -> Any:
        """An object item's call: served from the worker's memory where it can be."""
        began = time.perf_counter()
        value, served = self.objects.call(self._keys, qualified, item, function, args, kwargs)
        counts = self.stats.object_hits if served else self.stats.object_runs
        counts[qualified] += 1
        if served is not True:
            self.stats.seconds_running += time.perf_counter() - began
        return value

    def _decoded(self, key: str) -> Any:
        """A value decoded once per worker, handed out as a fresh copy of its containers."""
        value = self._decoded_values.get(key)
        if value is None:
            value = self._decoded_values[key] = json.loads(self.values[key])
        return fresh_copy(value)

    def call(self, qualified: str, function: Callable, args: tuple, kwargs: dict,
             templates: dict[int, str] | None = None) -> Any:
        began = time.perf_counter()
        try:
            key = self._keys.key(qualified, args, kwargs)
        except KeyRefused:
            key = None
        keyed = time.perf_counter()
        self.stats.seconds_keying += keyed - began
        if key is not None and key in self.values:
            self.used[key] = None
            self.stats.hits[qualified] += 1
            return self._decoded(key)
        value = function(*args, **kwargs)
        self.stats.seconds_running += time.perf_counter() - keyed
        text = encode_value(value) if key is not None else None
        if text is None:
            self.stats.unkept[qualified] += 1
            return value
        self.stats.runs[qualified] += 1
        self.used[key] = None
        self.values[key] = text
        self.new.append(NewItem(qualified, key, text, subject(args),
                                item_part(args, templates or {})))
        return value

