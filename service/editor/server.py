"""`gradshard lsp`: the language server (pygls over stdio; the editor starts it, one per
editor session).

    editor ──didOpen/didChange──► debounce ──► backend: analyse ──► publishDiagnostics
           ──hover / codeLens──────────────► backend: hover, lenses (the build's records)
           ──definition / completion────────► the texts alone (navigation.py)
           ──executeCommand gradshard.try───► try thread: `try` on an overlay ──► verdicts

Every open spec file is placed in its spec by the CLI's rules (service/files/spec_location.py);
a file outside every spec gets nothing. Each spec keeps its last accepted buffers, so that
hover and the code lenses go on while the text does not parse for a moment. The backend
(backend.py) asks the spec's daemon when one runs, else the server's own session.
"""

from __future__ import annotations

import asyncio
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote

from lsprotocol import types as lsp
from pygls.lsp.server import LanguageServer
from pygls.uris import from_fs_path, to_fs_path
from pygls.workspace import TextDocument

from gradshard.pipeline.problems import YAML_FILES, SpecFile
from gradshard.service.editor.backend import DAEMON, EditorBackend
from gradshard.service.editor.buffers import SpecBuffers, disk_text, spec_file_of
from gradshard.service.editor.navigation import (completions, definition_entry, formula_key,
                                                 helper_declaration, helpers_of)
from gradshard.service.editor.places import EntryAt, entry_at
from gradshard.service.editor.positions import from_utf16, identifier_span, line_of, to_utf16
from gradshard.service.editor.settings import EditorSettings
from gradshard.service.editor.tests_count import TestCounts
from gradshard.service.editor.try_run import TryVerdict
from gradshard.service.files.inputs import helpers_header
from gradshard.service.files.spec_location import SpecLocation

__all__ = ["SOURCE", "TRY_COMMAND", "TRY_SOURCE", "EditorServer", "build_server"]

SOURCE, TRY_SOURCE = "gradshard", "gradshard try"
TRY_COMMAND, FOOTPRINT_COMMAND = "gradshard.try", "gradshard.footprint"
_SEVERITY = {"error": lsp.DiagnosticSeverity.Error, "warning": lsp.DiagnosticSeverity.Warning}
_VERDICT_SEVERITY = {"PASS": lsp.DiagnosticSeverity.Information,
                     "FAIL": lsp.DiagnosticSeverity.Error,
                     "SKIP": lsp.DiagnosticSeverity.Warning}
_COMPLETION_KIND = {"argument": lsp.CompletionItemKind.Variable,
                    "gradient": lsp.CompletionItemKind.Variable,
                    "output": lsp.CompletionItemKind.Variable,
                    "helper": lsp.CompletionItemKind.Function}


@dataclass
class SpecState:
    """What the server holds of one spec: its last answers, and what runs for it."""

    location: SpecLocation
    accepted: SpecBuffers | None = None  # the last buffers the spec's checks accepted
    diagnostics: list[dict] = field(default_factory=list)  # the last analysis's
    verdicts: list[TryVerdict] = field(default_factory=list)  # the last try's
    published: set[str] = field(default_factory=set)  # URIs given diagnostics
    pending: asyncio.TimerHandle | None = None
    generation: int = 0
    trying: str | None = None  # the op a try runs for
    answered_by: str | None = None  # who answered its last analysis (backend.py: DAEMON…)
    error: str | None = None  # why its last analysis has no answer (a file it cannot read)


class EditorServer(LanguageServer):
    def __init__(self, settings: EditorSettings) -> None:
        super().__init__("gradshard", _version(),
                         text_document_sync_kind=lsp.TextDocumentSyncKind.Incremental)
        self.settings = settings
        self.backend: EditorBackend | None = None
        self.specs: dict[Path, SpecState] = {}
        self.places: dict[str, tuple[SpecLocation, SpecFile] | None] = {}
        self.try_thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="try")
        self.tests = TestCounts(settings.cache, self._lenses_changed)
        self.loop: asyncio.AbstractEventLoop | None = None  # the protocol's, once it runs

    # -- documents and their specs

    def place_of(self, uri: str) -> tuple[SpecLocation, SpecFile] | None:
        if uri not in self.places:
            path = to_fs_path(uri) if uri.startswith("file:") else None
            self.places[uri] = spec_file_of(Path(path)) if path else None
        return self.places[uri]

    def state_of(self, location: SpecLocation) -> SpecState:
        return self.specs.setdefault(location.root, SpecState(location))

    def buffers_of(self, location: SpecLocation) -> SpecBuffers:
        """The spec with the text of each of its open files."""
        buffers = SpecBuffers(location)
        for document in list(self.workspace.text_documents.values()):
            place = self.place_of(document.uri)
            if place is not None and place[0].root == location.root:
                buffers = buffers.with_text(place[1], document.source)
        return buffers

    def text_of(self, location: SpecLocation, file: SpecFile) -> str:
        """A spec file's text as the editor has it, else as it is on disk."""
        document = self.document(from_fs_path(str(location.path_of(file))))
        return document.source if document is not None else disk_text(location.path_of(file))

    def document(self, uri: str) -> TextDocument | None:
        """The open document of a URI (pygls keeps them by the URI unquoted), else None."""
        return self.workspace.text_documents.get(unquote(uri))

    # -- analysis

    def changed(self, uri: str, delay: float) -> None:
        """A document of a spec changed: the spec is checked after `delay` (none for a file
        outside every spec)."""
        place = self.place_of(uri)
        if place is not None:
            self.schedule(place[0], delay)

    def schedule(self, location: SpecLocation, delay: float) -> None:
        state = self.state_of(location)
        if state.pending is not None:
            state.pending.cancel()
        loop = asyncio.get_running_loop()
        state.pending = loop.call_later(
            delay, lambda: loop.create_task(self.analyse(location)))

    async def analyse(self, location: SpecLocation) -> None:
        state = self.state_of(location)
        state.pending = None
        state.generation += 1
        generation = state.generation
        buffers = self.buffers_of(location)
        answer = await asyncio.wrap_future(self.backend.submit("analyse", buffers))
        if generation != state.generation:
            return  # a newer analysis is on its way
        if answer.get("by") != state.answered_by:
            state.answered_by = answer.get("by")
            self.window_log_message(lsp.LogMessageParams(
                type=lsp.MessageType.Info,
                message=f"gradshard: the spec at {location.root} is checked by "
                        + ("its daemon" if state.answered_by == DAEMON
                           else "this server's own session")))
        if not answer.get("ok"):  # said once, not at every keystroke while it lasts
            error = f"gradshard: {answer.get('error')}" + (
                f" (hint: {answer['hint']})" if answer.get("hint") else "")
            if error != state.error:
                self.show_message(error, lsp.MessageType.Error)
            state.error = error
            return
        state.error = None
        if answer["accepted"]:
            state.accepted = buffers
        state.diagnostics = answer["diagnostics"]
        self.publish(state)
        self._lenses_changed()

    def publish(self, state: SpecState) -> None:
        """Every spec file's diagnostics (an empty list clears a file's old ones)."""
        location = state.location
        given = set()
        for file in YAML_FILES:
            uri = from_fs_path(str(location.path_of(file)))
            document = self.document(uri)
            uri = document.uri if document is not None else uri  # as the editor spells it
            found = [d for d in state.diagnostics if d["file"] == file.value]
            verdicts = state.verdicts if file is SpecFile.DERIVATIVES else []
            opened = document is not None
            if not found and not verdicts and not opened and uri not in state.published:
                continue
            text = self.text_of(location, file)
            diagnostics = [self.diagnostic(d, text, uri) for d in found]
            diagnostics += [self.verdict_diagnostic(v, text) for v in verdicts]
            self.text_document_publish_diagnostics(
                lsp.PublishDiagnosticsParams(uri=uri, diagnostics=diagnostics))
            if diagnostics:
                given.add(uri)
        state.published = given

    def diagnostic(self, found: dict, text: str, uri: str) -> lsp.Diagnostic:
        number = max((found["line"] or 1) - 1, 0)
        span = problem_range(line_of(text, number), number, found["column"])
        related = [lsp.DiagnosticRelatedInformation(
            location=lsp.Location(uri=uri, range=span), message=f"hint: {found['hint']}")
        ] if found["hint"] else None
        return lsp.Diagnostic(range=span, message=found["message"],
                              severity=_SEVERITY[found["severity"]], code=found["rule"],
                              source=SOURCE, related_information=related)

    def verdict_diagnostic(self, verdict: TryVerdict, text: str) -> lsp.Diagnostic:
        number = max((verdict.line or 1) - 1, 0)
        line = line_of(text, number)
        span = lsp.Range(start=lsp.Position(line=number, character=0),
                         end=lsp.Position(line=number, character=to_utf16(line, len(line))))
        return lsp.Diagnostic(range=span, message=verdict.message,
                              severity=_VERDICT_SEVERITY[verdict.verdict],
                              code=f"try.{verdict.verdict.lower()}", source=TRY_SOURCE)

    def show_message(self, message: str, kind: lsp.MessageType) -> None:
        self.window_show_message(lsp.ShowMessageParams(type=kind, message=message))

    def _lenses_changed(self) -> None:
        """Ask the editor for the code lenses again (when it can be asked)."""
        workspace = self.client_capabilities.workspace
        refresh = workspace.code_lens if workspace is not None else None
        if refresh is not None and refresh.refresh_support:
            self.loop_call(lambda: self.workspace_code_lens_refresh(None))

    def loop_call(self, call) -> None:
        """call() on the server's event loop, from any thread."""
        if self.loop is not None:
            self.loop.call_soon_threadsafe(call)


def problem_range(line: str, number: int, column: int | None) -> lsp.Range:
    """A problem's range on its line: the identifier at its column (a column not on one: that
    character), the line's text without its indent when it has no column."""
    if column is None:
        start = len(line) - len(line.lstrip())
        end = len(line.rstrip())
    else:
        start = min(column - 1, len(line))
        span = identifier_span(line, start)
        end = span.end if span is not None and span.start == start else min(start + 1, len(line))
    return lsp.Range(start=lsp.Position(line=number, character=to_utf16(line, start)),
                     end=lsp.Position(line=number, character=to_utf16(line, max(end, start))))


def _version() -> str:
    from gradshard.service.report.formats import installed_version

    return installed_version() or "unknown"


# ---------------------------------------------------------------------------------------------
# The features


def build_server(settings: EditorSettings) -> EditorServer:
    server = EditorServer(settings)

    @server.feature(lsp.INITIALIZE)
    def initialize(ls: EditorServer, params: lsp.InitializeParams) -> None:
        ls.loop = asyncio.get_running_loop()
        ls.settings = ls.settings.overridden(params.initialization_options)
        ls.backend = EditorBackend(ls.settings.cache, ls.settings.use_daemon)
        ls.tests.cache = ls.settings.cache

    @server.feature(lsp.INITIALIZED)
    def initialized(ls: EditorServer, params: lsp.InitializedParams) -> None:
        for problem in ls.settings.problems:
            ls.show_message(f"gradshard: {problem}", lsp.MessageType.Warning)

    # a document opened, changed (checked once its changes settle), saved or closed (its file
    # on disk again): its spec is checked
    @server.feature(lsp.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: EditorServer, params: lsp.DidOpenTextDocumentParams) -> None:
        ls.places.pop(params.text_document.uri, None)  # placed afresh: the file may be new
        ls.changed(params.text_document.uri, 0.0)

    @server.feature(lsp.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: EditorServer, params: lsp.DidChangeTextDocumentParams) -> None:
        ls.changed(params.text_document.uri, ls.settings.debounce)

    @server.feature(lsp.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls: EditorServer, params: lsp.DidSaveTextDocumentParams) -> None:
        ls.changed(params.text_document.uri, 0.0)

    @server.feature(lsp.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: EditorServer, params: lsp.DidCloseTextDocumentParams) -> None:
        ls.changed(params.text_document.uri, 0.0)

    @server.feature(lsp.TEXT_DOCUMENT_HOVER)
    async def hover(ls: EditorServer, params: lsp.HoverParams) -> lsp.Hover | None:
        found = _entry_of(ls, params.text_document.uri, params.position)
        if found is None:
            return None
        location, entry = found
        state = ls.state_of(location)
        buffers = state.accepted or ls.buffers_of(location)
        answer = await asyncio.wrap_future(ls.backend.submit(
            "hover", buffers, {"file": entry.file.value, "name": entry.name}))
        markdown = answer.get("markdown") if answer.get("ok") else None
        if not markdown:
            return None
        return lsp.Hover(contents=lsp.MarkupContent(kind=lsp.MarkupKind.Markdown, value=markdown))

    @server.feature(lsp.TEXT_DOCUMENT_DEFINITION)
    def definition(ls: EditorServer, params: lsp.DefinitionParams) -> lsp.Location | None:
        return _definition(ls, params.text_document.uri, params.position)

    @server.feature(lsp.TEXT_DOCUMENT_COMPLETION,
                    lsp.CompletionOptions(trigger_characters=["_"]))
    def completion(ls: EditorServer, params: lsp.CompletionParams) -> lsp.CompletionList:
        found = _entry_of(ls, params.text_document.uri, params.position)
        if found is None:
            return lsp.CompletionList(is_incomplete=False, items=[])
        location, entry = found
        items = [lsp.CompletionItem(label=c.label, kind=_COMPLETION_KIND[c.kind], detail=c.detail)
                 for c in completions(entry, helpers_of(helpers_header(location)))]
        return lsp.CompletionList(is_incomplete=False, items=items)

    @server.feature(lsp.TEXT_DOCUMENT_CODE_LENS)
    async def code_lens(ls: EditorServer, params: lsp.CodeLensParams) -> list[lsp.CodeLens]:
        place = ls.place_of(params.text_document.uri)
        if place is None or place[1] is not SpecFile.DERIVATIVES:
            return []
        location = place[0]
        answer = await asyncio.wrap_future(
            ls.backend.submit("lenses", ls.buffers_of(location)))
        if not answer.get("ok") or not answer.get("accepted"):
            return []
        return [lens for found in answer["lenses"]
                for lens in _lenses_of(ls, params.text_document.uri, found)]

    @server.command(TRY_COMMAND)
    async def try_command(ls: EditorServer, uri: str, label: str) -> dict:
        return await _try(ls, uri, label)

    @server.command(FOOTPRINT_COMMAND)
    def footprint_command(ls: EditorServer, *arguments) -> None:
        """The footprint lens's own command: it only shows its title."""

    @server.feature(lsp.SHUTDOWN)
    def shutdown(ls: EditorServer, *arguments) -> None:
        if ls.backend is not None:
            ls.backend.close()

    return server


def _entry_of(ls: EditorServer, uri: str, position: lsp.Position
              ) -> tuple[SpecLocation, EntryAt] | None:
    place = ls.place_of(uri)
    if place is None:
        return None
    location, file = place
    text = ls.workspace.get_text_document(uri).source
    entry = entry_at(file, text, position.line)
    return (location, entry) if entry is not None else None


def _definition(ls: EditorServer, uri: str, position: lsp.Position) -> lsp.Location | None:
    found = _entry_of(ls, uri, position)
    if found is None:
        return None
    location, entry = found
    if position.line == entry.line and entry.file in (SpecFile.DERIVATIVES,
                                                      SpecFile.NATIVE_FUNCTIONS):
        other = (SpecFile.NATIVE_FUNCTIONS if entry.file is SpecFile.DERIVATIVES
                 else SpecFile.DERIVATIVES)
        line = definition_entry(entry, ls.text_of(location, other))
        if line is None:
            return None
        return _at(location.path_of(other), line)
    if formula_key(entry) is None:
        return None
    text = ls.workspace.get_text_document(uri).source
    line = line_of(text, position.line)
    span = identifier_span(line, from_utf16(line, position.character))
    header = helpers_header(location)
    if span is None or header is None:
        return None
    declared = helper_declaration(header, line[span.start:span.end])
    return _at(header, declared) if declared is not None else None


def _at(path: Path, line: int) -> lsp.Location:
    start = lsp.Position(line=line, character=0)
    return lsp.Location(uri=from_fs_path(str(path)), range=lsp.Range(start=start, end=start))


def _lenses_of(ls: EditorServer, uri: str, found: dict) -> list[lsp.CodeLens]:
    start = lsp.Position(line=found["line"], character=0)
    span = lsp.Range(start=start, end=start)
    title = _footprint_title(found, ls.tests.words(found["ops"]))
    return [lsp.CodeLens(range=span, command=lsp.Command(title=title, command=FOOTPRINT_COMMAND,
                                             arguments=[found["entry"]])),
            lsp.CodeLens(range=span, command=lsp.Command(title="try", command=TRY_COMMAND,
                                             arguments=[uri, found["entry"]]))]


def _footprint_title(found: dict, tests: str) -> str:
    head = "this edit" if found["edited"] else "footprint"

    def count(number: int, what: str) -> str:
        return f"{number} {what}{'' if number == 1 else 's'}"

    return (f"{head}: {count(found['nodes'], 'node')} · {count(found['kernels'], 'kernel')} · "
            f"{count(found['files'], 'file')} · {tests}")


async def _try(ls: EditorServer, uri: str, label: str) -> dict:
    """`try` of an entry's op on the buffers, its progress reported, its verdicts placed."""
    place = ls.place_of(uri)
    if place is None:
        return {"ok": False, "error": f"{uri} is no spec file"}
    location = place[0]
    state = ls.state_of(location)
    if state.trying is not None:
        message = f"gradshard try: a try of {state.trying} is running; its verdict comes first"
        ls.show_message(message, lsp.MessageType.Info)
        return {"ok": False, "error": message}
    state.trying = label
    token = str(uuid.uuid4())
    progress = _Progress(ls, token, f"gradshard try {label}")
    await progress.start()
    try:
        future = ls.try_thread.submit(_run_try, ls.settings, ls.buffers_of(location), label,
                                      progress.report)
        verdicts, code, error = await asyncio.wrap_future(future)
    finally:
        state.trying = None
    if error:
        progress.end(error)
        ls.show_message(f"gradshard try {label}: {error}", lsp.MessageType.Error)
        return {"ok": False, "error": error}
    state.verdicts = verdicts
    ls.publish(state)
    summary = ", ".join(f"{v.verdict} {v.op}" for v in verdicts) or "nothing to try"
    progress.end(summary)
    return {"ok": True, "exit": code, "verdicts": [
        {"op": v.op, "verdict": v.verdict, "line": v.line, "message": v.message}
        for v in verdicts]}


def _run_try(settings: EditorSettings, buffers: SpecBuffers, label: str, report
             ) -> tuple[list[TryVerdict], int, str]:
    """On the try thread, with a session of its own (the analysis goes on meanwhile)."""
    from gradshard.pipeline.problems import GradshardError
    from gradshard.service.editor.try_run import try_in_editor
    from gradshard.service.session import Session

    session = Session(settings.cache)
    try:
        verdicts, code = try_in_editor(buffers, session, label, settings.jobs, report)
        return verdicts, code, ""
    except GradshardError as error:
        hint = getattr(error, "hint", "")
        return [], 0, f"{error}" + (f" ({hint})" if hint else "")
    finally:
        session.close()


class _Progress:
    """A try's progress in the editor (work done progress, when the editor takes it)."""

    def __init__(self, ls: EditorServer, token: str, title: str) -> None:
        self.ls, self.token, self.title = ls, token, title
        window = ls.client_capabilities.window
        self.enabled = bool(window is not None and window.work_done_progress)

    async def start(self) -> None:
        if not self.enabled:
            return
        try:
            await self.ls.work_done_progress.create_async(self.token)
        except Exception:  # noqa: BLE001 (an editor that refuses a token shows no progress)
            self.enabled = False
            return
        self.ls.work_done_progress.begin(self.token, lsp.WorkDoneProgressBegin(title=self.title))

    def report(self, line: str) -> None:
        """From the try thread: each line of try's text as it comes."""
        if self.enabled:
            self.ls.loop_call(lambda: self.ls.work_done_progress.report(
                self.token, lsp.WorkDoneProgressReport(message=line.strip())))

    def end(self, message: str) -> None:
        if self.enabled:
            self.ls.work_done_progress.end(self.token, lsp.WorkDoneProgressEnd(message=message))
