"""`gradshard generator`: which generator the spec belongs to, and, run now, whether
gradshard's files are what it writes (service/generator/check.py: check_now).

The build checks a generator gradshard does not know once per spec on this machine; this
command runs it whenever asked, a known one too (to see that it is still known), and records
what it finds for the builds that follow.
"""

from __future__ import annotations

from gradshard.service.files.inputs import read_inputs
from gradshard.service.files.spec_location import SpecLocation
from gradshard.service.generator.check import GeneratorVerdict, check_now, spec_hash
from gradshard.service.generator.identity import identify_generator
from gradshard.service.graph_run import DecodedInputs, run_graph
from gradshard.service.open_cache import OpenCache

__all__ = ["generator_json", "generator_text", "run_generator_check"]


def run_generator_check(location: SpecLocation, session: OpenCache,
                        timeout: float) -> GeneratorVerdict:
    """The spec's generator run now and compared with gradshard's files (the session's cache
    gives them); raises GeneratorFailed when it fails."""
    identity = identify_generator(location)
    inputs = read_inputs(location)
    spec = spec_hash(inputs.fingerprint())
    run = run_graph(DecodedInputs.decode(inputs, identity.rules_release), session.open(),
                    session.memory)
    run.engine.finish()
    return check_now(identity, location, spec, run.files, run.load, session.verdicts, timeout)


def generator_text(verdict: GeneratorVerdict) -> str:
    identity = verdict.identity
    lines = [f"gradshard {identity.describe()}",
             f"  ran it: {len(verdict.ours)} files compared in {verdict.seconds:.1f} s: "
             + (f"{len(verdict.differing)} differ" if verdict.differing else "every one the same")]
    if verdict.report:
        lines.extend(f"  {line}" for line in verdict.report.splitlines())
    return "\n".join(lines)


def generator_json(verdict: GeneratorVerdict) -> dict:
    return {"ok": not verdict.differing, **verdict.to_json(), "compared": len(verdict.ours),
            "report": verdict.report}
