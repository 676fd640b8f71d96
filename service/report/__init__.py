"""How results reach the user: problems as compiler-style text or JSON, a build's summary,
a failed command's words (endings: the command line's and the daemon's), `stats`/`gc`'s
reports, what a command found in the machine formats (findings, as SARIF or lintrunner's
messages: formats), and the one table of every rule a report may name
(rules: its descriptions and help, which docs/usage.md's tables are checked against)."""

__all__ = ["build", "cache", "endings", "findings", "formats", "lintrunner", "problems", "rules",
           "sarif"]
