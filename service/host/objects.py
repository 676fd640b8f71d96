"""The generator's whole-spec parse steps that can be split per entry, memoized in the worker's
memory: their values are the generator's own objects (an entry's DifferentiabilityInfos, the
view groups), which the store never holds (it keeps text and records, never code or pickles).

OBJECT_ITEMS names them, as items.py names the text items. A call is keyed by its arguments'
structure (keys.py), except its **observed** arguments: containers the function looks things
up in or counts into (load_derivatives' `functions_by_signature`, `op_counter`,
`used_dispatch_keys`). The call runs with each observed argument behind an `_Observed`
stand-in that records what it read (the digest of each value read, or that it was missing)
and keeps what it wrote apart. A later call with the same key is served only where every read
gives the same digest now; it then replays the writes (the op counter bumped, a dispatch key
added), so the generator's state after the call is as if it had run. An argument the call
mutated in place (create_differentiability_info pops `name` from its entry) is left as the
call left it. A call the stand-ins cannot serve (a container method they do not know) runs
again on the real arguments, unmemoized.

These values live while the parsed native functions they point at do: `ObjectMemo.forget` is
called when native_functions.yaml or tags.yaml changed (worker.py: ParseCaches), so a served
info never points at a NativeFunction of an earlier parse.

Standard library, xxhash and the generator only: this module runs in the host worker.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any, Callable

import xxhash

from gradshard.service.host.keys import ArgumentKeys, KeyRefused

__all__ = ["OBJECT_ITEMS", "ObjectItem", "ObjectMemo", "fresh_copy"]

_WHOLE = object()  # the read of a whole container (its iteration or length)
_MISSING = "missing"
_RECORDS_PER_KEY = 4  # a key's recorded calls kept (reads differ: e.g. the op counter's)


@dataclass(frozen=True)
class ObjectItem:
    """An object-valued item: the names of its observed arguments, and of those that name a
    file it reads (keyed by the path and the file's bytes)."""

    observed: tuple[str, ...] = ()
    files: tuple[str, ...] = ()


# module of the spec's autograd generators → its object items (torchgen 2.9.1 to 2.14.1)
OBJECT_ITEMS: dict[str, dict[str, ObjectItem]] = {
    "load_derivatives": {
        # one derivatives.yaml entry: its infos per dispatch key; reads two lookup tables,
        # bumps the op counter of its node names, adds its dispatch keys
        "create_differentiability_info": ObjectItem(observed=(
            "functions_by_signature", "functions_by_schema", "op_counter",
            "used_dispatch_keys")),
        # torchgen.gen's grouping of the parsed native functions by view (~0.2 s a generation)
        "get_grouped_by_view_native_functions": ObjectItem(),
    },
    "gen_python_functions": {
        # the Python signatures of the bound native functions and of deprecated.yaml's
        # entries: the bindings' items are keyed by them (~0.3 s a generation, and as much
        # again to key signatures made anew)
        "load_signatures": ObjectItem(files=("deprecated_yaml_path",)),
    },
}


@dataclass(frozen=True)
class _Recorded:
    """One call: what it read of its observed arguments, what it wrote into them, the state
    it left its mutated arguments in, and its value."""

    reads: tuple[tuple[str, Any, str], ...]  # (argument, key read, its digest then)
    writes: tuple[tuple[str, Any, frozenset], ...]  # (argument, dict or set put, removed)
    after: tuple[tuple[str, Any], ...]  # (argument, its state after the call)
    value: Any


class ObjectMemo:
    """The object items' values for one worker, while its native functions live."""

    def __init__(self) -> None:
        self._recorded: dict[str, list[_Recorded]] = {}
        self._names: dict[Callable, tuple[str, ...]] = {}

    def forget(self) -> None:
        self._recorded = {}

    def call(self, keys: ArgumentKeys, qualified: str, item: ObjectItem, function: Callable,
             args: tuple, kwargs: dict) -> tuple[Any, bool | None]:
        """The call's value, and whether the memo served it (None: it could not be kept)."""
        arguments = self._bind(function, args, kwargs)
        if arguments is None:
            return function(*args, **kwargs), None
        keyed = {name: _file_key(value) if name in item.files else value
                 for name, value in arguments.items() if name not in item.observed}
        try:
            key = keys.key(qualified, (), keyed)
        except KeyRefused:
            return function(*args, **kwargs), None
        for recorded in self._recorded.get(key, ()):
            if all(_read(keys, arguments[name], read) == digest
                   for name, read, digest in recorded.reads):
                return _replay(recorded, arguments), True
        recorded = _record(keys, function, arguments, item.observed)
        if recorded is None:  # the stand-ins could not serve it: the genuine call
            return function(*args, **kwargs), None
        kept = self._recorded.setdefault(key, [])
        kept.insert(0, recorded)
        del kept[_RECORDS_PER_KEY:]
        return fresh_copy(recorded.value), False

    def _bind(self, function: Callable, args: tuple, kwargs: dict) -> dict[str, Any] | None:
        """The call's arguments by parameter name (None: a call they do not name)."""
        names = self._names.get(function)
        if names is None:
            names = self._names[function] = tuple(inspect.signature(function).parameters)
        if len(args) > len(names) or not set(kwargs) <= set(names[len(args):]):
            return None
        return {**dict(zip(names, args)), **kwargs}


def _file_key(path: Any) -> Any:
    """A file argument's key: its path and its bytes' digest ("" when it cannot be read: the
    function says why)."""
    try:
        with open(path, "rb") as file:
            return [path, xxhash.xxh3_128_hexdigest(file.read())]
    except (OSError, TypeError, ValueError):
        return [path, ""]


def _record(keys: ArgumentKeys, function: Callable, arguments: dict[str, Any],
            observed: tuple[str, ...]) -> _Recorded | None:
    before = {name: fresh_copy(value) for name, value in arguments.items()
              if name not in observed and type(value) in (dict, list)}
    digests = {name: keys.digest(value) for name, value in before.items()}
    stand_ins = {name: _Observed(arguments[name], keys) for name in observed
                 if name in arguments}
    try:
        value = function(**{**arguments, **stand_ins})
    except (AttributeError, TypeError):
        for name, state in before.items():  # the genuine call sees them as they were
            _restore(arguments[name], state)
        return None
    reads, writes = [], []
    for name, stand_in in stand_ins.items():
        reads.extend((name, read, digest) for read, digest in stand_in.reads.items())
        if stand_in.put or stand_in.removed:
            stand_in.apply()
            writes.append((name, stand_in.put, frozenset(stand_in.removed)))
    after = tuple((name, fresh_copy(arguments[name])) for name in before
                  if keys.digest(arguments[name]) != digests[name])
    return _Recorded(tuple(reads), tuple(writes), after, value)


def _read(keys: ArgumentKeys, container: Any, read: Any) -> str:
    if read is _WHOLE:
        return keys.digest(container)
    if isinstance(container, (set, frozenset)):
        return "in" if read in container else "out"
    if read not in container:
        return _MISSING
    return keys.digest(dict.__getitem__(container, read))


def _replay(recorded: _Recorded, arguments: dict[str, Any]) -> Any:
    for name, put, removed in recorded.writes:
        _write(arguments[name], fresh_copy(put), removed)
    for name, state in recorded.after:
        _restore(arguments[name], fresh_copy(state))
    return fresh_copy(recorded.value)


def _restore(argument: Any, state: Any) -> None:
    if type(argument) is dict:
        argument.clear()
        argument.update(state)
    else:
        argument[:] = state


def fresh_copy(value: Any) -> Any:
    """A copy of the containers (so a caller that extends one changes nothing kept), sharing
    the generator's objects in them."""
    kind = type(value)
    if kind is list or kind is tuple:
        return kind(fresh_copy(item) for item in value)
    if kind is dict:
        return {key: fresh_copy(item) for key, item in value.items()}
    if kind is set:
        return set(value)
    return value


class _Observed:
    """An observed container as the call sees it: reads go to the real one and are recorded,
    writes are kept apart (`put`, `removed`) until the call returned. A method it does not
    define raises AttributeError: the call then runs on the real container."""

    def __init__(self, real: Any, keys: ArgumentKeys) -> None:
        self._real, self._keys = real, keys
        self._is_set = isinstance(real, (set, frozenset))
        self.reads: dict[Any, str] = {}
        self.put: dict | set = set() if self._is_set else {}
        self.removed: set = set()

    def _note(self, key: Any) -> None:
        if key not in self.reads:
            self.reads[key] = _read(self._keys, self._real, key)

    def _has(self, key: Any) -> bool:
        return key in self.put or (key not in self.removed and key in self._real)

    def __contains__(self, key: Any) -> bool:
        self._note(key)
        return self._has(key)

    def __getitem__(self, key: Any) -> Any:
        self._note(key)
        if self._is_set:
            raise TypeError("a set has no items")
        if key in self.put:
            return self.put[key]
        if key not in self.removed and key in self._real:
            return dict.__getitem__(self._real, key)
        return self._missing(key)

    def _missing(self, key: Any) -> Any:
        factory = getattr(self._real, "default_factory", None)
        if factory is not None:  # a defaultdict inserts the default
            self.put[key] = factory()
            self.removed.discard(key)
            return self.put[key]
        missing = getattr(type(self._real), "__missing__", None)
        if missing is not None:  # a Counter's 0, without inserting
            return missing(self._real, key)
        raise KeyError(key)

    def get(self, key: Any, default: Any = None) -> Any:
        self._note(key)
        if self._is_set:
            raise TypeError("a set has no items")
        return self[key] if self._has(key) else default

    def __setitem__(self, key: Any, value: Any) -> None:
        self._note(key)  # the write replaces the value it reads now: a replay must too
        if self._is_set:
            raise TypeError("a set has no items")
        self.put[key] = value
        self.removed.discard(key)

    def add(self, member: Any) -> None:
        if not self._is_set:
            raise TypeError("a mapping has no add")
        self._note(member)
        self.put.add(member)
        self.removed.discard(member)

    def _merged(self) -> Any:
        self._note(_WHOLE)
        if self._is_set:
            return (set(self._real) - self.removed) | self.put
        merged = {key: item for key, item in self._real.items() if key not in self.removed}
        merged.update(self.put)
        return merged

    def __iter__(self) -> Any:
        return iter(self._merged())

    def __len__(self) -> int:
        return len(self._merged())

    def keys(self) -> Any:
        return self._merged().keys()

    def items(self) -> Any:
        return self._merged().items()

    def values(self) -> Any:
        return self._merged().values()

    def apply(self) -> None:
        """The call returned: its writes reach the real container."""
        _write(self._real, self.put, self.removed)


def _write(container: Any, put: Any, removed: Any) -> None:
    """Writes into an observed container: a set's members, else a mapping's keys one at a
    time (a Counter's `update` adds, not sets)."""
    if isinstance(container, set):
        container.difference_update(removed)
        container.update(put)
        return
    for key in removed:
        container.pop(key, None)
    for key, value in put.items():
        container[key] = value
