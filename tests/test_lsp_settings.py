"""The language server's settings as the CLI reads them: `cache` from [tool.gradshard] of the
directory the editor starts it in, and the editor's initializationOptions over it (a bad one
said, not fatal); and a spec file the server must not read (a FIFO)."""

from __future__ import annotations

import asyncio
import os
import shutil
import sys

import pytest
from lsprotocol import types as lsp
from pygls.uris import from_fs_path
from pytest_lsp import ClientServerConfig, client_capabilities
from support.lsp import Editor
from support.specs import DERIVATIVES, MINI_SPEC

START_IN = ("import os, sys; os.chdir(sys.argv[1]); sys.argv[1:] = ['lsp']; "
            "from gradshard.service.entry import run; run()")


async def editor_in(directory, options: dict | None) -> Editor:
    """A server started in `directory`, as an editor opened there starts it."""
    client = await ClientServerConfig(
        server_command=[sys.executable, "-c", START_IN, str(directory)]).start()
    await client.initialize_session(lsp.InitializeParams(
        capabilities=client_capabilities("neovim"), initialization_options=options))
    return Editor(client)


@pytest.mark.asyncio
@pytest.mark.parametrize("options", [None, {"cache": "OTHER", "debounce": "fast"}])
async def test_the_cache_comes_from_the_project_file_and_the_editor_may_override(
        tmp_path, options, monkeypatch):
    monkeypatch.delenv("GRADSHARD_CACHE")  # the environment is over the file
    project = tmp_path / "project"
    spec = project / "spec"
    shutil.copytree(MINI_SPEC, spec)
    (project / "pyproject.toml").write_text('[tool.gradshard]\ncache = "from-the-file"\n')
    if options is not None:
        options = {**options, "cache": str(tmp_path / "from-the-editor")}
    editor = await editor_in(project, options)
    try:
        uri = await editor.open(spec / DERIVATIVES)
        assert list(editor.published[uri]) == []
        if options is None:
            assert (project / "from-the-file").is_dir()
        else:
            assert (tmp_path / "from-the-editor").is_dir()
            assert not (project / "from-the-file").exists()
            said = [m.message for m in editor.client.messages]
            assert any("initializationOptions.debounce" in m for m in said), said
    finally:
        await editor.client.shutdown_session()


@pytest.mark.asyncio
async def test_a_fifo_in_place_of_a_spec_file_is_said_and_blocks_nothing(tmp_path):
    """native_functions.yaml a FIFO nobody writes: the check says so, and neither it nor a
    definition that would read the file waits on it."""
    spec = tmp_path / "spec"
    shutil.copytree(MINI_SPEC, spec)
    native = spec / "ATen" / "native" / "native_functions.yaml"
    native.unlink()
    os.mkfifo(native)
    editor = await editor_in(tmp_path, {"cache": str(tmp_path / "cache")})
    try:
        uri = from_fs_path(str(spec / DERIVATIVES))
        text = (spec / DERIVATIVES).read_text()
        editor.client.text_document_did_open(lsp.DidOpenTextDocumentParams(
            text_document=lsp.TextDocumentItem(uri=uri, language_id="yaml", version=1,
                                               text=text)))
        for _ in range(600):
            if editor.client.messages:
                break
            await asyncio.sleep(0.05)
        [said] = editor.client.messages
        assert said.type == lsp.MessageType.Error and "native_functions.yaml" in said.message
        line = text.split("\n").index(
            "- name: mul.Tensor(Tensor self, Tensor other) -> Tensor")
        found = await asyncio.wait_for(editor.client.text_document_definition_async(
            lsp.DefinitionParams(text_document=lsp.TextDocumentIdentifier(uri=uri),
                                 position=lsp.Position(line=line, character=3))), 10)
        assert found is None
    finally:
        await editor.client.shutdown_session()
