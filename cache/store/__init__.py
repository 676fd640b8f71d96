"""The cache directory and its database: the content-addressed SQLite store (`database`),
every file of the directory (`directory`), and reading a file that input names
(`regular_files`); and beside it, never in it, this machine's verdicts on generators
(`verdicts`: a restored cache must not carry them)."""

__all__ = ["database", "directory", "regular_files", "verdicts"]
