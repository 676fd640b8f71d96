"""`gradshard lsp` through a real server process over stdio (pytest-lsp's client, as an editor
speaks to it), on a copy of the packaged spec and a cache built once for the module: the
diagnostics follow the unsaved buffer (a typo in a formula, an unknown op name, broken YAML)
at their UTF-16 ranges and clear when fixed; hover, definitions, completion; the code lenses'
counts against `gradshard affected --json` after the same edit; and the server's end."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
from pathlib import Path

import pytest
import pytest_asyncio
from lsprotocol import types as lsp
from pygls.uris import from_fs_path
from support.lsp import Editor, gradshard_command, run_gradshard, start_editor
from support.specs import DERIVATIVES, NATIVE, stage_packaged_spec

pytestmark = pytest.mark.slow
IN_LOOP = pytest.mark.asyncio(loop_scope="module")  # the module's server is one loop's

SIN_FORMULA = "  self: grad * self.cos().conj()"
SIN_NAME = "- name: sin(Tensor self) -> Tensor"
MODULE = {"loop_scope": "module", "scope": "module"}


class Workspace:
    def __init__(self, spec: Path, cache: Path, editor: Editor) -> None:
        self.spec, self.cache, self.editor = spec, cache, editor
        self.derivatives = from_fs_path(str(spec / DERIVATIVES))


@pytest_asyncio.fixture(**MODULE)
async def workspace(tmp_path_factory):
    """The spec built once by the CLI (so that the server's first check finds its cache
    warm, as an editor opened on a built checkout does), then a server on it."""
    root = tmp_path_factory.mktemp("lsp")
    _, spec = stage_packaged_spec(root / "stage")
    cache = root / "cache"
    built = run_gradshard("build", "--codegen-only", "--spec", str(spec), "--cache", str(cache),
                          "--out", str(root / "out"))
    assert built.returncode == 0, built.stderr
    editor = await start_editor("--cache", str(cache), "--no-daemon", root=root)
    found = Workspace(spec, cache, editor)
    assert await editor.open(spec / DERIVATIVES) == found.derivatives
    yield found
    await editor.client.shutdown_session()
    assert editor.client._server.returncode == 0  # noqa: SLF001 (its process's status)


@IN_LOOP
async def test_a_typo_in_a_formula_is_found_at_its_utf16_range_and_cleared_when_fixed(workspace):
    editor, uri = workspace.editor, workspace.derivatives
    assert list(editor.client.diagnostics[uri]) == [], "the packaged spec has no problem"
    # a character outside the BMP before the typo: two UTF-16 units, one character
    typo = "  self: grad * /* \U0001d6c1 */ sef.cos().conj()"
    async with editor.mistake(uri, SIN_FORMULA, typo) as found:
        line = editor.line_of(uri, typo)
        assert [d.code for d in found] == ["derivatives.formula-name"]
        diagnostic = found[0]
        start = len(typo[:typo.index("sef")].encode("utf-16-le")) // 2
        assert diagnostic.range == lsp.Range(start=lsp.Position(line=line, character=start),
                                             end=lsp.Position(line=line, character=start + 3))
        assert diagnostic.severity == lsp.DiagnosticSeverity.Error  # as `check` reports it
        assert diagnostic.source == "gradshard" and "'sef'" in diagnostic.message
        assert "did you mean 'self'?" in diagnostic.related_information[0].message


@IN_LOOP
async def test_an_unknown_op_name_is_an_error_at_its_entry(workspace):
    editor, uri = workspace.editor, workspace.derivatives
    wrong = "- name: sinn(Tensor self) -> Tensor"
    async with editor.mistake(uri, SIN_NAME, wrong) as found:
        line = editor.line_of(uri, wrong)
        assert found and all(d.severity == lsp.DiagnosticSeverity.Error for d in found)
        assert line in {d.range.start.line for d in found}, found
        assert any("sinn" in d.message for d in found), found


@IN_LOOP
async def test_broken_yaml_is_said_and_hover_keeps_the_last_good_analysis(workspace):
    editor, uri = workspace.editor, workspace.derivatives
    broken = "  self: [grad * self.cos().conj()"
    async with editor.mistake(uri, SIN_FORMULA, broken) as found:
        assert [d.code for d in found] == ["yaml.syntax"]
        hover = await editor.hover(uri, editor.line_of(uri, broken), 4)
        assert hover is not None and "SinBackward0" in hover


@IN_LOOP
async def test_hover_on_sins_formula_shows_its_node_saved_values_and_cpp(workspace):
    editor, uri = workspace.editor, workspace.derivatives
    hover = await editor.hover(uri, editor.line_of(uri, SIN_FORMULA), 10)
    assert "sin(Tensor self) -> Tensor" in hover
    assert "**SinBackward0** [Default]" in hover and "ForeachSinBackward0" in hover
    assert "- saved: `self`: `at::Tensor`" in hover, hover[:400]
    # the formula's C++ as Functions.cpp holds it
    functions = (workspace.spec.parent.parent.parent / "out" / "Functions.cpp").read_text()
    code = hover.split("```cpp\n", 1)[1].split("\n```", 1)[0]
    assert code.startswith("static variable_list SinBackward0_apply_functional(")
    assert code in functions


@IN_LOOP
async def test_hover_on_a_native_function_shows_its_variants_and_derivative(workspace):
    editor = workspace.editor
    uri = await editor.open(workspace.spec / NATIVE)
    hover = await editor.hover(uri, editor.line_of(uri, "- func: sin(Tensor self) -> Tensor"), 3)
    assert "variants: function, method" in hover
    assert "derivative: entry `sin` (its own entry): `SinBackward0` [Default]" in hover
    nothing = await editor.hover(uri, editor.line_of(uri, "- func: empty_like(Tensor self, *, "
                                                    "ScalarType? dtype=None, Layout? layout=None,"
                                                    " Device? device=None, bool? pin_memory=None,"
                                                    " MemoryFormat? memory_format=None) -> "
                                                    "Tensor"), 3)
    assert "derivative: none" in nothing


@IN_LOOP
async def test_definitions_between_the_files_and_into_functions_manual(workspace):
    editor, uri = workspace.editor, workspace.derivatives
    client = editor.client

    async def definition(uri: str, line: int, character: int) -> lsp.Location:
        return await client.text_document_definition_async(lsp.DefinitionParams(
            text_document=lsp.TextDocumentIdentifier(uri=uri),
            position=lsp.Position(line=line, character=character)))

    helper_line = "  self: handle_r_to_c(self.scalar_type(), grad)"
    target = await definition(uri, editor.line_of(uri, helper_line), 12)
    header = Path(target.uri.removeprefix("file://"))
    assert header.name == "FunctionsManual.h"
    assert "handle_r_to_c(" in header.read_text().split("\n")[target.range.start.line]
    native = from_fs_path(str(workspace.spec / NATIVE))
    target = await definition(uri, editor.line_of(uri, SIN_NAME), 10)
    assert target.uri == native
    native_text = (workspace.spec / NATIVE).read_text().split("\n")
    assert native_text[target.range.start.line] == "- func: sin(Tensor self) -> Tensor"
    if native not in editor.texts:
        await editor.open(workspace.spec / NATIVE)
    back = await definition(native, target.range.start.line, 3)
    assert back.uri == uri and back.range.start.line == editor.line_of(uri, SIN_NAME)
    # sin_'s functional entry
    back = await definition(native, native_text.index("- func: sin_(Tensor(a!) self) -> "
                                                      "Tensor(a!)"), 3)
    assert back.range.start.line == editor.line_of(uri, SIN_NAME)


@IN_LOOP
async def test_completion_in_formulas(workspace):
    editor, uri = workspace.editor, workspace.derivatives
    client = editor.client

    async def labels(line: str) -> set[str]:
        found = await client.text_document_completion_async(lsp.CompletionParams(
            text_document=lsp.TextDocumentIdentifier(uri=uri),
            position=lsp.Position(line=editor.line_of(uri, line), character=len(line))))
        return {item.label for item in found.items}

    backward = await labels(SIN_FORMULA)
    assert {"self", "grad", "grads", "result", "handle_r_to_c"} <= backward
    assert "self_t" not in backward  # a tangent only in forward formulas
    forward = await labels("  result: other_t * self_p + self_t * other_p")
    assert {"self_t", "other_p", "self", "result"} <= forward
    assert "grad" not in forward
    assert await labels(SIN_NAME) == set()  # not in a formula


@IN_LOOP
async def test_code_lens_counts_equal_affected_after_the_same_edit(workspace):
    editor, uri = workspace.editor, workspace.derivatives
    title = await _sin_lens(editor, uri)
    # at most: the kernels reading its infos (sin.out's too), their files and Everything's
    assert title.startswith("footprint: 2 nodes · 5 kernels · 10 files · ")
    edited = "  self: grad * self.cos().conj() * 2"
    await editor.replace(uri, SIN_FORMULA, edited)
    title = await _settled_lens(editor, uri)
    path = workspace.spec / DERIVATIVES
    on_disk = path.read_bytes()
    path.write_text(on_disk.decode().replace(SIN_FORMULA, edited, 1))
    try:
        answer = run_gradshard("affected", "--json", "--tests", "--spec", str(workspace.spec),
                               "--cache", str(workspace.cache))
    finally:
        path.write_bytes(on_disk)
    assert answer.returncode == 0, answer.stderr
    report = json.loads(answer.stdout)
    tests = len(report["tests"]["ids"])
    assert title == (f"this edit: {len(report['autograd_nodes'])} nodes · "
                     f"{len(report['kernels'])} kernels · {len(report['files'])} files · "
                     f"{tests} tests")
    assert (len(report["autograd_nodes"]), len(report["kernels"]), len(report["files"])) == \
        (2, 4, 6) and tests > 0
    await editor.replace(uri, edited, SIN_FORMULA)
    assert (await _sin_lens(editor, uri)).startswith("footprint: ")


async def _sin_lens(editor: Editor, uri: str) -> str:
    line = editor.line_of(uri, SIN_NAME)
    lenses = [lens for lens in await editor.lenses(uri) if lens.range.start.line == line]
    assert [lens.command.title for lens in lenses][1:] == ["try"]
    assert lenses[1].command.command == "gradshard.try"
    assert list(lenses[1].command.arguments) == [uri, "sin"]
    return lenses[0].command.title


async def _settled_lens(editor: Editor, uri: str) -> str:
    """sin's footprint lens once its tests part is known (the gradient index is observed on
    the server's tests thread the first time)."""
    for _ in range(600):
        title = await _sin_lens(editor, uri)
        if not title.endswith("finding…"):
            return title
        await asyncio.sleep(1)
    raise AssertionError(f"the tests part stayed unknown: {title}")


@IN_LOOP
async def test_a_file_outside_every_spec_gets_nothing(workspace, tmp_path):
    editor = workspace.editor
    stray = tmp_path / "derivatives.yaml"
    stray.write_text("- name: sin(Tensor self) -> Tensor\n  self: nonsense(\n")
    uri = from_fs_path(str(stray))
    editor.client.text_document_did_open(lsp.DidOpenTextDocumentParams(
        text_document=lsp.TextDocumentItem(uri=uri, language_id="yaml", version=1,
                                           text=stray.read_text())))
    assert await editor.hover(uri, 1, 4) is None
    assert not await editor.lenses(uri)
    assert uri not in editor.client.diagnostics
    assert not [m for m in editor.client.messages if m.type == lsp.MessageType.Error]


def test_the_server_ends_when_its_input_closes_leaving_no_process(tmp_path):
    """An editor that dies closes the server's stdin: the server and what it started end."""
    server = subprocess.Popen(gradshard_command("lsp", "--cache", str(tmp_path / "cache")),
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE)
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                       "params": {"processId": None, "rootUri": None, "capabilities": {}}})
    server.stdin.write(f"Content-Length: {len(body)}\r\n\r\n{body}".encode())
    server.stdin.flush()
    header = server.stdout.readline()
    assert header.startswith(b"Content-Length:"), header
    server.stdin.close()
    assert server.wait(timeout=30) == 0, server.stderr.read()
    with pytest.raises(ProcessLookupError):  # its process group is empty
        os.killpg(server.pid, 0)
