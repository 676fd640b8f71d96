"""The background build service: the daemon's lifetime and builds (`server`), the spec's
file watcher (`watcher`), the socket protocol and its table of request kinds (`protocol`),
its runtime directory and client request (`runtime`), the `watch`/`daemon` commands
(`commands`), the daemon's `--try` checks and its background generator checks
(`generator_checks`)."""

__all__ = ["commands", "runtime"]
