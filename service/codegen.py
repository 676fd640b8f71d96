"""Running the code generation for a located spec: read its files and templates, generate."""

from __future__ import annotations

import importlib.resources

from gradshard.pipeline.codegen import ALL_TEMPLATES, Codegen, analyze, generate
from gradshard.pipeline.errors import Problem, SpecError, SpecFile
from gradshard.pipeline.render import TemplateSet
from gradshard.pipeline.spec import SpecTexts, decode_spec

from .spec_location import SpecLocation


def gradshard_templates() -> TemplateSet:
    """gradshard's own Jinja2 templates, shipped in the gradshard.templates package."""
    root = importlib.resources.files("gradshard.templates")
    return TemplateSet(tuple(sorted((p.name, p.read_text(encoding="utf-8"))
                                    for p in root.iterdir() if p.name.endswith(".j2"))))


def spec_templates(location: SpecLocation, names: tuple[str, ...]) -> TemplateSet:
    """The spec's own file templates; a missing or undecodable one is a spec problem."""
    sources, problems = [], []
    for name in names:
        path = location.templates / name
        try:
            sources.append((name, path.read_bytes().decode("utf-8")))
        except FileNotFoundError:
            problems.append(Problem(SpecFile.TEMPLATES, name, "templates.missing",
                                    f"the spec has no template {name}",
                                    "the templates directory must hold every file torchgen renders"))
        except UnicodeDecodeError as e:
            problems.append(Problem(SpecFile.TEMPLATES, name, "templates.not-utf8",
                                    f"byte {e.start} of {name} is not UTF-8", "re-save it as UTF-8"))
    if problems:
        raise SpecError(problems)
    return TemplateSet(tuple(sources))


def load_texts(location: SpecLocation) -> SpecTexts:
    return decode_spec(location.read_all())


def run_codegen(location: SpecLocation, texts: SpecTexts) -> Codegen:
    """Every stage; the spec's templates are read once the YAML is known to be good."""
    analysis = analyze(texts)
    return generate(analysis, gradshard_templates(), spec_templates(location, ALL_TEMPLATES),
                    location.layout)
