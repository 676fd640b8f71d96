"""The spec's own file templates gradshard expands (autograd/templates/*), by name.

Kept apart from the render code so that the build's no-op check can read and hash them
without importing the pipeline.
"""

from __future__ import annotations

__all__ = ["ALL_TEMPLATES", "AUTOGRAD_TEMPLATES", "MODULE_FILES"]

AUTOGRAD_TEMPLATES = ("Functions.h", "Functions.cpp", "python_functions.h", "python_functions.cpp",
                      "VariableType.h", "VariableType.cpp")
# gen_python_functions.py: gen, with the module each module file binds.
MODULE_FILES = (("python_nn_functions.cpp", "nn", "torch.nn"),
                ("python_fft_functions.cpp", "fft", "torch.fft"),
                ("python_linalg_functions.cpp", "linalg", "torch.linalg"),
                ("python_nested_functions.cpp", "nested", "torch.nested"),
                ("python_sparse_functions.cpp", "sparse", "torch.sparse"),
                ("python_special_functions.cpp", "special", "torch.special"))
PYTHON_TEMPLATES = ("python_variable_methods.cpp", "python_torch_functions.cpp",
                    "python_return_types.cpp", "python_return_types.h", "python_enum_tag.cpp") + \
    tuple(f for f, _, _ in MODULE_FILES)
# gen_autograd's other generators (gen_inplace_or_view_type, gen_trace_type, gen_view_funcs,
# gen_variable_factories) and gen_annotated_fn_args.
CODEGEN_TEMPLATES = ("ADInplaceOrViewType.cpp", "TraceType.cpp", "ViewFuncs.h", "ViewFuncs.cpp",
                     "variable_factories.h", "annotated_fn_args.py.in")
ALL_TEMPLATES = AUTOGRAD_TEMPLATES + PYTHON_TEMPLATES + CODEGEN_TEMPLATES
