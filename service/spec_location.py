"""Where the spec lives: a torchgen packaged directory or a PyTorch checkout.

`--spec DIR` may name either layout; which one is detected from the files present. Without
`--spec`, the installed torchgen's packaged spec is used, found with
`importlib.util.find_spec` so that neither torch nor torchgen is imported.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from gradshard.pipeline.errors import YAML_FILES, SpecFile, UsageError

from .defaults import installed_torchgen

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


@dataclass(frozen=True)
class SpecLocation:
    root: Path
    layout: str  # "packaged" or "checkout"

    def path_of(self, file: SpecFile) -> Path:
        return self.root / _LAYOUTS[self.layout][file]

    @property
    def templates(self) -> Path:
        return self.root / _TEMPLATES[self.layout]

    def read_all(self) -> dict[SpecFile, bytes]:
        data = {}
        for file in YAML_FILES:
            path = self.path_of(file)
            try:
                data[file] = path.read_bytes()
            except OSError as e:
                raise UsageError(f"cannot read {path}: {e.strerror}",
                                 "check the file's permissions") from None
        return data


def locate_spec(spec: str | None) -> SpecLocation:
    """The spec named by --spec, or the installed torchgen's packaged spec."""
    if spec is None:
        return _installed_spec()
    root = Path(spec)
    if not root.is_dir():
        raise UsageError(f"--spec {spec}: no such directory",
                         "pass a torchgen 'packaged' directory or a PyTorch checkout")
    for layout in ("packaged", "checkout"):
        if (root / _LAYOUTS[layout][SpecFile.DERIVATIVES]).is_file():
            return _complete(SpecLocation(root, layout))
    raise UsageError(
        f"--spec {spec} is neither a torchgen packaged spec nor a PyTorch checkout",
        "expected autograd/derivatives.yaml (packaged) or tools/autograd/derivatives.yaml "
        "(checkout) inside it")


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
    missing = [str(location.path_of(f)) for f in YAML_FILES if not location.path_of(f).is_file()]
    if not location.templates.is_dir():
        missing.append(str(location.templates) + os.sep)
    if missing:
        raise UsageError(f"the spec at {location.root} is incomplete; missing: "
                         + ", ".join(missing), "every spec file must be present")
    return location
