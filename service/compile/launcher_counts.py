"""What the compiler launcher's cache served in one build, counted for that build alone.

A shared sccache server's or ccache directory's totals mix every build on the machine (and
a remote backend's, every runner's), so a difference of totals is not this build's. Instead:
- sccache: the build's compiles go through a server of its own (SCCACHE_SERVER_PORT: a free
  port; the storage, local or remote, is the user's as configured), whose statistics are
  this build's, read before it is stopped;
- ccache: each compile appends its result to a log of this build's (CCACHE_STATSLOG).
Other launchers (distcc, a wrapper) cache nothing gradshard can count: no counts.

The units gradshard's object cache serves never reach the launcher: the build's report
counts those itself (CompileReport.cached).
"""

from __future__ import annotations

import json
import socket
import subprocess
from dataclasses import dataclass
from pathlib import Path

__all__ = ["LauncherCounts", "LauncherTally", "launcher_tally"]

# the launcher's own answers are short; one that hangs must not hang the build
LAUNCHER_TIMEOUT = 60
CCACHE_HITS = frozenset({"direct_cache_hit", "preprocessed_cache_hit"})
CCACHE_MISS = "cache_miss"


@dataclass(frozen=True)
class LauncherCounts:
    """The units the launcher served from its cache (hits) and compiled (misses) in one
    build; `other`: compiles it neither served nor cached (not cacheable, errors)."""

    launcher: str
    hits: int
    misses: int
    other: int = 0
    note: str = ""  # why the counts are missing or partial

    def to_json(self) -> dict:
        return {"launcher": self.launcher, "hits": self.hits, "misses": self.misses,
                "other": self.other, "note": self.note}

    def text(self) -> str:
        counts = f"{self.launcher}: {self.hits} hits, {self.misses} misses"
        counts += f", {self.other} not cached" if self.other else ""
        return counts + (f" ({self.note})" if self.note else "")


class LauncherTally:
    """One build's counting: the environment its compiles run in, then the counts."""

    name = ""

    def environment(self, environ: dict[str, str]) -> dict[str, str]:
        return environ

    def finish(self) -> LauncherCounts | None:
        return None


class SccacheTally(LauncherTally):
    name = "sccache"

    def __init__(self, program: str) -> None:
        self.program = program
        self.port = _free_port()
        self.started = False
        self.env: dict[str, str] = {}

    def environment(self, environ: dict[str, str]) -> dict[str, str]:
        # a socket path of the user's would take the place of the port: dropped for the build
        own = {k: v for k, v in environ.items() if k != "SCCACHE_SERVER_UDS"}
        env = dict(own, SCCACHE_SERVER_PORT=str(self.port))
        done = self._run(["--start-server"], env)
        self.started = done is not None and done.returncode == 0
        if not self.started:  # the compiles go to the user's server, uncounted
            self._run(["--stop-server"], env)
            return environ
        self.env = env
        return env

    def finish(self) -> LauncherCounts | None:
        if not self.started:
            return LauncherCounts(self.name, 0, 0, note="its server for this build did not "
                                                        "start: its compiles were not counted")
        done = self._run(["--show-stats", "--stats-format", "json"], self.env)
        self._run(["--stop-server"], self.env)
        try:
            stats = json.loads(done.stdout)["stats"] if done is not None else None
        except (ValueError, KeyError, TypeError):
            stats = None
        if not isinstance(stats, dict):
            return LauncherCounts(self.name, 0, 0, note="its statistics could not be read")
        hits, misses = _count(stats, "cache_hits"), _count(stats, "cache_misses")
        executed = stats.get("requests_executed", 0)
        other = max(0, executed - hits - misses) if isinstance(executed, int) else 0
        return LauncherCounts(self.name, hits, misses, other)

    def _run(self, words: list[str], env: dict[str, str]) -> subprocess.CompletedProcess | None:
        try:
            return subprocess.run([self.program, *words], env=env, capture_output=True,
                                  text=True, timeout=LAUNCHER_TIMEOUT)
        except (OSError, subprocess.TimeoutExpired):
            return None


class CcacheTally(LauncherTally):
    name = "ccache"

    def __init__(self, log: Path) -> None:
        self.log = log

    def environment(self, environ: dict[str, str]) -> dict[str, str]:
        self.log.unlink(missing_ok=True)
        return dict(environ, CCACHE_STATSLOG=str(self.log))

    def finish(self) -> LauncherCounts | None:
        try:
            text = self.log.read_text(errors="replace")
        except OSError:
            text = ""  # no compile reached ccache
        hits = misses = other = 0
        for results in _ccache_records(text):
            if results & CCACHE_HITS:
                hits += 1
            elif CCACHE_MISS in results:
                misses += 1
            else:
                other += 1
        return LauncherCounts(self.name, hits, misses, other)


def _ccache_records(text: str) -> list[set[str]]:
    """The stats log's records: each a `# <source>` line, then one result per line."""
    records: list[set[str]] = []
    for line in text.splitlines():
        if line.startswith("# "):
            records.append(set())
        elif records and line.strip():
            records[-1].add(line.strip())
    return records


def launcher_tally(launcher: tuple[str, ...], directory: Path) -> LauncherTally:
    """The counting for this launcher (the compile directory keeps ccache's log)."""
    program = Path(launcher[0]).name if launcher else ""
    if program == "sccache":
        return SccacheTally(launcher[0])
    if program == "ccache":
        return CcacheTally(directory / "ccache-stats.log")
    return LauncherTally()


def _count(stats: dict, key: str) -> int:
    """A total of sccache's statistics (a shape other than 0.9's counts as none)."""
    value = stats.get(key)
    counts = value.get("counts") if isinstance(value, dict) else None
    return sum(v for v in counts.values() if isinstance(v, int)) if isinstance(counts, dict) else 0


def _free_port() -> int:
    """A loopback port free now (sccache binds it when its server starts)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]
