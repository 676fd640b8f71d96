"""The language server and the daemon: where a daemon runs for the spec and cache, the
server's questions go to it (its requests `analyse`, `hover`, `lenses`: the same answers as
the server's own session gives), and the server says who checks the spec; `--no-daemon` and a
daemon of another spec leave the server to its own session."""

from __future__ import annotations

import json
import socket

import pytest
from lsprotocol import types as lsp
from support.daemon import daemon  # noqa: F401 (the fixture)
from support.lsp import start_editor
from support.specs import DERIVATIVES

from gradshard.pipeline.problems import SpecFile
from gradshard.service.daemon.runtime import daemon_paths
from gradshard.service.editor.buffers import SpecBuffers
from gradshard.service.editor.queries import answer_query
from gradshard.service.files.spec_location import locate_spec
from gradshard.service.session import Session

FORMULA = "  self: mul_tensor_backward(grad, other, self.scalar_type())"
TYPO = "  self: mul_tensor_backward(grad, othr, self.scalar_type())"


def ask(daemon, request: dict) -> dict:  # noqa: F811 (the fixture's name)
    """One request on the daemon's socket, its progress lines skipped."""
    paths = daemon_paths(daemon.spec.resolve(), daemon.cache.resolve())
    with socket.socket(socket.AF_UNIX) as connection:
        connection.settimeout(120)
        connection.connect(str(paths.socket))
        connection.sendall(json.dumps(request).encode() + b"\n")
        with connection.makefile("rb") as lines:
            for line in lines:
                answer = json.loads(line)
                if "progress" not in answer:
                    return answer
    raise AssertionError("the daemon closed the connection unanswered")


def buffers_with_typo(daemon) -> SpecBuffers:  # noqa: F811
    text = (daemon.spec / DERIVATIVES).read_text()
    return SpecBuffers(locate_spec(str(daemon.spec))).with_text(
        SpecFile.DERIVATIVES, text.replace(FORMULA, TYPO, 1))


def test_the_daemon_answers_as_the_session_does(daemon, tmp_path, monkeypatch):  # noqa: F811
    monkeypatch.setenv("XDG_RUNTIME_DIR", daemon.env["XDG_RUNTIME_DIR"])  # its socket's
    buffers = buffers_with_typo(daemon)
    session = Session(tmp_path / "own-cache")
    try:
        for kind, extra in (("analyse", {}),
                            ("hover", {"file": "derivatives.yaml",
                                       "name": "mul.Tensor(Tensor self, Tensor other) -> Tensor"}),
                            ("lenses", {})):
            request = {"request": kind, **buffers.to_json(), **extra}
            answered = ask(daemon, request)
            assert answered["ok"], answered
            assert answered == answer_query(kind, request, session), kind
    finally:
        session.close()
    assert [d["rule"] for d in answered_analysis(daemon, buffers)] == ["derivatives.formula-name"]
    refused = ask(daemon, {"request": "analyse", "spec": str(locate_spec(None).root),
                           "buffers": {}})
    assert refused["ok"] is False and "serves the spec at" in refused["error"]
    bad = ask(daemon, {"request": "hover", "spec": str(daemon.spec), "buffers": {"x": 1}})
    assert bad["ok"] is False and "buffer" in bad["error"]


def answered_analysis(daemon, buffers: SpecBuffers) -> list[dict]:  # noqa: F811
    return ask(daemon, {"request": "analyse", **buffers.to_json()})["diagnostics"]


@pytest.mark.asyncio
async def test_the_server_asks_the_spec_s_daemon_and_says_so(daemon):  # noqa: F811
    for words, who in (((), "its daemon"), (("--no-daemon",), "this server's own session")):
        editor = await start_editor("--cache", str(daemon.cache), *words, env=daemon.env)
        try:
            uri = await editor.open(daemon.spec / DERIVATIVES)
            found = await editor.replace(uri, FORMULA, TYPO)
            assert [d.code for d in found] == ["derivatives.formula-name"]
            said = [m.message for m in editor.client.log_messages
                    if m.type == lsp.MessageType.Info]
            assert f"gradshard: the spec at {daemon.spec} is checked by {who}" in said, said
        finally:
            await editor.client.shutdown_session()
