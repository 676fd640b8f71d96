"""Splitting spec files into entries and loading one entry."""

from __future__ import annotations

import pytest

from gradshard.pipeline.errors import RuleViolation, SpecError, SpecFile
from gradshard.pipeline.source import Entry, decode_spec_text, load_entry, split_entries

TEXT = """# header comment

- func: a(Tensor self) -> Tensor
  variants: function
  # a comment inside the entry

# between entries
- func: b(Tensor self) -> Tensor
  dispatch:
    CPU: b_cpu
"""


def test_split_keeps_exact_text_and_first_lines():
    a, b = split_entries(SpecFile.NATIVE_FUNCTIONS, TEXT)
    assert (a.line, b.line) == (3, 8)
    assert a.text == "- func: a(Tensor self) -> Tensor\n  variants: function\n  # a comment inside the entry"
    assert b.text == "- func: b(Tensor self) -> Tensor\n  dispatch:\n    CPU: b_cpu"


def test_entry_hash_ignores_what_lies_between_entries():
    a1, _ = split_entries(SpecFile.NATIVE_FUNCTIONS, TEXT)
    a2, _ = split_entries(SpecFile.NATIVE_FUNCTIONS, "\n\n" + TEXT.replace("# between entries", "# edited\n"))
    assert a1.digest == a2.digest and a1.line + 2 == a2.line


def test_crlf_and_bom():
    text = decode_spec_text(SpecFile.TAGS, b"\xef\xbb\xbf- tag: x\r\n  desc: y\r\n")
    [entry] = split_entries(SpecFile.TAGS, text)
    assert load_entry(entry).value == {"tag": "x", "desc": "y"}


def test_key_offsets():
    _, b = split_entries(SpecFile.NATIVE_FUNCTIONS, TEXT)
    loaded = load_entry(b)
    assert loaded.offset_of("func") == 0
    assert loaded.offset_of("dispatch", "CPU") == 2


def test_yaml_scalars_are_typed_like_torchgen():
    entry = Entry(SpecFile.NATIVE_FUNCTIONS, 1, "- func: f() -> ()\n  structured: True\n  x: 1")
    assert load_entry(entry).value == {"func": "f() -> ()", "structured": True, "x": 1}


def test_duplicate_keys_in_nested_mappings():
    entry = Entry(SpecFile.NATIVE_FUNCTIONS, 10, "- func: f() -> ()\n  dispatch:\n    CPU: a\n    CPU: b")
    with pytest.raises(RuleViolation) as caught:
        load_entry(entry)
    assert caught.value.rule == "yaml.duplicate-key" and caught.value.line_in_entry == 3


@pytest.mark.parametrize("text, rule, line", [
    ("", "yaml.empty-file", 1),
    ("# only a comment\n", "yaml.empty-file", 1),
    ("foo: bar\n- tag: x\n", "yaml.not-a-list", 1),
    ("# c\n[1, 2]\n", "yaml.not-a-list", 2),
])
def test_file_level_problems(text, rule, line):
    with pytest.raises(SpecError) as caught:
        split_entries(SpecFile.TAGS, text)
    [problem] = caught.value.problems
    assert (problem.rule, problem.line) == (rule, line)


def test_not_utf8_points_at_the_byte():
    with pytest.raises(SpecError) as caught:
        decode_spec_text(SpecFile.DERIVATIVES, b"- name: a\n  self: gr\xffad\n")
    [problem] = caught.value.problems
    assert (problem.rule, problem.line, problem.column) == ("yaml.not-utf8", 2, 11)
