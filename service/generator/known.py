"""The generators gradshard knows, by the hash of their sources (service/generator/identity.py).

torchgen carries no version string, and releases can share a generator byte for byte (2.14.0
and 2.14.1 do), so a generator is named by what its sources hash to. `reproduced` says whether
gradshard's own stages write what that generator writes: a known generator is never run; one
that is recognised but not reproduced is run and compared like an unknown one, and named by
its release in what gradshard says.

To add a release: unpack its wheel's torchgen/ (pip download --no-deps torch==X; unzip
'torchgen/*') and run `python -m gradshard.service.generator.identity DIR/torchgen/packaged`.
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["KNOWN_GENERATORS", "KnownGenerator", "REPRODUCED_RELEASE"]


class KnownGenerator(NamedTuple):
    release: str
    reproduced: bool  # gradshard's stages write what it writes


REPRODUCED_RELEASE = "2.13.0"  # the release gradshard's stages reproduce

KNOWN_GENERATORS: dict[str, KnownGenerator] = {
    "5b2ccac2798bca33df2488d79f840efa": KnownGenerator("2.13.0", True),
    # run and compared, as unknown ones are, until gradshard reproduces them
    "85275554eea31b8fa60c4cc2790021d7": KnownGenerator("2.12.0", False),
    "2cce99c8a4b9fd9970db155399a6d0e0": KnownGenerator("2.14.x", False),  # 2.14.0 = 2.14.1
}
