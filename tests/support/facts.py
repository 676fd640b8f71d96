"""gradshard's parse and match results in the same JSON shape as tests/torchgen_oracle.py's
facts, and how two such facts differ."""

from __future__ import annotations

from pathlib import Path

from gradshard.cache.graph.spec_records import SpecRecords
from gradshard.service.query.describe import describe_infos, describe_match, describe_native

from .graph_run import parsed_records


def parse_spec_dir(spec_dir: str | Path) -> SpecRecords:
    return parsed_records(spec_dir)


def facts(spec: SpecRecords, with_match: bool = True) -> dict:
    result = {
        "native_functions": [describe_native(f) for f in spec.native_functions],
        "infos": describe_infos(spec.infos),
    }
    if with_match:
        result["matches"] = [describe_match(m) for m in spec.matches]
        result["matched_infos"] = describe_infos(spec.infos + spec.foreach)
    return result


def comparable(facts: dict) -> dict:
    """Facts with torchgen's set-ordered fields sorted: a synthesized foreach info keeps its
    saved values in a set (hash-seed order; every renderer sorts them by name)."""
    if "matched_infos" not in facts:
        return facts
    loaded = len(facts["infos"])
    matched = facts["matched_infos"][:loaded] + [
        {**e, "keys": {k: {**i, "all_saved_inputs": sorted(i["all_saved_inputs"]),
                           "all_saved_outputs": sorted(i["all_saved_outputs"])}
                       for k, i in e["keys"].items()}}
        for e in facts["matched_infos"][loaded:]]
    return {**facts, "matched_infos": matched}


def first_differences(ours: dict, theirs: dict, limit: int = 5) -> list[str]:
    diffs = []
    for key in sorted(set(ours) | set(theirs)):
        if ours.get(key) != theirs.get(key):
            diffs.append(f"{key}: gradshard={ours.get(key)!r}\n      torchgen={theirs.get(key)!r}")
        if len(diffs) >= limit:
            break
    return diffs
