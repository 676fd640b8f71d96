"""`[tool.gradshard]` in the nearest pyproject.toml (or a gradshard.toml): the settings a
command takes from a file, below the environment and the flags (files.py finds and checks
the file, its keys the options table's settings and the variables' (service/options.py,
service/defaults.py); effective.py applies them and says where each value came from)."""

__all__ = ["effective", "files"]
