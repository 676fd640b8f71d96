"""The Jinja2 templates that print the build's generated C++ (read by the render and layout
stages, hashed into every task key)."""

__all__ = []
