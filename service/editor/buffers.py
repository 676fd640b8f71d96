"""A spec as the editor holds it: its location and the unsaved text of its open files
(SpecBuffers), read as a build reads the spec, with each open file's buffer in place of the
file on disk. Nothing is written: the user's files stay as they are."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from gradshard.cache.errors import UsageError
from gradshard.pipeline.problems import YAML_FILES, GradshardError, SpecFile
from gradshard.service.files.inputs import InputBytes, read_inputs, read_spec_file
from gradshard.service.files.spec_location import SpecLocation, locate_spec, spec_of_paths

__all__ = ["SpecBuffers", "disk_text", "spec_file_of"]


@dataclass(frozen=True)
class SpecBuffers:
    """A spec and the texts of its open files (by spec file; the others are read from
    disk)."""

    location: SpecLocation
    texts: tuple[tuple[SpecFile, str], ...] = ()

    def text_of(self, file: SpecFile) -> str | None:
        return dict(self.texts).get(file)

    def with_text(self, file: SpecFile, text: str | None) -> SpecBuffers:
        """These buffers with `file`'s text replaced (None: read from disk again)."""
        texts = {f: t for f, t in self.texts if f is not file}
        if text is not None:
            texts[file] = text
        return replace(self, texts=tuple(sorted(texts.items(), key=lambda i: i[0].value)))

    def inputs(self) -> InputBytes:
        """The build's inputs, each open file's buffer in place of its file on disk."""
        raw = read_inputs(self.location)
        yaml = dict(raw.yaml)
        yaml.update((file, text.encode("utf-8", errors="surrogatepass"))
                    for file, text in self.texts)
        return replace(raw, yaml=yaml)

    def to_json(self) -> dict:
        """As a daemon request carries them."""
        return {"spec": str(self.location.root),
                "buffers": {file.value: text for file, text in self.texts}}

    @classmethod
    def from_json(cls, value: object) -> SpecBuffers:
        """A request's buffers; a malformed one is a UsageError naming what is wrong."""
        if not isinstance(value, dict) or not isinstance(value.get("spec"), str) \
                or not isinstance(value.get("buffers", {}), dict):
            raise UsageError("an editor request names its spec ('spec': a directory) and its "
                             "open files ('buffers': file name → text)",
                             "send {\"spec\": DIR, \"buffers\": {\"derivatives.yaml\": TEXT}}")
        known = {f.value: f for f in YAML_FILES}
        texts = []
        for name, text in value.get("buffers", {}).items():
            if name not in known or not isinstance(text, str):
                raise UsageError(f"an editor request's buffer {name!r} is not a spec file's "
                                 "text", f"name one of {', '.join(known)}, with its text")
            texts.append((known[name], text))
        return cls(locate_spec(value["spec"]), tuple(sorted(texts, key=lambda i: i[0].value)))


def spec_file_of(path: Path) -> tuple[SpecLocation, SpecFile] | None:
    """The spec a file belongs to and which of its YAML files it is; None for any other file
    (one outside every spec, a template, a file that is not there)."""
    try:
        root = spec_of_paths([str(path)], None)
        location = locate_spec(root) if root is not None else None
    except (UsageError, OSError):
        return None
    if location is None:
        return None
    target = _resolved(path)
    for file in YAML_FILES:
        if _resolved(location.path_of(file)) == target:
            return location, file
    return None


def _resolved(path: Path) -> Path:
    try:
        return path.resolve()
    except (OSError, RuntimeError):  # a loop of links
        return path.absolute()


def disk_text(path: Path) -> str:
    """A file's text on disk as a spec file is read (a regular file within the size limit:
    a FIFO in its place never blocks), "" when it cannot be read; odd bytes replaced."""
    try:
        data = read_spec_file(path, missing_ok=True)
    except GradshardError:
        return ""
    return data.decode("utf-8", errors="replace") if data is not None else ""
