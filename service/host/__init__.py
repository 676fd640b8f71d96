"""The host path: the spec's own generator, run unchanged in a worker process of
gradshard's, with its item functions memoized (`items`, keyed by `keys`) and its files
captured in memory (`capture`); `worker` is that process's side, `client` gradshard's, and
`generation` the build's step that runs it and keeps what it made; `item_values` reads a
generation's values by what they are of, `compile_input` cuts a host build's compile from
them, and `aten_headers` writes, in the worker, the ATen headers that compile needs."""

__all__ = ["aten_headers", "capture", "client", "compile_input", "generation", "item_values",
           "items", "keys", "objects", "worker"]
