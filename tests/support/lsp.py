"""The language server's tests drive a real `gradshard lsp` process over stdio, as an editor
does (pytest-lsp's client): this is the client's start and the small steps every test takes
(open, replace the text, wait for the diagnostics of one file)."""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
import sys
from pathlib import Path

from lsprotocol import types as lsp
from pygls.uris import from_fs_path
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

__all__ = ["Editor", "gradshard_command", "start_editor"]

WAIT = 300.0  # seconds for one answer: the first check of a spec is a cold build


def gradshard_command(*words: str) -> list[str]:
    return [sys.executable, "-m", "gradshard.service.entry", *words]


def run_gradshard(*words: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(gradshard_command(*words), capture_output=True, text=True,
                          cwd=cwd, timeout=900)


class Published(dict):
    """The client's diagnostics by URI (pytest-lsp sets them on each publish), counting the
    publishes of each: a wait for the next one misses none that arrive together."""

    def __init__(self) -> None:
        super().__init__()
        self.counts: dict[str, int] = {}

    def __setitem__(self, uri: str, diagnostics) -> None:
        super().__setitem__(uri, diagnostics)
        self.counts[uri] = self.counts.get(uri, 0) + 1


class Editor:
    """A client connected to a server, with the texts it has open."""

    def __init__(self, client: LanguageClient) -> None:
        self.client = client
        self.published = client.diagnostics = Published()
        self.versions: dict[str, int] = {}
        self.texts: dict[str, str] = {}

    async def open(self, path: Path) -> str:
        """Open a file (its text from disk); its first diagnostics are waited for."""
        uri = from_fs_path(str(path))
        text = path.read_text(encoding="utf-8")
        self.versions[uri], self.texts[uri] = 1, text
        waiting = self._next_diagnostics(uri)
        self.client.text_document_did_open(lsp.DidOpenTextDocumentParams(
            text_document=lsp.TextDocumentItem(uri=uri, language_id="yaml", version=1,
                                               text=text)))
        await waiting
        return uri

    async def replace(self, uri: str, old: str, new: str) -> list[lsp.Diagnostic]:
        """One edit of the buffer (as an incremental change, its range in UTF-16 columns),
        and the diagnostics published after it."""
        text = self.texts[uri]
        assert text.count(old) >= 1, old
        at = text.index(old)
        start, end = _position(text, at), _position(text, at + len(old))
        self.texts[uri] = text[:at] + new + text[at + len(old):]
        self.versions[uri] += 1
        waiting = self._next_diagnostics(uri)
        self.client.text_document_did_change(lsp.DidChangeTextDocumentParams(
            text_document=lsp.VersionedTextDocumentIdentifier(version=self.versions[uri],
                                                              uri=uri),
            content_changes=[lsp.TextDocumentContentChangePartial(
                range=lsp.Range(start=start, end=end), text=new)]))
        return await waiting

    def _next_diagnostics(self, uri: str) -> asyncio.Task:
        """The next diagnostics published for `uri` (waited for from now)."""
        before = self.published.counts.get(uri, 0)

        async def wait() -> list[lsp.Diagnostic]:
            while self.published.counts.get(uri, 0) == before:
                await asyncio.sleep(0.005)
            return list(self.published[uri])

        return asyncio.ensure_future(asyncio.wait_for(wait(), WAIT))

    @contextlib.asynccontextmanager
    async def mistake(self, uri: str, old: str, new: str):
        """The buffer with `old` replaced by a mistake, `new`: its diagnostics yielded, then
        the mistake undone, which must clear them."""
        found = await self.replace(uri, old, new)
        yield found
        assert await self.replace(uri, new, old) == [], "undoing the mistake clears it"

    async def hover(self, uri: str, line: int, character: int) -> str | None:
        found = await asyncio.wait_for(self.client.text_document_hover_async(lsp.HoverParams(
            text_document=lsp.TextDocumentIdentifier(uri=uri),
            position=lsp.Position(line=line, character=character))), WAIT)
        return found.contents.value if found is not None else None

    async def lenses(self, uri: str) -> list[lsp.CodeLens]:
        return await asyncio.wait_for(self.client.text_document_code_lens_async(
            lsp.CodeLensParams(text_document=lsp.TextDocumentIdentifier(uri=uri))), WAIT)

    def line_of(self, uri: str, text: str) -> int:
        """The line (from 0) of the first line of the buffer that is `text`."""
        return self.texts[uri].split("\n").index(text)


def _position(text: str, offset: int) -> lsp.Position:
    before = text[:offset]
    line = before.count("\n")
    column = before[before.rfind("\n") + 1:]
    return lsp.Position(line=line, character=len(column.encode("utf-16-le")) // 2)


async def start_editor(*words: str, options: dict | None = None, root: Path | None = None,
                       env: dict[str, str] | None = None) -> Editor:
    """A `gradshard lsp` process (with these words, in this environment) and its initialized
    client."""
    client = await ClientServerConfig(server_command=gradshard_command("lsp", *words),
                                      server_env=env).start()

    @client.feature(lsp.WORKSPACE_CODE_LENS_REFRESH)
    def refresh(params: None) -> None:
        """The lenses are asked for by the tests themselves."""
    await client.initialize_session(lsp.InitializeParams(
        capabilities=client_capabilities("visual-studio-code"),
        root_uri=from_fs_path(str(root)) if root else None, initialization_options=options))
    return Editor(client)
