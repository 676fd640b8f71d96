"""The parse stage: spec text → entries → records (native functions, tags, deprecated
signatures, derivative entries), the variants torchgen adds, view groups, and each
derivatives entry's differentiability infos (torchgen: gen.py's parsing, model.py,
native_function_generation.py, load_derivatives.py)."""

__all__ = ["deprecated", "derivatives", "differentiability", "native", "native_checks", "source",
           "spec", "tags", "variants", "views"]
