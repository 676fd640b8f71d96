"""The Python bindings of gen_python_functions.py: each overload's Python signature, the
binding data of one op name, and the files by module."""

__all__ = ["bindings", "files", "signatures"]
