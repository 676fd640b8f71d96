#!/usr/bin/env python3
"""`gradshard lsp` through a real client (pytest-lsp's, over stdio, as an editor speaks to
it), against what a developer runs today to see the same problems: `gradshard check` on the
saved spec, in a fresh process, on the same warm cache, after the same edit (the anchor,
measured in this run).

On a copy of the spec that the cache has seen (`gradshard build --codegen-only` first), with
the server's default debounce (50 ms, service/editor/settings.py: DEBOUNCE), which every
keystroke figure includes:

  server start       the process started → its initialize answered (the editor waits for
                     it once; no goal)
  first diagnostics  didOpen of derivatives.yaml → its publishDiagnostics, the server just
                     started (its session opens, the spec's build is read from the cache)
                     goal <= 2 s
  keystroke          a few characters typed at the end of sin's formula (one didChange,
                     each a text not seen before) → the publishDiagnostics after it; each
                     keystroke waits for the one before
                     goal <= 0.3 s
  hover              textDocument/hover on sin's formula → its answer (schema, nodes, C++)
                     goal <= 0.1 s

Each keystroke and hover figure is the median of --repeat * 10 of them (their slowest is
printed too); the anchor is the median of --repeat checks. Every keystroke's diagnostics
are checked: a typed name that is no name gives one finding, the fix none.

    python benchmarks/bench_lsp.py [--spec DIR] [--repeat N]
"""

from __future__ import annotations

import asyncio
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import benchmark_args, compile_bytecode, copy_spec
from lsprotocol import types as lsp
from pygls.uris import from_fs_path
from pytest_lsp import ClientServerConfig, client_capabilities

GOALS = {"first diagnostics": 2.0, "keystroke": 0.3, "hover": 0.1}  # seconds
FORMULA = "  self: grad * self.cos().conj()"  # sin's backward formula
DERIVATIVES = "autograd/derivatives.yaml"


def gradshard(*words: str) -> list[str]:
    """The command, through the console script as users run it (else the module)."""
    script = Path(sys.executable).with_name("gradshard")
    launcher = [str(script)] if script.exists() else [sys.executable, "-m",
                                                      "gradshard.service.entry"]
    return [*launcher, *words]


def run(*words: str) -> float:
    command = gradshard(*words)
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if done.returncode not in (0, 1):
        sys.exit(f"{' '.join(command)} exited {done.returncode}:\n{done.stderr[-2000:]}")
    return seconds


class Published(dict):
    """The client's diagnostics by URI, counting each URI's publishes."""

    def __init__(self) -> None:
        super().__init__()
        self.counts: dict[str, int] = {}

    def __setitem__(self, uri, diagnostics) -> None:
        super().__setitem__(uri, diagnostics)
        self.counts[uri] = self.counts.get(uri, 0) + 1

    async def next(self, uri: str, before: int) -> list:
        while self.counts.get(uri, 0) == before:
            await asyncio.sleep(0.001)
        return list(self[uri])


async def editor_figures(spec: Path, cache: Path, repeat: int) -> dict[str, list[float]]:
    started = time.perf_counter()
    client = await ClientServerConfig(
        server_command=gradshard("lsp", "--cache", str(cache), "--no-daemon")).start()
    published = client.diagnostics = Published()

    @client.feature(lsp.WORKSPACE_CODE_LENS_REFRESH)
    def refresh(params: None) -> None:
        """Lenses are not measured here."""

    await client.initialize_session(lsp.InitializeParams(
        capabilities=client_capabilities("visual-studio-code")))
    server_start = time.perf_counter() - started
    path = spec / DERIVATIVES
    uri, text = from_fs_path(str(path)), path.read_text()
    line = text.split("\n").index(FORMULA)
    figures: dict[str, list[float]] = {"server start": [server_start],
                                       "first diagnostics": [], "keystroke": [], "hover": []}
    started = time.perf_counter()
    client.text_document_did_open(lsp.DidOpenTextDocumentParams(
        text_document=lsp.TextDocumentItem(uri=uri, language_id="yaml", version=1, text=text)))
    if await published.next(uri, 0):
        sys.exit("the unedited spec has diagnostics")
    figures["first diagnostics"].append(time.perf_counter() - started)
    version, column, tail = 1, len(FORMULA), ""
    for k in range(repeat * 10):
        # a new buffer each time (a text seen before is answered from memory): ` + q<k>`
        # typed after the formula (q<k> is no name: one finding), then ` * <k>` in its place
        # (none), alternately
        typed = f" + q{k}" if k % 2 == 0 else f" * {k}"
        version += 1
        before = published.counts[uri]
        change = lsp.TextDocumentContentChangePartial(
            range=lsp.Range(start=lsp.Position(line=line, character=column),
                            end=lsp.Position(line=line, character=column + len(tail))),
            text=typed)
        tail = typed
        started = time.perf_counter()
        client.text_document_did_change(lsp.DidChangeTextDocumentParams(
            text_document=lsp.VersionedTextDocumentIdentifier(version=version, uri=uri),
            content_changes=[change]))
        found = await published.next(uri, before)
        figures["keystroke"].append(time.perf_counter() - started)
        if len(found) != (1 if k % 2 == 0 else 0):
            sys.exit(f"keystroke {k}: {len(found)} diagnostics: {found}")
        started = time.perf_counter()
        hover = await client.text_document_hover_async(lsp.HoverParams(
            text_document=lsp.TextDocumentIdentifier(uri=uri),
            position=lsp.Position(line=line, character=4)))
        figures["hover"].append(time.perf_counter() - started)
        if hover is None or "SinBackward0" not in hover.contents.value:
            sys.exit(f"hover {k} shows no SinBackward0: {hover}")
    await client.shutdown_session()
    return figures


def anchor_check(spec: Path, cache: Path, repeat: int) -> float:
    """`gradshard check` after one formula's edit (a new edit each time), fresh processes."""
    path = spec / DERIVATIVES
    text = path.read_text()
    times = []
    try:
        for k in range(repeat):
            path.write_text(text.replace(FORMULA, FORMULA + " + q" + " * 2" * k, 1))
            times.append(run("check", "--spec", str(spec), "--cache", str(cache), "--json"))
    finally:
        path.write_text(text)
    return statistics.median(times)


def main() -> None:
    args = benchmark_args(__doc__.splitlines()[1])
    compile_bytecode()
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        spec, cache = copy_spec(args.location, root), root / "cache"
        if FORMULA not in (spec / DERIVATIVES).read_text():
            sys.exit(f"sin's formula is not {FORMULA.strip()!r} in this spec")
        run("build", "--codegen-only", "--spec", str(spec), "--cache", str(cache), "--out",
            str(root / "out"))
        anchor = anchor_check(spec, cache, args.repeat)
        figures = asyncio.run(editor_figures(spec, cache, args.repeat))
    print(f"gradshard check after one formula's edit (fresh process, warm cache): "
          f"{anchor:.3f} s (median of {args.repeat}); debounce 50 ms (included)")
    for name, times in figures.items():
        seconds, goal = statistics.median(times), GOALS.get(name)
        verdict = "" if goal is None else \
            f"  goal <= {goal} s: {'ok' if seconds <= goal else 'MISSED'}"
        print(f"  {name:18} {seconds:6.3f} s (slowest {max(times):.3f}, {len(times)} runs)  "
              f"{seconds / anchor:5.3f}x the check{verdict}")


if __name__ == "__main__":
    main()
