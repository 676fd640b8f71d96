"""A pytest plugin (entry point `pytest11`: gradshard): `pytest --gradshard-spec DIR` runs any
test suite (a user's, or PyTorch's own gradient tests) against the installed torch with the
spec's edited kernels patched in (service/live/api.py), from the start of the session to its
end. Without the option the plugin does nothing (and imports nothing heavy).
"""

from __future__ import annotations

import pytest

_PATCH = "_gradshard_patch"


def pytest_addoption(parser) -> None:
    group = parser.getgroup("gradshard", "gradshard: run against edited autograd formulas")
    group.addoption("--gradshard-spec", metavar="DIR", default=None,
                    help="patch the ops whose generated code this spec changes into torch")
    group.addoption("--gradshard-op", metavar="NAME", action="append", default=[],
                    help="patch this op (repeatable), changed or not")
    group.addoption("--gradshard-cache", metavar="DIR", default=None,
                    help="gradshard's cache directory (default: as for gradshard)")


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
