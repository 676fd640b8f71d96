"""deprecated.yaml entries → `DeprecatedSignature` records.

A deprecated signature is a Python-visible schema plus the ATen call it forwards to; its
join to the ATen function happens with the Python bindings (gen_python_functions.py:
load_deprecated_signatures). Here each entry is parsed and its call checked on its own.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gradshard.pipeline.parse.native import check_release_types
from gradshard.pipeline.parse.source import quote_value
from gradshard.pipeline.problems import RuleViolation, did_you_mean
from gradshard.pipeline.records import Record
from gradshard.pipeline.releases import Release
from gradshard.pipeline.schema import FunctionSchema

__all__ = ["DeprecatedSignature", "KNOWN_CONSTANTS", "parse_deprecated"]

DEPRECATED_KEYS = ("name", "aten")
# Literal call arguments deprecated.yaml may pass, with their schema types
# (gen_python_functions.py: load_deprecated_signatures' known_constants).
KNOWN_CONSTANTS = {"1": "Scalar"}


@dataclass(frozen=True, slots=True)
class DeprecatedSignature(Record):
    schema: FunctionSchema
    aten: str
    aten_name: str
    call_args: tuple[str, ...]
    is_out: bool


def parse_deprecated(loaded, release: Release) -> DeprecatedSignature:
    """One entry, its schema's types as the release has them."""
    entry = loaded.value
    for key in entry:
        if key not in DEPRECATED_KEYS:
            raise RuleViolation("deprecated.unknown-key", f"unknown key {quote_value(key)}",
                                did_you_mean(str(key), DEPRECATED_KEYS) or
                                "a deprecated entry has 'name' and 'aten'",
                                line_in_entry=loaded.offset_of(str(key)))
    for key in DEPRECATED_KEYS:
        if not isinstance(entry.get(key), str):
            raise RuleViolation("deprecated.missing-key", f"'{key}' must be given as a string",
                                "write 'name: SCHEMA' and 'aten: aten_fn(args)'", line_in_entry=0)
    try:
        schema = FunctionSchema.parse(entry["name"])
    except RuleViolation as violation:
        raise violation.at(loaded.offset_of("name")) from None
    check_release_types(schema, release, loaded.offset_of("name"))
    aten = entry["aten"]
    # utils.py: split_name_params
    m = re.match(r"(\w+)(\.\w+)?\((.*)\)", aten)
    if m is None:
        raise RuleViolation("deprecated.bad-call", f"'{aten}' is not a call",
                            "write 'aten: fn(arg, arg)'", line_in_entry=loaded.offset_of("aten"))
    name, call_args = m.group(1), tuple(m.group(3).split(", "))
    known = {a.name for a in schema.arguments.all}
    for arg in call_args:
        if arg not in known and arg not in KNOWN_CONSTANTS:
            raise RuleViolation(
                "deprecated.unknown-argument", f"the call passes '{arg}', which is not an "
                f"argument of the deprecated schema", did_you_mean(arg, known) or
                f"use the schema's argument names ({', '.join(sorted(known))}) or 1",
                line_in_entry=loaded.offset_of("aten"))
    is_out = name.endswith("_out")
    return DeprecatedSignature(schema, aten, name.replace("_out", "") if is_out else name,
                               call_args, is_out)
