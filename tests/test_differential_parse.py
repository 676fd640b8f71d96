"""The parse stage against torchgen 2.13 on the full real spec: every native function and
every DifferentiabilityInfo, field by field."""

from __future__ import annotations

import pytest

from gradshard_facts import facts, parse_spec_dir


@pytest.fixture(scope="module")
def our_facts(packaged_spec):
    return facts(parse_spec_dir(packaged_spec))


def first_differences(ours: dict, theirs: dict, limit: int = 5) -> list[str]:
    diffs = []
    for key in sorted(set(ours) | set(theirs)):
        if ours.get(key) != theirs.get(key):
            diffs.append(f"{key}: gradshard={ours.get(key)!r}\n      torchgen={theirs.get(key)!r}")
        if len(diffs) >= limit:
            break
    return diffs


def test_native_functions_in_torchgen_order(our_facts, torchgen_facts):
    ours = [f["name"] for f in our_facts["native_functions"]]
    theirs = [f["name"] for f in torchgen_facts["native_functions"]]
    assert len(ours) == len(theirs) == 3101
    assert ours == theirs


def test_every_native_function_matches(our_facts, torchgen_facts):
    mismatches = []
    for ours, theirs in zip(our_facts["native_functions"], torchgen_facts["native_functions"]):
        if ours != theirs:
            mismatches.append(f"{theirs['name']}:\n    " + "\n    ".join(first_differences(ours, theirs)))
    assert not mismatches, f"{len(mismatches)} functions differ:\n" + "\n".join(mismatches[:10])


def test_info_schemas_in_torchgen_order(our_facts, torchgen_facts):
    ours = [(e["schema"], list(e["keys"])) for e in our_facts["infos"]]
    theirs = [(e["schema"], list(e["keys"])) for e in torchgen_facts["infos"]]
    assert len(theirs) == 724
    assert ours == theirs


def test_every_differentiability_info_matches(our_facts, torchgen_facts):
    mismatches = []
    for ours, theirs in zip(our_facts["infos"], torchgen_facts["infos"]):
        for key, their_info in theirs["keys"].items():
            our_info = ours["keys"].get(key, {})
            if our_info != their_info:
                mismatches.append(f"{theirs['schema']} [{key}]:\n    "
                                  + "\n    ".join(first_differences(our_info, their_info)))
    assert not mismatches, f"{len(mismatches)} infos differ:\n" + "\n".join(mismatches[:10])
