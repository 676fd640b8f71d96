"""Hand edits of the real spec, shared by the differential and incremental tests: each is
compared with torchgen run on the same edited spec."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from support.specs import DERIVATIVES, NATIVE, TEMPLATES

AUTOGRAD_FILES = ["Functions.h", "Functions.cpp", "python_functions.h"] + [
    f"python_functions{s}.cpp" for s in ("_0", "_1", "_2", "_3", "_4", "Everything")]
BINDING_FILES = ["python_variable_methods.cpp", "python_nn_functions.cpp", "python_fft_functions.cpp",
                 "python_linalg_functions.cpp", "python_nested_functions.cpp",
                 "python_sparse_functions.cpp", "python_special_functions.cpp",
                 "python_return_types.cpp", "python_return_types.h", "python_enum_tag.cpp"] + [
    f"python_torch_functions{s}.cpp" for s in ("_0", "_1", "_2", "Everything")]
ALL_FILES = AUTOGRAD_FILES + BINDING_FILES

MUL_TENSOR = """- name: mul.Tensor(Tensor self, Tensor other) -> Tensor
  self: mul_tensor_backward(grad, other, self.scalar_type())
  other: mul_tensor_backward(grad, self, other.scalar_type())
  result: other_t * self_p + self_t * other_p
"""
MUL_SCALAR = """- name: mul.Scalar(Tensor self, Scalar other) -> Tensor
  self: mul_tensor_backward(grad, other, self.scalar_type())
  result: self_t * other
"""
SINH = """- name: sinh(Tensor self) -> Tensor
  self: grad * self.cosh().conj()
  result: auto_element_wise
"""


@dataclass(frozen=True)
class Edit:
    file: str
    old: str  # "" appends `new`
    new: str


EDITS = {
    "entry-added": [Edit(DERIVATIVES, "", "\n- name: signbit(Tensor self) -> Tensor\n"
                                          "  self: zeros_like(grad)\n  result: auto_element_wise\n")],
    "entry-removed": [Edit(DERIVATIVES, MUL_TENSOR + "\n", "")],
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
    "output-differentiability": [Edit(DERIVATIVES, SINH, SINH.replace(
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
        Edit(NATIVE, "", "\n- func: _foreach_signbit(Tensor[] self) -> Tensor[]\n  device_check: NoCheck\n"
                         "  variants: function\n  dispatch:\n"
                         "    CompositeExplicitAutograd: foreach_tensor_signbit_slow\n"),
        Edit(DERIVATIVES, "", "\n- name: signbit(Tensor self) -> Tensor\n"
                              "  self: zeros_like(grad) * self.sym_numel()\n  result: auto_element_wise\n")],
    # foreach-only: a foreach op borrowing an existing entry's formulas adds a node to
    # Functions.* but no Python class (python_functions* bind the infos as loaded)
    "foreach-op-only": [
        Edit(NATIVE, "", "\n- func: _foreach_sinc(Tensor[] self) -> Tensor[]\n  device_check: NoCheck\n"
                         "  variants: function\n  dispatch:\n"
                         "    CompositeExplicitAutograd: foreach_tensor_sinc_slow\n")],
}


def apply_edits(spec: Path, edits: list[Edit]) -> None:
    for edit in edits:
        path = spec / edit.file
        text = path.read_text()
        if edit.old:
            assert edit.old in text, f"edit anchor not found in {edit.file}: {edit.old[:60]!r}"
            text = text.replace(edit.old, edit.new, 1)
        else:
            text += edit.new
        path.write_text(text)

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
