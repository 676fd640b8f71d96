"""The generators gradshard knows, by the hash of their sources (service/generator/identity.py).

torchgen carries no version string, and releases can share a generator byte for byte (2.14.0
and 2.14.1 do), so a generator is named by what its sources hash to, and the release it names
is a key of pipeline/releases.py: RELEASES, whose rules the build then follows. `reproduced`
says whether gradshard's own stages write what that generator writes: a known generator is
never run; one that is recognised but not reproduced (none today) is run and compared like an
unknown one, and named by its release in what gradshard says. A generator gradshard does not
know is built with the default release's rules (pipeline/releases.py: DEFAULT_RELEASE) and
checked.

To add a release: unpack its wheel's torchgen/ (pip download --no-deps torch==X; unzip
'torchgen/*'), run `python -m gradshard.service.generator.identity DIR/torchgen/packaged`,
and give its rules a row of RELEASES.
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["KNOWN_GENERATORS", "KnownGenerator"]


class KnownGenerator(NamedTuple):
    release: str  # a key of pipeline/releases.py: RELEASES
    reproduced: bool  # gradshard's stages write what it writes


KNOWN_GENERATORS: dict[str, KnownGenerator] = {
    "85275554eea31b8fa60c4cc2790021d7": KnownGenerator("2.12.0", True),
    "5b2ccac2798bca33df2488d79f840efa": KnownGenerator("2.13.0", True),
    "2cce99c8a4b9fd9970db155399a6d0e0": KnownGenerator("2.14.x", True),  # 2.14.0 = 2.14.1
}
