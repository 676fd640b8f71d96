"""torchgen's CodeTemplate rules, as expand_template implements them."""

from __future__ import annotations

import pytest

from gradshard.pipeline.errors import RuleViolation
from gradshard.pipeline.spec_template import block, expand_template


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
