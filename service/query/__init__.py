"""The commands that read a spec without writing outputs: `check` and `show` (the graph run
on the cache or in memory: `analysis`; `show`'s texts and plain-JSON descriptions), `affected`,
and `generator` (the spec's own generator run now and compared)."""

__all__ = ["affected", "analysis", "generator", "show"]
