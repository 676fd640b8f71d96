"""The Python API of `gradshard try`, where users first imported it: it lives in
service/live/api.py now."""

from gradshard.service.live.api import patch

__all__ = ["patch"]
