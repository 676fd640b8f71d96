"""How results reach the user: problems as compiler-style text or JSON, a build's summary,
and `stats`/`gc`'s reports."""

__all__ = ["build", "cache", "problems"]
