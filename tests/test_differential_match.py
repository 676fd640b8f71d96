"""The match stage and foreach synthesis against torchgen 2.13: every native function's
matched infos (and whether the match is exact), in-place forward formulas, and the infos
list after matching (synthesized foreach infos included, in torchgen's order)."""

from __future__ import annotations

import pytest
from support.facts import comparable, facts, first_differences, parse_spec_dir
from support.oracle import run_oracle
from support.specs import MINI_SPEC


@pytest.fixture(scope="module", params=["packaged", "mini"])
def both_facts(request, packaged_spec):
    spec_dir = packaged_spec if request.param == "packaged" else MINI_SPEC
    return (request.param, comparable(facts(parse_spec_dir(spec_dir))),
            comparable(run_oracle("facts", spec_dir)))


def test_every_function_matches_the_same_infos(both_facts):
    _, ours, theirs = both_facts
    assert [m["name"] for m in ours["matches"]] == [m["name"] for m in theirs["matches"]]
    mismatches = [f"{t['name']}:\n    " + "\n    ".join(first_differences(o, t))
                  for o, t in zip(ours["matches"], theirs["matches"]) if o != t]
    assert not mismatches, f"{len(mismatches)} matches differ:\n" + "\n".join(mismatches[:10])


def test_infos_after_matching_include_foreach_in_order(both_facts):
    name, ours, theirs = both_facts
    our_keys = [e["schema"] for e in ours["matched_infos"]]
    their_keys = [e["schema"] for e in theirs["matched_infos"]]
    assert our_keys == their_keys
    if name == "packaged":
        assert len(their_keys) == 786
        assert sum(1 for e in theirs["matched_infos"] for i in e["keys"].values()
                   if i["args_with_derivatives"]) == 711


def test_synthesized_foreach_infos_match(both_facts):
    name, ours, theirs = both_facts
    loaded = len(theirs["infos"])
    synthesized = list(zip(ours["matched_infos"][loaded:], theirs["matched_infos"][loaded:]))
    if name == "packaged":
        assert len(synthesized) == 62
    mismatches = []
    for o, t in synthesized:
        info_o, info_t = o["keys"]["Default"], t["keys"]["Default"]
        if info_o != info_t:
            mismatches.append(f"{t['schema']}:\n    " + "\n    ".join(first_differences(info_o, info_t)))
    assert not mismatches, f"{len(mismatches)} foreach infos differ:\n" + "\n".join(mismatches[:10])
