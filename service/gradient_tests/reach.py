"""What an OpInfo's gradient samples reach, as the observer (observer.py) records it: the
nodes and kernels of each phase (PHASES) per variant and dtype (Reach, DtypeReach), the index
of every OpInfo's (GradientIndex), and the index file's body as JSON, both ways. As it is
read, from a file of the cache directory (index.py) or a worker's answer line (pool.py), its
every value is checked against the layout below before use: neither is trusted.

    body: {"key", "torch": {identity}, "subset": null | [names], "seconds", "workers",
           "opinfos": {name: {dtype: {"samples": n, "skipped": n,
                                      "function": {phase: [names]},
                                      "inplace": {phase: [names]} (where it has one)}}},
           "lost": {name: why}}
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

__all__ = ["DTYPES", "DtypeReach", "GradientIndex", "PHASES", "Reach", "VARIANTS", "body_json",
           "body_read", "dtypes_read", "words"]

DTYPES = ("float64", "complex128")  # both files' allowed_dtypes, in their order
VARIANTS = ("function", "inplace")
# per sample: the forward's graph and kernels, the create_graph backward's, forward mode's
PHASES = ("nodes", "kernels", "backward_nodes", "backward_kernels", "forward_ad_kernels")
_UNPRINTABLE = re.compile(r"[^\x20-\x7e]")


@dataclass(frozen=True)
class Reach:
    """What one variant's samples reached at one dtype (PHASES)."""

    nodes: frozenset[str] = frozenset()
    kernels: frozenset[str] = frozenset()
    backward_nodes: frozenset[str] = frozenset()
    backward_kernels: frozenset[str] = frozenset()
    forward_ad_kernels: frozenset[str] = frozenset()

    def every_node(self) -> frozenset[str]:
        return self.nodes | self.backward_nodes

    def every_kernel(self) -> frozenset[str]:
        return self.kernels | self.backward_kernels | self.forward_ad_kernels


@dataclass(frozen=True)
class DtypeReach:
    samples: int
    skipped: int  # samples that raised (what they reached before is kept)
    function: Reach
    inplace: Reach | None


@dataclass
class GradientIndex:
    """The observations: OpInfo (formatted name) → dtype → DtypeReach; the OpInfos that could
    not be observed, with why; how it was made."""

    torch: dict
    opinfos: dict[str, dict[str, DtypeReach]]
    lost: dict[str, str]
    seconds: float
    workers: int
    subset: tuple[str, ...] | None = None
    built: bool = False  # by this command (else read from the cache)
    path: Path | None = None

    def reached(self, name: str) -> tuple[frozenset[str], frozenset[str]]:
        """Every node and kernel the OpInfo's samples reached, at any dtype and variant."""
        nodes: set[str] = set()
        kernels: set[str] = set()
        for dtype in self.opinfos.get(name, {}).values():
            for reach in (dtype.function, dtype.inplace):
                if reach is not None:
                    nodes |= reach.every_node()
                    kernels |= reach.every_kernel()
        return frozenset(nodes), frozenset(kernels)

    def counts(self) -> tuple[int, int]:
        """Samples run and samples skipped (they raised), over every OpInfo and dtype."""
        per = [d for o in self.opinfos.values() for d in o.values()]
        return sum(d.samples for d in per), sum(d.skipped for d in per)


# ---------------------------------------------------------------------------------------------
# The body as JSON


def body_json(index: GradientIndex, key: str) -> dict:
    return {"key": key, "torch": index.torch, "seconds": round(index.seconds, 3),
            "workers": index.workers,
            "subset": list(index.subset) if index.subset is not None else None,
            "opinfos": {name: {dtype: _dtype_json(reach) for dtype, reach in dtypes.items()}
                        for name, dtypes in index.opinfos.items()},
            "lost": dict(index.lost)}


def _dtype_json(reach: DtypeReach) -> dict:
    found: dict[str, Any] = {"samples": reach.samples, "skipped": reach.skipped,
                             "function": _reach_json(reach.function)}
    if reach.inplace is not None:
        found["inplace"] = _reach_json(reach.inplace)
    return found


def _reach_json(reach: Reach) -> dict:
    return {phase: sorted(getattr(reach, phase)) for phase in PHASES}


def body_read(value: object, identity: Mapping, key: str) -> GradientIndex:
    """An index file's body (its JSON value) checked against the layout and read (ValueError,
    TypeError, KeyError: it is not the index of this key, or damaged)."""
    _expect(isinstance(value, dict) and value.get("key") == key, "its body names another key")
    _expect(value.get("torch") == dict(identity), "it was built for another torch")
    subset = value.get("subset")
    _expect(subset is None or _strings(subset), "its subset is not a list of names")
    lost = value.get("lost")
    _expect(isinstance(lost, dict) and all(isinstance(v, str) for v in lost.values()),
            "its lost OpInfos are not names with reasons")
    _expect(_number(value.get("seconds")) and _number(value.get("workers")),
            "its figures are not numbers")
    opinfos = value.get("opinfos")
    _expect(isinstance(opinfos, dict), "its OpInfos are not a mapping")
    return GradientIndex(dict(identity), {name: dtypes_read(dtypes)
                                          for name, dtypes in opinfos.items()},
                         {name: words(why) for name, why in lost.items()},
                         float(value["seconds"]), int(value["workers"]),
                         tuple(subset) if subset is not None else None)


def dtypes_read(dtypes: object) -> dict[str, DtypeReach]:
    _expect(isinstance(dtypes, dict) and set(dtypes) <= set(DTYPES), "an OpInfo's dtypes")
    return {dtype: _dtype_read(value) for dtype, value in dtypes.items()}


def _dtype_read(value: object) -> DtypeReach:
    _expect(isinstance(value, dict) and set(value) <= {"samples", "skipped", *VARIANTS}
            and "function" in value, "a dtype's observations")
    samples, skipped = value.get("samples"), value.get("skipped")
    _expect(_count(samples) and _count(skipped), "a dtype's sample counts")
    inplace = value.get("inplace")
    return DtypeReach(samples, skipped, _reach_read(value["function"]),
                      None if inplace is None else _reach_read(inplace))


def _reach_read(value: object) -> Reach:
    _expect(isinstance(value, dict) and set(value) == set(PHASES)
            and all(_strings(v) for v in value.values()), "a variant's phases")
    return Reach(**{phase: frozenset(value[phase]) for phase in PHASES})


def words(text: str) -> str:
    """A reason as printed: one line of printable ASCII, at most 300 characters (a crafted
    index's reasons reach a terminal or a CI log, where control characters and a line of
    its own would be commands)."""
    return _UNPRINTABLE.sub("?", text)[:300]


def _expect(condition: bool, what: str) -> None:
    if not condition:
        raise ValueError(what)


def _strings(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)
