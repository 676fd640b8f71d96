"""The language server's settings: the command line's (`gradshard lsp --cache DIR
--debounce MS`, filled from [tool.gradshard] and the environment as every command's are:
service/config_file.py), then the editor's initializationOptions over them."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

__all__ = ["DEBOUNCE", "EditorSettings"]

# Seconds a change waits for the next before the buffers are checked: a burst of keystrokes
# is checked once, after its last (a check of an edited formula takes 0.1 to 0.25 s warm)
DEBOUNCE = 0.05


@dataclass(frozen=True)
class EditorSettings:
    cache: Path
    debounce: float = DEBOUNCE
    use_daemon: bool = True  # ask the spec's daemon when one runs
    jobs: int = 0  # try's parallel compiles (0: the processors)
    problems: tuple[str, ...] = field(default=())  # what was wrong in the options given

    def overridden(self, options: object) -> EditorSettings:
        """These settings with the editor's initializationOptions over them: `cache` (a
        directory), `debounce` (milliseconds), `daemon` (true/false), `jobs`; an option of
        the wrong kind is left out and said (problems)."""
        if options is None:
            return self
        if not isinstance(options, dict):
            return replace(self, problems=("initializationOptions is not an object: ignored",))
        changes, problems = {}, []
        for key, value in options.items():
            try:
                changes.update(_option(key, value))
            except (TypeError, ValueError) as error:
                problems.append(f"initializationOptions.{key}: {error}: ignored")
        return replace(self, **changes, problems=tuple(problems))


def _option(key: str, value: object) -> dict:
    if key == "cache":
        if not isinstance(value, str) or not value:
            raise TypeError("expected a directory")
        return {"cache": Path(value).expanduser().absolute()}
    if key == "debounce":
        number = isinstance(value, (int, float)) and not isinstance(value, bool)
        if not number or not 0 <= value <= 10_000:
            raise ValueError("expected milliseconds from 0 to 10000")
        return {"debounce": value / 1000}
    if key == "daemon":
        if not isinstance(value, bool):
            raise TypeError("expected true or false")
        return {"use_daemon": value}
    if key == "jobs":
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError("expected a count of compiles (0: the processors)")
        return {"jobs": value}
    raise ValueError("unknown option (cache, debounce, daemon, jobs)")
