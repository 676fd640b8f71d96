"""The commands that read a spec without writing outputs: `check` (the graph run in
memory), `show` (and its plain-JSON descriptions), `affected`, and `generator` (the spec's
own generator run now and compared)."""

__all__ = ["affected", "check", "generator", "show"]
