"""The layers, the rooms and the absence of import cycles, read from the sources with `ast`:
every import of every module of pipeline/, cache/, service/ and templates/, those inside
functions included (a function-level import is still a dependency, only a later one).

- pipeline/ is pure: it imports none of cache/ or service/; cache/ imports nothing of
  service/; templates/ (the emitted C++ text) imports nothing of ours.
- Between rooms (sub-packages), the rules of ROOM_RULES: each says which rooms one may not
  import, and why.
- No two of our modules import each other, directly or through others.
"""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path
from typing import NamedTuple, Sequence

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "gradshard"
# Each layer, and the layers it may import (itself included).
MAY_IMPORT = {
    "pipeline": {"pipeline"},
    "cache": {"pipeline", "cache"},
    "service": {"pipeline", "cache", "service"},
    "templates": set(),
}


@cache
def module_files() -> dict[str, Path]:
    """Every module of ours by its import name (gradshard.cache.store.database → cache/store/database.py)."""
    found = {}
    for layer in MAY_IMPORT:
        for path in sorted((ROOT / layer).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join((PACKAGE, *parts))] = path
    return found


def imported_names(node: ast.Import | ast.ImportFrom, module: str, is_package: bool) -> list[str]:
    """What one import statement names, absolute: the module, and `from X import Y`'s X.Y
    (a submodule when Y is one)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if node.level:
        package = module.split(".")
        base = package[:len(package) - node.level + (1 if is_package else 0)]
        origin = ".".join(base + ([node.module] if node.module else []))
    else:
        origin = node.module or ""
    return [origin] + [f"{origin}.{alias.name}" for alias in node.names]


def imports_of(tree: ast.AST, module: str) -> dict[str, int]:
    """Our modules that the tree (of `module`, or a part of it) imports, each with the line
    of its first import."""
    modules = module_files()
    is_package = modules[module].name == "__init__.py"
    found: dict[str, int] = {}
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for name in imported_names(node, module, is_package):
                if name in modules and name != module:
                    found.setdefault(name, node.lineno)
    return found


@cache
def parsed(module: str) -> ast.Module:
    path = module_files()[module]
    return ast.parse(path.read_text(), str(path))


@cache
def import_graph() -> dict[str, dict[str, int]]:
    return {module: imports_of(parsed(module), module) for module in module_files()}


def layer_of(module: str) -> str:
    return module.split(".")[1]


def upward_imports(graph: dict[str, dict[str, int]]) -> list[str]:
    modules = module_files()
    return [f"{modules[source].relative_to(ROOT)}:{line}: {layer_of(source)}/ imports {target}"
            for source, targets in graph.items() for target, line in targets.items()
            if layer_of(target) not in MAY_IMPORT[layer_of(source)]]


def strongly_connected(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """Tarjan's components of more than one module (iterative: no recursion limit)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            module, targets = work[-1]
            target = next(targets, None)
            if target is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[module])
                if low[module] == index[module]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == module:
                            break
                    if len(component) > 1:
                        components.append(sorted(component))
            elif target not in index:
                index[target] = low[target] = len(index)
                stack.append(target)
                on_stack.add(target)
                work.append((target, iter(sorted(graph[target]))))
            elif target in on_stack:
                low[module] = min(low[module], index[target])
    return components


def cycle_in(component: list[str], graph: dict[str, dict[str, int]]) -> list[str]:
    """One cycle through the component's first module: a shortest path back to it."""
    start = component[0]
    members = set(component)
    paths = {start: [start]}
    frontier = [start]
    while frontier:
        following = []
        for module in frontier:
            for target in sorted(graph[module]):
                if target == start:
                    return paths[module] + [start]
                if target in members and target not in paths:
                    paths[target] = paths[module] + [target]
                    following.append(target)
        frontier = following
    raise AssertionError(f"no cycle through {start} in {component}")


def described(component: list[str], graph: dict[str, dict[str, int]]) -> str:
    """One cycle of the component, each step at its line, and the component's other
    modules (each on a cycle too)."""
    modules = module_files()
    cycle = cycle_in(component, graph)
    steps = [f"{modules[a].relative_to(ROOT)}:{graph[a][b]} imports {b}"
             for a, b in zip(cycle, cycle[1:])]
    others = sorted(set(component) - set(cycle))
    return "\n    ".join([" → ".join(short(m) for m in cycle), *steps]
                         + ([f"(and through {', '.join(map(short, others))})"] if others else []))


def short(module: str) -> str:
    return module.removeprefix(PACKAGE + ".")


# (room, rooms it may not import, why). A room is a package prefix: every module in it.
ROOM_RULES = (
    ("pipeline.parse", ("pipeline.match", "pipeline.render", "pipeline.layout"),
     "parsing comes first: the later stages read its records"),
    ("pipeline.match", ("pipeline.render", "pipeline.layout"),
     "matching reads parsed records; rendering reads matches"),
    ("pipeline.render", ("pipeline.layout",),
     "the compile layout cuts rendered text, never the other way"),
    ("pipeline.records", ("pipeline.problems", "pipeline.schema", "pipeline.cpp",
                          "pipeline.parse", "pipeline.match", "pipeline.render",
                          "pipeline.layout"), "records are the base of every stage"),
    ("cache.engine", ("cache.graph", "cache.objects", "cache.maintenance"),
     "the engine runs any tasks; the build graph is one user of it"),
    ("cache.store", ("cache.engine", "cache.graph", "cache.objects", "cache.maintenance"),
     "the store keeps values; it knows no task and no compile"),
    ("cache.objects", ("cache.engine", "cache.graph", "cache.maintenance"),
     "the compile cache is files and rows, not tasks"),
    ("cache.errors", ("cache.engine", "cache.graph", "cache.store", "cache.objects",
                      "cache.maintenance"), "errors are raised by everything above them"),
    ("service.files", ("service.compile", "service.query", "service.report",
                       "service.daemon", "service.live", "service.gradient_tests",
                       "service.build", "service.session", "service.graph_run",
                       "service.open_cache", "service.cli"),
     "reading inputs and writing outputs is the bottom of the service"),
    ("service.generator", ("service.compile", "service.query", "service.report",
                           "service.daemon", "service.live", "service.gradient_tests",
                           "service.build", "service.session", "service.graph_run",
                           "service.cli"),
     "the generator check serves the build; it runs no graph and reports nothing itself"),
    ("service.compile", ("service.query", "service.report", "service.daemon", "service.live",
                         "service.gradient_tests", "service.session", "service.cli"),
     "the compile driver serves build and try; it calls neither"),
    ("service.query", ("service.live", "service.gradient_tests", "service.daemon",
                       "service.report", "service.cli"),
     "queries answer from the graph run; live patching and gradient tests build on them"),
    ("service.report", ("service.daemon", "service.live", "service.gradient_tests",
                        "service.query", "service.session", "service.cli"),
     "reports print results; they compute none"),
    ("service.live", ("service.daemon", "service.cli", "service.report",
                      "service.gradient_tests"),
     "try is reached by the CLI and the daemon, and reaches neither; the gradient test index "
     "calls try's samples as its worker does, not the other way"),
    ("service.gradient_tests", ("service.daemon", "service.cli", "service.report"),
     "affected --tests is reached by the CLI, and reaches neither it, the daemon nor the "
     "reports: its text is its own"),
    ("service.daemon", ("service.cli",), "the daemon serves the CLI's commands, not its parser"),
)


def room_violations(graph: dict[str, dict[str, int]]) -> list[str]:
    """Every import against ROOM_RULES, at its line."""
    modules = module_files()
    found = []
    for room, forbidden, why in ROOM_RULES:
        for source, targets in graph.items():
            if not in_room(source, room):
                continue
            for target, line in targets.items():
                hit = next((f for f in forbidden if in_room(target, f)), None)
                if hit is not None:
                    found.append(f"{modules[source].relative_to(ROOT)}:{line}: {short(source)} "
                                 f"imports {short(target)} ({room} may not import {hit}: {why})")
    return found


def in_room(module: str, room: str) -> bool:
    full = f"{PACKAGE}.{room}"
    return module == full or module.startswith(full + ".")


def test_the_walk_sees_every_layer_and_function_level_imports():
    """The graph itself: modules of each layer, an import, a function-level import (so that
    a walk that misses them cannot pass the tests below)."""
    graph = import_graph()
    assert {layer_of(m) for m in graph} == set(MAY_IMPORT)
    assert "gradshard.pipeline.problems" in graph["gradshard.cache.engine.core"]
    assert any(imports_of(function, module) for module in graph
               for function in ast.walk(parsed(module))
               if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef))), \
        "no function-level import found: the walk misses them"


def test_no_layer_imports_a_layer_above_it():
    upward = upward_imports(import_graph())
    assert not upward, "imports against the layers:\n" + "\n".join(upward)


def test_every_room_of_the_rules_exists():
    graph = import_graph()
    rooms = {room for rule in ROOM_RULES for room in (rule[0], *rule[1])}
    missing = sorted(r for r in rooms if not any(in_room(m, r) for m in graph))
    assert not missing, f"ROOM_RULES names rooms that do not exist: {missing}"


def test_no_room_imports_what_its_rule_forbids():
    found = room_violations(import_graph())
    assert not found, "imports against the room rules:\n" + "\n".join(found)


def test_a_forbidden_import_is_found():
    """The rule check itself, on the real graph with one import added against a rule (a
    query importing live patching), so that a check that finds nothing cannot pass."""
    graph = {module: dict(targets) for module, targets in import_graph().items()}
    graph["gradshard.service.query.show"]["gradshard.service.live.command"] = 1
    (found,) = room_violations(graph)
    assert "query/show.py:1: service.query.show imports service.live.command" in found


def test_no_import_cycles():
    graph = import_graph()
    cycles = [described(component, graph) for component in strongly_connected(graph)]
    assert not cycles, "import cycles:\n" + "\n".join(cycles)


# ---------------------------------------------------------------------------------------------
# Surfaces: each module's `__all__` names what other modules may use, each package's
# `__all__` the submodules other packages may import; no import of ours reaches past them
# (tests may: they test internals).


class Use(NamedTuple):
    """One use of another module of ours: `name` of `target` (None: the module itself)."""

    source: str
    line: int
    target: str
    name: str | None


@cache
def declared_surface(module: str) -> tuple[str, ...] | None:
    """The module's `__all__` (a literal list of strings at its top level), or None."""
    for node in parsed(module).body:
        if (isinstance(node, ast.Assign) and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name) and node.targets[0].id == "__all__"):
            return tuple(ast.literal_eval(node.value))
    return None


def bound_at_top(module: str) -> set[str]:
    """The names a module binds at its top level: what it defines, and what it imports (a
    shim such as service/patching.py re-exports its new home's names)."""
    names = set()
    for node in parsed(module).body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    return names


def is_package(module: str) -> bool:
    return module_files()[module].name == "__init__.py"


def children(package: str) -> set[str]:
    return {m.rsplit(".", 1)[1] for m in module_files() if m.rsplit(".", 1)[0] == package}


@cache
def uses() -> tuple[Use, ...]:
    """Every use of another module of ours by our modules: each `from M import N` (N a name
    of M), and each module imported (as `import M`, `from P import M`, or as the M of a
    `from M import N`)."""
    modules = module_files()
    found = []
    for source in modules:
        package = is_package(source)
        for node in ast.walk(parsed(source)):
            if isinstance(node, ast.Import):
                found += [Use(source, node.lineno, a.name, None) for a in node.names
                          if a.name in modules]
            elif isinstance(node, ast.ImportFrom):
                origin = imported_names(node, source, package)[0]
                for alias in node.names:
                    full = f"{origin}.{alias.name}"
                    if full in modules:
                        found.append(Use(source, node.lineno, full, None))
                    elif origin in modules:
                        found += [Use(source, node.lineno, origin, None),
                                  Use(source, node.lineno, origin, alias.name)]
    return tuple(u for u in found if u.target != u.source)


def surface_violations(all_uses: Sequence[Use]) -> list[str]:
    """Uses past a surface: a name not in its module's `__all__`, or a module its package
    does not name to an importer outside that package."""
    modules = module_files()
    found = []
    for use in all_uses:
        where = f"{modules[use.source].relative_to(ROOT)}:{use.line}: {short(use.source)}"
        if use.name is not None:
            if use.name not in (declared_surface(use.target) or ()):
                found.append(f"{where} imports {use.name} from {short(use.target)}, "
                             f"which its __all__ does not name")
            continue
        parts = use.target.split(".")
        for depth in range(2, len(parts)):
            package, child = ".".join(parts[:depth]), parts[depth]
            inside = use.source == package or use.source.startswith(package + ".")
            if not inside and child not in (declared_surface(package) or ()):
                found.append(f"{where} imports {short(package)}.{child}, which "
                             f"{short(package)}'s __all__ does not name")
    return sorted(set(found))


def test_every_module_and_package_declares_its_surface():
    missing = [short(m) for m in module_files() if declared_surface(m) is None]
    assert not missing, f"no __all__ in: {missing}"


def test_each_surface_names_what_is_there():
    wrong = []
    for module in module_files():
        there = children(module) if is_package(module) else bound_at_top(module)
        wrong += [f"{short(module)}.{name}" for name in declared_surface(module) or ()
                  if name not in there]
    assert not wrong, f"__all__ names what its module does not bind: {wrong}"


def test_no_import_reaches_past_a_surface():
    found = surface_violations(uses())
    assert not found, "imports past a surface:\n" + "\n".join(found)


def test_a_use_past_a_surface_is_found():
    """The check itself, on the real uses with two added: the daemon importing live
    patching's worker (a module live's __all__ keeps to itself) and a private name."""
    added = [Use("gradshard.service.daemon.server", 1, "gradshard.service.live.worker", None),
             Use("gradshard.service.cli", 2, "gradshard.cache.version", "_walk")]
    found = surface_violations([*uses(), *added])
    assert any("server.py:1:" in f and "service.live.worker" in f for f in found), found
    assert any("cli.py:2:" in f and "_walk" in f for f in found), found
