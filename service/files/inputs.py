"""A build's inputs as bytes: the spec's YAML files and templates, and gradshard's templates.

Every spec file and template is read by `read_spec_file`: only regular files (after
following links), opened so that a FIFO cannot block, and at most `max_spec_bytes()` each
(cache/store/regular_files.py).

Reading and hashing them imports nothing heavy, so `build` can tell that nothing changed
before it loads the pipeline. Decoding into the records the pipeline reads is separate
(service/graph_run.py: DecodedInputs.decode); the template sets and spec texts some commands
read alone are here (`gradshard_templates`, `spec_templates`, `load_texts`), loading the
pipeline when called.
"""

from __future__ import annotations

import importlib.resources
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import xxhash

from gradshard.cache.errors import EnvironmentFailure, UsageError
from gradshard.cache.store.regular_files import FileTooLarge, NotRegularFile, read_regular
from gradshard.cache.version import code_version
from gradshard.pipeline.problems import YAML_FILES, Problem, SpecError, SpecFile
from gradshard.pipeline.render.template_names import ALL_TEMPLATES
from gradshard.service.defaults import GRADSHARD_MAX_SPEC_BYTES, installed_torch, value_of
from gradshard.service.files.spec_location import HELPERS_HEADER, SpecLocation

if TYPE_CHECKING:
    from gradshard.pipeline.parse.spec import SpecTexts
    from gradshard.pipeline.render.templating import TemplateSet

__all__ = ["CODEGEN_TEMPLATES", "COMPILED", "InputBytes", "check_spec_size",
           "compiled_template_bytes", "data_file_hashes", "gradshard_template_bytes",
           "gradshard_templates", "helpers_header", "load_texts", "max_spec_bytes",
           "read_helpers", "read_inputs", "read_spec_file", "read_spec_templates",
           "spec_file_bytes", "spec_template_sources", "spec_templates", "template_set",
           "template_sources"]


@dataclass(frozen=True)
class InputBytes:
    location: SpecLocation
    yaml: dict[SpecFile, bytes]
    spec_templates: dict[str, bytes | None]  # None: missing (reported when decoded)
    templates: dict[str, bytes]  # gradshard's own .j2 templates
    # The release whose rules read the spec (pipeline/releases.py) when its generator is not
    # the one beside its location (a git revision's); None: the location's generator's.
    release: str | None = None
    # the formulas' helper header (helpers_header): its path and bytes
    helpers: tuple[str, bytes] | None = None
    # gradshard's templates compiled ahead (pipeline/render/templating.py: compiled_template)
    compiled: dict[str, bytes] = field(default_factory=dict)

    def fingerprint(self) -> dict[str, str]:
        """A hash of every input, gradshard's code, the layout and the spec's place: equal means
        the same build."""
        hashes = {f"spec/{f.value}": _hash(data) for f, data in self.yaml.items()}
        hashes.update({f"templates/{name}": _hash(data) if data is not None else "missing"
                       for name, data in self.spec_templates.items()})
        hashes.update({f"gradshard/{name}": _hash(data) for name, data in self.templates.items()})
        hashes["gradshard/code"] = code_version()
        hashes["layout"] = self.location.layout
        # where the spec lies is an input too: torchgen prints its templates' path relative
        # to itself (`@generated from ...`), so a copy elsewhere is another spec to it
        hashes["root"] = str(self.location.root)
        if self.release is not None:
            hashes["release"] = self.release
        if self.helpers is not None:
            hashes[f"helpers/{self.helpers[0]}"] = _hash(self.helpers[1])
        return hashes


def _hash(data: bytes) -> str:
    return xxhash.xxh3_128_hexdigest(data)


def data_file_hashes(roots: list[Path]) -> dict[str, str]:
    """Every file under the roots but Python sources (and their bytecode), by hash: what the
    host path's fingerprint adds of the generator's directory and the spec's templates
    (another generator may read a template or data file gradshard's list does not name; its
    Python sources are its hash's)."""
    hashes = {}
    for root in roots:
        for path in sorted(root.rglob("*")):
            if path.suffix != ".py" and "__pycache__" not in path.parts and path.is_file():
                name = f"data/{path.relative_to(root).as_posix()}"
                try:
                    hashes[name] = _hash(path.read_bytes())
                except OSError:
                    hashes[name] = "unreadable"
    return hashes


def read_inputs(location: SpecLocation) -> InputBytes:
    return InputBytes(location, spec_file_bytes(location),
                      read_spec_templates(location, ALL_TEMPLATES),
                      gradshard_template_bytes(), helpers=read_helpers(location),
                      compiled=compiled_template_bytes())


def spec_file_bytes(location: SpecLocation) -> dict[SpecFile, bytes]:
    """The spec's four YAML files, as bytes."""
    return {file: read_spec_file(location.path_of(file)) for file in YAML_FILES}


def helpers_header(location: SpecLocation) -> Path | None:
    """The FunctionsManual.h the spec's formulas call into: the spec's own, else the
    installed torch's; None when there is neither."""
    own = location.own_helpers_header
    if own.is_file():
        return own
    torch = installed_torch()
    installed = torch / "include" / HELPERS_HEADER if torch is not None else None
    return installed if installed is not None and installed.is_file() else None


def read_helpers(location: SpecLocation) -> tuple[str, bytes] | None:
    """The formulas' helper header, when there is one (read as a spec file is)."""
    path = helpers_header(location)
    data = read_spec_file(path, missing_ok=True) if path is not None else None
    return (str(path), data) if data is not None else None


def read_spec_templates(location: SpecLocation, names: tuple[str, ...]) -> dict[str, bytes | None]:
    return {name: read_spec_file(location.templates / name, missing_ok=True) for name in names}


# The templates the build's tasks read (templates/codegen); `try`'s patch template lives
# beside them in templates/live, which no task reads.
CODEGEN_TEMPLATES = "gradshard.templates.codegen"


def gradshard_template_bytes(package: str = CODEGEN_TEMPLATES) -> dict[str, bytes]:
    """gradshard's own Jinja2 templates, shipped in a package of gradshard.templates."""
    root = importlib.resources.files(package)
    return {p.name: p.read_bytes() for p in sorted(root.iterdir(), key=lambda p: p.name)
            if p.name.endswith(".j2")}


COMPILED = ".compiled"  # a template compiled ahead: NAME.j2.compiled beside NAME.j2


def compiled_template_bytes(package: str = CODEGEN_TEMPLATES) -> dict[str, bytes]:
    """gradshard's templates compiled ahead, by template name (python -m
    gradshard.service.files.template_code writes them)."""
    root = importlib.resources.files(package)
    return {p.name.removesuffix(COMPILED): p.read_bytes() for p in root.iterdir()
            if p.name.endswith(".j2" + COMPILED)}


def template_set(templates: dict[str, bytes], compiled: dict[str, bytes]) -> TemplateSet:
    """gradshard's templates with those compiled ahead (each used only if it is of the same
    text and Jinja2: pipeline/render/templating.py)."""
    from gradshard.pipeline.render.templating import TemplateSet  # the pipeline: on decoding

    return TemplateSet(template_sources(templates),
                       tuple((name, data.decode("utf-8")) for name, data in sorted(compiled.items())
                             if name in templates))


def spec_template_sources(templates: dict[str, bytes | None]) -> tuple[tuple[str, str], ...]:
    """The spec's templates as text, read as torchgen reads them (CodeTemplate.from_file:
    text mode, so CRLF and CR become LF); a missing or undecodable one is a spec problem."""
    # the pipeline loads on decoding
    from gradshard.pipeline.parse.source import universal_newlines

    sources, problems = [], []
    for name, data in templates.items():
        if data is None:
            problems.append(Problem(SpecFile.TEMPLATES, name, "templates.missing",
                                    f"the spec has no template {name}",
                                    "the templates directory must hold every file torchgen "
                                    "renders"))
            continue
        try:
            sources.append((name, universal_newlines(data.decode("utf-8"))))
        except UnicodeDecodeError as e:
            problems.append(Problem(SpecFile.TEMPLATES, name, "templates.not-utf8",
                                    f"byte {e.start} of {name} is not UTF-8", "re-save it as UTF-8"))
    if problems:
        raise SpecError(problems)
    return tuple(sources)


def template_sources(templates: dict[str, bytes]) -> tuple[tuple[str, str], ...]:
    return tuple((name, data.decode("utf-8")) for name, data in templates.items())


def gradshard_templates() -> TemplateSet:
    """gradshard's own Jinja2 templates that the build's tasks read (templates/codegen)."""
    return template_set(gradshard_template_bytes(), compiled_template_bytes())


def spec_templates(location: SpecLocation, names: tuple[str, ...]) -> TemplateSet:
    """The spec's own file templates; a missing or undecodable one is a spec problem."""
    from gradshard.pipeline.render.templating import TemplateSet  # the pipeline: on decoding

    return TemplateSet(spec_template_sources(read_spec_templates(location, names)))


def load_texts(location: SpecLocation) -> SpecTexts:
    """The spec's YAML files, decoded (a file that is not text is a spec problem)."""
    from gradshard.pipeline.parse.spec import decode_spec  # the pipeline: on decoding

    return decode_spec(spec_file_bytes(location))


MAX_SPEC_BYTES = int(GRADSHARD_MAX_SPEC_BYTES.default)  # per spec file or template
MAX_SPEC_BYTES_VARIABLE = GRADSHARD_MAX_SPEC_BYTES.variable


def max_spec_bytes() -> int:
    """The size limit of one spec file or template: $GRADSHARD_MAX_SPEC_BYTES, else 64 MiB."""
    value = value_of(GRADSHARD_MAX_SPEC_BYTES)
    if value is None:  # set but empty is refused, as any value that is not a number of bytes
        return MAX_SPEC_BYTES
    if not value.strip().isdigit() or int(value) == 0:
        raise UsageError(f"{MAX_SPEC_BYTES_VARIABLE}={value!r} is not a positive number of bytes",
                         f"set it to a number such as {2 * MAX_SPEC_BYTES} (128 MiB), or unset it")
    return int(value)


def read_spec_file(path: Path, missing_ok: bool = False) -> bytes | None:
    """The bytes of a spec file or template (None if missing and missing_ok). Anything but a
    regular file, and a file over the size limit, is refused without being read: opening
    never blocks (cache/store/regular_files.py), so a FIFO cannot hang a build or the daemon."""
    limit = max_spec_bytes()
    try:
        return read_regular(path, limit)
    except FileNotFoundError:
        if missing_ok:
            return None
        raise EnvironmentFailure(f"cannot read {path}: it does not exist",
                                 "restore the file", path=str(path)) from None
    except NotRegularFile as refused:
        raise EnvironmentFailure(str(refused),
                                 "spec files and templates are read from regular files only "
                                 "(symbolic links to them are followed): put the file itself "
                                 "there", path=str(path)) from None
    except FileTooLarge as refused:
        raise spec_too_large(str(path), refused.size, limit) from None
    except OSError as e:
        raise EnvironmentFailure(f"cannot read {path}: {e.strerror}",
                                 "check the file and its permissions", path=str(path)) from None


def check_spec_size(what: str, size: int, limit: int | None = None) -> None:
    """Refuse a spec file or template (what: its path, or how else it is named) of more than
    the limit (default: max_spec_bytes())."""
    limit = max_spec_bytes() if limit is None else limit
    if size > limit:
        raise spec_too_large(what, size, limit)


def spec_too_large(what: str, size: int, limit: int) -> EnvironmentFailure:
    return EnvironmentFailure(f"{what} is larger than the limit of {_bytes_text(limit)} "
                              f"({size} bytes)",
                              f"spec files and templates are far smaller; if this one is right, "
                              f"set {MAX_SPEC_BYTES_VARIABLE} to a larger number of bytes",
                              path=what)


def _bytes_text(size: int) -> str:
    return f"{size >> 20} MiB" if size % (1 << 20) == 0 else f"{size} bytes"
