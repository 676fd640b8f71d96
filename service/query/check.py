"""`check` and `show`: the build graph run on a located spec in memory (no store: every task
runs, nothing is written), and the records it knows of the spec (cache/graph/spec_records.py).

A spec with problems raises SpecError from the graph, every problem at its line, as `build`
reports it."""

from __future__ import annotations

from gradshard.cache.graph.spec_records import SpecRecords, spec_records
from gradshard.cache.engine.core import StaleCache
from gradshard.pipeline.render.templating import TemplateSet
from gradshard.pipeline.parse.spec import SpecTexts, decode_spec

from gradshard.service.graph_run import Generation, GraphResult
from gradshard.service.files.inputs import (gradshard_template_bytes, read_inputs,
                                            read_spec_templates, spec_template_sources,
                                            template_sources)
from gradshard.service.session import Session
from gradshard.service.files.spec_location import SpecLocation


def gradshard_templates() -> TemplateSet:
    """gradshard's own Jinja2 templates that the build's tasks read (templates/codegen)."""
    return TemplateSet(template_sources(gradshard_template_bytes()))


def spec_templates(location: SpecLocation, names: tuple[str, ...]) -> TemplateSet:
    """The spec's own file templates; a missing or undecodable one is a spec problem."""
    return TemplateSet(spec_template_sources(read_spec_templates(location, names)))


def load_texts(location: SpecLocation) -> SpecTexts:
    return decode_spec(location.read_all())


def prepare(location: SpecLocation) -> Generation:
    """The spec's inputs, decoded (a file that is not text is a spec problem here)."""
    return Generation.prepare(read_inputs(location))


def analyze(generation: Generation, session: Session | None = None) -> SpecRecords:
    """Every stage on the spec, on the session's cache (none: all in memory)."""
    result = (session or Session(None)).run_graph(generation)
    try:
        return records_of(result, generation)
    except StaleCache:
        result.rerun_entering_groups()
        return records_of(result, generation)


def records_of(result: GraphResult, generation: Generation) -> SpecRecords:
    return spec_records(result.engine, result.index, generation.texts)
