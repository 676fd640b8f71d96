"""Running the code generation straight through (no cache) for a located spec."""

from __future__ import annotations

from gradshard.pipeline.codegen import Codegen, analyze, generate
from gradshard.pipeline.render import TemplateSet
from gradshard.pipeline.spec import SpecTexts, decode_spec
from gradshard.pipeline.spec_templates import ALL_TEMPLATES

from .inputs import gradshard_template_bytes, read_spec_templates, spec_template_sources, \
    template_sources
from .spec_location import SpecLocation


def gradshard_templates() -> TemplateSet:
    """gradshard's own Jinja2 templates, shipped in the gradshard.templates package."""
    return TemplateSet(template_sources(gradshard_template_bytes()))


def spec_templates(location: SpecLocation, names: tuple[str, ...]) -> TemplateSet:
    """The spec's own file templates; a missing or undecodable one is a spec problem."""
    return TemplateSet(spec_template_sources(read_spec_templates(location, names)))


def load_texts(location: SpecLocation) -> SpecTexts:
    return decode_spec(location.read_all())


def run_codegen(location: SpecLocation, texts: SpecTexts) -> Codegen:
    """Every stage; the spec's templates are read once the YAML is known to be good."""
    analysis = analyze(texts)
    return generate(analysis, gradshard_templates(), spec_templates(location, ALL_TEMPLATES),
                    location.layout)
