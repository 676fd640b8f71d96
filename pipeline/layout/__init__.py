"""The compile layout: the generated C++ cut into translation units that compile in seconds
(gradshard's own; torchgen has no counterpart), with the headers those units need; and
(`as_is`) that layout where --out holds the real generator's files, compiled as they are;
(`host_values`) the spec's own generator's kernel values read as records, for the host path."""

__all__ = ["as_is", "compile_layout", "functional_inverses", "host_values"]
