"""The background build service: the server (file watcher, builder, socket), its runtime
directory and client request, the `watch`/`daemon` commands, the daemon's `--try`
checks and its background generator checks (`generator_checks`)."""

__all__ = ["commands", "runtime"]
