"""The compile cache: the content-addressed objects and precompiled headers in front of
the compiler (`object_cache`) and their rows in the store (`entries`)."""

__all__ = ["entries", "object_cache"]
