"""The one rule table (service/report/rules.py) against what it describes: docs/usage.md's
"Error rules" tables list the same rules with the same meanings, under the headings its help
links to, and every rule the code can report (the pipeline's, the cache's, the reports')
is in it. Read from the sources with `ast` and from usage.md as text: nothing runs."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from gradshard.service.report.rules import RULES, USAGE, anchor_of

ROOT = Path(__file__).parent.parent
# a table row: its rule ids (backquoted), then its meaning
ROW = re.compile(r"^\| (`[^|]*?) \| (.*) \|$")
# the calls and definitions whose argument names a rule: RuleViolation(rule, …),
# Problem(file, entry, rule, …), Finding(rule, …), and any function with a `rule` parameter
RULE_ARGUMENT = {"RuleViolation": 0, "Problem": 2, "Finding": 0}


def documented_rows() -> list[tuple[str, list[str], str]]:
    """usage.md's "## Error rules" rows: (heading, rule ids, meaning). A row listing several
    rules of one family names the later ones without it (`forward-list-outputs`)."""
    text = (ROOT / USAGE).read_text()
    section = text.split("\n## Error rules\n", 1)[1].split("\n## ", 1)[0]
    rows, heading = [], ""
    for line in section.splitlines():
        if line.startswith("### "):
            heading = line.removeprefix("### ")
        found = ROW.match(line)
        if found:
            first, *more = re.findall(r"`([^`]+)`", found.group(1))
            family = first.split(".", 1)[0]
            rows.append((heading, [first, *(i if "." in i else f"{family}.{i}" for i in more)],
                         found.group(2)))
    return rows


def test_usage_md_lists_the_tables_rules_with_their_full_descriptions():
    rows = documented_rows()
    documented = [rule for _, ids, _ in rows for rule in ids]
    assert len(documented) == len(set(documented)), "a rule listed twice in usage.md"
    assert set(documented) == set(RULES), (
        f"only in usage.md: {sorted(set(documented) - set(RULES))}; "
        f"only in the table: {sorted(set(RULES) - set(documented))}")
    for heading, ids, meaning in rows:
        for rule in ids:
            assert RULES[rule].full == meaning, rule
            assert RULES[rule].section == heading, rule
    assert all(r.short and not r.short.startswith("gradshard rule") for r in RULES.values())


def test_each_rules_help_links_to_its_usage_md_heading():
    headings = re.findall(r"^#+ (.+)$", (ROOT / USAGE).read_text(), re.MULTILINE)
    anchors = {anchor_of(h) for h in headings}
    for rule in RULES.values():
        linked = re.search(rf"{re.escape(USAGE)}#([\w-]+)", rule.help)
        assert linked and linked.group(1) in anchors, rule.id
        assert linked.group(1) == anchor_of(rule.section)
        assert not rule.help.startswith("See "), f"{rule.id}: its help says only where"
    assert anchor_of("YAML (`pipeline/parse/source.py`)") == "yaml-pipelineparsesourcepy"


def rule_strings(node: ast.AST, constants: dict[str, str]) -> list[str]:
    """The rule ids an argument can be: a string, a module's string constant, or either
    branch of a conditional."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.Name) and node.id in constants:
        return [constants[node.id]]
    if isinstance(node, ast.IfExp):
        return rule_strings(node.body, constants) + rule_strings(node.orelse, constants)
    return []


def code_rules() -> dict[str, str]:
    """Every rule id the code names where a rule goes, each with its module: a string in a
    rule position of a call (dotted: ninja's rules, also passed as `rule=`, are bare words),
    and the value of every constant named *_RULE (the reports' own rules)."""
    texts = {path.relative_to(ROOT): path.read_text()
             for room in ("pipeline", "cache", "service") for path in (ROOT / room).rglob("*.py")}
    # a module that never says "rule" names none (parsing is most of the walk's time)
    modules = {path: ast.parse(text) for path, text in texts.items() if "rule" in text.lower()}
    positions = dict(RULE_ARGUMENT)
    for tree in modules.values():
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef) and node.name != "__init__":
                names = [a.arg for a in node.args.args if a.arg not in ("self", "cls")]
                if "rule" in names:
                    positions.setdefault(node.name, names.index("rule"))
    found: dict[str, str] = {}
    for path, tree in modules.items():
        constants = {name: value.value for node in tree.body if isinstance(node, ast.Assign)
                     for name, value in _assigned(node)
                     if isinstance(value, ast.Constant) and isinstance(value.value, str)}
        for name, value in constants.items():
            if name.endswith("_RULE"):
                found.setdefault(value, str(path))
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            callee = getattr(node.func, "id", None) or getattr(node.func, "attr", None)
            given = [k.value for k in node.keywords if k.arg == "rule"]
            if callee in positions and len(node.args) > positions[callee]:
                given.append(node.args[positions[callee]])
            for rule in (r for g in given for r in rule_strings(g, constants) if "." in r):
                found.setdefault(rule, str(path))
    return found


def _assigned(node: ast.Assign) -> list[tuple[str, ast.AST]]:
    """(name, value) of each name an assignment gives a value, `A, B = 1, 2` included."""
    pairs = []
    for target in node.targets:
        if isinstance(target, ast.Name):
            pairs.append((target.id, node.value))
        elif isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple):
            pairs += [(t.id, v) for t, v in zip(target.elts, node.value.elts)
                      if isinstance(t, ast.Name)]
    return pairs


def test_every_rule_the_code_reports_is_in_the_table():
    found = code_rules()
    missing = {rule: where for rule, where in found.items() if rule not in RULES}
    assert not missing, f"rules missing from service/report/rules.py: {missing}"
    # the walk sees the pipeline's rules and the reports' own, not only a few
    assert {"yaml.syntax", "derivatives.sizes", "views.inverse-returns", "native.dispatch",
            "usage", "compile.error", "compile.failed", "generator.failed", "cache.damaged",
            "cache.disagreement", "gradshard.error", "gradshard.results-left-out"} <= set(found)
    assert set(found) == set(RULES), sorted(set(RULES) - set(found))
