"""How results reach the user: problems as compiler-style text or JSON, a build's summary,
`stats`/`gc`'s reports, and what a command found in the machine formats (findings, as SARIF
or lintrunner's messages: formats)."""

__all__ = ["build", "cache", "findings", "formats", "lintrunner", "problems", "sarif"]
