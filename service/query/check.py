"""`check` and `show`: the build graph run (service/graph_run.py) on a located spec in memory
(no store: every task runs, nothing is written), and the records it knows of the spec
(cache/graph/spec_records.py).

A spec with problems raises SpecError from the graph, every problem at its line, as `build`
reports it."""

from __future__ import annotations

from gradshard.cache.engine.core import StaleCache
from gradshard.cache.graph.spec_records import SpecRecords, spec_records
from gradshard.pipeline.parse.spec import SpecTexts, decode_spec
from gradshard.pipeline.render.templating import TemplateSet
from gradshard.service.files.inputs import (gradshard_template_bytes, read_inputs,
                                            read_spec_templates, spec_template_sources,
                                            template_sources)
from gradshard.service.files.spec_location import SpecLocation
from gradshard.service.graph_run import DecodedInputs, GraphResult, run_graph
from gradshard.service.open_cache import OpenCache

__all__ = ["analyze", "gradshard_templates", "load_texts", "prepare", "records_of",
           "spec_templates"]


def gradshard_templates() -> TemplateSet:
    """gradshard's own Jinja2 templates that the build's tasks read (templates/codegen)."""
    return TemplateSet(template_sources(gradshard_template_bytes()))


def spec_templates(location: SpecLocation, names: tuple[str, ...]) -> TemplateSet:
    """The spec's own file templates; a missing or undecodable one is a spec problem."""
    return TemplateSet(spec_template_sources(read_spec_templates(location, names)))


def load_texts(location: SpecLocation) -> SpecTexts:
    return decode_spec(location.read_all())


def prepare(location: SpecLocation) -> DecodedInputs:
    """The spec's inputs, read and decoded (a file that is not text is a spec problem here)."""
    return DecodedInputs.decode(read_inputs(location))


def analyze(decoded: DecodedInputs, session: OpenCache | None = None) -> SpecRecords:
    """Every stage on the spec, on the session's cache (none: all in memory)."""
    session = session or OpenCache(None)
    run = run_graph(decoded, session.open(), session.memory)
    try:
        return records_of(run)
    except StaleCache:
        run.rerun_entering_groups()
        return records_of(run)


def records_of(run: GraphResult) -> SpecRecords:
    return spec_records(run.engine, run.index, run.decoded.texts)
