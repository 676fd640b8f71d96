"""The render stage: records → C++ and Python text, one module per generator of torchgen's
autograd part (Functions, VariableType, ADInplaceOrViewType, ViewFuncs, TraceType,
variable_factories, annotated_fn_args; the Python bindings under `python/`), and the
template machinery they share (`templating`, the spec's `$name` templates in
`code_template`)."""

__all__ = ["annotated_args", "factories", "inplace_or_view", "kernel_lists", "nodes", "python",
           "template_names", "templating", "trace_type", "variable_type", "variable_type_files",
           "view_funcs"]
