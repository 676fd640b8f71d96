"""The files a build reads and writes: where the spec lives (`spec_location`), the build's
inputs as bytes (`inputs`), writing outputs atomically (`outputs`), and where each output
goes under --out (`placement`)."""

__all__ = ["inputs", "outputs", "placement", "spec_location"]
