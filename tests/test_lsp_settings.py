"""The language server's settings as the CLI reads them: `cache` from [tool.gradshard] of the
directory the editor starts it in, and the editor's initializationOptions over it (a bad one
said, not fatal)."""

from __future__ import annotations

import shutil
import sys

import pytest
from lsprotocol import types as lsp
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
