"""The language server's `try` code lens (service/editor/try_run.py): sin tried with an
unsaved buffer whose formula is twice too large, on an overlay of the spec (the session's try
workspace: its PCH and compiler, conftest.py), gives FAIL on the formula's line as a
diagnostic of its own kind, streams its progress, says so when clicked again while it runs,
and leaves the file on disk as it was."""

from __future__ import annotations

import asyncio

import pytest
from lsprotocol import types as lsp
from support.lsp import WAIT, start_editor
from support.specs import DERIVATIVES

pytestmark = pytest.mark.slow

SIN_FORMULA = "  self: grad * self.cos().conj()"
WRONG = "  self: grad * self.cos().conj() * 2"


@pytest.mark.asyncio
async def test_try_on_an_unsaved_buffer_fails_on_the_formulas_line(try_workspace):
    spec, cache = try_workspace
    path = spec / DERIVATIVES
    before, stamp = path.read_bytes(), path.stat().st_mtime_ns
    editor = await start_editor("--cache", str(cache), "--no-daemon")
    try:
        uri = await editor.open(path)
        await editor.replace(uri, SIN_FORMULA, WRONG)
        line = editor.line_of(uri, WRONG)
        running = asyncio.ensure_future(_try(editor, uri))
        await asyncio.sleep(0.5)
        again = await _try(editor, uri)  # a second click while one runs
        assert again["ok"] is False and "is running" in again["error"]
        answer = await asyncio.wait_for(running, WAIT * 3)
        assert answer["ok"], answer
        verdicts = {v["op"]: v for v in answer["verdicts"]}
        assert verdicts["sin"]["verdict"] == "FAIL"
        assert verdicts["sin"]["line"] == line + 1
        assert "largest error" in verdicts["sin"]["message"]
        found = editor.published[uri]
        fails = [d for d in found if d.code == "try.fail"]
        assert [d.range.start.line for d in fails] == [line]
        assert fails[0].source == "gradshard try" and "FAIL sin" in fails[0].message
        assert any("is running" in m.message for m in editor.client.messages)
        # the progress: try's lines as they came, its verdicts at its end
        reports = [getattr(value, "message", None) or ""
                   for values in editor.client.progress_reports.values() for value in values]
        assert any(m.startswith("gradshard try: compared with") for m in reports), reports
        assert reports[-1] == "FAIL sin", reports
    finally:
        await editor.client.shutdown_session()
    assert path.read_bytes() == before and path.stat().st_mtime_ns == stamp


async def _try(editor, uri: str) -> dict:
    return await editor.client.workspace_execute_command_async(lsp.ExecuteCommandParams(
        command="gradshard.try", arguments=[uri, "sin"]))
