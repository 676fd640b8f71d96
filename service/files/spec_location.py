"""Where the spec lives: a torchgen packaged directory or a PyTorch checkout.

`--spec DIR` may name either layout; which one is detected from the files present. Without
`--spec`, the installed torchgen's packaged spec is used, found with
`importlib.util.find_spec` so that neither torch nor torchgen is imported. A location's root
is always absolute (a relative --spec is taken from the working directory).

Where its files are, not what they hold: service/files/inputs.py reads them.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from gradshard.cache.errors import UsageError
from gradshard.pipeline.problems import YAML_FILES, SpecFile
from gradshard.service.defaults import installed_torchgen

__all__ = ["HELPERS_HEADER", "SpecLocation", "locate_spec", "spec_of_paths"]

# Relative paths of each spec file, per layout.
_LAYOUTS = {
    "packaged": {
        SpecFile.NATIVE_FUNCTIONS: "ATen/native/native_functions.yaml",
        SpecFile.TAGS: "ATen/native/tags.yaml",
        SpecFile.DERIVATIVES: "autograd/derivatives.yaml",
        SpecFile.DEPRECATED: "autograd/deprecated.yaml",
    },
    "checkout": {
        SpecFile.NATIVE_FUNCTIONS: "aten/src/ATen/native/native_functions.yaml",
        SpecFile.TAGS: "aten/src/ATen/native/tags.yaml",
        SpecFile.DERIVATIVES: "tools/autograd/derivatives.yaml",
        SpecFile.DEPRECATED: "tools/autograd/deprecated.yaml",
    },
}
_TEMPLATES = {"packaged": "autograd/templates", "checkout": "tools/autograd/templates"}
# The formulas' helpers (torch/csrc/autograd/FunctionsManual.h): a checkout's own; beside a
# packaged spec, the headers of the torch installed with its torchgen (site-packages/torch/
# include beside site-packages/torchgen/packaged)
HELPERS_HEADER = "torch/csrc/autograd/FunctionsManual.h"
_HELPERS = {"packaged": f"../../torch/include/{HELPERS_HEADER}", "checkout": HELPERS_HEADER}


@dataclass(frozen=True)
class SpecLocation:
    """A spec's directory and layout. The root is made absolute here, once, for every
    location however made: its paths (the spec files, the generator beside it) are handed to
    subprocesses that run in other working directories (service/generator/runner.py)."""

    root: Path
    layout: str  # "packaged" or "checkout"

    def __post_init__(self) -> None:
        # absolute(), not resolve(): a spec reached through a symbolic link keeps the
        # generator beside the link (a staged torchgen of links), as it is named
        object.__setattr__(self, "root", Path(self.root).absolute())

    def path_of(self, file: SpecFile) -> Path:
        return self.root / _LAYOUTS[self.layout][file]

    @property
    def templates(self) -> Path:
        return self.root / _TEMPLATES[self.layout]

    @property
    def own_helpers_header(self) -> Path:
        """Where the spec's own FunctionsManual.h would be (service/files/inputs.py:
        helpers_header falls back to the installed torch's)."""
        return (self.root / _HELPERS[self.layout]).resolve()


def locate_spec(spec: str | None) -> SpecLocation:
    """The spec named by --spec, or the installed torchgen's packaged spec."""
    if spec is None:
        return _installed_spec()
    root = Path(spec)
    if not root.is_dir():
        raise UsageError(f"--spec {spec}: no such directory",
                         "pass a torchgen 'packaged' directory or a PyTorch checkout")
    for layout in ("packaged", "checkout"):
        # exists(), not is_file(): a FIFO or device there is this layout, refused when read
        if (root / _LAYOUTS[layout][SpecFile.DERIVATIVES]).exists():
            return _complete(SpecLocation(root, layout))
    raise UsageError(
        f"--spec {spec} is neither a torchgen packaged spec nor a PyTorch checkout",
        "expected autograd/derivatives.yaml (packaged) or tools/autograd/derivatives.yaml "
        "(checkout) inside it")


def spec_of_paths(paths: Sequence[str], spec: str | None) -> str | None:
    """The spec directory the given spec files belong to (lintrunner names the files it lints,
    not the spec): --spec when given, which must hold them all; else the nearest directory
    above them that is a spec, the same for all. None when no file is named."""
    if not paths:
        return spec
    roots = {path: _spec_root_of(Path(path)) for path in paths}
    if spec is not None:
        root = Path(spec).absolute()
        outside = [p for p in paths if not Path(p).absolute().is_relative_to(root)]
        if outside:
            raise UsageError(f"{outside[0]} is not inside --spec {spec}",
                             "name files of that spec, or drop --spec")
        return spec
    unplaced = [path for path, root in roots.items() if root is None]
    if unplaced:
        raise UsageError(f"{unplaced[0]} is in no spec: no torchgen packaged spec or PyTorch "
                         "checkout holds it",
                         "name native_functions.yaml, tags.yaml, derivatives.yaml or "
                         "deprecated.yaml of a spec, or pass --spec")
    found = sorted({str(root) for root in roots.values()})
    if len(found) > 1:
        raise UsageError(f"the files named belong to {len(found)} specs: {', '.join(found)}",
                         "check one spec at a time")
    return found[0]


def _spec_root_of(path: Path) -> Path | None:
    """The nearest directory at or above `path` holding every YAML file of a spec in one layout
    (a checkout's tools/ alone has autograd/derivatives.yaml as a packaged spec would, but
    not its ATen/native/native_functions.yaml)."""
    absolute = path.absolute()
    own = (absolute,) if absolute.is_dir() else ()  # a spec directory named itself
    for directory in (*own, *absolute.parents):
        if any(all((directory / layout[f]).exists() for f in YAML_FILES)
               for layout in _LAYOUTS.values()):
            return directory
    return None


def _installed_spec() -> SpecLocation:
    torchgen = installed_torchgen()
    if torchgen is None:
        raise UsageError("no --spec given and no installed torchgen to take the spec from",
                         "pass --spec DIR, or install torch: pip install 'gradshard[torch]'")
    packaged = torchgen / "packaged"
    if not packaged.is_dir():
        raise UsageError(f"the installed torchgen ({packaged.parent}) has no packaged spec",
                         "pass --spec DIR")
    return _complete(SpecLocation(packaged, "packaged"))


def _complete(location: SpecLocation) -> SpecLocation:
    missing = [str(location.path_of(f)) for f in YAML_FILES if not location.path_of(f).exists()]
    if not location.templates.is_dir():
        missing.append(str(location.templates) + os.sep)
    if missing:
        raise UsageError(f"the spec at {location.root} is incomplete; missing: "
                         + ", ".join(missing), "every spec file must be present")
    return location
