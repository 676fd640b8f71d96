"""A spec with the editor's unsaved buffers, checked as `gradshard check` checks it: the build
graph run on the session's cache (an edited formula reruns what it reaches), every problem of
every stage and the formula check's findings, each at its file, line and column.

Severity is `check`'s (every problem an error), except where the spec's own generator decides
(one gradshard does not reproduce: the host path writes its files, and gradshard's rules only
warn there): a rule of gradshard's is a warning then; a file that is not YAML is an error
whatever the generator, since no generator reads it.
"""

from __future__ import annotations

from dataclasses import dataclass

from gradshard.cache.graph.spec_records import SpecRecords, spec_records
from gradshard.pipeline.problems import Problem, SpecError
from gradshard.service.editor.buffers import SpecBuffers
from gradshard.service.generator.identity import GeneratorIdentity, identify_generator
from gradshard.service.graph_run import DecodedInputs, GraphResult, fresh_reads, run_graph
from gradshard.service.open_cache import OpenCache

__all__ = ["Analysis", "ERROR", "WARNING", "analyse", "diagnostics_json", "severity_of"]

ERROR, WARNING = "error", "warning"
# Rules no generator relaxes: the file is not YAML, or not a list of entries
_FATAL_PREFIXES = ("yaml.",)


@dataclass(frozen=True)
class Analysis:
    """What one check of the buffers found: its problems (located), the spec's generator, and
    the graph's run when the spec was accepted (None: rejected, its problems say why)."""

    buffers: SpecBuffers
    identity: GeneratorIdentity
    problems: tuple[Problem, ...]
    run: GraphResult | None

    @property
    def accepted(self) -> bool:
        return self.run is not None

    def records(self) -> SpecRecords:
        """Every record of the accepted spec (a value gone from the cache: the graph again)."""
        assert self.run is not None, "a rejected spec has no records"
        run = self.run
        for fresh in fresh_reads():
            with fresh:
                return spec_records(run.engine, run.index, run.decoded.texts)
            run.rerun_entering_groups()
        raise AssertionError("the last read returns or raises")


def analyse(buffers: SpecBuffers, session: OpenCache) -> Analysis:
    """The buffers checked on the session's cache; a damaged cache is set aside and the check
    runs again, once."""
    identity = identify_generator(buffers.location)
    for attempt in session.attempts():
        with attempt:
            return _analysed(buffers, session, identity)
    raise AssertionError("the last attempt returns or raises")


def _analysed(buffers: SpecBuffers, session: OpenCache, identity: GeneratorIdentity
              ) -> Analysis:
    try:
        decoded = DecodedInputs.decode(buffers.inputs(), identity.rules_release)
        run = run_graph(decoded, session.open(), session.memory)
    except SpecError as error:
        return Analysis(buffers, identity, error.problems, None)
    return Analysis(buffers, identity, run.findings(), run)


def severity_of(problem: Problem, identity: GeneratorIdentity) -> str:
    if identity.known or problem.rule.startswith(_FATAL_PREFIXES):
        return ERROR
    return WARNING


def diagnostics_json(analysis: Analysis) -> list[dict]:
    """Every problem as the editor shows it (and a daemon answers it): its file, line and
    column (from 1, in characters), rule, message, hint and severity."""
    return [{"file": p.file.value, "line": p.line, "column": p.column, "rule": p.rule,
             "message": p.message, "hint": p.hint, "entry": p.entry,
             "severity": severity_of(p, analysis.identity)} for p in analysis.problems]
