"""The background build service: the server (file watcher, builder, socket), its runtime
directory and client request, the `watch`/`daemon` commands, and the daemon's `--try`
checks."""

__all__ = ["commands", "runtime"]
