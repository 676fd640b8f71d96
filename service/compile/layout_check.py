"""The compile layout, as read from the cache: the graph run's layout is a cache record, and
the cache is input (CI restores it), so the layout must name units, PCH kinds, sources,
headers and parts a layout can have before any of it becomes a path (`check_layout`).
"""

from __future__ import annotations

import re
from collections import Counter
from typing import TYPE_CHECKING

from gradshard.cache.objects.object_cache import is_key
from gradshard.cache.store.database import StoreDamaged, safe_relative_path
from gradshard.pipeline.layout.compile_layout import (PCH_KINDS, PRELUDE_PATH, CompileLayout,
                                                      CompileUnit)
from gradshard.pipeline.problems import InternalError

if TYPE_CHECKING:
    from gradshard.cache.store.database import Store

__all__ = ["check_layout"]

UNIT_NAME = re.compile(r"[A-Za-z0-9_-]+")  # Functions_formulas_00-11, python_functions_2


def check_layout(layout: CompileLayout, out_files: dict[str, str], store: Store | None) -> None:
    """A layout read from the cache is input: a unit's name becomes a file name in obj/, its
    PCH kind one in CACHE/pch/, its sources, headers and parts are looked up. A layout naming
    anything a layout cannot (`../x`, `/abs/x`, a file it does not hold) is damaged or
    crafted: the cache database is set aside (as for --out's names: build.cache_damage)
    before any of it is acted on. Its file names are checked where they are written
    (sync_outputs)."""
    problem = layout_problem(layout, out_files)
    if problem is not None:
        raise layout_damage(problem, store)


def layout_damage(problem: str, store: Store | None) -> Exception:
    """Without a cache the layout is the pipeline's own, so a bad one is a bug."""
    if store is None:
        return InternalError(f"the compile layout {problem}")
    return StoreDamaged(f"holds a compile layout that {problem}", store.path)


def layout_problem(layout: CompileLayout, out_files: dict[str, str]) -> str | None:
    """What the layout names that no layout can, or None."""
    if not all(isinstance(name, str) and is_key(digest) for name, digest in layout.files):
        return "lists files that are not names with their hashes"
    files = dict(layout.files)
    for unit in layout.units:
        problem = unit_problem(unit, files, out_files, frozenset())
        if problem is not None:
            return problem
    unit_names = frozenset(u.name for u in layout.units)
    for unit in layout.merged:
        problem = unit_problem(unit, files, out_files, unit_names)
        if problem is not None:
            return problem
    return shared_problem(layout, files)


def unit_problem(unit: CompileUnit, files: dict[str, str], out_files: dict[str, str],
                 parts: frozenset[str]) -> str | None:
    """What is wrong with one unit; `parts`: the names its parts may have (units only)."""
    if not (isinstance(unit.name, str) and UNIT_NAME.fullmatch(unit.name)):
        return f"names a unit {unit.name!r}, which is not a unit name"
    if unit.pch not in PCH_KINDS:
        return (f"gives {unit.name} the precompiled header {unit.pch!r}, which is none of "
                f"{', '.join(PCH_KINDS)}")
    if not source_held(unit, files, out_files):
        return f"gives {unit.name} the source {unit.source!r}, which it does not hold"
    header = next((h for h in unit.headers if not (isinstance(h, str) and h in files)), None)
    if header is not None:
        return f"gives {unit.name} the header {header!r}, which it does not hold"
    part = next((p for p in unit.parts if not (isinstance(p, str) and p in parts)), None)
    if part is not None:
        return f"gives {unit.name} the part {part!r}, which is none of its units"
    if not record_types_hold(unit):
        return f"describes {unit.name} with values of the wrong kinds"
    return None


def source_held(unit: CompileUnit, files: dict[str, str], out_files: dict[str, str]) -> bool:
    """A source in the compile directory is one of the layout's files; one compiled from
    --out (as it is) is one of the build's files there, as a path inside --out."""
    if unit.from_out is True:
        return safe_relative_path(unit.source) is not None and is_key(out_files.get(unit.source))
    return unit.from_out is False and isinstance(unit.source, str) and unit.source in files


def record_types_hold(unit: CompileUnit) -> bool:
    """What compile errors are placed by (a node per first line) and compiles are ordered by
    (size) is of the kinds they are used as."""
    return (all(isinstance(n, str) for n in unit.nodes)
            and all(type(line) is int for line in unit.node_lines)
            and len(unit.node_lines) <= len(unit.nodes) and type(unit.size) is int)


def shared_problem(layout: CompileLayout, files: dict[str, str]) -> str | None:
    """Names given twice (one object file for two units), and the files every PCH key
    hashes."""
    names = Counter(u.name for u in (*layout.units, *layout.merged))
    twice = next((name for name, count in names.items() if count > 1), None)
    if twice is not None:
        return f"names the unit {twice} twice"
    needed = [PRELUDE_PATH, *(f"pch/{u.pch}.h" for u in (*layout.units, *layout.merged))]
    missing = next((path for path in needed if path not in files), None)
    if missing is not None:
        return f"does not hold {missing}, which its units need"
    return None
