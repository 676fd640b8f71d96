"""torchgen's CodeTemplate rules, as expand_template implements them."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gradshard.pipeline.problems import RuleViolation
from gradshard.pipeline.render.code_template import block, block_lines, expand_template


def test_block_placeholders_indent_each_line_and_strip_trailing_space():
    template = "{\n  ${body}\n}\n"
    assert expand_template(template, {"body": ["a;", "b(x) {  \n  c;\n}\n\n"]}) == \
        "{\n  a;\n  b(x) {\n    c;\n  }\n}\n"


def test_empty_block_leaves_an_empty_line():
    assert expand_template("x\n    $body\ny\n", {"body": []}) == "x\n\ny\n"
    assert expand_template("x\n    $body\ny\n", {"body": ""}) == "x\n\ny\n"


def test_inline_lists_and_comma_forms():
    env = {"args": ["a", "b"], "none": []}
    assert expand_template("f(x${,args})", env) == "f(x, a, b)"
    assert expand_template("f(${args,}y)", env) == "f(a, b, y)"
    assert expand_template("f(x${,none})", env) == "f(x)"
    assert expand_template("g($args)", env) == "g(a, b)"


def test_comma_forms_are_ignored_in_block_mode():
    assert expand_template("  ${,args}\n", {"args": ["a", "b"]}) == "  a\n  b\n"


def test_dollar_without_identifier_is_left_alone():
    assert expand_template("cost: $5 and ${x}", {"x": "y"}) == "cost: $5 and y"


def test_blank_lines_inside_a_block_get_no_indent():
    assert block("a\n\n  \nb", "    ") == "    a\n\n\n    b"


def test_unknown_placeholder_names_its_line():
    with pytest.raises(RuleViolation) as caught:
        expand_template("one\ntwo ${missing}\n", {"x": "y"}, "T.h")
    assert caught.value.rule == "templates.unknown-placeholder"
    assert caught.value.line_in_entry == 1 and "$x" in caught.value.hint


def lines_of(value, indent: str) -> str:
    """block's rule written out line by line (code_template.py: indent_lines)."""
    items = [value] if isinstance(value, str) else value
    lines = [line.rstrip() for item in items for line in item.splitlines()]
    return "\n".join(indent + line if line else "" for line in lines).rstrip()


PIECES = st.sampled_from(["a", "b;", " ", "\t", "\n", "\n\n", "\r", "\r\n", "\x0b", "\x1f",
                          "\xa0", "\u2028", "x\n", "  y  \n"])
ITEMS = st.lists(st.lists(PIECES, max_size=8).map("".join), max_size=5)


@settings(max_examples=2000, deadline=None)
@given(ITEMS, st.sampled_from(["", "  "]))
def test_block_is_each_line_stripped_and_indented_whatever_the_text(items, indent):
    """The quick path for text already in lines (most kernels) gives the rule's result."""
    assert block(items, indent) == lines_of(items, indent)
    assert block("".join(items), indent) == lines_of("".join(items), indent)


@settings(max_examples=2000, deadline=None)
@given(ITEMS)
def test_items_in_block_form_join_as_the_rule_prints_them(items):
    """Kernels are stored in block form (block_lines) and joined without a scan."""
    assert block([block_lines(item) for item in items], "") == lines_of(items, "")
