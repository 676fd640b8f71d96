"""Hand edits of the real spec, shared by the differential and incremental tests: each is
compared with torchgen run on the same edited spec. RERUNS (at the end) holds, for each edit,
exactly the tasks a cached build of the edited spec runs after a build of the spec as shipped
(tests/test_incremental.py checks them)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

from support.specs import DERIVATIVES, NATIVE, TEMPLATES

AUTOGRAD_FILES = ["Functions.h", "Functions.cpp", "python_functions.h"] + [
    f"python_functions{s}.cpp" for s in ("_0", "_1", "_2", "_3", "_4", "Everything")]
BINDING_FILES = ["python_variable_methods.cpp", "python_nn_functions.cpp", "python_fft_functions.cpp",
                 "python_linalg_functions.cpp", "python_nested_functions.cpp",
                 "python_sparse_functions.cpp", "python_special_functions.cpp",
                 "python_return_types.cpp", "python_return_types.h", "python_enum_tag.cpp"] + [
    f"python_torch_functions{s}.cpp" for s in ("_0", "_1", "_2", "Everything")]
VARIABLE_TYPE_FILES = ["VariableType.h"] + [
    f"VariableType{s}.cpp" for s in [f"_{i}" for i in range(10)] + ["Everything"]]
CODEGEN_FILES = ["ViewFuncs.h", "ViewFuncs.cpp", "variable_factories.h", "annotated_fn_args.py"] + [
    f"ADInplaceOrViewType{s}.cpp" for s in ("_0", "_1", "Everything")] + [
    f"TraceType{s}.cpp" for s in [f"_{i}" for i in range(10)] + ["Everything"]]
# every file `gradshard build` writes (flat, the default)
ALL_FILES = AUTOGRAD_FILES + VARIABLE_TYPE_FILES + BINDING_FILES + CODEGEN_FILES
# and as generate_code lays them out under a checkout's root (`--tree pytorch`)
TREE_FILES = sorted([f"torch/csrc/autograd/generated/{n}" for n in ALL_FILES
                     if n != "annotated_fn_args.py"]
                    + ["torch/csrc/autograd/generated/templates/VariableType.cpp",
                       "torch/testing/_internal/generated/annotated_fn_args.py"])

MUL_TENSOR = """- name: mul.Tensor(Tensor self, Tensor other) -> Tensor
  self: mul_tensor_backward(grad, other, self.scalar_type())
  other: mul_tensor_backward(grad, self, other.scalar_type())
  result: other_t * self_p + self_t * other_p
"""
MUL_SCALAR = """- name: mul.Scalar(Tensor self, Scalar other) -> Tensor
  self: mul_tensor_backward(grad, other, self.scalar_type())
  result: self_t * other
"""
ADDBMM = ('- name: addbmm(Tensor self, Tensor batch1, Tensor batch2, *, Scalar beta=1, Scalar alpha=1) -> Tensor\n'
          '  self: maybe_multiply(grad, beta.conj())\n'
          '  batch1: maybe_multiply(grad.unsqueeze(0).expand_symint({ batch1.sym_size(0), batch1.sym_size(1), batch2.sym_size(2) }).bmm(batch2.transpose(1, 2).conj()), alpha.conj())\n'
          '  batch2: maybe_multiply(batch1.transpose(1, 2).conj().bmm(grad.unsqueeze(0).expand_symint({ batch1.sym_size(0), batch1.sym_size(1), batch2.sym_size(2) })), alpha.conj())\n'
          '  result: maybe_multiply(self_t, beta) + maybe_multiply(batch1_t.bmm(batch2_p).sum(0), alpha) + maybe_multiply(batch1_p.bmm(batch2_t).sum(0), alpha)\n')
ASINH = """- name: asinh(Tensor self) -> Tensor
  self: grad * (self.pow(2) + 1).rsqrt().conj()
  result: auto_element_wise
"""
SINH = """- name: sinh(Tensor self) -> Tensor
  self: grad * self.cosh().conj()
  result: auto_element_wise
"""


def op_with_inplace_and_out(name: str) -> str:
    """native_functions.yaml's entries of a new op `name` with its in-place and out= forms."""
    return f"""- func: {name}(Tensor self, int k=1) -> Tensor
  variants: function, method
  dispatch:
    CPU: {name}

- func: {name}_(Tensor(a!) self, int k=1) -> Tensor(a!)
  variants: method
  dispatch:
    CPU: {name}_

- func: {name}.out(Tensor self, int k=1, *, Tensor(a!) out) -> Tensor(a!)
  dispatch:
    CPU: {name}_out
"""


PAIR = """
- func: zz_pair(Tensor self) -> (Tensor first, Tensor second)
  dispatch:
    CPU: zz_pair
"""


# --- texts of the edits aimed at the native codegen (TraceType, ADInplaceOrViewType,
# ViewFuncs, variable_factories.h, annotated_fn_args.py)
# a new op with its in-place and out= forms, a factory and its out=, two named returns
TRACED_OPS = "\n" + op_with_inplace_and_out("zz_trace") + """
- func: zz_range(int n, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor
  dispatch:
    CompositeExplicitAutograd: zz_range

- func: zz_range.out(int n, *, Tensor(a!) out) -> Tensor(a!)
  dispatch:
    CPU: zz_range_out
""" + PAIR
FFTFREQ = """- func: fft_fftfreq(int n, float d=1.0, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor
  python_module: fft
  variants: function
  dispatch:
    CompositeExplicitAutograd: fft_fftfreq

- func: fft_fftfreq.out(int n, float d=1.0, *, Tensor(a!) out) -> Tensor(a!)
  python_module: fft
  variants: function
  dispatch:
    CompositeExplicitAutograd: fft_fftfreq_out

"""
AMINMAX_DISPATCH = "  dispatch:\n    CPU, CUDA: _aminmax_all\n  autogen: _aminmax.out\n"
# in-place, out= (one and two outs) and list in-place ops, a view and a list view (with
# SymInt lists, optional SymInts and tensors) and their view copies
INPLACE_AND_VIEW_OPS = "\n" + op_with_inplace_and_out("zz_bump") + """
- func: zz_bump_all_(Tensor(a!)[] self) -> ()
  dispatch:
    CPU: zz_bump_all_
""" + PAIR + """
- func: zz_pair.out(Tensor self, *, Tensor(a!) first, Tensor(b!) second) -> (Tensor(a!) first, Tensor(b!) second)
  dispatch:
    CPU: zz_pair_out

- func: unfold.gs(Tensor(a) self, int dimension, SymInt[] sizes, int? step=None, Tensor? weights=None) -> Tensor(a)
  dispatch:
    CPU: unfold_gs

- func: unfold_copy.gs(Tensor self, int dimension, SymInt[] sizes, int? step=None, Tensor? weights=None) -> Tensor
  dispatch:
    CompositeExplicitAutogradNonFunctional: unfold_copy_gs
  tags: view_copy
  autogen: unfold_copy.gs_out

- func: split.gs(Tensor(a -> *) self, SymInt[] sizes, bool flag, SymInt? chunk=None) -> Tensor(a)[]
  dispatch:
    CPU: split_gs

- func: split_copy.gs(Tensor self, SymInt[] sizes, bool flag, SymInt? chunk=None) -> Tensor[]
  dispatch:
    CompositeExplicitAutogradNonFunctional: split_copy_gs
  tags: view_copy
"""
VALUES = "- name: _values(Tensor(a) self) -> Tensor(a)\n"
CCOL_DISPATCH = ("  dispatch:\n    SparseCsrCPU, SparseCsrCUDA, SparseCsrMeta: "
                 "ccol_indices_sparse_csr\n    CompositeExplicitAutograd: ccol_indices_default\n")
FACTORY_OPTIONS = ("ScalarType? dtype=None, Layout? layout=None, Device? device=None, "
                   "bool? pin_memory=None")
DIAGONAL = ("- func: diagonal(Tensor(a) self, int offset=0, int dim1=0, int dim2=1) -> Tensor(a)\n"
            "  variants: function, method\n")


@dataclass(frozen=True)
class Edit:
    file: str
    old: str  # "" appends `new`
    new: str


EDITS = {
    "entry-added": [Edit(DERIVATIVES, "", "\n- name: bitwise_not(Tensor self) -> Tensor\n"
                                          "  self: zeros_like(grad)\n  result: auto_element_wise\n")],
    # (an entry foreach ops borrow from cannot go: their in-place kernels need its formulas)
    "entry-removed": [Edit(DERIVATIVES, ADDBMM + "\n", "")],
    "entries-reordered": [Edit(DERIVATIVES, MUL_TENSOR + "\n" + MUL_SCALAR, MUL_SCALAR + "\n" + MUL_TENSOR)],
    "new-dispatch-key": [Edit(DERIVATIVES, SINH, "- name: sinh(Tensor self) -> Tensor\n  dispatch:\n"
                              "    Default:\n      self: grad * self.cosh().conj()\n"
                              "      result: auto_element_wise\n    AutogradCUDA:\n"
                              "      self: grad * self.cosh()\n")],
    "saved-variable-changed": [Edit(DERIVATIVES, "  self: mul_tensor_backward(grad, other, self.scalar_type())\n",
                                    "  self: mul_tensor_backward(grad, other, self.scalar_type()) / self.sym_numel()\n")],
    "foreach-reference-edited": [Edit(DERIVATIVES, "  other: handle_r_to_c(other.scalar_type(), maybe_multiply(grad, alpha.conj()))",
                                      "  other: handle_r_to_c(other.scalar_type(), maybe_multiply(grad, alpha.conj())) * other.dim()")],
    "view-formula-edited": [Edit(DERIVATIVES, "  self: at::sum_to(grad, self.sym_sizes())\n  result: auto_linear",
                                 "  self: at::sum_to(grad.contiguous(), self.sym_sizes())\n  result: auto_linear")],
    "templates-edited": [Edit(f"{TEMPLATES}/Functions.h", "using at::Scalar;\n", "using at::Scalar;\n// edited\n"),
                         Edit(f"{TEMPLATES}/python_functions.cpp", "// NOTE: See [Sharded File]",
                              "// Edited: ${generated_comment}\n  // NOTE: See [Sharded File]")],
    # (on an op no in-place foreach op borrows from: those return nothing, so a condition per
    # output would not fit them)
    "output-differentiability": [Edit(DERIVATIVES, ASINH, ASINH.replace(
        "  result: auto_element_wise\n",
        "  result: auto_element_wise\n  output_differentiability: [\"self.is_floating_point()\"]\n"))],
    "not-implemented": [Edit(DERIVATIVES, SINH, SINH.replace("grad * self.cosh().conj()",
                                                           'not_implemented("sinh")').replace(
                                                               "  result: auto_element_wise\n", ""))],
    "function-and-entry-added": [
        Edit(NATIVE, "", "\n- func: my_scale(Tensor self, float factor, *, int[] dims=[]) -> Tensor\n"
                         "  variants: function, method\n  dispatch:\n    CompositeExplicitAutograd: my_scale\n"),
        Edit(DERIVATIVES, "", "\n- name: my_scale(Tensor self, float factor, *, int[] dims=[]) -> Tensor\n"
                              "  self: grad * factor + at::zeros(dims, self.options())\n  result: auto_linear\n")],
    "named-returns-and-lists": [
        Edit(NATIVE, "", "\n- func: my_split(Tensor self, Tensor[] others, str? mode=None) -> (Tensor first, Tensor second)\n"
                         "  dispatch:\n    CompositeExplicitAutograd: my_split\n"),
        Edit(DERIVATIVES, "", "\n- name: my_split(Tensor self, Tensor[] others, str? mode=None) -> (Tensor first, Tensor second)\n"
                              "  self: grad_first + grad_second\n"
                              "  others: my_split_backward(grad_second, others, mode, second.sym_sizes())\n")],
    "multi-variable-formula": [
        Edit(NATIVE, "", "\n- func: my_lerp(Tensor self, Tensor end, Tensor weight) -> Tensor\n"
                         "  dispatch:\n    CompositeExplicitAutograd: my_lerp\n"),
        Edit(DERIVATIVES, "", "\n- name: my_lerp(Tensor self, Tensor end, Tensor weight) -> Tensor\n"
                              "  self, end, weight: my_lerp_backward(grad, self, end, weight, grad_input_mask)\n"
                              "  result: self_t + weight_p * (end_t - self_t) + weight_t * (end_p - self_p)\n")],
    # --- edits aimed at the Python bindings
    "op-with-function-and-method": [
        Edit(NATIVE, "", "\n- func: my_blend(Tensor self, Tensor other, *, float weight=0.5) -> Tensor\n"
                         "  variants: function, method\n  dispatch:\n    CompositeExplicitAutograd: my_blend\n"),
        Edit(NATIVE, "", "\n- func: my_blend.out(Tensor self, Tensor other, *, float weight=0.5, "
                         "Tensor(a!) out) -> Tensor(a!)\n  dispatch:\n    CPU: my_blend_out\n")],
    "new-overload": [Edit(NATIVE, "", "\n- func: mul.Dim(Tensor self, Tensor other, int dim) -> Tensor\n"
                                      "  variants: function, method\n  dispatch:\n"
                                      "    CompositeExplicitAutograd: mul_dim\n")],
    "changed-default": [Edit(NATIVE, "- func: pdist(Tensor self, float p=2) -> Tensor\n",
                             "- func: pdist(Tensor self, float p=3.5) -> Tensor\n")],
    "changed-python-module": [Edit(NATIVE, "- func: pdist(Tensor self, float p=2) -> Tensor\n",
                                   "- func: pdist(Tensor self, float p=2) -> Tensor\n  python_module: nn\n")],
    "deprecated-entry-removed": [Edit("autograd/deprecated.yaml",
                                      "- name: add(Tensor self, Scalar alpha, Tensor other) -> Tensor\n"
                                      "  aten: add(self, other, alpha)\n\n"
                                      "- name: add_(Tensor(a!) self, Scalar alpha, Tensor other) -> Tensor(a!)\n"
                                      "  aten: add_(self, other, alpha)\n\n"
                                      "- name: add(Tensor self, Scalar alpha, Tensor other, *, Tensor(a!) out) -> Tensor(a!)\n"
                                      "  aten: add_out(out, self, other, alpha)\n\n", "")],
    "new-tag": [Edit("ATen/native/tags.yaml", "", "\n- tag: my_new_tag\n  desc: A tag added in a test.\n"),
                Edit(NATIVE, "", "\n- func: my_tagged(Tensor self) -> Tensor\n  tags: my_new_tag\n"
                                 "  dispatch:\n    CompositeExplicitAutograd: my_tagged\n")],
    "op-with-named-returns": [Edit(NATIVE, "", "\n- func: my_minmax(Tensor self, int dim, bool keepdim=False)"
                                               " -> (Tensor low, Tensor high)\n  variants: function, method\n"
                                               "  dispatch:\n    CompositeExplicitAutograd: my_minmax\n")],
    "factory-with-tensor-options": [
        Edit(NATIVE, "", "\n- func: my_ramp(SymInt n, *, ScalarType? dtype=None, Layout? layout=None, "
                         "Device? device=None, bool? pin_memory=None) -> Tensor\n"
                         "  dispatch:\n    CompositeExplicitAutograd: my_ramp\n")],
    "foreach-op-added": [
        Edit(NATIVE, "", "\n- func: _foreach_bitwise_not(Tensor[] self) -> Tensor[]\n"
                         "  device_check: NoCheck\n  variants: function\n  dispatch:\n"
                         "    CompositeExplicitAutograd: foreach_tensor_bitwise_not_slow\n"),
        Edit(DERIVATIVES, "", "\n- name: bitwise_not(Tensor self) -> Tensor\n"
                              "  self: zeros_like(grad) * self.sym_numel()\n  result: auto_element_wise\n")],
    # VariableType's own inputs: a forward formula (reaches no Functions file), a view's
    # forward formula, an in-place op's own entry, an op added with its out= variant, and a
    # formula for a hand-written kernel (detach: none for it, but one for its view copy)
    "forward-formula-edited": [Edit(DERIVATIVES, "  result: at::mm(self_t, mat2_p) + at::mm(self_p, mat2_t)\n",
                                    "  result: at::mm(self_t, mat2_p) + at::mm(self_p, mat2_t) * 1\n")],
    "view-forward-edited": [Edit(DERIVATIVES, "  self: diagonal_backward_symint(grad, self.sym_sizes(), offset, dim1, dim2)\n"
                                              "  result: auto_linear\n",
                                 "  self: diagonal_backward_symint(grad, self.sym_sizes(), offset, dim1, dim2)\n"
                                 "  result: self_t.diagonal(offset, dim1, dim2).clone()\n")],
    "inplace-entry-edited": [Edit(DERIVATIVES, '  self: not_implemented("inplace version of asinh")\n',
                                  "  self: grad * (self.pow(2) + 1).rsqrt().conj()\n  result: self_t * 1\n")],
    "out-op-added": [
        Edit(NATIVE, "", "\n- func: my_neg(Tensor self) -> Tensor\n  variants: function\n"
                         "  dispatch:\n    CPU: my_neg\n"
                         "\n- func: my_neg.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)\n"
                         "  variants: function\n  dispatch:\n    CPU: my_neg_out\n"),
        Edit(DERIVATIVES, "", "\n- name: my_neg(Tensor self) -> Tensor\n  self: grad.neg()\n"
                              "  result: auto_element_wise\n")],
    "manual-kernel-entry-added": [Edit(DERIVATIVES, "", "\n- name: detach(Tensor(a) self) -> Tensor(a)\n"
                                                        "  self: grad\n  result: auto_linear\n")],
    # foreach-only: a foreach op borrowing an existing entry's formulas adds a node to
    # Functions.* but no Python class (python_functions* bind the infos as loaded)
    "foreach-op-only": [
        Edit(NATIVE, "", "\n- func: _foreach_sinc(Tensor[] self) -> Tensor[]\n  device_check: NoCheck\n"
                         "  variants: function\n  dispatch:\n"
                         "    CompositeExplicitAutograd: foreach_tensor_sinc_slow\n")],
    # --- edits aimed at the native codegen: TraceType*, ADInplaceOrViewType*, ViewFuncs.*,
    # variable_factories.h, annotated_fn_args.py
    # traced-ops-added: tracer kernels of an op with its in-place and out= forms (both op
    # names, the in-place guard), of a factory's out= (its options recorded when traced out of
    # place) and of an op with two returns, at the end of TraceType's order; their
    # ADInplaceOrView kernels (in place, out=) and factory wrapper and annotated args
    "traced-ops-added": [Edit(NATIVE, "", TRACED_OPS)],
    # ops-moved-and-autogen-lost: fft_fftfreq and its out= moved to the end (TraceType,
    # variable_factories.h and annotated_fn_args.py follow native_functions.yaml's order);
    # _aminmax made composite, so its autogen'd out= is no longer generated (its TraceType and
    # ADInplaceOrView kernels go)
    "ops-moved-and-autogen-lost": [Edit(NATIVE, FFTFREQ, ""), Edit(NATIVE, "", "\n" + FFTFREQ),
                                   Edit(NATIVE, AMINMAX_DISPATCH, "  autogen: _aminmax.out\n")],
    # inplace-and-view-ops-added: ADInplaceOrView kernels of in-place and out= ops (one and two
    # outs; none for a list in-place op returning nothing), a view and a list view (as_view
    # with their ViewFuncs and inverses), and the views' ViewFuncs structs (SymInt lists,
    # optional SymInts and tensors, a list view's index); their tracer kernels too
    "inplace-and-view-ops-added": [Edit(NATIVE, "", INPLACE_AND_VIEW_OPS)],
    # view-made-differentiable: _values, a view without differentiable output, gets a formula:
    # its ADInplaceOrView kernel becomes as_view with a ViewFunc (VariableType's and the
    # autograd node's too)
    "view-made-differentiable": [Edit(DERIVATIVES, VALUES + "  output_differentiability: [False]\n",
                                      VALUES + "  self: grad\n")],
    # view-made-composite: ccol_indices loses its dispatch: composite implicit, so no derived
    # kernel (VariableType, ADInplaceOrView) and no ViewFuncs struct
    "view-made-composite": [Edit(NATIVE, CCOL_DISPATCH, "")],
    # factory-defaults-and-new-factories: fft_fftfreq's default changes in its function (a
    # factory) and its out= variant; new factories: SymInt (two wrappers), `_like` without
    # options (named for SKIP_PYTHON_BINDINGS' `_?sparse_coo_tensor.*`: torchgen's bindings
    # refuse a `_like` function without options), options defaulting to long,
    # cpp_no_default_args; a method-only function with options, which is no factory
    # (variable_factories.h; the new functions' kernels, bindings and annotated args too)
    "factory-defaults-and-new-factories": [
        Edit(NATIVE, "- func: fft_fftfreq(int n, float d=1.0,", "- func: fft_fftfreq(int n, float d=2.0,"),
        Edit(NATIVE, "- func: fft_fftfreq.out(int n, float d=1.0,",
             "- func: fft_fftfreq.out(int n, float d=2.0,"),
        Edit(NATIVE, "", (
            "\n- func: zz_full_sym(SymInt[] size, Scalar fill_value=1, *, str mode='ab', "
            "ScalarType? dtype=long, Layout? layout=None, Device? device=None, "
            "bool? pin_memory=None) -> Tensor\n"
            "  cpp_no_default_args: ['fill_value']\n"
            "  dispatch:\n    CompositeExplicitAutograd: zz_full_sym\n"
            "\n- func: _sparse_coo_tensor_like(Tensor self, float alpha=0.5) -> Tensor\n"
            "  dispatch:\n    CompositeExplicitAutograd: _sparse_coo_tensor_like\n"
            f"\n- func: new_zz(Tensor self, int[] size, *, {FACTORY_OPTIONS}) -> Tensor\n"
            "  variants: method\n"
            "  dispatch:\n    CompositeExplicitAutograd: new_zz\n"))],
    # annotated-module-and-overload: diagonal moves to torch.linalg (function only); new
    # overloads: add's at the end of the file (annotated_fn_args.py groups it with add's first
    # appearance), a special function with a keyword-only argument without a default and a
    # sized list; annotated_fn_args.py.in's own text edited too
    "annotated-module-and-overload": [
        Edit(NATIVE, DIAGONAL, DIAGONAL.replace("  variants: function, method\n",
                                                "  python_module: linalg\n  variants: function\n")),
        Edit(NATIVE, "", (
            "\n- func: add.zz(Tensor self, int[2] pads, *, Tensor weight, SymInt[]? sizes) -> Tensor\n"
            "  variants: function, method\n"
            "  dispatch:\n    CompositeExplicitAutograd: add_zz\n"
            "\n- func: special_zz(Tensor self, SymInt[2] window, *, Tensor other, "
            "int k=2) -> Tensor\n"
            "  python_module: special\n"
            "  dispatch:\n    CompositeExplicitAutograd: special_zz\n")),
        Edit(f"{TEMPLATES}/annotated_fn_args.py.in", "annotated_args = {\n",
             "# edited\nannotated_args = {\n")],
}


def apply_edits(spec: Path, edits: list[Edit]) -> None:
    for edit in edits:
        path = spec / edit.file
        path.write_text(edited(path.read_text(), edit))


def edited(text: str, edit: Edit) -> str:
    if not edit.old:
        return text + edit.new
    assert edit.old in text, f"edit anchor not found in {edit.file}: {edit.old[:60]!r}"
    return text.replace(edit.old, edit.new, 1)


# Edits that cannot follow the others in one chain (each is built alone as well:
# tests/test_incremental.py)
OUT_OF_THE_CHAIN = {
    "foreach-op-added": "adds a second bitwise_not entry after entry-added's",
    "inplace-and-view-ops-added": "the spec the edits before it make rejects it",
}


# The builds a chain of edits is applied in (tests/test_incremental.py, tests/test_releases.py)
CHAIN_STEPS = 3


def chain(spec: Path, candidates: dict[str, list[Edit]]) -> list[list[str]]:
    """The edits that fit the spec (every anchor there) when applied in order, cut into
    CHAIN_STEPS steps; an edit whose anchor an earlier one took is left out, as are
    OUT_OF_THE_CHAIN's. Read from the spec, applied in memory."""
    texts: dict[str, str] = {}
    names = []
    for name, edits in candidates.items():
        for edit in edits:
            if edit.file not in texts:
                texts[edit.file] = (spec / edit.file).read_text()
        if name not in OUT_OF_THE_CHAIN and all(not e.old or e.old in texts[e.file]
                                                for e in edits):
            for edit in edits:
                texts[edit.file] = edited(texts[edit.file], edit)
            names.append(name)
    size = -(-len(names) // CHAIN_STEPS)
    return [names[k:k + size] for k in range(0, len(names), size)]

# Edits the cache must see through although they change little or nothing in the output.
ENGINE_EDITS = {
    "blank-lines-and-comments": [Edit(DERIVATIVES, MUL_TENSOR, "# a comment between entries\n\n\n"
                                      + MUL_TENSOR)],
    "entry-moved-to-the-end": [Edit(DERIVATIVES, SINH, ""), Edit(DERIVATIVES, "", "\n" + SINH)],
    "tag-description-edited": [Edit("ATen/native/tags.yaml", "- tag: inplace_view\n  desc: |\n",
                                    "- tag: inplace_view\n  desc: |\n    Edited.\n")],
    "formula-edited-twice": [Edit(DERIVATIVES, "  self: grad * self.cosh().conj()\n",
                                  "  self: grad * self.cosh().conj() * 2\n"),
                             Edit(DERIVATIVES, "  self: grad * self.cosh().conj() * 2\n",
                                  "  self: grad * self.cosh().conj() * 3\n")],
}
ALL_EDITS = {**EDITS, **ENGINE_EDITS}

# Edits only one release's spec takes, each aimed at what that release generates differently
# (pipeline/releases.py); tests/test_releases.py adds them to that release's chain of edits.
RENAME_INPLACE = ("- func: rename_(Tensor(a!) self, Dimname[]? names) -> Tensor(a!)\n"
                  "  variants: method\n  tags: inplace_view\n\n")
ALL_DIMNAME = "all.dimname{}(Tensor self, Dimname dim, bool keepdim={}"
NAMED_SCALE = ("named_scale(Tensor self, Dimname dim, Dimname[1] dims, Dimname[]? names, "
               "float factor=2) -> Tensor")
NAMED_VIEW = "named_view(Tensor(a) self, Dimname dim) -> Tensor(a)"
NAMED_FILL = "named_fill_(Tensor(a!) self, Dimname dim, Scalar value) -> Tensor(a!)"
CHOLESKY = "cholesky(Tensor self, bool upper=False) -> Tensor"
RELEASE_EDITS: dict[str, dict[str, list[Edit]]] = {
    # model.py BaseTy.Dimname: types, parser accessors, overload order, tracer inputs, factories
    "2.12.0": {
        "dimname-overload-with-formula": [
            Edit(NATIVE, "", f"\n- func: {NAMED_SCALE}\n  variants: function, method\n"
                             "  dispatch:\n    CompositeExplicitAutograd: named_scale\n"
                             "\n- func: named_scale.int(Tensor self, int dim, float factor=2) -> Tensor\n"
                             "  variants: function, method\n"
                             "  dispatch:\n    CompositeExplicitAutograd: named_scale_int\n"),
            Edit(DERIVATIVES, "", f"\n- name: {NAMED_SCALE}\n"
                                  "  self: named_scale_backward(grad, dim, dims, names, factor)\n"
                                  "  result: named_scale_jvp(self_t, dim, dims, names, factor)\n")],
        # a view (its ViewFunc keeps the name) and an in-place op over Dimname arguments
        "dimname-view-and-inplace": [
            Edit(NATIVE, "", f"\n- func: {NAMED_VIEW}\n  variants: function, method\n"
                             "  dispatch:\n    CompositeExplicitAutograd: named_view\n"
                             "\n- func: named_view_copy(Tensor self, Dimname dim) -> Tensor\n"
                             "  variants: function\n  dispatch:\n"
                             "    CompositeExplicitAutogradNonFunctional: named_view_copy\n"
                             "  tags: view_copy\n"
                             f"\n- func: {NAMED_FILL}\n  variants: method\n"
                             "  dispatch:\n    CompositeExplicitAutograd: named_fill_\n"),
            Edit(DERIVATIVES, "", f"\n- name: {NAMED_VIEW}\n"
                                  "  self: named_view_backward(grad, self.sym_sizes(), dim)\n"
                                  "  result: auto_linear\n"
                                  f"\n- name: {NAMED_FILL}\n"
                                  "  self: named_fill_backward(grad, dim)\n"
                                  "  result: self_t.fill_(0)\n")],
        "dimname-list-factory": [
            Edit(NATIVE, "", "\n- func: named_ramp.names(SymInt n, *, Dimname[]? names, "
                             f"{FACTORY_OPTIONS}) -> Tensor\n"
                             "  dispatch:\n    CompositeExplicitAutograd: named_ramp\n")],
        "dimname-ops-edited": [
            Edit(NATIVE, RENAME_INPLACE, ""),
            Edit(NATIVE, ALL_DIMNAME.format("", "False"), ALL_DIMNAME.format("", "True")),
            Edit(NATIVE, ALL_DIMNAME.format("_out", "False"), ALL_DIMNAME.format("_out", "True"))],
    },
    # gen_variable_type.py GRADIENT_IMPLEMENTED_FOR_COMPLEX: 2.14 dropped cholesky from it
    "2.14.1": {
        "op-dropped-from-the-complex-list-added": [
            Edit(NATIVE, "", f"\n- func: {CHOLESKY}\n  variants: method, function\n"
                             "  dispatch:\n    CPU, CUDA, MPS: cholesky\n"),
            Edit(DERIVATIVES, "", f"\n- name: {CHOLESKY}\n"
                                  "  self: cholesky_backward(grad, upper, result)\n")],
    },
}


# What the edits aimed at one generator change in its files (checked on gradshard's, equal
# to torchgen's: tests/test_incremental.py), so that the comparison covers what each is for.


def traced_ops_added(files: dict[str, str]) -> None:
    everything = files["TraceTypeEverything.cpp"]
    assert 'op_name = c10::Symbol::fromQualString("aten::zz_trace_");' in everything
    assert 'm.impl("zz_pair",' in everything


def ops_moved_and_autogen_lost(files: dict[str, str]) -> None:
    everything = files["TraceTypeEverything.cpp"]
    assert "_aminmax_out_out(" not in everything
    assert everything.index("fft_fftfreq_out_out(") > everything.index("fft_rfftfreq(")


def inplace_and_view_ops_added(files: dict[str, str]) -> None:
    everything = files["ADInplaceOrViewTypeEverything.cpp"]
    assert "increment_version(first);\n  increment_version(second);" in everything
    assert "auto step_val = step.value_or(0);" in everything
    assert "SplitGsViewFunc>(sizes, flag, chunk, view_idx);" in everything
    assert "zz_bump_all_" not in everything and "zz_bump(" not in everything
    header = files["ViewFuncs.h"]
    assert header.count("struct ") == 41
    assert ("SplitGsViewFunc(c10::SymIntArrayRef sizes, bool flag, "
            "::std::optional<c10::SymInt> chunk, int64_t view_idx)") in header
    assert "if(weights.has_value()) tensors.insert(" in files["ViewFuncs.cpp"]


def view_made_differentiable(files: dict[str, str]) -> None:
    assert "_ValuesViewFunc>();" in files["ADInplaceOrViewTypeEverything.cpp"]


def view_made_composite(files: dict[str, str]) -> None:
    header = files["ViewFuncs.h"]
    assert header.count("struct ") == 38 and "CcolIndicesViewFunc" not in header


def factory_defaults_and_new_factories(files: dict[str, str]) -> None:
    factories = files["variable_factories.h"]
    assert "inline at::Tensor fft_fftfreq(int64_t n, double d = 2.0, " in factories
    assert ("inline at::Tensor zz_full_sym_symint(c10::SymIntArrayRef size, "
            "const at::Scalar & fill_value, c10::string_view mode = \"ab\", "
            "at::TensorOptions options = at::kLong) {") in factories
    assert "/*requires_grad=*/false);" in factories.split("_sparse_coo_tensor_like(")[-1]
    assert "new_zz" not in factories


def annotated_module_and_overload(files: dict[str, str]) -> None:
    annotated = files["annotated_fn_args.py"]
    lines = annotated.splitlines()
    assert "# edited\n" in annotated
    assert "    torch._C._linalg.diagonal: " in annotated
    assert "    torch.Tensor.diagonal: " not in annotated
    adds = [i for i, line in enumerate(lines)
            if line.startswith("    torch._C._VariableFunctions.add:")]
    assert adds == list(range(adds[0], adds[0] + len(adds)))  # add.zz joined add's group
    assert ("'name': 'weight', 'simple_type': 'Tensor'}, {'is_kwarg_only': 'True', 'name': "
            "'sizes', 'simple_type': 'SymIntArrayRef?'}],") in lines[adds[-1]]
    assert "'name': 'window', 'simple_type': 'SymIntArrayRef', 'size': 2}" in annotated


REACHES = {"traced-ops-added": traced_ops_added,
           "ops-moved-and-autogen-lost": ops_moved_and_autogen_lost,
           "inplace-and-view-ops-added": inplace_and_view_ops_added,
           "view-made-differentiable": view_made_differentiable,
           "view-made-composite": view_made_composite,
           "factory-defaults-and-new-factories": factory_defaults_and_new_factories,
           "annotated-module-and-overload": annotated_module_and_overload}


# ---------------------------------------------------------------------------------------------
# What each edit re-runs: the engine's runs (EngineStats.runs: task and ident) of a cached
# build of the edited packaged spec, on a cache holding the build of the spec as shipped, the
# way Salsa's tests log what re-executed. The graph changes → update the table: a failing
# test prints the runs in its notation. A run beyond what the edit reaches goes in `excess`
# (the sets below, each saying why it runs), never among the runs it reaches.


def runs(table: str) -> frozenset[str]:
    """"task: ident, ident" lines → {"task ident", …}. An ident's own commas are inside
    parentheses (a schema's arguments): they separate nothing."""
    found: set[str] = set()
    for line in table.strip().splitlines():
        task, idents = line.strip().split(": ", 1)
        found.update(f"{task} {ident}" for ident in split_idents(idents))
    return frozenset(found)


def split_idents(idents: str) -> list[str]:
    """A line's idents: split at each ", " outside parentheses."""
    parts, depth, start = [], 0, 0
    for at, char in enumerate(idents):
        depth += {"(": 1, ")": -1}.get(char, 0)
        if depth == 0 and idents.startswith(", ", at):
            parts.append(idents[start:at])
            start = at + 2
    return parts + [idents[start:]]


def table_of(found: Iterable[str], width: int = 88) -> str:
    """runs()'s notation for a set of "task ident" runs: a task's idents on lines of about
    `width` characters."""
    by_task: dict[str, list[str]] = {}
    for run in sorted(found):
        task, ident = run.split(" ", 1)
        by_task.setdefault(task, []).append(ident)
    lines = []
    for task, idents in by_task.items():
        line = f"{task}: {idents[0]}"
        for ident in idents[1:]:
            if len(line) + len(ident) + 2 > width:
                lines.append(line)
                line = f"{task}: {ident}"
            else:
                line += f", {ident}"
        lines.append(line)
    return "\n".join(lines)


@dataclass(frozen=True)
class Reruns:
    """`reached`: the tasks the edit reaches (runs()'s notation); `excess`: runs beyond them,
    listed; `more`: how many further runs of a task, beyond them too (too many to list)."""

    reached: str
    excess: frozenset[str] = frozenset()
    more: dict[str, int] = field(default_factory=dict)

    def differences(self, ran: Iterable[str]) -> list[str]:
        """What the runs and the table disagree on: nothing when they agree exactly."""
        ran = set(ran)
        listed = runs(self.reached) | self.excess
        uncounted = Counter(run.split(" ", 1)[0] for run in ran - listed)
        problems = []
        if listed - ran:
            problems.append(f"expected, did not run:\n{table_of(listed - ran)}")
        if uncounted != Counter(self.more):
            problems.append(f"runs beyond the listed ones, by task: {dict(uncounted)}, "
                            f"expected {self.more}")
        return problems


# match.plan's steps name their function and infos by position, so a function whose position
# in the function list or whose infos' position moves matches again (its verdict unchanged):
# - the view copies' infos follow every entry's: an entry added moves them all;
VIEW_COPY_MATCHES = runs("""
    match.function: _conj_copy, _indices_copy, _neg_view_copy, _nested_get_values_copy
    match.function: _nested_view_from_buffer_copy, _nested_view_from_jagged_copy
    match.function: _reshape_alias_copy, _test_autograd_multiple_dispatch_view_copy
    match.function: _values_copy, alias_copy, as_strided_copy, ccol_indices_copy
    match.function: col_indices_copy, crow_indices_copy, diagonal_copy, expand_copy
    match.function: indices_copy, lift_fresh_copy, permute_copy, row_indices_copy
    match.function: select_copy.int, slice_copy.Tensor, split_copy.Tensor
    match.function: split_copy.Tensor_out, split_with_sizes_copy, split_with_sizes_copy.out
    match.function: squeeze_copy, squeeze_copy.dim, squeeze_copy.dims, t_copy
    match.function: transpose_copy.int, unbind_copy.int, unbind_copy.int_out, unfold_copy
    match.function: unsqueeze_copy, values_copy, view_as_complex_copy, view_as_real_copy
    match.function: view_copy, view_copy.dtype
    """)
# - the functions torchgen generates (parse.generate's functional variants) follow the parsed
#   ones: a native function added moves them all;
GENERATED_MATCHES = runs("""
    match.function: _batch_norm_with_update_functional
    match.function: _fused_moving_avg_obs_fq_helper_functional, _index_put_impl
    match.function: _native_batch_norm_legit_functional, bernoulli.Tensor, cauchy
    match.function: embedding_renorm, exponential, geometric, log_normal, random
    match.function: random.from, random.to, rrelu_with_noise_functional, uniform, zero
    """)
# - an entry removed or moved moves the infos of every entry after it (`more`: their matches
#   and foreach infos, hundreds);
# - a native function moved moves every function after its old place, and one no longer
#   generated (an autogen lost) every generated one after it: those that find infos match
#   again (`more`: their matches, ops-moved-and-autogen-lost's ~200).
# The return types' collection holds an item per Python name (an empty one for a name without
# named returns): any name added assembles both files again, their text unchanged.
RETURN_TYPES_FILES = runs("""
    assemble.return_types: python_return_types.cpp
    assemble.return_types_h: python_return_types.h
    """)
# parse.native reads the whole tag set: a tag added parses every native function again
# (new-tag's `more`).

RERUNS: dict[str, Reruns] = {
    "entry-added": Reruns("""
        assemble.functions: Functions.cpp, Functions.h
        assemble.kernel_section: VariableTypeEverything.cpp bitwise_and.Tensor_out 0
        assemble.kernel_section: VariableType_6.cpp _scaled_mm_v2 0
        assemble.kernel_section: VariableType_8.cpp _sparse_broadcast_to 0
        assemble.kernel_section: VariableType_9.cpp bitwise_not_ 0
        assemble.python_functions: python_functionsEverything.cpp, python_functions_1.cpp
        assemble.variable_type: VariableTypeEverything.cpp, VariableType_6.cpp
        assemble.variable_type: VariableType_8.cpp, VariableType_9.cpp
        group.autograd_files: autograd files
        group.autograd_side: autograd side
        group.build: build
        group.kernel_file: ADInplaceOrViewType_0.cpp
        group.variable_type: variable type
        group.variable_type_file: VariableType_6.cpp, VariableType_8.cpp, VariableType_9.cpp
        group.view_codegen: view codegen
        inplace_or_view.kernel: bitwise_not, bitwise_not.out, bitwise_not_
        match.function: bitwise_not, bitwise_not.out, bitwise_not_
        match.kernels: functions
        match.plan: functions
        match.view_side: bitwise_not, bitwise_not.out, bitwise_not_
        parse.check_formulas: bitwise_not
        parse.derivative: bitwise_not
        parse.dispatch_keys: derivatives
        parse.entry_infos: bitwise_not
        parse.formula_findings: derivatives
        parse.info_summary: bitwise_not
        parse.numbered_infos: bitwise_not
        parse.op_names: derivatives
        parse.view_copies: derivatives
        render.kernel: bitwise_not 0, bitwise_not.out 0, bitwise_not_ 0
        render.node: BitwiseNotBackward0
        render.node_names: infos 687
        render.nodes: BitwiseNotBackward0
        variable_type.kernels: bitwise_not, bitwise_not.out, bitwise_not_
        """, excess=VIEW_COPY_MATCHES),
    "entry-removed": Reruns("""
        assemble.functions: Functions.cpp, Functions.h
        assemble.kernel_section: VariableTypeEverything.cpp _upsample_bilinear2d_aa.out 0
        assemble.kernel_section: VariableType_6.cpp _scaled_mm_v2 0, VariableType_7.cpp _print 0
        assemble.kernel_section: VariableType_8.cpp _sparse_broadcast_to 0
        assemble.python_functions: python_functionsEverything.cpp, python_functions_3.cpp
        assemble.variable_type: VariableTypeEverything.cpp, VariableType_6.cpp
        assemble.variable_type: VariableType_7.cpp, VariableType_8.cpp
        group.autograd_files: autograd files
        group.autograd_side: autograd side
        group.build: build
        group.kernel_file: ADInplaceOrViewType_0.cpp
        group.variable_type: variable type
        group.variable_type_file: VariableType_6.cpp, VariableType_7.cpp, VariableType_8.cpp
        group.view_codegen: view codegen
        inplace_or_view.kernel: addbmm, addbmm.out, addbmm_
        match.kernels: functions
        match.plan: functions
        parse.dispatch_keys: derivatives
        parse.formula_findings: derivatives
        parse.op_names: derivatives
        parse.view_copies: derivatives
        render.kernel: addbmm 0, addbmm.out 0, addbmm_ 0
        variable_type.kernels: addbmm, addbmm.out, addbmm_
        """, more={'match.function': 1331, 'foreach.synthesize': 56}),
    "entries-reordered": Reruns("""
        assemble.functions: Functions.cpp, Functions.h
        assemble.kernel_section: VariableTypeEverything.cpp _foreach_floor.out 0
        assemble.kernel_section: VariableTypeEverything.cpp _foreach_mul.Tensor 0
        assemble.kernel_section: VariableTypeEverything.cpp mkldnn_reorder_conv2d_weight 0
        assemble.kernel_section: VariableType_0.cpp hann_window.periodic_out 0
        assemble.kernel_section: VariableType_3.cpp _foreach_lgamma_ 0
        assemble.kernel_section: VariableType_3.cpp _foreach_mul.Tensor 0
        assemble.kernel_section: VariableType_6.cpp median.out 0
        assemble.kernel_section: VariableType_8.cpp __ilshift__.Scalar 0
        assemble.python_functions: python_functionsEverything.cpp, python_functions_0.cpp
        assemble.variable_type: VariableTypeEverything.cpp, VariableType_0.cpp
        assemble.variable_type: VariableType_3.cpp, VariableType_6.cpp, VariableType_8.cpp
        foreach.synthesize: _foreach_mul.List, _foreach_mul.Scalar, _foreach_mul.ScalarList
        foreach.synthesize: _foreach_mul.Tensor
        group.autograd_files: autograd files
        group.autograd_side: autograd side
        group.build: build
        group.kernel_file: ADInplaceOrViewType_0.cpp
        group.variable_type: variable type
        group.variable_type_file: VariableType_0.cpp, VariableType_3.cpp, VariableType_6.cpp
        group.variable_type_file: VariableType_7.cpp, VariableType_8.cpp
        group.view_codegen: view codegen
        inplace_or_view.kernel: mul.out, mul_.Scalar, mul_.Tensor
        match.function: _foreach_mul.List, _foreach_mul.Scalar, _foreach_mul.ScalarList
        match.function: _foreach_mul.Tensor, _foreach_mul_.List, _foreach_mul_.Scalar
        match.function: _foreach_mul_.ScalarList, _foreach_mul_.Tensor, mul.Scalar, mul.Tensor
        match.function: mul.out, mul_.Scalar, mul_.Tensor
        match.plan: functions
        match.view_side: _foreach_mul.List, _foreach_mul.Scalar, _foreach_mul.ScalarList
        match.view_side: _foreach_mul.Tensor, _foreach_mul_.List, _foreach_mul_.Scalar
        match.view_side: _foreach_mul_.ScalarList, _foreach_mul_.Tensor, mul.Scalar, mul.Tensor
        match.view_side: mul.out, mul_.Scalar, mul_.Tensor
        parse.check_formulas: mul.Scalar, mul.Tensor
        parse.dispatch_keys: derivatives
        parse.formula_findings: derivatives
        parse.numbered_infos: mul.Scalar, mul.Tensor
        parse.op_names: derivatives
        parse.view_copies: derivatives
        render.kernel: _foreach_mul.List 0, _foreach_mul.Scalar 0, _foreach_mul.ScalarList 0
        render.kernel: _foreach_mul.Tensor 0, _foreach_mul_.List 0, _foreach_mul_.Scalar 0
        render.kernel: _foreach_mul_.ScalarList 0, _foreach_mul_.Tensor 0, mul.Scalar 0
        render.kernel: mul.Tensor 0, mul_.Scalar 0, mul_.Tensor 0
        render.node: ForeachMulBackward0Scalar, ForeachMulBackward0ScalarList
        render.node: ForeachMulBackward1List, ForeachMulBackward1Tensor, MulBackward0
        render.node: MulBackward1
        render.node_names: infos 227, infos 228, infos 766, infos 767, infos 768, infos 769
        render.nodes: ForeachMulBackward0Scalar, ForeachMulBackward0ScalarList
        render.nodes: ForeachMulBackward1List, ForeachMulBackward1Tensor, MulBackward0
        render.nodes: MulBackward1
        variable_type.kernels: _foreach_mul.List, _foreach_mul.Scalar, _foreach_mul.ScalarList
        variable_type.kernels: _foreach_mul.Tensor, _foreach_mul_.List, _foreach_mul_.Scalar
        variable_type.kernels: _foreach_mul_.ScalarList, _foreach_mul_.Tensor, mul.Scalar
        variable_type.kernels: mul.Tensor, mul.out, mul_.Scalar, mul_.Tensor
        """),
    "new-dispatch-key": Reruns("""
        assemble.functions: Functions.cpp, Functions.h
        assemble.kernel_section: VariableTypeEverything.cpp sigmoid_backward 0
        assemble.kernel_section: VariableType_1.cpp polygamma_ 0
        assemble.kernel_section: VariableType_8.cpp crow_indices 0
        assemble.python_functions: python_functionsEverything.cpp, python_functions_3.cpp
        assemble.variable_type: VariableTypeEverything.cpp, VariableType_1.cpp
        assemble.variable_type: VariableType_8.cpp
        foreach.synthesize: _foreach_sinh
        group.autograd_files: autograd files
        group.autograd_side: autograd side
        group.build: build
        group.kernel_file: ADInplaceOrViewType_0.cpp
        group.variable_type: variable type
        group.variable_type_file: VariableType_1.cpp, VariableType_4.cpp, VariableType_7.cpp
        group.variable_type_file: VariableType_8.cpp
        group.view_codegen: view codegen
        inplace_or_view.kernel: sinh.out, sinh_
        match.function: _foreach_sinh, _foreach_sinh_, sinh, sinh.out, sinh_
        match.plan: functions
        match.view_side: _foreach_sinh, _foreach_sinh_, sinh, sinh.out, sinh_
        parse.check_formulas: sinh
        parse.derivative: sinh
        parse.dispatch_keys: derivatives
        parse.entry_infos: sinh
        parse.info_summary: sinh
        parse.numbered_infos: sinh
        parse.op_names: derivatives
        parse.view_copies: derivatives
        render.kernel: sinh 1, sinh.out 1, sinh_ 1
        render.node: SinhBackwardAutogradCUDA0
        render.node_names: infos 300, infos 778
        render.nodes: ForeachSinhBackward0, SinhBackward0
        variable_type.kernels: _foreach_sinh, _foreach_sinh_, sinh, sinh.out, sinh_
        """),
    "saved-variable-changed": Reruns("""
        assemble.functions: Functions.cpp, Functions.h
        assemble.kernel_section: VariableTypeEverything.cpp _foreach_mul.Tensor 0
        assemble.kernel_section: VariableTypeEverything.cpp mkldnn_reorder_conv2d_weight 0
        assemble.kernel_section: VariableType_0.cpp hann_window.periodic_out 0
        assemble.kernel_section: VariableType_6.cpp median.out 0
        assemble.kernel_section: VariableType_8.cpp __ilshift__.Scalar 0
        assemble.python_functions: python_functionsEverything.cpp, python_functions_0.cpp
        assemble.variable_type: VariableTypeEverything.cpp, VariableType_0.cpp
        assemble.variable_type: VariableType_6.cpp, VariableType_8.cpp
        foreach.synthesize: _foreach_mul.List, _foreach_mul.Tensor
        group.autograd_files: autograd files
        group.autograd_side: autograd side
        group.build: build
        group.variable_type: variable type
        group.variable_type_file: VariableType_0.cpp, VariableType_3.cpp, VariableType_6.cpp
        group.variable_type_file: VariableType_7.cpp, VariableType_8.cpp
        match.function: _foreach_mul.List, _foreach_mul.Tensor, _foreach_mul_.List
        match.function: _foreach_mul_.Tensor, mul.Tensor, mul.out, mul_.Tensor
        match.view_side: _foreach_mul.List, _foreach_mul.Tensor, _foreach_mul_.List
        match.view_side: _foreach_mul_.Tensor, mul.Tensor, mul.out, mul_.Tensor
        parse.check_formulas: mul.Tensor
        parse.derivative: mul.Tensor
        parse.entry_infos: mul.Tensor
        parse.info_summary: mul.Tensor
        parse.numbered_infos: mul.Tensor
        render.kernel: _foreach_mul_.List 0, _foreach_mul_.Tensor 0, mul.Tensor 0, mul_.Tensor 0
        render.node: ForeachMulBackward0List, ForeachMulBackward0Tensor, MulBackward0
        render.node_names: infos 227, infos 767, infos 769
        render.nodes: ForeachMulBackward0List, ForeachMulBackward0Tensor, MulBackward0
        variable_type.kernels: _foreach_mul.List, _foreach_mul.Tensor, _foreach_mul_.List
        variable_type.kernels: _foreach_mul_.Tensor, mul.Tensor, mul.out, mul_.Tensor
        """),
    "foreach-reference-edited": Reruns("""
        assemble.functions: Functions.cpp, Functions.h
        assemble.kernel_section: VariableTypeEverything.cpp _conj_copy 0
        assemble.kernel_section: VariableTypeEverything.cpp _upsample_bilinear2d_aa.out 0
        assemble.kernel_section: VariableType_2.cpp _foreach_tanh_ 0
        assemble.kernel_section: VariableType_4.cpp _batch_norm_with_update_functional 0
        assemble.kernel_section: VariableType_8.cpp _sparse_broadcast_to 0
        assemble.python_functions: python_functionsEverything.cpp, python_functions_2.cpp
        assemble.variable_type: VariableTypeEverything.cpp, VariableType_2.cpp
        assemble.variable_type: VariableType_4.cpp, VariableType_8.cpp
        foreach.synthesize: _foreach_add.List, _foreach_add.Tensor
        group.autograd_files: autograd files
        group.autograd_side: autograd side
        group.build: build
        group.variable_type: variable type
        group.variable_type_file: VariableType_0.cpp, VariableType_2.cpp, VariableType_4.cpp
        group.variable_type_file: VariableType_8.cpp
        match.function: _foreach_add.List, _foreach_add.Tensor, _foreach_add_.List
        match.function: _foreach_add_.Tensor, add.Tensor, add.out, add_.Tensor
        match.view_side: _foreach_add.List, _foreach_add.Tensor, _foreach_add_.List
        match.view_side: _foreach_add_.Tensor, add.Tensor, add.out, add_.Tensor
        parse.check_formulas: add.Tensor
        parse.derivative: add.Tensor
        parse.entry_infos: add.Tensor
        parse.info_summary: add.Tensor
        parse.numbered_infos: add.Tensor
        render.kernel: _foreach_add_.List 0, _foreach_add_.Tensor 0, add.Tensor 0, add_.Tensor 0
        render.node: AddBackward0, ForeachAddBackward0List, ForeachAddBackward0Tensor
        render.node_names: infos 2, infos 727, infos 729
        render.nodes: AddBackward0, ForeachAddBackward0List, ForeachAddBackward0Tensor
        variable_type.kernels: _foreach_add.List, _foreach_add.Tensor, _foreach_add_.List
        variable_type.kernels: _foreach_add_.Tensor, add.Tensor, add.out, add_.Tensor
        """),
    "view-formula-edited": Reruns("""
        assemble.functions: Functions.cpp
        group.autograd_files: autograd files
        group.autograd_side: autograd side
        group.build: build
        group.kernel_file: ADInplaceOrViewType_1.cpp
        group.variable_type: variable type
        group.variable_type_file: VariableType_3.cpp, VariableType_5.cpp
        group.view_codegen: view codegen
        inplace_or_view.kernel: expand
        match.function: expand, expand_copy
        match.view_side: expand, expand_copy
        parse.check_formulas: expand
        parse.derivative: expand
        parse.entry_infos: expand
        parse.info_summary: expand, expand_copy
        parse.numbered_infos: expand
        parse.view_copy: expand_copy
        render.node: ExpandBackward0, ExpandBackward0_copy
        render.node_names: infos 104, infos 692
        render.nodes: ExpandBackward0, ExpandBackward0_copy
        variable_type.kernels: expand, expand_copy
        view_func.render: expand
        """),
    "templates-edited": Reruns("""
        assemble.functions: Functions.h
        assemble.python_functions: python_functionsEverything.cpp, python_functions_0.cpp
        assemble.python_functions: python_functions_1.cpp, python_functions_2.cpp
        assemble.python_functions: python_functions_3.cpp, python_functions_4.cpp
        group.autograd_files: autograd files
        group.build: build
        group.native_outputs: native outputs
        group.python_bindings: python bindings
        parse.formula_names: formula names
        """),
    "output-differentiability": Reruns("""
        assemble.kernel_section: VariableTypeEverything.cpp asin 0, VariableType_7.cpp _print 0
        assemble.kernel_section: VariableType_9.cpp _adaptive_avg_pool2d 0
        assemble.variable_type: VariableTypeEverything.cpp, VariableType_7.cpp
        assemble.variable_type: VariableType_9.cpp
        group.autograd_files: autograd files
        group.autograd_side: autograd side
        group.build: build
        group.variable_type: variable type
        group.variable_type_file: VariableType_7.cpp, VariableType_9.cpp
        match.function: asinh, asinh.out
        match.view_side: asinh, asinh.out
        parse.check_formulas: asinh
        parse.derivative: asinh
        parse.entry_infos: asinh
        parse.info_summary: asinh
        parse.numbered_infos: asinh
        render.kernel: asinh 0, asinh.out 0
        render.node_names: infos 24
        render.nodes: AsinhBackward0
        variable_type.kernels: asinh, asinh.out
        """),
    "not-implemented": Reruns("""
        assemble.functions: Functions.cpp, Functions.h
        assemble.kernel_section: VariableTypeEverything.cpp _foreach_sigmoid 0
        assemble.kernel_section: VariableTypeEverything.cpp sigmoid_backward 0
        assemble.kernel_section: VariableType_1.cpp polygamma_ 0
        assemble.kernel_section: VariableType_4.cpp _batch_norm_with_update_functional 0
        assemble.kernel_section: VariableType_7.cpp _coalesced 0
        assemble.kernel_section: VariableType_8.cpp crow_indices 0
        assemble.python_functions: python_functionsEverything.cpp, python_functions_3.cpp
        assemble.variable_type: VariableTypeEverything.cpp, VariableType_1.cpp
        assemble.variable_type: VariableType_4.cpp, VariableType_7.cpp, VariableType_8.cpp
        foreach.synthesize: _foreach_sinh
        group.autograd_files: autograd files
        group.autograd_side: autograd side
        group.build: build
        group.variable_type: variable type
        group.variable_type_file: VariableType_1.cpp, VariableType_4.cpp, VariableType_7.cpp
        group.variable_type_file: VariableType_8.cpp
        match.function: _foreach_sinh, _foreach_sinh_, sinh, sinh.out, sinh_
        match.view_side: _foreach_sinh, _foreach_sinh_, sinh, sinh.out, sinh_
        parse.check_formulas: sinh
        parse.derivative: sinh
        parse.entry_infos: sinh
        parse.formula_findings: derivatives
        parse.info_summary: sinh
        parse.numbered_infos: sinh
        render.kernel: _foreach_sinh 0, _foreach_sinh_ 0, sinh 0, sinh.out 0, sinh_ 0
        render.node: ForeachSinhBackward0, SinhBackward0
        render.node_names: infos 300, infos 778
        render.nodes: ForeachSinhBackward0, SinhBackward0
        variable_type.kernels: _foreach_sinh, _foreach_sinh_, sinh, sinh.out, sinh_
        """),
    "function-and-entry-added": Reruns("""
        annotated.render: my_scale
        assemble.annotated_fn_args: annotated_fn_args.py
        assemble.binding_file: python_variable_methods.cpp
        assemble.functions: Functions.cpp, Functions.h
        assemble.kernel_section: VariableTypeEverything.cpp mkldnn_reorder_conv2d_weight 0
        assemble.kernel_section: VariableType_2.cpp lt.Tensor_out 0
        assemble.python_functions: python_functionsEverything.cpp, python_functions_2.cpp
        assemble.torch_functions: python_torch_functionsEverything.cpp
        assemble.torch_functions: python_torch_functions_1.cpp
        assemble.trace_type: TraceTypeEverything.cpp, TraceType_2.cpp
        assemble.variable_type: VariableTypeEverything.cpp, VariableType_2.cpp
        bindings.bind: Tensor.my_scale, torch.my_scale
        bindings.key: my_scale
        bindings.plan: bindings
        bindings.render: Tensor.my_scale, torch.my_scale
        factory.render: my_scale
        group.autograd_files: autograd files
        group.autograd_side: autograd side
        group.build: build
        group.kernel_file: ADInplaceOrViewType_0.cpp, TraceType_2.cpp
        group.native_codegen: native codegen
        group.native_outputs: native outputs
        group.native_side: native side
        group.python_bindings: python bindings
        group.variable_type: variable type
        group.variable_type_file: VariableType_2.cpp
        group.view_codegen: view codegen
        inplace_or_view.kernel: my_scale
        match.function: my_scale
        match.kernels: functions
        match.plan: functions
        match.view_side: my_scale
        parse.buckets: native functions
        parse.check_formulas: my_scale
        parse.derivative: my_scale
        parse.dispatch_keys: derivatives
        parse.entry_infos: my_scale
        parse.formula_findings: derivatives
        parse.formula_names: formula names
        parse.function_summary: my_scale
        parse.generate: my_scale
        parse.info_summary: my_scale
        parse.native: my_scale
        parse.native_checks: native functions
        parse.numbered_infos: my_scale
        parse.op_names: derivatives
        parse.signature_groups: native functions
        parse.view_copies: derivatives
        parse.view_order: native functions
        render.kernel: my_scale 0
        render.node: MyScaleBackward0
        render.node_names: infos 687
        render.nodes: MyScaleBackward0
        trace_type.kernel: my_scale
        variable_type.kernels: my_scale
        """, excess=VIEW_COPY_MATCHES | GENERATED_MATCHES | RETURN_TYPES_FILES),
    "named-returns-and-lists": Reruns("""
        annotated.render: my_split
        assemble.annotated_fn_args: annotated_fn_args.py
        assemble.functions: Functions.cpp, Functions.h
        assemble.kernel_section: VariableTypeEverything.cpp mkldnn_reorder_conv2d_weight 0
        assemble.kernel_section: VariableType_1.cpp linalg_pinv.atol_rtol_tensor_out 0
        assemble.python_functions: python_functionsEverything.cpp, python_functions_1.cpp
        assemble.return_types: python_return_types.cpp
        assemble.return_types_h: python_return_types.h
        assemble.torch_functions: python_torch_functionsEverything.cpp
        assemble.torch_functions: python_torch_functions_1.cpp
        assemble.trace_type: TraceTypeEverything.cpp, TraceType_1.cpp
        assemble.variable_type: VariableTypeEverything.cpp, VariableType_1.cpp
        bindings.bind: torch.my_split
        bindings.key: my_split
        bindings.plan: bindings
        bindings.render: torch.my_split
        bindings.return_types: my_split
        factory.render: my_split
        group.autograd_files: autograd files
        group.autograd_side: autograd side
        group.build: build
        group.kernel_file: ADInplaceOrViewType_1.cpp, TraceType_1.cpp
        group.native_codegen: native codegen
        group.native_outputs: native outputs
        group.native_side: native side
        group.python_bindings: python bindings
        group.variable_type: variable type
        group.variable_type_file: VariableType_1.cpp
        group.view_codegen: view codegen
        inplace_or_view.kernel: my_split
        match.function: my_split
        match.kernels: functions
        match.plan: functions
        match.view_side: my_split
        parse.buckets: native functions
        parse.check_formulas: my_split
        parse.derivative: my_split
        parse.dispatch_keys: derivatives
        parse.entry_infos: my_split
        parse.formula_findings: derivatives
        parse.formula_names: formula names
        parse.function_summary: my_split
        parse.generate: my_split
        parse.info_summary: my_split
        parse.native: my_split
        parse.native_checks: native functions
        parse.numbered_infos: my_split
        parse.op_names: derivatives
        parse.signature_groups: native functions
        parse.view_copies: derivatives
        parse.view_order: native functions
        render.kernel: my_split 0
        render.node: MySplitBackward0
        render.node_names: infos 687
        render.nodes: MySplitBackward0
        trace_type.kernel: my_split
        variable_type.kernels: my_split
        """, excess=VIEW_COPY_MATCHES | GENERATED_MATCHES),
    "multi-variable-formula": Reruns("""
        annotated.render: my_lerp
        assemble.annotated_fn_args: annotated_fn_args.py
        assemble.functions: Functions.cpp, Functions.h
        assemble.kernel_section: VariableTypeEverything.cpp mkldnn_reorder_conv2d_weight 0
        assemble.kernel_section: VariableType_8.cpp crow_indices 0
        assemble.python_functions: python_functionsEverything.cpp, python_functions_3.cpp
        assemble.torch_functions: python_torch_functionsEverything.cpp
        assemble.torch_functions: python_torch_functions_2.cpp
        assemble.trace_type: TraceTypeEverything.cpp, TraceType_8.cpp
        assemble.variable_type: VariableTypeEverything.cpp, VariableType_8.cpp
        bindings.bind: torch.my_lerp
        bindings.key: my_lerp
        bindings.plan: bindings
        bindings.render: torch.my_lerp
        factory.render: my_lerp
        group.autograd_files: autograd files
        group.autograd_side: autograd side
        group.build: build
        group.kernel_file: ADInplaceOrViewType_0.cpp, TraceType_8.cpp
        group.native_codegen: native codegen
        group.native_outputs: native outputs
        group.native_side: native side
        group.python_bindings: python bindings
        group.variable_type: variable type
        group.variable_type_file: VariableType_8.cpp
        group.view_codegen: view codegen
        inplace_or_view.kernel: my_lerp
        match.function: my_lerp
        match.kernels: functions
        match.plan: functions
        match.view_side: my_lerp
        parse.buckets: native functions
        parse.check_formulas: my_lerp
        parse.derivative: my_lerp
        parse.dispatch_keys: derivatives
        parse.entry_infos: my_lerp
        parse.formula_findings: derivatives
        parse.formula_names: formula names
        parse.function_summary: my_lerp
        parse.generate: my_lerp
        parse.info_summary: my_lerp
        parse.native: my_lerp
        parse.native_checks: native functions
        parse.numbered_infos: my_lerp
        parse.op_names: derivatives
        parse.signature_groups: native functions
        parse.view_copies: derivatives
        parse.view_order: native functions
        render.kernel: my_lerp 0
        render.node: MyLerpBackward0
        render.node_names: infos 687
        render.nodes: MyLerpBackward0
        trace_type.kernel: my_lerp
        variable_type.kernels: my_lerp
        """, excess=VIEW_COPY_MATCHES | GENERATED_MATCHES | RETURN_TYPES_FILES),
    "op-with-function-and-method": Reruns("""
        annotated.render: my_blend, my_blend.out
        assemble.annotated_fn_args: annotated_fn_args.py
        assemble.binding_file: python_variable_methods.cpp
        assemble.inplace_or_view: ADInplaceOrViewTypeEverything.cpp, ADInplaceOrViewType_1.cpp
        assemble.kernel_section: VariableTypeEverything.cpp mkldnn_reorder_conv2d_weight 0
        assemble.kernel_section: VariableType_5.cpp max 0
        assemble.kernel_section: VariableType_9.cpp fractional_max_pool3d.output 0
        assemble.torch_functions: python_torch_functionsEverything.cpp
        assemble.torch_functions: python_torch_functions_1.cpp
        assemble.trace_type: TraceTypeEverything.cpp, TraceType_5.cpp
        assemble.variable_type: VariableTypeEverything.cpp, VariableType_5.cpp
        assemble.variable_type: VariableType_9.cpp
        bindings.bind: Tensor.my_blend, torch.my_blend
        bindings.key: my_blend, my_blend.out
        bindings.plan: bindings
        bindings.render: Tensor.my_blend, torch.my_blend
        factory.render: my_blend, my_blend.out
        group.autograd_side: autograd side
        group.build: build
        group.kernel_file: ADInplaceOrViewType_1.cpp, TraceType_5.cpp
        group.native_codegen: native codegen
        group.native_outputs: native outputs
        group.native_side: native side
        group.python_bindings: python bindings
        group.variable_type: variable type
        group.variable_type_file: VariableType_5.cpp, VariableType_9.cpp
        group.view_codegen: view codegen
        inplace_or_view.kernel: my_blend, my_blend.out
        match.kernels: functions
        match.plan: functions
        parse.buckets: native functions
        parse.formula_findings: derivatives
        parse.formula_names: formula names
        parse.function_summary: my_blend, my_blend.out
        parse.generate: my_blend
        parse.native: my_blend, my_blend.out
        parse.native_checks: native functions
        parse.signature_groups: native functions
        parse.view_copies: derivatives
        parse.view_order: native functions
        render.kernel: my_blend 0, my_blend.out 0
        trace_type.kernel: my_blend, my_blend.out
        variable_type.kernels: my_blend, my_blend.out
        """, excess=GENERATED_MATCHES | RETURN_TYPES_FILES),
    "new-overload": Reruns("""
        annotated.render: mul.Dim
        assemble.annotated_fn_args: annotated_fn_args.py
        assemble.binding_file: python_variable_methods.cpp
        assemble.kernel_section: VariableTypeEverything.cpp mkldnn_reorder_conv2d_weight 0
        assemble.kernel_section: VariableTypeEverything.cpp mul_.Tensor 0
        assemble.kernel_section: VariableType_0.cpp hann_window.periodic_out 0
        assemble.kernel_section: VariableType_0.cpp multi_margin_loss_backward 0
        assemble.torch_functions: python_torch_functionsEverything.cpp
        assemble.torch_functions: python_torch_functions_0.cpp
        assemble.trace_type: TraceTypeEverything.cpp, TraceType_0.cpp
        assemble.variable_type: VariableTypeEverything.cpp, VariableType_0.cpp
        bindings.bind: Tensor.mul, torch.mul
        bindings.key: mul.Dim
        bindings.plan: bindings
        bindings.render: Tensor.mul, torch.mul
        factory.render: mul.Dim
        group.autograd_side: autograd side
        group.build: build
        group.kernel_file: ADInplaceOrViewType_0.cpp, TraceType_0.cpp
        group.native_codegen: native codegen
        group.native_outputs: native outputs
        group.native_side: native side
        group.python_bindings: python bindings
        group.variable_type: variable type
        group.variable_type_file: VariableType_0.cpp
        group.view_codegen: view codegen
        inplace_or_view.kernel: mul.Dim
        match.kernels: functions
        match.plan: functions
        parse.buckets: native functions
        parse.formula_names: formula names
        parse.function_summary: mul.Dim
        parse.generate: mul.Dim
        parse.native: mul.Dim
        parse.native_checks: native functions
        parse.signature_groups: native functions
        parse.view_copies: derivatives
        parse.view_order: native functions
        render.kernel: mul.Dim 0
        trace_type.kernel: mul.Dim
        variable_type.kernels: mul.Dim
        """, excess=GENERATED_MATCHES),
    "changed-default": Reruns("""
        annotated.render: pdist
        assemble.torch_functions: python_torch_functionsEverything.cpp
        assemble.torch_functions: python_torch_functions_0.cpp
        bindings.bind: torch.pdist
        bindings.key: pdist
        bindings.render: torch.pdist
        factory.render: pdist
        group.autograd_side: autograd side
        group.build: build
        group.kernel_file: TraceType_5.cpp
        group.native_codegen: native codegen
        group.native_outputs: native outputs
        group.native_side: native side
        group.python_bindings: python bindings
        group.variable_type: variable type
        group.view_codegen: view codegen
        match.kernels: functions
        match.plan: functions
        parse.buckets: native functions
        parse.function_summary: pdist
        parse.generate: pdist
        parse.native: pdist
        parse.native_checks: native functions
        parse.signature_groups: native functions
        parse.view_copies: derivatives
        parse.view_order: native functions
        trace_type.kernel: pdist
        """),
    "changed-python-module": Reruns("""
        annotated.render: pdist
        assemble.annotated_fn_args: annotated_fn_args.py
        assemble.binding_file: python_nn_functions.cpp
        assemble.torch_functions: python_torch_functionsEverything.cpp
        assemble.torch_functions: python_torch_functions_0.cpp
        bindings.bind: torch._C._nn.pdist
        bindings.key: pdist
        bindings.plan: bindings
        bindings.render: torch._C._nn.pdist
        factory.render: pdist
        group.autograd_side: autograd side
        group.build: build
        group.kernel_file: TraceType_5.cpp
        group.native_codegen: native codegen
        group.native_outputs: native outputs
        group.native_side: native side
        group.python_bindings: python bindings
        group.variable_type: variable type
        group.view_codegen: view codegen
        parse.buckets: native functions
        parse.function_summary: pdist
        parse.generate: pdist
        parse.native: pdist
        parse.native_checks: native functions
        parse.signature_groups: native functions
        parse.view_order: native functions
        trace_type.kernel: pdist
        """),
    "deprecated-entry-removed": Reruns("""
        assemble.binding_file: python_variable_methods.cpp
        assemble.torch_functions: python_torch_functionsEverything.cpp
        assemble.torch_functions: python_torch_functions_2.cpp
        bindings.bind: Tensor.add, Tensor.add_, torch.add
        bindings.plan: bindings
        bindings.render: Tensor.add, Tensor.add_, torch.add
        group.build: build
        group.native_outputs: native outputs
        group.python_bindings: python bindings
        """),
    "new-tag": Reruns("""
        annotated.render: my_tagged
        assemble.annotated_fn_args: annotated_fn_args.py
        assemble.enum_tag: python_enum_tag.cpp
        assemble.kernel_section: VariableTypeEverything.cpp mkldnn_reorder_conv2d_weight 0
        assemble.kernel_section: VariableType_9.cpp fractional_max_pool3d.output 0
        assemble.torch_functions: python_torch_functionsEverything.cpp
        assemble.torch_functions: python_torch_functions_1.cpp
        assemble.trace_type: TraceTypeEverything.cpp, TraceType_9.cpp
        assemble.variable_type: VariableTypeEverything.cpp, VariableType_9.cpp
        bindings.bind: torch.my_tagged
        bindings.key: my_tagged
        bindings.plan: bindings
        bindings.render: torch.my_tagged
        factory.render: my_tagged
        group.autograd_side: autograd side
        group.build: build
        group.kernel_file: ADInplaceOrViewType_1.cpp, TraceType_9.cpp
        group.native_codegen: native codegen
        group.native_outputs: native outputs
        group.native_side: native side
        group.python_bindings: python bindings
        group.variable_type: variable type
        group.variable_type_file: VariableType_9.cpp
        group.view_codegen: view codegen
        inplace_or_view.kernel: my_tagged
        match.kernels: functions
        match.plan: functions
        parse.buckets: native functions
        parse.formula_findings: derivatives
        parse.formula_names: formula names
        parse.function_summary: my_tagged
        parse.generate: my_tagged
        parse.native: my_tagged
        parse.native_checks: native functions
        parse.signature_groups: native functions
        parse.tag: my_new_tag
        parse.tag_names: tags
        parse.view_copies: derivatives
        parse.view_order: native functions
        render.kernel: my_tagged 0
        trace_type.kernel: my_tagged
        variable_type.kernels: my_tagged
        """, excess=GENERATED_MATCHES | RETURN_TYPES_FILES, more={'parse.native': 2584}),
    "op-with-named-returns": Reruns("""
        annotated.render: my_minmax
        assemble.annotated_fn_args: annotated_fn_args.py
        assemble.binding_file: python_variable_methods.cpp
        assemble.kernel_section: VariableTypeEverything.cpp mkldnn_reorder_conv2d_weight 0
        assemble.kernel_section: VariableType_9.cpp fractional_max_pool3d.output 0
        assemble.return_types: python_return_types.cpp
        assemble.return_types_h: python_return_types.h
        assemble.torch_functions: python_torch_functionsEverything.cpp
        assemble.torch_functions: python_torch_functions_1.cpp
        assemble.trace_type: TraceTypeEverything.cpp, TraceType_9.cpp
        assemble.variable_type: VariableTypeEverything.cpp, VariableType_9.cpp
        bindings.bind: Tensor.my_minmax, torch.my_minmax
        bindings.key: my_minmax
        bindings.plan: bindings
        bindings.render: Tensor.my_minmax, torch.my_minmax
        bindings.return_types: my_minmax
        factory.render: my_minmax
        group.autograd_side: autograd side
        group.build: build
        group.kernel_file: ADInplaceOrViewType_1.cpp, TraceType_9.cpp
        group.native_codegen: native codegen
        group.native_outputs: native outputs
        group.native_side: native side
        group.python_bindings: python bindings
        group.variable_type: variable type
        group.variable_type_file: VariableType_9.cpp
        group.view_codegen: view codegen
        inplace_or_view.kernel: my_minmax
        match.kernels: functions
        match.plan: functions
        parse.buckets: native functions
        parse.formula_findings: derivatives
        parse.formula_names: formula names
        parse.function_summary: my_minmax
        parse.generate: my_minmax
        parse.native: my_minmax
        parse.native_checks: native functions
        parse.signature_groups: native functions
        parse.view_copies: derivatives
        parse.view_order: native functions
        render.kernel: my_minmax 0
        trace_type.kernel: my_minmax
        variable_type.kernels: my_minmax
        """, excess=GENERATED_MATCHES),
    "factory-with-tensor-options": Reruns("""
        annotated.render: my_ramp
        assemble.annotated_fn_args: annotated_fn_args.py
        assemble.kernel_section: VariableTypeEverything.cpp mkldnn_reorder_conv2d_weight 0
        assemble.kernel_section: VariableType_1.cpp linalg_pinv.atol_rtol_tensor_out 0
        assemble.torch_functions: python_torch_functionsEverything.cpp
        assemble.torch_functions: python_torch_functions_2.cpp
        assemble.trace_type: TraceTypeEverything.cpp, TraceType_1.cpp
        assemble.variable_factories: variable_factories.h
        assemble.variable_type: VariableTypeEverything.cpp, VariableType_1.cpp
        bindings.bind: torch.my_ramp
        bindings.key: my_ramp
        bindings.plan: bindings
        bindings.render: torch.my_ramp
        factory.render: my_ramp
        group.autograd_side: autograd side
        group.build: build
        group.kernel_file: ADInplaceOrViewType_1.cpp, TraceType_1.cpp
        group.native_codegen: native codegen
        group.native_outputs: native outputs
        group.native_side: native side
        group.python_bindings: python bindings
        group.variable_type: variable type
        group.variable_type_file: VariableType_1.cpp
        group.view_codegen: view codegen
        inplace_or_view.kernel: my_ramp
        match.kernels: functions
        match.plan: functions
        parse.buckets: native functions
        parse.formula_findings: derivatives
        parse.formula_names: formula names
        parse.function_summary: my_ramp
        parse.generate: my_ramp
        parse.native: my_ramp
        parse.native_checks: native functions
        parse.signature_groups: native functions
        parse.view_copies: derivatives
        parse.view_order: native functions
        render.kernel: my_ramp 0
        trace_type.kernel: my_ramp
        variable_type.kernels: my_ramp
        """, excess=GENERATED_MATCHES | RETURN_TYPES_FILES),
    "foreach-op-added": Reruns("""
        annotated.render: _foreach_bitwise_not
        assemble.annotated_fn_args: annotated_fn_args.py
        assemble.functions: Functions.cpp, Functions.h
        assemble.kernel_section: VariableTypeEverything.cpp _foreach_addcdiv.ScalarList 0
        assemble.kernel_section: VariableTypeEverything.cpp bitwise_and.Tensor_out 0
        assemble.kernel_section: VariableType_6.cpp _scaled_mm_v2 0
        assemble.kernel_section: VariableType_8.cpp _sparse_broadcast_to 0
        assemble.kernel_section: VariableType_9.cpp _adaptive_avg_pool2d 0
        assemble.kernel_section: VariableType_9.cpp bitwise_not_ 0
        assemble.python_functions: python_functionsEverything.cpp, python_functions_1.cpp
        assemble.torch_functions: python_torch_functionsEverything.cpp
        assemble.torch_functions: python_torch_functions_2.cpp
        assemble.trace_type: TraceTypeEverything.cpp, TraceType_9.cpp
        assemble.variable_type: VariableTypeEverything.cpp, VariableType_6.cpp
        assemble.variable_type: VariableType_8.cpp, VariableType_9.cpp
        bindings.bind: torch._foreach_bitwise_not
        bindings.key: _foreach_bitwise_not
        bindings.plan: bindings
        bindings.render: torch._foreach_bitwise_not
        factory.render: _foreach_bitwise_not
        foreach.synthesize: _foreach_bitwise_not
        group.autograd_files: autograd files
        group.autograd_side: autograd side
        group.build: build
        group.kernel_file: ADInplaceOrViewType_0.cpp, ADInplaceOrViewType_1.cpp, TraceType_9.cpp
        group.native_codegen: native codegen
        group.native_outputs: native outputs
        group.native_side: native side
        group.python_bindings: python bindings
        group.variable_type: variable type
        group.variable_type_file: VariableType_6.cpp, VariableType_8.cpp, VariableType_9.cpp
        group.view_codegen: view codegen
        inplace_or_view.kernel: _foreach_bitwise_not, bitwise_not, bitwise_not.out, bitwise_not_
        match.function: _foreach_bitwise_not, bitwise_not, bitwise_not.out, bitwise_not_
        match.kernels: functions
        match.plan: functions
        match.view_side: _foreach_bitwise_not, bitwise_not, bitwise_not.out, bitwise_not_
        parse.buckets: native functions
        parse.check_formulas: bitwise_not
        parse.derivative: bitwise_not
        parse.dispatch_keys: derivatives
        parse.entry_infos: bitwise_not
        parse.formula_findings: derivatives
        parse.formula_names: formula names
        parse.function_summary: _foreach_bitwise_not
        parse.generate: _foreach_bitwise_not
        parse.info_summary: bitwise_not
        parse.native: _foreach_bitwise_not
        parse.native_checks: native functions
        parse.numbered_infos: bitwise_not
        parse.op_names: derivatives
        parse.signature_groups: native functions
        parse.view_copies: derivatives
        parse.view_order: native functions
        render.kernel: _foreach_bitwise_not 0, bitwise_not 0, bitwise_not.out 0, bitwise_not_ 0
        render.node: BitwiseNotBackward0, ForeachBitwiseNotBackward0
        render.node_names: infos 687, infos 737
        render.nodes: BitwiseNotBackward0, ForeachBitwiseNotBackward0
        trace_type.kernel: _foreach_bitwise_not
        variable_type.kernels: _foreach_bitwise_not, bitwise_not, bitwise_not.out, bitwise_not_
        """, excess=VIEW_COPY_MATCHES | GENERATED_MATCHES | RETURN_TYPES_FILES),
    "forward-formula-edited": Reruns("""
        assemble.kernel_section: VariableTypeEverything.cpp mkldnn_reorder_conv2d_weight 0
        assemble.kernel_section: VariableType_8.cpp crow_indices 0
        assemble.variable_type: VariableTypeEverything.cpp, VariableType_8.cpp
        group.autograd_files: autograd files
        group.autograd_side: autograd side
        group.build: build
        group.variable_type: variable type
        group.variable_type_file: VariableType_6.cpp, VariableType_8.cpp
        match.function: mm, mm.out
        match.view_side: mm, mm.out
        parse.check_formulas: mm
        parse.derivative: mm
        parse.entry_infos: mm
        parse.info_summary: mm
        parse.numbered_infos: mm
        render.kernel: mm 0
        render.node_names: infos 224
        render.nodes: MmBackward0
        variable_type.kernels: mm, mm.out
        """),
    "view-forward-edited": Reruns("""
        assemble.kernel_section: VariableTypeEverything.cpp deg2rad_ 0
        assemble.kernel_section: VariableType_3.cpp celu_ 0, VariableType_4.cpp deg2rad.out 0
        assemble.variable_type: VariableTypeEverything.cpp, VariableType_3.cpp
        assemble.variable_type: VariableType_4.cpp
        group.autograd_files: autograd files
        group.autograd_side: autograd side
        group.build: build
        group.kernel_file: ADInplaceOrViewType_1.cpp
        group.variable_type: variable type
        group.variable_type_file: VariableType_3.cpp, VariableType_4.cpp
        group.view_codegen: view codegen
        inplace_or_view.kernel: diagonal
        match.function: diagonal, diagonal_copy
        match.view_side: diagonal, diagonal_copy
        parse.check_formulas: diagonal
        parse.derivative: diagonal
        parse.entry_infos: diagonal
        parse.info_summary: diagonal, diagonal_copy
        parse.numbered_infos: diagonal
        parse.view_copy: diagonal_copy
        render.kernel: diagonal 0, diagonal_copy 0
        render.node_names: infos 691, infos 83
        render.nodes: DiagonalBackward0, DiagonalBackward0_copy
        variable_type.kernels: diagonal, diagonal_copy
        view_func.render: diagonal
        """),
    "inplace-entry-edited": Reruns("""
        assemble.functions: Functions.cpp, Functions.h
        assemble.kernel_section: VariableTypeEverything.cpp asin 0, VariableType_7.cpp _print 0
        assemble.python_functions: python_functionsEverything.cpp, python_functions_2.cpp
        assemble.variable_type: VariableTypeEverything.cpp, VariableType_7.cpp
        group.autograd_files: autograd files
        group.autograd_side: autograd side
        group.build: build
        group.variable_type: variable type
        group.variable_type_file: VariableType_7.cpp
        match.function: asinh_
        match.view_side: asinh_
        parse.check_formulas: asinh_
        parse.derivative: asinh_
        parse.entry_infos: asinh_
        parse.formula_findings: derivatives
        parse.info_summary: asinh_
        parse.numbered_infos: asinh_
        render.kernel: asinh_ 0
        render.node: AsinhBackward1
        render.node_names: infos 25
        render.nodes: AsinhBackward1
        variable_type.kernels: asinh_
        """),
    "out-op-added": Reruns("""
        annotated.render: my_neg, my_neg.out
        assemble.annotated_fn_args: annotated_fn_args.py
        assemble.functions: Functions.cpp, Functions.h
        assemble.inplace_or_view: ADInplaceOrViewTypeEverything.cpp, ADInplaceOrViewType_0.cpp
        assemble.kernel_section: VariableTypeEverything.cpp mkldnn_reorder_conv2d_weight 0
        assemble.kernel_section: VariableType_4.cpp fmax.out 0, VariableType_6.cpp median.out 0
        assemble.python_functions: python_functionsEverything.cpp, python_functions_4.cpp
        assemble.torch_functions: python_torch_functionsEverything.cpp
        assemble.torch_functions: python_torch_functions_2.cpp
        assemble.trace_type: TraceTypeEverything.cpp, TraceType_4.cpp
        assemble.variable_type: VariableTypeEverything.cpp, VariableType_4.cpp
        assemble.variable_type: VariableType_6.cpp
        bindings.bind: torch.my_neg
        bindings.key: my_neg, my_neg.out
        bindings.plan: bindings
        bindings.render: torch.my_neg
        factory.render: my_neg, my_neg.out
        group.autograd_files: autograd files
        group.autograd_side: autograd side
        group.build: build
        group.kernel_file: ADInplaceOrViewType_0.cpp, TraceType_4.cpp
        group.native_codegen: native codegen
        group.native_outputs: native outputs
        group.native_side: native side
        group.python_bindings: python bindings
        group.variable_type: variable type
        group.variable_type_file: VariableType_4.cpp, VariableType_6.cpp
        group.view_codegen: view codegen
        inplace_or_view.kernel: my_neg, my_neg.out
        match.function: my_neg, my_neg.out
        match.kernels: functions
        match.plan: functions
        match.view_side: my_neg, my_neg.out
        parse.buckets: native functions
        parse.check_formulas: my_neg
        parse.derivative: my_neg
        parse.dispatch_keys: derivatives
        parse.entry_infos: my_neg
        parse.formula_findings: derivatives
        parse.formula_names: formula names
        parse.function_summary: my_neg, my_neg.out
        parse.generate: my_neg
        parse.info_summary: my_neg
        parse.native: my_neg, my_neg.out
        parse.native_checks: native functions
        parse.numbered_infos: my_neg
        parse.op_names: derivatives
        parse.signature_groups: native functions
        parse.view_copies: derivatives
        parse.view_order: native functions
        render.kernel: my_neg 0, my_neg.out 0
        render.node: MyNegBackward0
        render.node_names: infos 687
        render.nodes: MyNegBackward0
        trace_type.kernel: my_neg, my_neg.out
        variable_type.kernels: my_neg, my_neg.out
        """, excess=VIEW_COPY_MATCHES | GENERATED_MATCHES | RETURN_TYPES_FILES),
    "manual-kernel-entry-added": Reruns("""
        assemble.functions: Functions.cpp, Functions.h
        assemble.kernel_section: VariableTypeEverything.cpp deg2rad_ 0
        assemble.kernel_section: VariableType_6.cpp _scaled_mm_v2 0
        assemble.python_functions: python_functionsEverything.cpp, python_functions_1.cpp
        assemble.python_functions: python_functions_4.cpp
        assemble.variable_type: VariableTypeEverything.cpp, VariableType_6.cpp
        group.autograd_files: autograd files
        group.autograd_side: autograd side
        group.build: build
        group.kernel_file: ADInplaceOrViewType_0.cpp
        group.variable_type: variable type
        group.variable_type_file: VariableType_1.cpp, VariableType_6.cpp
        group.view_codegen: view codegen
        inplace_or_view.kernel: detach, detach_, detach_copy
        match.function: detach, detach_, detach_copy
        match.kernels: functions
        match.plan: functions
        match.view_side: detach, detach_, detach_copy
        parse.check_formulas: detach
        parse.derivative: detach
        parse.dispatch_keys: derivatives
        parse.entry_infos: detach
        parse.formula_findings: derivatives
        parse.info_summary: detach, detach_copy
        parse.numbered_infos: detach
        parse.op_names: derivatives
        parse.view_copies: derivatives
        parse.view_copy: detach_copy
        render.kernel: detach_copy 0
        render.node: DetachBackward0, DetachBackward0_copy
        render.node_names: infos 687, infos 725
        render.nodes: DetachBackward0, DetachBackward0_copy
        variable_type.kernels: detach, detach_, detach_copy
        view_func.render: detach, detach_
        """, excess=VIEW_COPY_MATCHES),
    "foreach-op-only": Reruns("""
        annotated.render: _foreach_sinc
        assemble.annotated_fn_args: annotated_fn_args.py
        assemble.functions: Functions.cpp, Functions.h
        assemble.kernel_section: VariableTypeEverything.cpp _foreach_sigmoid 0
        assemble.kernel_section: VariableType_3.cpp _foreach_mul.Tensor 0
        assemble.torch_functions: python_torch_functionsEverything.cpp
        assemble.torch_functions: python_torch_functions_1.cpp
        assemble.trace_type: TraceTypeEverything.cpp, TraceType_3.cpp
        assemble.variable_type: VariableTypeEverything.cpp, VariableType_3.cpp
        bindings.bind: torch._foreach_sinc
        bindings.key: _foreach_sinc
        bindings.plan: bindings
        bindings.render: torch._foreach_sinc
        factory.render: _foreach_sinc
        foreach.synthesize: _foreach_sinc
        group.autograd_files: autograd files
        group.autograd_side: autograd side
        group.build: build
        group.kernel_file: ADInplaceOrViewType_1.cpp, TraceType_3.cpp
        group.native_codegen: native codegen
        group.native_outputs: native outputs
        group.native_side: native side
        group.python_bindings: python bindings
        group.variable_type: variable type
        group.variable_type_file: VariableType_3.cpp
        group.view_codegen: view codegen
        inplace_or_view.kernel: _foreach_sinc
        match.function: _foreach_sinc
        match.kernels: functions
        match.plan: functions
        match.view_side: _foreach_sinc
        parse.buckets: native functions
        parse.formula_findings: derivatives
        parse.formula_names: formula names
        parse.function_summary: _foreach_sinc
        parse.generate: _foreach_sinc
        parse.native: _foreach_sinc
        parse.native_checks: native functions
        parse.signature_groups: native functions
        parse.view_copies: derivatives
        parse.view_order: native functions
        render.kernel: _foreach_sinc 0
        render.node: ForeachSincBackward0
        render.node_names: infos 778
        render.nodes: ForeachSincBackward0
        trace_type.kernel: _foreach_sinc
        variable_type.kernels: _foreach_sinc
        """, excess=GENERATED_MATCHES | RETURN_TYPES_FILES),
    # native functions added: the generated ones' matches (zz_pair's named returns do change
    # the return types' files)
    "traced-ops-added": Reruns("""
        annotated.render: zz_pair, zz_range, zz_range.out, zz_trace, zz_trace.out, zz_trace_
        assemble.annotated_fn_args: annotated_fn_args.py
        assemble.binding_file: python_variable_methods.cpp
        assemble.inplace_or_view: ADInplaceOrViewTypeEverything.cpp, ADInplaceOrViewType_0.cpp
        assemble.inplace_or_view: ADInplaceOrViewType_1.cpp
        assemble.kernel_section: VariableTypeEverything.cpp unfold 0
        assemble.kernel_section: VariableType_0.cpp special_i1e 0
        assemble.kernel_section: VariableType_1.cpp special_modified_bessel_k1 0
        assemble.kernel_section: VariableType_2.cpp std.correction_out 0
        assemble.kernel_section: VariableType_5.cpp unique_dim.out 0
        assemble.kernel_section: VariableType_8.cpp special_chebyshev_polynomial_t.x_scalar_out 0
        assemble.return_types: python_return_types.cpp
        assemble.return_types_h: python_return_types.h
        assemble.torch_functions: python_torch_functionsEverything.cpp
        assemble.torch_functions: python_torch_functions_1.cpp, python_torch_functions_2.cpp
        assemble.trace_type: TraceTypeEverything.cpp, TraceType_1.cpp, TraceType_5.cpp
        assemble.trace_type: TraceType_8.cpp
        assemble.variable_factories: variable_factories.h
        assemble.variable_type: VariableTypeEverything.cpp, VariableType_0.cpp
        assemble.variable_type: VariableType_1.cpp, VariableType_2.cpp, VariableType_5.cpp
        assemble.variable_type: VariableType_8.cpp
        bindings.bind: Tensor.zz_trace, Tensor.zz_trace_, torch.zz_pair, torch.zz_range
        bindings.bind: torch.zz_trace
        bindings.key: zz_pair, zz_range, zz_range.out, zz_trace, zz_trace.out, zz_trace_
        bindings.plan: bindings
        bindings.render: Tensor.zz_trace, Tensor.zz_trace_, torch.zz_pair, torch.zz_range
        bindings.render: torch.zz_trace
        bindings.return_types: zz_pair
        factory.render: zz_pair, zz_range, zz_range.out, zz_trace, zz_trace.out, zz_trace_
        group.autograd_side: autograd side
        group.build: build
        group.kernel_file: ADInplaceOrViewType_0.cpp, ADInplaceOrViewType_1.cpp, TraceType_1.cpp
        group.kernel_file: TraceType_5.cpp, TraceType_8.cpp
        group.native_codegen: native codegen
        group.native_outputs: native outputs
        group.native_side: native side
        group.python_bindings: python bindings
        group.variable_type: variable type
        group.variable_type_file: VariableType_0.cpp, VariableType_1.cpp, VariableType_2.cpp
        group.variable_type_file: VariableType_5.cpp, VariableType_8.cpp
        group.view_codegen: view codegen
        inplace_or_view.kernel: zz_pair, zz_range, zz_range.out, zz_trace, zz_trace.out
        inplace_or_view.kernel: zz_trace_
        match.kernels: functions
        match.plan: functions
        parse.buckets: native functions
        parse.formula_findings: derivatives
        parse.formula_names: formula names
        parse.function_summary: zz_pair, zz_range, zz_range.out, zz_trace, zz_trace.out
        parse.function_summary: zz_trace_
        parse.generate: zz_pair, zz_range, zz_trace
        parse.native: zz_pair, zz_range, zz_range.out, zz_trace, zz_trace.out, zz_trace_
        parse.native_checks: native functions
        parse.signature_groups: native functions
        parse.view_copies: derivatives
        parse.view_order: native functions
        render.kernel: zz_pair 0, zz_range 0, zz_range.out 0, zz_trace 0, zz_trace.out 0
        render.kernel: zz_trace_ 0
        trace_type.kernel: zz_pair, zz_range, zz_range.out, zz_trace, zz_trace.out, zz_trace_
        variable_type.kernels: zz_pair, zz_range, zz_range.out, zz_trace, zz_trace.out
        variable_type.kernels: zz_trace_
        """, excess=GENERATED_MATCHES),
    # fft_fftfreq moved and _aminmax.out no longer generated: the functions after them that
    # find infos match again (`more`: none of them is fft_fftfreq's or _aminmax's)
    "ops-moved-and-autogen-lost": Reruns("""
        annotated.render: _aminmax
        assemble.annotated_fn_args: annotated_fn_args.py
        assemble.inplace_or_view: ADInplaceOrViewTypeEverything.cpp, ADInplaceOrViewType_0.cpp
        assemble.kernel_section: VariableTypeEverything.cpp _adaptive_avg_pool3d 0
        assemble.kernel_section: VariableType_0.cpp __rshift__.Scalar_out 0
        assemble.kernel_section: VariableType_5.cpp _adaptive_avg_pool3d_backward.out 0
        assemble.trace_type: TraceTypeEverything.cpp, TraceType_0.cpp, TraceType_6.cpp
        assemble.variable_factories: variable_factories.h
        assemble.variable_type: VariableTypeEverything.cpp, VariableType_0.cpp
        assemble.variable_type: VariableType_5.cpp
        bindings.bind: torch._aminmax
        bindings.key: _aminmax
        bindings.plan: bindings
        factory.render: _aminmax
        group.autograd_side: autograd side
        group.build: build
        group.kernel_file: ADInplaceOrViewType_0.cpp, TraceType_0.cpp, TraceType_6.cpp
        group.native_codegen: native codegen
        group.native_outputs: native outputs
        group.native_side: native side
        group.python_bindings: python bindings
        group.variable_type: variable type
        group.variable_type_file: VariableType_0.cpp, VariableType_5.cpp
        group.view_codegen: view codegen
        match.kernels: functions
        match.plan: functions
        parse.buckets: native functions
        parse.formula_names: formula names
        parse.function_summary: _aminmax
        parse.generate: _aminmax
        parse.native: _aminmax
        parse.native_checks: native functions
        parse.signature_groups: native functions
        parse.view_copies: derivatives
        parse.view_order: native functions
        trace_type.kernel: _aminmax
        """, more={'match.function': 197}),
    # native functions added: the generated ones' matches (zz_pair's named returns do change
    # the return types' files)
    "inplace-and-view-ops-added": Reruns("""
        annotated.render: split.gs, split_copy.gs, unfold.gs, unfold_copy.gs, unfold_copy.gs_out
        annotated.render: zz_bump, zz_bump.out, zz_bump_, zz_bump_all_, zz_pair, zz_pair.out
        assemble.annotated_fn_args: annotated_fn_args.py
        assemble.binding_file: python_variable_methods.cpp
        assemble.inplace_or_view: ADInplaceOrViewTypeEverything.cpp, ADInplaceOrViewType_0.cpp
        assemble.inplace_or_view: ADInplaceOrViewType_1.cpp
        assemble.kernel_section: VariableTypeEverything.cpp special_xlog1py.self_scalar_out 0
        assemble.kernel_section: VariableTypeEverything.cpp unfold 0
        assemble.kernel_section: VariableType_0.cpp special_i1e 0
        assemble.kernel_section: VariableType_2.cpp std.correction_out 0
        assemble.kernel_section: VariableType_4.cpp softplus.out 0
        assemble.kernel_section: VariableType_5.cpp unique_dim.out 0
        assemble.kernel_section: VariableType_6.cpp median.out 0
        assemble.kernel_section: VariableType_8.cpp special_chebyshev_polynomial_t.x_scalar_out 0
        assemble.kernel_section: VariableType_9.cpp special_chebyshev_polynomial_v.out 0
        assemble.return_types: python_return_types.cpp
        assemble.return_types_h: python_return_types.h
        assemble.torch_functions: python_torch_functionsEverything.cpp
        assemble.torch_functions: python_torch_functions_1.cpp, python_torch_functions_2.cpp
        assemble.trace_type: TraceTypeEverything.cpp, TraceType_0.cpp, TraceType_2.cpp
        assemble.trace_type: TraceType_4.cpp, TraceType_5.cpp, TraceType_6.cpp, TraceType_8.cpp
        assemble.variable_type: VariableTypeEverything.cpp, VariableType_0.cpp
        assemble.variable_type: VariableType_2.cpp, VariableType_4.cpp, VariableType_5.cpp
        assemble.variable_type: VariableType_6.cpp, VariableType_8.cpp, VariableType_9.cpp
        assemble.view_funcs: ViewFuncs.cpp, ViewFuncs.h
        bindings.bind: Tensor.split, Tensor.unfold, Tensor.zz_bump, Tensor.zz_bump_, torch.split
        bindings.bind: torch.split_copy, torch.unfold, torch.unfold_copy, torch.zz_bump
        bindings.bind: torch.zz_bump_all_, torch.zz_pair
        bindings.key: split.gs, split_copy.gs, unfold.gs, unfold_copy.gs, unfold_copy.gs_out
        bindings.key: zz_bump, zz_bump.out, zz_bump_, zz_bump_all_, zz_pair, zz_pair.out
        bindings.plan: bindings
        bindings.render: Tensor.zz_bump, Tensor.zz_bump_, torch.split, torch.split_copy
        bindings.render: torch.unfold, torch.unfold_copy, torch.zz_bump, torch.zz_bump_all_
        bindings.render: torch.zz_pair
        bindings.return_types: zz_pair
        factory.render: split.gs, split_copy.gs, unfold.gs, unfold_copy.gs, unfold_copy.gs_out
        factory.render: zz_bump, zz_bump.out, zz_bump_, zz_bump_all_, zz_pair, zz_pair.out
        group.autograd_side: autograd side
        group.build: build
        group.kernel_file: ADInplaceOrViewType_0.cpp, ADInplaceOrViewType_1.cpp, TraceType_0.cpp
        group.kernel_file: TraceType_2.cpp, TraceType_4.cpp, TraceType_5.cpp, TraceType_6.cpp
        group.kernel_file: TraceType_8.cpp
        group.native_codegen: native codegen
        group.native_outputs: native outputs
        group.native_side: native side
        group.python_bindings: python bindings
        group.variable_type: variable type
        group.variable_type_file: VariableType_0.cpp, VariableType_2.cpp, VariableType_4.cpp
        group.variable_type_file: VariableType_5.cpp, VariableType_6.cpp, VariableType_8.cpp
        group.variable_type_file: VariableType_9.cpp
        group.view_codegen: view codegen
        inplace_or_view.kernel: split.gs, split_copy.gs, unfold.gs, unfold_copy.gs
        inplace_or_view.kernel: unfold_copy.gs_out, zz_bump, zz_bump.out, zz_bump_, zz_bump_all_
        inplace_or_view.kernel: zz_pair, zz_pair.out
        match.kernels: functions
        match.plan: functions
        parse.buckets: native functions
        parse.formula_findings: derivatives
        parse.formula_names: formula names
        parse.function_summary: split.gs, split_copy.gs, unfold.gs, unfold_copy.gs
        parse.function_summary: unfold_copy.gs (generated 0), zz_bump, zz_bump.out, zz_bump_
        parse.function_summary: zz_bump_all_, zz_pair, zz_pair.out
        parse.generate: split.gs, split_copy.gs, unfold.gs, unfold_copy.gs, zz_bump
        parse.generate: zz_bump_all_, zz_pair
        parse.native: split.gs, split_copy.gs, unfold.gs, unfold_copy.gs, zz_bump, zz_bump.out
        parse.native: zz_bump_, zz_bump_all_, zz_pair, zz_pair.out
        parse.native_checks: native functions
        parse.signature_groups: native functions
        parse.view_copies: derivatives
        parse.view_order: native functions
        render.kernel: split.gs 0, split_copy.gs 0, unfold.gs 0, unfold_copy.gs 0
        render.kernel: unfold_copy.gs_out 0, zz_bump 0, zz_bump.out 0, zz_bump_ 0
        render.kernel: zz_bump_all_ 0, zz_pair 0, zz_pair.out 0
        trace_type.kernel: split.gs, split_copy.gs, unfold.gs, unfold_copy.gs
        trace_type.kernel: unfold_copy.gs_out, zz_bump, zz_bump.out, zz_bump_, zz_bump_all_
        trace_type.kernel: zz_pair, zz_pair.out
        variable_type.kernels: split.gs, split_copy.gs, unfold.gs, unfold_copy.gs
        variable_type.kernels: unfold_copy.gs_out, zz_bump, zz_bump.out, zz_bump_, zz_bump_all_
        variable_type.kernels: zz_pair, zz_pair.out
        view_func.render: split.gs, unfold.gs
        """, excess=GENERATED_MATCHES),
    "view-made-differentiable": Reruns("""
        assemble.functions: Functions.cpp, Functions.h
        assemble.inplace_or_view: ADInplaceOrViewTypeEverything.cpp, ADInplaceOrViewType_1.cpp
        assemble.kernel_section: VariableTypeEverything.cpp _upsample_bilinear2d_aa.out 0
        assemble.kernel_section: VariableType_3.cpp _native_batch_norm_legit.no_stats_out 0
        assemble.kernel_section: VariableType_7.cpp _print 0
        assemble.python_functions: python_functionsEverything.cpp, python_functions_0.cpp
        assemble.python_functions: python_functions_3.cpp
        assemble.variable_type: VariableTypeEverything.cpp, VariableType_3.cpp
        assemble.variable_type: VariableType_7.cpp
        group.autograd_files: autograd files
        group.autograd_side: autograd side
        group.build: build
        group.kernel_file: ADInplaceOrViewType_1.cpp
        group.variable_type: variable type
        group.variable_type_file: VariableType_3.cpp, VariableType_7.cpp
        group.view_codegen: view codegen
        inplace_or_view.kernel: _values
        match.function: _values, _values_copy
        match.plan: functions
        match.view_side: _values, _values_copy
        parse.check_formulas: _values
        parse.derivative: _values
        parse.dispatch_keys: derivatives
        parse.entry_infos: _values
        parse.info_summary: _values, _values_copy
        parse.numbered_infos: _values
        parse.op_names: derivatives
        parse.view_copies: derivatives
        parse.view_copy: _values_copy
        render.kernel: _values 0, _values_copy 0
        render.node: ValuesBackward1, ValuesBackward1_copy
        render.node_names: infos 390, infos 718
        render.nodes: ValuesBackward1, ValuesBackward1_copy
        variable_type.kernels: _values, _values_copy
        view_func.render: _values
        """),
    "view-made-composite": Reruns("""
        annotated.render: ccol_indices
        assemble.inplace_or_view: ADInplaceOrViewTypeEverything.cpp, ADInplaceOrViewType_1.cpp
        assemble.kernel_section: VariableTypeEverything.cpp cauchy.out 0
        assemble.kernel_section: VariableType_9.cpp bitwise_not_ 0
        assemble.variable_type: VariableTypeEverything.cpp, VariableType_9.cpp
        assemble.view_funcs: ViewFuncs.cpp, ViewFuncs.h
        bindings.bind: Tensor.ccol_indices
        bindings.key: ccol_indices
        factory.render: ccol_indices
        group.autograd_files: autograd files
        group.autograd_side: autograd side
        group.build: build
        group.kernel_file: ADInplaceOrViewType_1.cpp, TraceType_9.cpp
        group.native_codegen: native codegen
        group.native_outputs: native outputs
        group.native_side: native side
        group.python_bindings: python bindings
        group.variable_type: variable type
        group.variable_type_file: VariableType_9.cpp
        group.view_codegen: view codegen
        inplace_or_view.kernel: ccol_indices
        match.function: ccol_indices
        match.kernels: functions
        match.plan: functions
        match.view_side: ccol_indices
        parse.buckets: native functions
        parse.check_formulas: ccol_indices
        parse.entry_infos: ccol_indices
        parse.function_summary: ccol_indices
        parse.generate: ccol_indices
        parse.info_summary: ccol_indices
        parse.native: ccol_indices
        parse.native_checks: native functions
        parse.numbered_infos: ccol_indices
        parse.signature_groups: native functions
        parse.view_copies: derivatives
        parse.view_copy: ccol_indices_copy
        parse.view_order: native functions
        render.node_names: infos 130
        trace_type.kernel: ccol_indices
        variable_type.kernels: ccol_indices
        view_func.render: ccol_indices
        """),
    # native functions added: the generated ones' matches; Python names added (zz_full_sym,
    # new_zz) without named returns: the return types' files, unchanged
    "factory-defaults-and-new-factories": Reruns("""
        annotated.render: _sparse_coo_tensor_like, fft_fftfreq, fft_fftfreq.out, new_zz
        annotated.render: zz_full_sym
        assemble.annotated_fn_args: annotated_fn_args.py
        assemble.binding_file: python_fft_functions.cpp, python_variable_methods.cpp
        assemble.kernel_section: VariableTypeEverything.cpp _slow_conv2d_backward.grad_input 0
        assemble.kernel_section: VariableTypeEverything.cpp _upsample_bilinear2d_aa_backward.grad_input 0
        assemble.kernel_section: VariableTypeEverything.cpp native_norm.ScalarOpt_dim_dtype_out 0
        assemble.kernel_section: VariableTypeEverything.cpp unfold 0
        assemble.kernel_section: VariableType_2.cpp std.correction_out 0
        assemble.kernel_section: VariableType_4.cpp _linalg_slogdet 0
        assemble.kernel_section: VariableType_7.cpp mode.values 0
        assemble.torch_functions: python_torch_functionsEverything.cpp
        assemble.torch_functions: python_torch_functions_0.cpp
        assemble.trace_type: TraceTypeEverything.cpp, TraceType_2.cpp, TraceType_4.cpp
        assemble.trace_type: TraceType_7.cpp
        assemble.variable_factories: variable_factories.h
        assemble.variable_type: VariableTypeEverything.cpp, VariableType_2.cpp
        assemble.variable_type: VariableType_4.cpp, VariableType_7.cpp
        bindings.bind: Tensor.new_zz, torch._C._fft.fft_fftfreq, torch.zz_full_sym
        bindings.key: _sparse_coo_tensor_like, fft_fftfreq, fft_fftfreq.out, new_zz, zz_full_sym
        bindings.plan: bindings
        bindings.render: Tensor.new_zz, torch._C._fft.fft_fftfreq, torch.zz_full_sym
        factory.render: _sparse_coo_tensor_like, fft_fftfreq, fft_fftfreq.out, new_zz
        factory.render: zz_full_sym
        group.autograd_side: autograd side
        group.build: build
        group.kernel_file: ADInplaceOrViewType_0.cpp, ADInplaceOrViewType_1.cpp, TraceType_2.cpp
        group.kernel_file: TraceType_4.cpp, TraceType_6.cpp, TraceType_7.cpp
        group.native_codegen: native codegen
        group.native_outputs: native outputs
        group.native_side: native side
        group.python_bindings: python bindings
        group.variable_type: variable type
        group.variable_type_file: VariableType_2.cpp, VariableType_4.cpp, VariableType_6.cpp
        group.variable_type_file: VariableType_7.cpp
        group.view_codegen: view codegen
        inplace_or_view.kernel: _sparse_coo_tensor_like, fft_fftfreq, fft_fftfreq.out, new_zz
        inplace_or_view.kernel: zz_full_sym
        match.kernels: functions
        match.plan: functions
        parse.buckets: native functions
        parse.formula_findings: derivatives
        parse.formula_names: formula names
        parse.function_summary: _sparse_coo_tensor_like, fft_fftfreq, fft_fftfreq.out, new_zz
        parse.function_summary: zz_full_sym
        parse.generate: _sparse_coo_tensor_like, fft_fftfreq, new_zz, zz_full_sym
        parse.native: _sparse_coo_tensor_like, fft_fftfreq, fft_fftfreq.out, new_zz, zz_full_sym
        parse.native_checks: native functions
        parse.signature_groups: native functions
        parse.view_copies: derivatives
        parse.view_order: native functions
        render.kernel: _sparse_coo_tensor_like 0, new_zz 0, zz_full_sym 0
        trace_type.kernel: _sparse_coo_tensor_like, fft_fftfreq, fft_fftfreq.out, new_zz
        trace_type.kernel: zz_full_sym
        variable_type.kernels: _sparse_coo_tensor_like, fft_fftfreq, fft_fftfreq.out, new_zz
        variable_type.kernels: zz_full_sym
        """, excess=GENERATED_MATCHES | RETURN_TYPES_FILES),
    # native functions added: the generated ones' matches; Python names added (special_zz,
    # linalg's diagonal) without named returns: the return types' files, unchanged
    "annotated-module-and-overload": Reruns("""
        annotated.render: add.zz, diagonal, special_zz
        assemble.annotated_fn_args: annotated_fn_args.py
        assemble.binding_file: python_linalg_functions.cpp, python_special_functions.cpp
        assemble.binding_file: python_variable_methods.cpp
        assemble.kernel_section: VariableTypeEverything.cpp _upsample_bilinear2d_aa.out 0
        assemble.kernel_section: VariableTypeEverything.cpp special_xlog1py.self_scalar_out 0
        assemble.kernel_section: VariableType_2.cpp _foreach_tanh_ 0
        assemble.kernel_section: VariableType_3.cpp special_xlog1py.self_scalar_out 0
        assemble.torch_functions: python_torch_functionsEverything.cpp
        assemble.torch_functions: python_torch_functions_0.cpp, python_torch_functions_2.cpp
        assemble.trace_type: TraceTypeEverything.cpp, TraceType_2.cpp, TraceType_3.cpp
        assemble.variable_type: VariableTypeEverything.cpp, VariableType_2.cpp
        assemble.variable_type: VariableType_3.cpp
        bindings.bind: Tensor.add, torch._C._linalg.diagonal, torch._C._special.special_zz
        bindings.bind: torch.add
        bindings.deprecated_check: add(Tensor self, Scalar alpha, Tensor other) -> Tensor
        bindings.deprecated_check: add(Tensor self, Scalar alpha, Tensor other, *, Tensor(a!) out) -> Tensor(a!)
        bindings.key: add.zz, diagonal, special_zz
        bindings.plan: bindings
        bindings.render: Tensor.add, torch._C._linalg.diagonal, torch._C._special.special_zz
        bindings.render: torch.add
        factory.render: add.zz, diagonal, special_zz
        group.autograd_files: autograd files
        group.autograd_side: autograd side
        group.build: build
        group.kernel_file: ADInplaceOrViewType_0.cpp, ADInplaceOrViewType_1.cpp, TraceType_2.cpp
        group.kernel_file: TraceType_3.cpp
        group.native_codegen: native codegen
        group.native_outputs: native outputs
        group.native_side: native side
        group.python_bindings: python bindings
        group.variable_type: variable type
        group.variable_type_file: VariableType_2.cpp, VariableType_3.cpp
        group.view_codegen: view codegen
        inplace_or_view.kernel: add.zz, diagonal, special_zz
        match.function: diagonal
        match.kernels: functions
        match.plan: functions
        match.view_side: diagonal
        parse.buckets: native functions
        parse.check_formulas: diagonal
        parse.entry_infos: diagonal
        parse.formula_findings: derivatives
        parse.formula_names: formula names
        parse.function_summary: add.zz, diagonal, special_zz
        parse.generate: add.zz, diagonal, special_zz
        parse.info_summary: diagonal
        parse.native: add.zz, diagonal, special_zz
        parse.native_checks: native functions
        parse.numbered_infos: diagonal
        parse.signature_groups: native functions
        parse.view_copies: derivatives
        parse.view_copy: diagonal_copy
        parse.view_order: native functions
        render.kernel: add.zz 0, special_zz 0
        render.node_names: infos 83
        render.nodes: DiagonalBackward0
        trace_type.kernel: add.zz, diagonal, special_zz
        variable_type.kernels: add.zz, diagonal, special_zz
        view_func.render: diagonal
        """, excess=GENERATED_MATCHES | RETURN_TYPES_FILES),
    "blank-lines-and-comments": Reruns("""
        group.autograd_side: autograd side
        group.build: build
        """),
    "entry-moved-to-the-end": Reruns("""
        assemble.functions: Functions.cpp, Functions.h
        assemble.python_functions: python_functionsEverything.cpp, python_functions_3.cpp
        group.autograd_files: autograd files
        group.autograd_side: autograd side
        group.build: build
        match.plan: functions
        parse.dispatch_keys: derivatives
        parse.formula_findings: derivatives
        parse.op_names: derivatives
        parse.view_copies: derivatives
        """, more={'match.function': 627, 'foreach.synthesize': 8}),
    "tag-description-edited": Reruns("""
        group.build: build
        group.native_side: native side
        parse.tag: inplace_view
        parse.tag_names: tags
        """),
    "formula-edited-twice": Reruns("""
        assemble.functions: Functions.cpp
        assemble.kernel_section: VariableTypeEverything.cpp _foreach_sigmoid 0
        assemble.kernel_section: VariableTypeEverything.cpp sigmoid_backward 0
        assemble.kernel_section: VariableType_4.cpp _batch_norm_with_update_functional 0
        assemble.kernel_section: VariableType_7.cpp _coalesced 0
        assemble.kernel_section: VariableType_8.cpp crow_indices 0
        assemble.variable_type: VariableTypeEverything.cpp, VariableType_4.cpp
        assemble.variable_type: VariableType_7.cpp, VariableType_8.cpp
        foreach.synthesize: _foreach_sinh
        group.autograd_files: autograd files
        group.autograd_side: autograd side
        group.build: build
        group.variable_type: variable type
        group.variable_type_file: VariableType_1.cpp, VariableType_4.cpp, VariableType_7.cpp
        group.variable_type_file: VariableType_8.cpp
        match.function: _foreach_sinh, _foreach_sinh_, sinh, sinh.out, sinh_
        match.view_side: _foreach_sinh, _foreach_sinh_, sinh, sinh.out, sinh_
        parse.check_formulas: sinh
        parse.derivative: sinh
        parse.entry_infos: sinh
        parse.info_summary: sinh
        parse.numbered_infos: sinh
        render.kernel: _foreach_sinh 0, _foreach_sinh_ 0, sinh 0, sinh_ 0
        render.node: ForeachSinhBackward0, SinhBackward0
        render.node_names: infos 300, infos 778
        render.nodes: ForeachSinhBackward0, SinhBackward0
        variable_type.kernels: _foreach_sinh, _foreach_sinh_, sinh, sinh.out, sinh_
        """),
}
