"""The compile cache's entries, recorded in the store (cache/objects/entries.py).

With a store, each entry of the compile cache (a PCH, an object, a merged unit's baseline,
the header memo) is a row of it: the entries a build uses are taken before ninja runs (gc
then leaves them) and recorded (size, content hash, last use, toolchain and header set)
after, so `stats` counts them and `gc --max-size` bounds them with the rest.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import xxhash

from gradshard.cache.objects import entries as compile_entries
from gradshard.cache.objects.entries import EntryUse
from gradshard.cache.store.directory import BASELINES, HEADER_MEMO, object_entry, pch_entry
from gradshard.pipeline.layout.compile_layout import CompileLayout
from gradshard.service.compile.build_files import pch_report
from gradshard.service.compile.ninja import read_outcome
from gradshard.service.compile.plan import CompilePlan, PreparedUnit
from gradshard.service.compile.report import CompileReport
from gradshard.service.compile.splice import baseline_path

if TYPE_CHECKING:
    from gradshard.cache.store.database import Store

__all__ = ["EntryLedger"]

@dataclass(frozen=True)
class EntryLedger:
    """Where a build with a store records the entries it uses: which, before ninja runs (gc
    then leaves them), and their files, after. The wrappers under ninja never open SQLite."""

    store: Store
    build: int
    plan: CompilePlan
    fingerprint: str

    @classmethod
    def of(cls, store: Store | None, build: int, plan: CompilePlan,
           fingerprint: str) -> EntryLedger | None:
        """None without a store: a build without one has no entries to record."""
        if store is None:
            return None
        compile_entries.ensure_tables(store)
        return cls(store, build, plan, fingerprint)

    def hold(self, layout: CompileLayout, edges: list[PreparedUnit],
             merged: list[PreparedUnit], pch_headers: dict[str, Path]) -> None:
        compile_entries.hold(self.store, self.build, str(self.plan.directory.resolve()),
                             self.uses(layout, edges, merged, pch_headers, None))

    def record(self, layout: CompileLayout, edges: list[PreparedUnit],
               merged: list[PreparedUnit], pch_headers: dict[str, Path],
               report: CompileReport) -> None:
        compile_entries.record(self.store, self.build, self.plan.cache,
                               self.uses(layout, edges, merged, pch_headers, report))

    def uses(self, layout: CompileLayout, edges: list[PreparedUnit], merged: list[PreparedUnit],
             pch_headers: dict[str, Path], report: CompileReport | None) -> list[EntryUse]:
        """Every entry the edges read or write: the PCHs, each edge's object (a splice's
        too, and the stored object it splices over), the merged units' baselines, the memo;
        with the run's report, which of them it served and which it made."""
        toolchain = xxhash.xxh3_128_hexdigest(self.plan.toolchain.identity().encode())
        depends = {"toolchain": toolchain, "headers": self.fingerprint}
        uses = [EntryUse("header_memo", HEADER_MEMO, "")]
        for header in pch_headers.values():
            served = None if report is None else self.pch_served(header)
            uses.append(EntryUse("pch", pch_entry(header.parent.name), header.parent.name,
                                 served=served, **depends))
        for p in edges:
            uses += edge_uses(p, report, depends)
        for whole in merged:
            path = baseline_path(self.plan, layout, whole.unit, whole.pch)
            uses.append(EntryUse("baseline", f"{BASELINES}/{path.name}", path.stem, **depends))
        return uses

    def pch_served(self, header: Path) -> bool:
        """A PCH was served unless this run built it (no record: its edge found it)."""
        return read_outcome(self.plan.directory / f"{pch_report(header)}.how").get(
            "how") != "compiled"


def edge_uses(p: PreparedUnit, report: CompileReport | None,
              depends: dict[str, str]) -> list[EntryUse]:
    """An edge's object, and a splice's stored object it links over (which it reads only)."""
    served = None if report is None else _served(p.unit.name, report)
    uses = [EntryUse("splice" if p.is_splice else "object", object_entry(p.key), p.key,
                     served=served, **depends)]
    if p.is_splice:
        base = Path(p.base).stem
        uses.append(EntryUse("object", object_entry(base), base, **depends))
    return uses


def _served(name: str, report: CompileReport) -> bool | None:
    """True: the object cache served the edge; False: it ran; None: ninja found it done."""
    if name in report.cached:
        return True
    return False if name in report.compiled or name in report.spliced else None
