"""The host path: the spec's own generator, run unchanged in a worker process of
gradshard's, with its item functions memoized (`items`, keyed by `keys`) and its files
captured in memory (`capture`); `worker` is that process's side."""

__all__ = ["capture", "items", "keys", "worker"]
