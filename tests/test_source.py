"""Splitting spec files into entries and loading one entry."""

from __future__ import annotations

import pytest

from gradshard.pipeline.parse.source import Entry, decode_spec_text, load_entry, split_entries
from gradshard.pipeline.problems import RuleViolation, SpecError, SpecFile

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


# --- hardening (issue 15): newlines, control characters, nesting, aliases -----------------


def test_crlf_and_cr_files_give_the_entries_of_their_lf_twin():
    lf = TEXT.encode()
    for other in (lf.replace(b"\n", b"\r\n"), lf.replace(b"\n", b"\r")):
        text = decode_spec_text(SpecFile.NATIVE_FUNCTIONS, other)
        assert split_entries(SpecFile.NATIVE_FUNCTIONS, text) == \
            split_entries(SpecFile.NATIVE_FUNCTIONS, TEXT)


@pytest.mark.parametrize("data, line, column", [
    (b"# c\x00\n- tag: x\n", 1, 4),
    (b"- tag: x\n  desc: \xc2\x9f\n", 2, 9),  # U+009F, a C1 control
    (b"- tag: x\n  desc: \xef\xbf\xbf\n", 2, 9),  # U+FFFF
    (b"- tag: x\n# \x7f\n", 2, 3),
])
def test_control_characters_are_refused_where_they_are(data, line, column):
    with pytest.raises(SpecError) as caught:
        decode_spec_text(SpecFile.TAGS, data)
    [problem] = caught.value.problems
    assert (problem.rule, problem.line, problem.column) == ("yaml.control-character", line, column)


def test_characters_libyaml_accepts_are_accepted():
    text = decode_spec_text(SpecFile.TAGS, "- tag: x\t\n  desc: é \ufeff ©\n".encode())
    [entry] = split_entries(SpecFile.TAGS, text)
    assert load_entry(entry).value["tag"] == "x"


def nested_entry(depth: int, closers_in: str) -> str:
    """An entry nesting `depth` flow sequences, each preceded by a scalar of `closers_in`
    style that holds closing brackets (which must not count)."""
    scalar = {"double": '"]]}"', "single": "']]}'", "comment": "# ]]}\n"}[closers_in]
    return "- a: " + f"[{scalar}, " * depth + "x" + "]" * depth


@pytest.mark.parametrize("closers_in", ["double", "single", "comment"])
def test_nesting_hidden_behind_quoted_closers_is_found(closers_in):
    from gradshard.pipeline.parse.yaml_guards import MAX_NESTING, check_nesting
    check_nesting(nested_entry(MAX_NESTING - 2, closers_in))  # the list, the mapping, 98 flows
    with pytest.raises(RuleViolation) as caught:
        check_nesting(nested_entry(MAX_NESTING - 1, closers_in))
    assert caught.value.rule == "yaml.nesting-too-deep"


def test_block_nesting_and_block_scalars():
    from gradshard.pipeline.parse.yaml_guards import check_nesting
    text = "".join("  " * (i + 2) + "k: [[[ {{{ - ? :\n" for i in range(150))
    check_nesting("- a: |\n" + text)  # all of it is the block scalar's text
    with pytest.raises(RuleViolation) as caught:
        check_nesting("- a:\n" + "".join("  " * (i + 2) + "k:\n" for i in range(150)))
    # the list, the entry's mapping, then one mapping per line: the 99th line's is the 101st
    assert (caught.value.line_in_entry, caught.value.column) == (99, 201)


def test_nesting_scan_agrees_with_libyaml_on_the_real_spec(packaged_spec):
    """Every real entry is far below the limit, and the scan measures what libyaml builds."""
    import yaml

    from gradshard.pipeline.parse.yaml_guards import _NestingScan
    from gradshard.pipeline.problems import YAML_FILES
    from gradshard.service.files.spec_location import SpecLocation
    location = SpecLocation(packaged_spec, "packaged")
    for file in YAML_FILES:
        text = decode_spec_text(file, location.path_of(file).read_bytes())
        for entry in split_entries(file, text)[::10]:
            scan, scanned = _NestingScan(entry.text), 0
            while scan._skip_to_token():
                scan._token()
                scanned = max(scanned, len(scan.indents) + scan.flow)
            loader, depth, deepest = yaml.CSafeLoader(entry.text), 0, 0
            while (event := loader.get_event()) is not None:
                depth += isinstance(event, (yaml.SequenceStartEvent, yaml.MappingStartEvent))
                depth -= isinstance(event, (yaml.SequenceEndEvent, yaml.MappingEndEvent))
                deepest = max(deepest, depth)
            assert scanned <= deepest <= 2 * scanned + 1 and deepest < 10, entry.text


@pytest.mark.parametrize("text", [
    "- &a [*a]",  # a value inside itself
    "- a: &x [" + ", ".join(["lol"] * 50) + "]\n  b: &y [" + ", ".join(["*x"] * 50) + "]\n"
    "  c: [" + ", ".join(["*y"] * 50) + "]",
])
def test_aliases_that_expand_too_far_are_refused(text):
    with pytest.raises(RuleViolation) as caught:
        load_entry(Entry(SpecFile.TAGS, 1, text))
    assert caught.value.rule == "yaml.alias-expansion"


def test_small_aliases_load():
    entry = Entry(SpecFile.TAGS, 1, "- a: &x {p: 1, q: [2, 3]}\n  b: *x\n  c: [*x, *x]")
    loaded = load_entry(entry)
    assert loaded.value == {"a": {"p": 1, "q": [2, 3]}, "b": {"p": 1, "q": [2, 3]},
                            "c": [{"p": 1, "q": [2, 3]}] * 2}
    assert loaded.offset_of("b", "q") == 0  # where the aliased value is written


def test_quote_value_is_bounded():
    from gradshard.pipeline.parse.source import quote_value
    shared = ["x" * 1000] * 1000
    assert len(quote_value([shared] * 1000)) == 120
    assert quote_value("variants") == "'variants'"


def test_control_character_in_an_entry_is_placed():
    entry = Entry(SpecFile.DERIVATIVES, 5, "- name: f\n  self: gr\u00e9\x00ad")
    with pytest.raises(RuleViolation) as caught:
        load_entry(entry)
    assert (caught.value.rule, caught.value.line_in_entry, caught.value.column) == \
        ("yaml.control-character", 1, 12)
