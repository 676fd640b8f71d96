"""The host path: the spec's own generator, run unchanged in a worker process of
gradshard's, with its item functions memoized (`items`, keyed by `keys`) and its files
captured in memory (`capture`); `worker` is that process's side, `client` gradshard's, and
`generation` the build's step that runs it and keeps what it made."""

__all__ = ["capture", "client", "generation", "items", "keys", "worker"]
