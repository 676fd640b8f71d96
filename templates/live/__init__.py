"""The Jinja2 template of a `gradshard try` patch's sources (service/live/patch_sources.py);
no build task reads it, so editing it leaves every cache warm."""

__all__ = []
