"""The compile layout: the generated C++ cut into translation units that compile in seconds
(gradshard's own; torchgen has no counterpart), with the headers those units need."""

__all__ = ["compile_layout", "functional_inverses"]
