"""The commands that read a spec without writing outputs: `check` (the graph run in
memory), `show` (and its plain-JSON descriptions), and `affected`."""

__all__ = ["affected", "check", "show"]
