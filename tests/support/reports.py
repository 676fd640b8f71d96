"""The official SARIF 2.1.0 schema (OASIS, kept as test data: no PyPI package ships it) and
a check of a log against it with jsonschema's Draft 4 validator."""

from __future__ import annotations

import json
from pathlib import Path

SARIF_SCHEMA_FILE = Path(__file__).parent.parent / "data" / "sarif-schema-2.1.0.json"


def validated_sarif(log: dict) -> dict:
    """The log, once the official schema accepts it (jsonschema raises otherwise)."""
    import jsonschema

    schema = json.loads(SARIF_SCHEMA_FILE.read_text())
    jsonschema.Draft4Validator(schema).validate(log)
    return log
