"""How results reach the user: problems as compiler-style text or JSON, a build's summary,
`stats`/`gc`'s reports, what a command found in the machine formats (findings, as SARIF
or lintrunner's messages: formats), and the one table of every rule a report may name
(rules: its descriptions and help, which docs/usage.md's tables are checked against)."""

__all__ = ["build", "cache", "findings", "formats", "lintrunner", "problems", "rules", "sarif"]
