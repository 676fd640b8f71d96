"""How a failed command's ending reaches its user: the one renderer of every failure.
service/exit_codes.py (ending_of) says how an error ends, its exit code and the way it is
reported; this says it, in words. The command line (service/cli.py) prints what it renders,
the daemon (service/daemon/server.py) puts it in its build answers and its client
(service/daemon/commands.py) prints those, so that `gradshard build` prints the same words
whether it built by itself or a daemon built for it.

Rendering only: the texts are returned and the caller prints them or answers with them. What
an ending does besides (a damaged cache database set aside) is the caller's own step.
"""

from __future__ import annotations

import json
import traceback
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

from gradshard.service.exit_codes import Ending, Report
from gradshard.service.report.problems import (generator_failure_text, problem_json,
                                               spec_error_lines, spec_error_text,
                                               spec_texts_of, unread_spec_note,
                                               verify_mismatch_text)

if TYPE_CHECKING:
    from gradshard.cache.store.database import StoreDamaged
    from gradshard.pipeline.parse.spec import SpecTexts
    from gradshard.service.files.spec_location import SpecLocation

__all__ = ["BUG_HINT", "Known", "NEXT_BUILD", "RUN_AGAIN", "Said", "damaged_message",
           "render_ending"]

BUG_HINT = ("this is a bug in gradshard; please report it with the command you ran "
            "(GRADSHARD_DEBUG=1 shows the traceback)")
# What to do after a damaged database was set aside: the command line's user runs the
# command again; the daemon's next build starts the new cache by itself.
RUN_AGAIN = "run the command again (a new cache is started)"
NEXT_BUILD = "the next build starts a new cache"


@dataclass(frozen=True)
class Known:
    """What the command knows that its words depend on."""

    location: SpecLocation | None = None  # where the spec is, once it was found
    texts: SpecTexts | None = None  # the spec's files, once decoded (else read to quote)
    json: bool = False  # --json: a JSON document on stdout too, for the reports that have one
    raw: bool = False  # --raw: a compile error as the compiler printed it
    # The daemon's build answer: a damaged cache's next step is the daemon's next build, and
    # a bug's traceback is in the daemon's log.
    daemon: bool = False
    traceback: bool = False  # GRADSHARD_DEBUG: a bug's traceback after it


@dataclass(frozen=True)
class Said:
    """What the user sees of an ending."""

    stdout: str  # --json's document with its newline, or ""
    stderr: str  # the report, each line ending in a newline
    # Each error's text on its own (the daemon's `errors`: under `watch`'s rebuild line, in
    # `status`'s last result); a compile error's are its diagnostics, placed.
    errors: tuple[str, ...]


def render_ending(ending: Ending, known: Known) -> Said:
    return _RENDERERS[ending.report](ending.error, known)


def _spec(error, known: Known) -> Said:
    """Every problem at its spec line, with a note before and after them when the spec's
    generator is one gradshard does not reproduce (problem_json's objects with --json)."""
    from gradshard.service.generator.identity import identify_generator

    location = known.location
    identity = identify_generator(location) if location else None
    texts = known.texts or spec_texts_of(location)
    note = [unread_spec_note(identity)] if identity and not identity.known else []
    stdout = _document(known, lambda: {
        "ok": False, "problems": [problem_json(p, location) for p in error.problems],
        "generator": identity.to_json() if identity else None})
    return Said(stdout, spec_error_text(error, location, texts, identity),
                (*note, *spec_error_lines(error, location, texts), *note))


def _usage(error, known: Known) -> Said:
    """The message and its hint (--json: both, and a configuration file's problems)."""
    def document() -> dict:
        problems = [{"file": str(p.file), "line": p.line, "key": p.key, "message": p.message,
                     "hint": p.hint} for p in getattr(error, "problems", ())]
        return ({"ok": False, "error": error.message, "hint": error.hint}
                | ({"problems": problems} if problems else {}))

    return _one(_error_text(error.message, error.hint), _document(known, document))


def _compile(error, known: Known) -> Said:
    """Each diagnostic at its derivatives.yaml line (or the compiler's output as it is, with
    --raw), then which units failed."""
    from gradshard.service.compile.report import diagnostic_text

    placed = tuple(diagnostic_text(d, error.source) for d in error.diagnostics)
    stdout = _document(known, lambda: {"ok": False, "failed": list(error.failed),
                                       "errors": [d.to_json() for d in error.diagnostics]})
    # the hint names --raw only to a reader who has not asked for it
    hint = "" if known.raw else "\n  hint: --raw shows the compiler's output as it is"
    shown = error.raw if known.raw else "".join(f"{text}\n" for text in placed)
    return Said(stdout, f"{shown}gradshard: error: {len(error.failed)} unit(s) failed to "
                        f"compile: {', '.join(error.failed)}{hint}\n", placed)


def _verify(error, known: Known) -> Said:
    return _one(verify_mismatch_text(error))  # every disagreeing task; no JSON document


def _generator(error, known: Known) -> Said:
    """A generator that failed (its error's last lines) or, under strict, differs (the
    report)."""
    return _one(generator_failure_text(error), _document(known, lambda: {
        "ok": False, "error": str(error), "hint": error.hint,
        "detail": getattr(error, "detail", None), "report": getattr(error, "report", None),
        "files": list(getattr(error, "files", ()))}))


def _error(error, known: Known) -> Said:
    return _one(_error_text(str(error), getattr(error, "hint", "")))


def _damaged(damage: StoreDamaged, known: Known) -> Said:
    """A damaged cache database, once the caller has set it aside."""
    next_step = NEXT_BUILD if known.daemon else RUN_AGAIN
    return _one(_error_text(damaged_message(damage), next_step))


def _internal(error: BaseException, known: Known) -> Said:
    """A bug in gradshard, never the user's input: said to be one, and where its traceback
    is (the daemon's log; GRADSHARD_DEBUG=1 on the command line)."""
    said = f"gradshard: internal error: {type(error).__name__}: {error}"
    said += (" (a bug in gradshard; the daemon's log has the traceback)" if known.daemon
             else f"\n  {BUG_HINT}")
    trace = "".join(traceback.format_exception(error)) if known.traceback else ""
    return Said("", f"{said}\n{trace}", (said,))


# How each kind of ending is said (service/exit_codes.py: Report).
_RENDERERS: dict[Report, Callable[..., Said]] = {
    Report.SPEC: _spec, Report.USAGE: _usage, Report.COMPILE: _compile,
    Report.VERIFY: _verify, Report.GENERATOR: _generator, Report.ERROR: _error,
    Report.DAMAGED: _damaged, Report.INTERNAL: _internal}


def damaged_message(damage: StoreDamaged) -> str:
    """What a damaged cache database is, once it is set aside (the text and SARIF's)."""
    return f"the cache database {damage.path} {damage}; it was moved aside"


def _error_text(message: str, hint: str) -> str:
    return f"gradshard: error: {message}" + (f"\n  hint: {hint}" if hint else "")


def _one(text: str, stdout: str = "") -> Said:
    """An ending said in one text: the whole of stderr."""
    return Said(stdout, f"{text}\n", (text,))


def _document(known: Known, document: Callable[[], dict]) -> str:
    """--json's document as printed (built only when asked for)."""
    return json.dumps(document(), indent=2) + "\n" if known.json else ""
