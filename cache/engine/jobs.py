"""What the engine runs: a task (a pure function over records) or a group (a task whose body
runs tasks), and the key of one run, known before anything runs."""

from __future__ import annotations

import inspect
import typing
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

import xxhash

from gradshard.pipeline.problems import SpecFile
from gradshard.pipeline.records import Record

__all__ = ["Group", "Task", "group_of", "task_key", "task_of"]


@dataclass(frozen=True)
class Task:
    """A pure function over records. `inputs` names each argument (for "why it ran");
    `output` is the record type it returns, or of each item when it fans out. A rule the
    inputs break (RuleViolation, SpecError) makes the output a `Failure`; a violation that
    names no entry blames the task's ident, an entry of the file `blames`. A task that
    `forks` costs well above reading its output back: a long map of it may hand part of
    its runs to a forked child while a processor is free."""

    name: str
    stage: str
    compute: Callable[..., Any]
    output: type
    inputs: tuple[str, ...]
    fan_out: bool = False
    blames: SpecFile | None = None
    forks: bool = False


@dataclass(frozen=True)
class Group:
    """A task whose body runs tasks: body(engine, *input values) → an index record."""

    name: str
    stage: str
    body: Callable[..., Record]
    output: type
    inputs: tuple[str, ...]

    def bind(self, **values: Any) -> list[Any]:
        """The input values in the body's order, given by its parameters' names: a caller
        names what it passes, and a name too many or missing is an error here, not a value
        in the wrong place."""
        names = list(inspect.signature(self.body).parameters)[1:]  # after the engine
        if set(values) != set(names):
            raise TypeError(f"{self.name}: inputs {sorted(values)}, expected {names}")
        return [values[n] for n in names]


def task_key(name: str, version: str, inputs: Sequence[str]) -> str:
    """xxh3-128 over the job's name, the code version and its inputs' content hashes."""
    return xxhash.xxh3_128_hexdigest("\x00".join((name, version, *inputs)).encode())


def task_of(name: str, stage: str, compute: Callable[..., Any], *, blames: SpecFile | None = None,
         forks: bool = False, labels: Mapping[str, str] | None = None) -> Task:
    """The task running `compute`, declared by its signature (as Salsa's tracked functions
    are): its inputs are the parameters, named as written ("view_order" reads "view order" in
    "why it ran") unless `labels` names one otherwise (a parameter `natives` is the file
    "native_functions.yaml" to a user); its output the return annotation, of each item when
    that is `tuple[X, ...]` (the task fans out)."""
    output, fan_out = _output_of(compute)
    return Task(name, stage, compute, output, _input_names(compute, labels), fan_out, blames,
                forks)


def group_of(name: str, stage: str, body: Callable[..., Record], *,
             labels: Mapping[str, str] | None = None) -> Group:
    """The group whose body is `body(engine, *inputs)`, declared by its signature as
    `task_of` declares a task (the engine parameter is not an input)."""
    output, fan_out = _output_of(body)
    if fan_out:
        raise TypeError(f"{name}: a group returns one index record, not {output}")
    return Group(name, stage, body, output, _input_names(body, labels)[1:])


def _input_names(function: Callable[..., Any],
                 labels: Mapping[str, str] | None) -> tuple[str, ...]:
    """Each parameter's label in "why it ran": `labels`' when given, else its name."""
    parameters = inspect.signature(function).parameters
    unknown = set(labels or {}) - set(parameters)
    if unknown:
        raise TypeError(f"{function.__name__}: labels for no parameter: {sorted(unknown)}")
    return tuple((labels or {}).get(p, p.replace("_", " ")) for p in parameters)


def _output_of(function: Callable[..., Any]) -> tuple[type, bool]:
    """The return annotation, and whether it is a tuple of items (`tuple[X, ...]`)."""
    if "return" not in function.__annotations__:
        raise TypeError(f"{function.__name__}: a task or group declares its output by its "
                        f"return annotation, and this one has none")
    returned = function.__annotations__["return"]
    if isinstance(returned, str):  # postponed (PEP 563): read in the function's module
        returned = eval(returned, function.__globals__)  # noqa: S307 (our own source text)
    arguments = typing.get_args(returned)
    if typing.get_origin(returned) is tuple and len(arguments) == 2 and arguments[1] is ...:
        return arguments[0], True
    return returned, False
