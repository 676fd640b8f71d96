"""Findings as a SARIF 2.1.0 log (OASIS), the format GitHub code scanning and IDEs read.

Each finding is a result with its rule id (stable across runs, listed once in the driver's
rules), its level, its message (the hint after it) and its place. A place inside the
repository is a URI relative to its root (uriBaseId %SRCROOT%, the repository's root given
in originalUriBaseIds), so the same log names the same files on every runner; a place outside
it is an absolute file URI. The places related to a result (the generated file's line of a
compile error) are its relatedLocations.

Each rule the run reports is listed once with its descriptions and help, from the one rule
table (service/report/rules.py), as text and as Markdown, its family as its tag.

GitHub refuses a run of more than 25,000 results and a file of more than 10 MB compressed,
and code scanning a result without a location: past either limit, the first results are
kept and one more says how many were left out; every finding comes with a place
(service/report/formats.py: default_place).
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Sequence
from urllib.parse import quote

from gradshard.service.report.findings import WARNING, Finding, Place
from gradshard.service.report.rules import LEFT_OUT_RULE, plain, rule_of

__all__ = ["MAX_COMPRESSED_BYTES", "MAX_RESULTS", "SARIF_SCHEMA", "repository_root",
           "root_relative", "sarif_log", "sarif_text"]

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
SARIF_VERSION = "2.1.0"
# GitHub code scanning's limits of one upload (docs.github.com: SARIF support)
MAX_RESULTS = 25_000
MAX_COMPRESSED_BYTES = 10 * 1024 * 1024
ROOT_ID = "%SRCROOT%"


def repository_root(path: Path) -> Path | None:
    """The nearest directory at or above `path` that is a git work tree's root (its .git a
    directory, or a file for a worktree or submodule)."""
    for directory in (path.absolute(), *path.absolute().parents):
        if (directory / ".git").exists():
            return directory
    return None


def root_relative(path: Path, root: Path | None) -> str | None:
    """The path relative to the repository's root, as the repository names it (None
    outside it, or without one): SARIF's relative URIs and lintrunner's paths."""
    if root is None or not path.is_relative_to(root.absolute()):
        return None
    return path.relative_to(root.absolute()).as_posix()


def sarif_text(findings: Sequence[Finding], version: str, root: Path | None) -> str:
    """The log as printed: within GitHub's limits as printed (indented JSON)."""
    return json.dumps(sarif_log(findings, version, root), indent=2)


def sarif_log(findings: Sequence[Finding], version: str, root: Path | None) -> dict:
    """The log of one run of gradshard, within GitHub's limits: the first results, and one
    more saying how many were left out (at the last kept result's place)."""
    kept = list(findings) if len(findings) <= MAX_RESULTS else list(findings[:MAX_RESULTS - 1])
    while True:
        where = (kept or findings)[-1].place if findings else None
        log = _log(kept, len(findings) - len(kept), version, root, where)
        if _compressed_size(log) <= MAX_COMPRESSED_BYTES or not kept:
            return log
        kept = kept[:len(kept) * 9 // 10]


def _log(findings: list[Finding], left_out: int, version: str, root: Path | None,
         where: Place | None) -> dict:
    rules = list(dict.fromkeys(f.rule for f in findings))
    results = [_result(f, rules.index(f.rule), root) for f in findings]
    if left_out:
        rules.append(LEFT_OUT_RULE)
        results.append(_result(Finding(
            LEFT_OUT_RULE, "note", f"{left_out} more results were left out (GitHub takes "
            f"{MAX_RESULTS:,} results and {MAX_COMPRESSED_BYTES // 2**20} MB compressed per "
            "run); --format json lists every one", where), len(rules) - 1, root))
    run: dict = {"tool": {"driver": {"name": "gradshard", "version": version,
                                     "rules": [_rule(r) for r in rules]}},
                 "columnKind": "unicodeCodePoints", "results": results}
    if root is not None:
        run["originalUriBaseIds"] = {ROOT_ID: {"uri": root.absolute().as_uri() + "/"}}
    return {"$schema": SARIF_SCHEMA, "version": SARIF_VERSION, "runs": [run]}


def _rule(rule_id: str) -> dict:
    """A rule as the driver lists it: its id, descriptions and help from the rule table,
    and its family (derivatives, native, compile, generator…) as a tag code scanning
    filters by."""
    rule = rule_of(rule_id)
    return {"id": rule.id, "shortDescription": _text(rule.short),
            "fullDescription": _text(rule.full), "help": _text(rule.help),
            "properties": {"tags": [rule.family]}}


def _text(markdown: str) -> dict:
    """A multiformat message: its plain text, and the Markdown a viewer may render."""
    return {"text": plain(markdown), "markdown": markdown}


def _result(finding: Finding, index: int, root: Path | None) -> dict:
    text = finding.message + (f" (hint: {finding.hint})" if finding.hint else "")
    result: dict = {"ruleId": finding.rule, "ruleIndex": index,
                    "level": finding.level if finding.level in (WARNING, "note") else "error",
                    "message": {"text": text}}
    if finding.place is not None:
        result["locations"] = [{"physicalLocation": _physical(finding.place, root)}]
    if finding.related:
        result["relatedLocations"] = [
            {"id": number, "message": {"text": what}, "physicalLocation": _physical(place, root)}
            for number, (place, what) in enumerate(finding.related)]
    if finding.entry:
        result["properties"] = {"entry": finding.entry}
    return result


def _physical(place: Place, root: Path | None) -> dict:
    location: dict = {"artifactLocation": _artifact(Path(place.path), root)}
    if place.line is not None and place.line >= 1:
        region = {"startLine": place.line}
        if place.column is not None and place.column >= 1:
            region["startColumn"] = place.column
        location["region"] = region
    return location


def _artifact(path: Path, root: Path | None) -> dict:
    relative = root_relative(path, root)
    if relative is not None:
        return {"uri": quote(relative), "uriBaseId": ROOT_ID}
    return {"uri": path.as_uri()}


def _compressed_size(log: dict) -> int:
    """As printed (sarif_text's indentation), compressed as an upload is."""
    return len(gzip.compress(json.dumps(log, indent=2).encode(), compresslevel=6))
