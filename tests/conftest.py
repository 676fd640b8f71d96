"""Fixtures and hooks only: what test modules share otherwise is in tests/support."""

from __future__ import annotations

from pathlib import Path

import pytest

from gradshard.service.spec_location import locate_spec


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch) -> Path:
    """Every test gets its own gradshard cache; the user's is never touched."""
    cache = tmp_path / "gradshard-cache"
    monkeypatch.setenv("GRADSHARD_CACHE", str(cache))
    return cache


@pytest.fixture(scope="session")
def packaged_spec() -> Path:
    """The real 2.13 spec shipped inside the installed torchgen (the dev extra installs it)."""
    return locate_spec(None).root

