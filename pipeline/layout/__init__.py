"""The compile layout: the generated C++ cut into translation units that compile in seconds
(gradshard's own; torchgen has no counterpart), with the headers those units need; and
(`as_is`) that layout where --out holds the real generator's files, compiled as they are."""

__all__ = ["as_is", "compile_layout", "functional_inverses"]
