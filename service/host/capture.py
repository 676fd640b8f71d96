"""FileManager's writes kept in memory, and templates read fresh: the files of a generation
come out exactly as the generator assembles them, and nothing lands on disk.

torchgen writes every file through `FileManager._write_if_changed(filename, contents)` and reads
every template through `torchgen.utils._read_template(path)`; both are replaced for the
worker's whole life (`install`):

- a write under the generation's output directory is kept by its posix name there
  (`templates/VariableType.cpp`, VariableType's first stage, among them); a write anywhere
  else is refused (`OutsideOutput`), as no autograd generator writes there;
- a template under the output directory is the captured first stage (gen_variable_type's
  second FileManager reads it back from `out/templates`); any other is read from its file
  each time. torchgen's own `_read_template` is `functools.cache`d by path: a warm worker
  would substitute into an edited template's old text.

A file's substitution (`CodeTemplate.substitute` of a template read so: a whole file's text,
its lists indented line by line, ~0.5 s a generation in all) is memoized by the template's text
and the environment's digest (keys.py), in the worker's memory: a formula's edit substitutes
again the one shard whose environment changed. What the last generation used is kept.

Standard library and the generator's torchgen only: this module runs in the host worker.
"""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath
from typing import Any

from gradshard.service.host.keys import ArgumentKeys, KeyRefused

__all__ = ["CapturedFiles", "OutsideOutput"]


class OutsideOutput(Exception):
    """The generator wrote a file outside the output directory it was given."""


class CapturedFiles:
    """The files one generation writes, under `out` (an absolute path, the generators'
    install directory; nothing is written there)."""

    def __init__(self) -> None:
        self.out = ""
        self.files: dict[str, str] = {}
        self.substituted: dict[str, str] = {}  # (template, environment) digest → text
        self._earlier: dict[str, str] = {}  # the last generation's
        self.substitutions = {"hits": 0, "runs": 0}

    def begin_generation(self, out: str) -> None:
        self.out = os.path.normpath(out)
        self.files = {}
        self._earlier, self.substituted = self.substituted, {}
        self.substitutions = {"hits": 0, "runs": 0}

    def substitute(self, template: Any, substitute: Any, env: Any, kwargs: dict) -> str:
        """`template.substitute(env, **kwargs)` (the generator's own method), memoized."""
        try:
            key = ArgumentKeys().key("substitute", (template.pattern, env), kwargs)
        except KeyRefused:
            return substitute(template, env, **kwargs)
        text = self.substituted.get(key)
        if text is None:
            text = self._earlier.get(key)
        if text is None:
            text = substitute(template, env, **kwargs)
            self.substitutions["runs"] += 1
        else:
            self.substitutions["hits"] += 1
        self.substituted[key] = text
        return text

    def install(self) -> None:
        import torchgen.utils
        from torchgen.code_template import CodeTemplate

        captured = self
        substitute = CodeTemplate.substitute

        class FileTemplate(CodeTemplate):
            """A template read from a file: its substitutions memoized."""

            def substitute(self, env: Any = None, **kwargs: Any) -> str:
                return captured.substitute(self, substitute, env, kwargs)

        def write_if_changed(_manager: object, filename: str | os.PathLike,
                             contents: str) -> None:
            captured.files[captured.name_of(filename)] = contents

        def read_template(template_fn: str | os.PathLike) -> CodeTemplate:
            name = captured.name_of(template_fn, outside_ok=True)
            if name is not None and name in captured.files:
                return FileTemplate(captured.files[name], os.fspath(template_fn))
            with open(template_fn) as file:  # as CodeTemplate.from_file reads it
                return FileTemplate(file.read(), os.fspath(template_fn))

        torchgen.utils.FileManager._write_if_changed = write_if_changed  # type: ignore
        torchgen.utils._read_template = read_template  # type: ignore[assignment]

    def name_of(self, path: str | os.PathLike, outside_ok: bool = False) -> str | None:
        """The posix name of `path` under the output directory."""
        relative = os.path.relpath(os.path.normpath(os.fspath(path)), self.out)
        if relative == os.curdir or relative.split(os.sep, 1)[0] == os.pardir:
            if outside_ok:
                return None
            raise OutsideOutput(f"the generator wrote {os.fspath(path)}, outside its output "
                                f"directory {self.out}")
        return PurePosixPath(Path(relative)).as_posix()
