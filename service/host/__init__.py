"""The host path: the spec's own generator, run unchanged in a worker process of
gradshard's, with its item functions memoized (`items`, keyed by `keys`) and its files
captured in memory (`capture`); `worker` is that process's side and `client` gradshard's
(a leaf: the pipe to it). `generation` drives it: the session's worker, a generation (a
build's, or `try`'s), what the store keeps of it, its values read, and a host build's compile
cut from them; `item_values` holds a generation's values by what they are of, and
`aten_headers` writes, in the worker, the ATen headers that compile needs."""

__all__ = ["aten_headers", "capture", "client", "generation", "item_values", "items", "keys",
           "objects", "worker"]
