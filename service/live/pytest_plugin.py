"""A pytest plugin (entry point `pytest11`: gradshard): `pytest --gradshard-spec DIR` runs any
test suite (a user's, or PyTorch's own gradient tests) against the installed torch with the
spec's edited kernels patched in (service/live/api.py), from the start of the session to its
end. Without the option the plugin does nothing (and imports nothing heavy).
"""

from __future__ import annotations

import pytest

from gradshard.service.options import (PYTEST, PYTEST_GROUP, PYTEST_GROUP_TITLE, argument_settings,
                                       options_of)

__all__ = ["pytest_addoption"]

_PATCH = "_gradshard_patch"


def pytest_addoption(parser) -> None:
    """The plugin's options, from the table of every command's options (service/options.py;
    standard library only, as this module must be: pytest loads it in every run)."""
    group = parser.getgroup(PYTEST_GROUP, PYTEST_GROUP_TITLE)
    for option in options_of(PYTEST):
        group.addoption(*option.flags, **argument_settings(option))


def pytest_configure(config) -> None:
    spec = config.getoption("gradshard_spec")
    if spec is None:
        return
    from gradshard.pipeline.problems import GradshardError
    from gradshard.service.live.api import patch

    manager = patch(spec=spec, names=config.getoption("gradshard_op"),
                    cache=config.getoption("gradshard_cache"))
    try:
        plan = manager.__enter__()
    except GradshardError as error:
        raise pytest.UsageError(f"gradshard: {error}") from None
    setattr(config, _PATCH, (manager, plan))


def pytest_report_header(config) -> list[str]:
    found = getattr(config, _PATCH, None)
    if found is None:
        return []
    plan = found[1]
    patched = ", ".join(op.name for op in plan.patched) or "none"
    lines = [f"gradshard: patched ops: {patched} (compared with {plan.baseline})"]
    lines += [f"gradshard: not patched: {op.name}: {op.reason}" for op in plan.ops if op.reason]
    return lines


def pytest_unconfigure(config) -> None:
    found = getattr(config, _PATCH, None)
    if found is not None:
        found[0].__exit__(None, None, None)
