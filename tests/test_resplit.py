"""resplit_entries gives exactly split_entries' result while reusing untouched entries."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from support.specs import DERIVATIVES, MINI_SPEC

from gradshard.pipeline.parse.source import resplit_entries, split_entries
from gradshard.pipeline.problems import SpecError, SpecFile

BASE = (MINI_SPEC / DERIVATIVES).read_text()
PIECES = ["\n", "\n\n", "- ", "\n- name: x(Tensor self) -> Tensor\n  self: grad\n", "# c\n",
          "  # inner\n", "  self: grad * 2\n", "x", " ", "-", "\n-\n", "\n  - nested\n"]


def outcome(text: str):
    try:
        return split_entries(SpecFile.DERIVATIVES, text)
    except SpecError as error:
        return [(p.rule, p.line) for p in error.problems]


def edited(text: str, at: int, remove: int, insert: str) -> str:
    at = min(at, len(text))
    return text[:at] + insert + text[at + remove:]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, len(BASE)), st.integers(0, 40),
                          st.sampled_from(PIECES)), min_size=1, max_size=4))
def test_resplit_equals_split_after_edits(edits):
    old = BASE
    entries = split_entries(SpecFile.DERIVATIVES, old)
    for at, remove, insert in edits:
        new = edited(old, at, remove, insert)
        expected = outcome(new)
        if isinstance(expected, list):
            return  # the edit broke the file; resplit is only used between good versions
        assert resplit_entries(SpecFile.DERIVATIVES, old, entries, new) == expected
        old, entries = new, expected


def test_untouched_entries_are_reused():
    entries = split_entries(SpecFile.DERIVATIVES, BASE)
    new = BASE.replace("self: grad.expand_as(self)", "self: grad.expand_as(self) * 2")
    again = resplit_entries(SpecFile.DERIVATIVES, BASE, entries, new)
    changed = [i for i, (a, b) in enumerate(zip(entries, again)) if a is not b]
    assert len(changed) <= 2 and again == split_entries(SpecFile.DERIVATIVES, new)


def test_lines_move_when_an_edit_adds_lines():
    entries = split_entries(SpecFile.DERIVATIVES, BASE)
    new = BASE.replace("- name: mul.Tensor", "# two\n# more lines\n- name: mul.Tensor")
    again = resplit_entries(SpecFile.DERIVATIVES, BASE, entries, new)
    assert again == split_entries(SpecFile.DERIVATIVES, new)
    assert again[-1].line == entries[-1].line + 2
