"""The cache directory and its database: the content-addressed SQLite store (`database`),
every file of the directory (`directory`), and reading a file that input names
(`regular_files`)."""

__all__ = ["database", "directory", "regular_files"]
