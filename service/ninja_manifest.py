"""The ninja build files gradshard writes (the build's compile: service/compile/ninja.py;
`try`'s patches: service/live/patch_build.py), written with the ninja package's own ninja_syntax
(its Writer and escape_path), and ninja's own errors about them told from a command's.

Two quotings meet in a build file:

- In a `build` line a path is ninja's: a space, a colon and a `$` are escaped (`$ `, `$:`,
  `$$`) and `|` is spelled through a variable (ninja has no escape for it: even inside a
  word it starts the implicit inputs), so any path is one path.
- A command is run by ninja through `/bin/sh -c` (ninja has no argv form on POSIX), so
  each argument is quoted for the shell (shlex.quote), then every `$` is doubled for ninja:
  a path holding a space, a quote or `$(…)` stays one argument and runs nothing. `$in` and
  `$out` ninja quotes for the shell itself.

A line break has no spelling in either: a path holding one is refused.
"""

from __future__ import annotations

import io
import re
import shlex
from pathlib import Path
from typing import Mapping, Sequence

from ninja import ninja_syntax

from gradshard.cache.errors import UsageError
from gradshard.pipeline.problems import InternalError

__all__ = ["Manifest", "build_file_error", "command_text"]

# as the compile's build.ninja always asked: an older ninja refuses the file in its own words
REQUIRED_VERSION = "1.10"
# the variable a path's `|` is spelled through (set at the top of every build file)
BAR = "gradshard_vertical_bar"
# Writer wraps a long line at a space ninja does not escape, and ninja drops the leading
# whitespace of the continuation: inside a shell-quoted argument holding two spaces, one
# would be lost. No line is wrapped.
UNWRAPPED = 1 << 62


def command_text(words: Sequence[str | Path]) -> str:
    """Literal arguments of a command: each quoted for /bin/sh, then `$` doubled for ninja.
    ninja runs a command with `/bin/sh -c` (it has no argv form): quoting each argument is
    what makes it one argument, whatever its path holds."""
    return ninja_syntax.escape(" ".join(shlex.quote(_one_line(str(word))) for word in words))


def _for_escape_path(path: str) -> str:
    """`path` made ready for escape_path, which escapes a space, a colon and a `$` before a
    space, but leaves every other `$` to be read as a variable and every `|` to cut the
    path: those `$` are doubled first, and each `|` becomes the variable BAR holding it."""
    doubled = re.sub(r"\$(?! )", "$$", _one_line(path))
    return doubled.replace("|", "${" + BAR + "}")


def _one_line(text: str) -> str:
    if "\n" in text or "\r" in text:
        raise UsageError(f"a path holds a line break, which a ninja build file cannot hold: "
                         f"{text!r}", "rename the directory, or choose another (--out, --cache, "
                         "--compile-dir; $GRADSHARD_TRY_DIR for `try`)")
    return text


class Manifest:
    """A build file being written: rules, then `build` lines whose paths it escapes."""

    def __init__(self, title: str) -> None:
        self._text = io.StringIO()
        self._writer = ninja_syntax.Writer(self._text, width=UNWRAPPED)
        self._writer.comment(title)
        self._writer.newline()
        self._writer.variable("ninja_required_version", REQUIRED_VERSION)
        self._writer.variable(BAR, "|")
        self._writer.newline()

    def variable(self, name: str, value: str) -> None:
        """A variable of the whole file; `value` is ninja text (command_text's, or a path's)."""
        self._writer.variable(name, value)

    def rule(self, name: str, command: str, description: str, *, depfile: str | None = None,
             deps: str | None = None, restat: bool = False) -> None:
        """`command` is ninja text: command_text's literal words and ninja's variables."""
        self._writer.rule(name, command, description=description, depfile=depfile,
                          deps=deps, restat=restat)
        self._writer.newline()

    def build(self, outputs: Sequence[str | Path], rule: str,
              inputs: Sequence[str | Path] = (), implicit: Sequence[str | Path] = (),
              variables: Mapping[str, str] | None = None) -> None:
        """An edge; `variables` are ninja text (command_text's)."""
        self._writer.build([_for_escape_path(str(p)) for p in outputs], rule,
                           [_for_escape_path(str(p)) for p in inputs],
                           implicit=[_for_escape_path(str(p)) for p in implicit] or None,
                           variables=dict(variables or {}))
        self._writer.newline()

    def text(self) -> str:
        return self._text.getvalue()

    def data(self) -> bytes:
        """The file's bytes: a path that is not UTF-8 (os.fsdecode's surrogates) is written as
        the bytes it names."""
        return self.text().encode(errors="surrogateescape")


# ninja's own error about the file it was given (`-f FILE`, or build.ninja under -C): a line
# it could not parse (`FILE:LINE: what`) or the file it could not load
_PARSE = "ninja: error: {file}:(?P<line>[0-9]+): (?P<what>.*)"
_LOADING = "ninja: error: loading '{file}': (?P<what>.*)"


def build_file_error(output: str, given: str, path: Path) -> InternalError | None:
    """ninja's refusal of the build file gradshard wrote (`given`: its name as ninja was told
    it; `path`: where it is), from ninja's output: never the compiler's or the spec's fault.
    None when ninja did not refuse it (a command failed, or nothing did)."""
    for pattern in (_PARSE, _LOADING):
        found = re.search("^" + pattern.format(file=re.escape(given)) + "$", output,
                          re.MULTILINE)
        if found:
            at = f" at line {found['line']}" if "line" in found.groupdict() else ""
            return InternalError(
                f"ninja refused gradshard's own build file {path}{at}: {found['what'].strip()}"
                " (a bug in gradshard, not the compiler's nor the spec's: please report it "
                "with that file)")
    return None
