"""gradshard's parse and match results in the same JSON shape as torchgen_oracle.py's facts."""

from __future__ import annotations

from pathlib import Path

from gradshard.pipeline.spec import ParsedSpec, decode_spec, match_spec, parse_spec
from gradshard.service.describe import describe_infos, describe_match, describe_native
from gradshard.service.spec_location import locate_spec


def parse_spec_dir(spec_dir: str | Path) -> ParsedSpec:
    return parse_spec(decode_spec(locate_spec(str(spec_dir)).read_all()))


def facts(spec: ParsedSpec, with_match: bool = True) -> dict:
    result = {
        "native_functions": [describe_native(f) for f in spec.native_functions],
        "infos": describe_infos(spec.infos),
    }
    if with_match:
        matched = match_spec(spec)
        result["matches"] = [describe_match(m) for m in matched.matches]
        result["matched_infos"] = describe_infos(matched.infos)
    return result
