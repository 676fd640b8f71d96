"""gradshard's parse results in the same JSON shape as torchgen_oracle.py's facts."""

from __future__ import annotations

from pathlib import Path

from gradshard.pipeline.spec import ParsedSpec, decode_spec, parse_spec
from gradshard.service.describe import describe_info, describe_native
from gradshard.service.spec_location import locate_spec


def parse_spec_dir(spec_dir: str | Path) -> ParsedSpec:
    return parse_spec(decode_spec(locate_spec(str(spec_dir)).read_all()))


def facts(spec: ParsedSpec) -> dict:
    return {
        "native_functions": [describe_native(f) for f in spec.native_functions],
        "infos": [{"schema": str(e.schema),
                   "keys": {k.dispatch_key: describe_info(k.info) for k in e.infos}}
                  for e in spec.infos],
    }
