"""The name lists of the autograd kernel generators (PA/gen_variable_type.py,
PA/gen_inplace_or_view_type.py, PA/gen_trace_type.py): data PyTorch keeps beside its code,
matched on the names each list's comment gives."""

from __future__ import annotations

__all__ = ["ALL_VIEW_FUNCTIONS", "DONT_ENFORCE_SAME_TENSOR_IMPL_OR_STORAGE",
           "DONT_ENFORCE_STORAGE_IMPL_USE_COUNT", "DONT_ENFORCE_TENSOR_IMPL_USE_COUNT",
           "DONT_RECORD_TRACE", "DONT_REQUIRE_DERIVATIVE", "FOREACH_WITHOUT_INFO",
           "FOREACH_WITH_DIFFERENT_ARITY", "GRADIENT_IMPLEMENTED_FOR_COMPLEX", "MANUAL_AUTOGRAD",
           "MANUAL_TRACER", "RENAME_TRACE", "RENAME_TRACE_ADD_ARGS", "RESET_GRAD_ACCUMULATOR",
           "RETURNS_VIEWS_OF_INPUT", "VIEW_FUNCTIONS", "VIEW_FUNCTIONS_WITH_METADATA_CHANGE",
           "view_info"]

# Kernels written by hand in every backend, by C++ name (gen_trace_type.py: MANUAL_BACKEND).
MANUAL_BACKEND = frozenset({
    "_backward", "_version", "data", "is_leaf", "options", "output_nr", "requires_grad_",
    "retain_grad", "set_data"
})

# Autograd and tracer kernels written by hand, by C++ name (gen_trace_type.py).
MANUAL_AUTOGRAD_AND_TRACER = frozenset({
    "_fw_primal", "_make_dual", "copy_", "detach", "detach_", "resize_", "resize_as_"
})

MANUAL_AUTOGRAD = MANUAL_BACKEND | MANUAL_AUTOGRAD_AND_TRACER
MANUAL_TRACER = MANUAL_AUTOGRAD

# Functions whose outputs never require grad, by base name or C++ name
# (gen_variable_type.py: DONT_REQUIRE_DERIVATIVE).
DONT_REQUIRE_DERIVATIVE = frozenset({
    "__and__", "__iand__", "__ilshift__", "__ior__", "__irshift__", "__ixor__", "__lshift__",
    "__or__", "__rshift__", "__xor__", "_coalesced_", "_nested_tensor_size",
    "_nested_tensor_storage_offsets", "_nested_tensor_strides", "_sobol_engine_draw",
    "_sobol_engine_ff", "_sobol_engine_initialize_state_", "_sobol_engine_scramble_",
    "allclose", "argmax", "argmin", "argsort", "bucketize", "empty_like", "full_like", "isin",
    "isinf", "isnan", "isneginf", "isposinf", "logical_and", "logical_not", "logical_or",
    "logical_xor", "new_empty", "new_empty_strided", "new_full", "new_ones", "new_zeros",
    "ones_like", "quantize_per_channel", "quantize_per_tensor", "rand_like", "randn_like",
    "record_stream", "searchsorted", "signbit", "zeros_like"
})

# Base names whose backward supports complex numbers (gen_variable_type.py:
# GRADIENT_IMPLEMENTED_FOR_COMPLEX, with the sparse ones).
GRADIENT_IMPLEMENTED_FOR_COMPLEX = frozenset({
    "__radd__", "__rmul__", "_coalesce", "_conj", "_conj_physical", "_fft_c2c", "_fft_r2c",
    "_linalg_det", "_linalg_eigh", "_linalg_slogdet", "_linalg_solve_ex", "_linalg_svd",
    "_neg_view", "_reshape_alias", "_reshape_copy", "_sparse_addmm",
    "_sparse_coo_tensor_with_dims_and_tensors", "_sparse_sparse_matmul", "_to_copy",
    "_to_dense", "_unsafe_index", "_unsafe_index_put", "_unsafe_masked_index",
    "_unsafe_masked_index_put_accumulate", "_unsafe_view", "acos", "acosh", "add", "addbmm",
    "addcdiv", "addcmul", "addmm", "addmv", "addr", "alias", "alias_copy", "as_strided",
    "as_strided_copy", "as_strided_scatter", "asin", "asinh", "atan", "atanh", "baddbmm",
    "block_diag", "bmm", "cat", "channel_shuffle", "cholesky", "cholesky_inverse",
    "cholesky_solve", "chunk", "clone", "coalesce", "col2im", "complex", "conj_physical_",
    "constant_pad_nd", "cos", "cosh", "cumprod", "cumsum", "cumulative_trapezoid", "diag",
    "diag_embed", "diagonal", "diagonal_backward", "diagonal_copy", "diagonal_scatter", "div",
    "dot", "eig", "eq_", "exp", "exp2", "expand", "expand_copy", "expm1", "fill", "fill_",
    "flip", "fliplr", "flipud", "gather", "im2col", "index", "index_add", "index_add_",
    "index_copy", "index_fill", "index_put", "index_select", "inverse", "ldexp", "lerp",
    "linalg_cholesky", "linalg_cholesky_ex", "linalg_cross", "linalg_eig",
    "linalg_householder_product", "linalg_inv", "linalg_inv_ex", "linalg_lstsq", "linalg_lu",
    "linalg_lu_factor_ex", "linalg_lu_solve", "linalg_matrix_exp", "linalg_pinv", "linalg_qr",
    "linalg_solve", "linalg_solve_triangular", "linalg_vector_norm", "linear", "log", "log10",
    "log1p", "log2", "logaddexp", "logcumsumexp", "logsumexp", "lu", "lu_solve", "lu_unpack",
    "masked_fill", "masked_scatter", "masked_scatter_backward", "masked_select", "matrix_exp",
    "mean", "mm", "mul", "mv", "nanmean", "nansum", "narrow_copy", "ne_", "neg", "nonzero",
    "ormqr", "outer", "permute", "permute_copy", "pixel_shuffle", "pixel_unshuffle", "polar",
    "pow", "prod", "put", "put_", "reciprocal", "reflection_pad1d", "reflection_pad1d_backward",
    "reflection_pad2d", "reflection_pad2d_backward", "reflection_pad3d",
    "reflection_pad3d_backward", "renorm", "repeat", "replication_pad1d",
    "replication_pad1d_backward", "replication_pad2d", "replication_pad2d_backward",
    "replication_pad3d", "replication_pad3d_backward", "reshape", "reshape_as", "resize",
    "resize_as", "roll", "rot90", "rsqrt", "rsub", "scatter", "scatter_add", "select",
    "select_backward", "sgn", "sigmoid", "sigmoid_backward", "sin", "sinc", "sinh", "slice",
    "slice_backward", "solve", "sparse_mask", "sparse_sampled_addmm", "split",
    "split_with_sizes", "split_with_sizes_backward", "sqrt", "squeeze", "squeeze_copy", "stack",
    "std_mean", "sub", "sum", "t", "t_copy", "take", "tan", "tanh", "tanh_backward",
    "to_sparse", "trace", "transpose", "transpose_copy", "trapezoid", "triangular_solve",
    "tril", "triu", "unbind", "unbind_copy", "unfold", "unfold_backward", "unfold_copy",
    "unsafe_split", "unsqueeze", "unsqueeze_copy", "values", "var_mean", "vdot", "view",
    "view_as", "view_as_complex", "view_copy", "where", "zero_"
})

# Operators (name with `_`, no overload) that reset the grad accumulator.
RESET_GRAD_ACCUMULATOR = frozenset({
    "resize_", "set_"
})

# No NDEBUG impl/storage checks at all, by C++ name.
DONT_ENFORCE_SAME_TENSOR_IMPL_OR_STORAGE = frozenset({
    "_cudnn_rnn_flatten_weight", "_unsafe_masked_index", "_unsafe_masked_index_put_accumulate",
    "set_"
})

# No output impl use-count check, by wrapper name (overload-specific).
DONT_ENFORCE_TENSOR_IMPL_USE_COUNT = frozenset({
    "_cudnn_rnn", "_cudnn_rnn_backward", "_embedding_bag", "_embedding_bag_forward_only",
    "_nested_tensor_size", "_nested_tensor_storage_offsets", "_nested_tensor_strides",
    "dequantize_self", "lift", "lift_fresh", "lift_fresh_copy", "lu_unpack",
    "q_per_channel_scales", "q_per_channel_zero_points"
})

# No output storage use-count check, by wrapper name.
DONT_ENFORCE_STORAGE_IMPL_USE_COUNT = frozenset({
    "_cudnn_rnn", "_cudnn_rnn_backward", "_embedding_bag", "_embedding_bag_forward_only",
    "_nested_tensor_size", "_nested_tensor_storage_offsets", "_nested_tensor_strides",
    "_slow_conv2d_forward", "channel_shuffle", "dequantize_self", "lift", "lift_fresh",
    "lift_fresh_copy", "lu_unpack", "q_per_channel_scales", "q_per_channel_zero_points",
    "slow_conv3d_forward"
})

# In-place foreach ops without a reference formula; ops whose reference has more arguments
# (gen_variable_type.py: _foreach_ops_without_differentiability_info, _with_different_arity).

FOREACH_WITHOUT_INFO = frozenset({
    ("_foreach_addcdiv", "Tensor"),
    ("_foreach_addcmul", "Tensor"),
    ("_foreach_copy", ""),
    ("_foreach_maximum", "Scalar"),
    ("_foreach_maximum", "ScalarList"),
    ("_foreach_minimum", "Scalar"),
    ("_foreach_minimum", "ScalarList"),
})

FOREACH_WITH_DIFFERENT_ARITY = frozenset({
    ("_foreach_add", "Scalar"),
    ("_foreach_add", "ScalarList"),
    ("_foreach_sub", "Scalar"),
    ("_foreach_sub", "ScalarList"),
})

# Views whose metadata changes (always get a view func).
VIEW_FUNCTIONS_WITH_METADATA_CHANGE = frozenset({
    "_conj", "_neg_view", "_nested_get_values", "_nested_view_from_buffer",
    "_nested_view_from_jagged", "view_as_complex", "view_as_real"
})
# View functions by base name, and the argument their output aliases: `self` for all but the
# sparse COO constructor, a view of its `values` (gen_inplace_or_view_type.py: VIEW_FUNCTIONS,
# with the metadata-changing ones; its key lacks the op's leading `_`, so it never matches).
_VIEWS_OF_SELF = frozenset({
    "_indices", "_reshape_alias", "_test_autograd_multiple_dispatch_view", "_values",
    "alias", "as_strided", "ccol_indices", "col_indices", "crow_indices", "diagonal",
    "expand", "flatten", "indices", "numpy_T", "permute", "row_indices", "select", "slice",
    "slice_inverse", "split", "split_with_sizes", "squeeze", "t", "transpose", "unbind",
    "unfold", "unsqueeze", "values", "view"
}) | VIEW_FUNCTIONS_WITH_METADATA_CHANGE
VIEW_FUNCTIONS = {**dict.fromkeys(sorted(_VIEWS_OF_SELF), "self"),
                  "sparse_coo_tensor_with_dims_and_tensors": "values"}
# Base names that may return a view of `self`: the views, and ops composed of them
# (gen_inplace_or_view_type.py: RETURNS_VIEWS_OF_INPUT).
RETURNS_VIEWS_OF_INPUT = frozenset(VIEW_FUNCTIONS) | frozenset({
    "adjoint", "chunk", "contiguous", "detach", "expand_as", "imag", "mH", "mT", "matrix_H",
    "movedim", "narrow", "real", "reshape", "reshape_as", "swapaxes", "swapdims",
    "tensor_split", "view_as"
})

# Views for the NDEBUG alias check: VIEW_FUNCTIONS and _unsafe_view.
ALL_VIEW_FUNCTIONS = {**VIEW_FUNCTIONS, "_unsafe_view": "self"}


def view_info(base: str) -> str | None:
    """The argument a view function's output aliases, by base name (get_view_info)."""
    aliased = VIEW_FUNCTIONS.get(base)
    if aliased is None and base in RETURNS_VIEWS_OF_INPUT:
        return "self"
    return aliased

# Functions the tracer never records, always tracing what they are made of, by base name
# (gen_trace_type.py: DONT_RECORD_TRACE).
DONT_RECORD_TRACE = frozenset({
    "_coalesced", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
    "conv_transpose3d", "convolution", "gru_cell", "lstm_cell", "rnn_relu_cell", "rnn_tanh_cell"
})

# Names the tracer records under another op, matched on the whole name: the base name of an
# in-place op's out-of-place form, or the name of a functional or out= op
# (gen_trace_type.py: RENAME_TRACE; aten has no fill or zero).
RENAME_TRACE = {"fill": "full_like", "zero": "zeros_like"}

# Base names whose in-place and out= forms, traced out of place, add the TensorOptions and
# memory_format inputs their renamed op takes (gen_trace_type.py: RENAME_TRACE_ADD_ARGS).
RENAME_TRACE_ADD_ARGS = frozenset({"fill", "zero"})
