"""A bad spec's problems come from the build graph, every one located at its file and line:
with no store, and with a store both cold and cached (a cached run reports them without
running a task), they are the problems the straight pipeline reported (issue 16, item 3).

Each case edits a copy of the mini spec (or the packaged one) with mistakes in every phase —
splitting, parsing, matching, binding, rendering — several at once across files.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from gradshard.cache.engine import Engine, Memory
from gradshard.cache.graph import BuildInputs, build
from gradshard.cache.store import Store
from gradshard.cache.version import code_version
from gradshard.pipeline.errors import SpecError
from gradshard.pipeline.render import TemplateSet
from gradshard.pipeline.spec import decode_spec
from gradshard.pipeline.spec_templates import ALL_TEMPLATES
from gradshard.service.inputs import (gradshard_template_bytes, read_spec_templates,
                                      spec_template_sources, template_sources)
from gradshard.service.spec_location import locate_spec
from support.spec_edits import Edit, apply_edits
from support.specs import DEPRECATED, DERIVATIVES, MINI_SPEC, NATIVE, TAGS, TEMPLATES

MUL_SELF = "  self: mul_tensor_backward(grad, other, self.scalar_type())"
EXPAND_SELF = "  self: at::sum_to(grad, self.sym_sizes())"
MINMAX_SELF = "grad_min.expand_symint(self.sym_sizes()) + grad_max.expand_symint(self.sym_sizes())"
MUL_FUNC = "- func: mul.Tensor(Tensor self, Tensor other)"
MUL_NAME = "- name: mul.Tensor(Tensor self, Tensor other) -> Tensor"
SUM_KERNEL = "  variants: function, method\n  dispatch:\n    CompositeExplicitAutograd: sum"
DEPRECATED_ADD = ("- name: add(Tensor self, Scalar alpha, Tensor other) -> Tensor\n"
                  "  aten: add(self, other, alpha)")
ALIAS_BOMB = (EXPAND_SELF + "\n  x0: &x0 [" + ", ".join(["lol"] * 9) + "]\n"
              + "".join(f"  x{i}: &x{i} [" + ", ".join([f"*x{i - 1}"] * 9) + "]\n"
                        for i in range(1, 6)))
INPLACE_ADD_ENTRY = ("\n- name: add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> "
                     "Tensor(a!)\n  self: grad\n  other: maybe_multiply(grad, alpha.conj())\n"
                     "  result: self_p + maybe_multiply(other_t, alpha)\n")
ADD_SELF = "  self: handle_r_to_c(self.scalar_type(), grad)"
STRIDED_ADD_SELF = ("  self: handle_r_to_c(self.scalar_type(), grad).as_strided_symint("
                    "TensorGeometry(self).sym_sizes(), TensorGeometry(self).sym_strides())")
STRIDES_OR_ERROR_ADD_SELF = "  self: grad * self.sym_strides()[0]"
QSCHEME_OP = ("\n- func: qfoo(Tensor self, QScheme q) -> Tensor\n  variants: function, method\n"
              "  dispatch:\n    CompositeExplicitAutograd: qfoo\n")
SEVEN_TENSORS_OP = ("\n- func: seven(Tensor self) -> (Tensor, Tensor, Tensor, Tensor, Tensor, "
                    "Tensor, Tensor)\n  variants: function, method\n  dispatch:\n"
                    "    CompositeExplicitAutograd: seven\n")


def native(text: str) -> Edit:
    return Edit(NATIVE, "", text)


def derivative(text: str) -> Edit:
    return Edit(DERIVATIVES, "", text)


def op(name: str, signature: str, returns: str = "Tensor", extra: str = "") -> str:
    return (f"\n- func: {name}({signature}) -> {returns}\n{extra}"
            f"  dispatch:\n    CompositeExplicitAutograd: {name.split('.')[0]}\n")


CASES: dict[str, list[Edit]] = {
    # --- splitting (each file's split problems together, nothing after)
    "split-tags-not-a-list": [Edit(TAGS, "# Tags for the mini spec", "tags:\n# Tags for the mini spec")],
    "split-two-files": [Edit(TAGS, "# Tags for the mini spec", "tags:\n# Tags for the mini spec"),
                        Edit(DEPRECATED, DEPRECATED_ADD + "\n", ""),
                        Edit(DERIVATIVES, "  output_differentiability: [True, True]",
                             "  output_differentiability: " + "[" * 1000)],
    "split-derivatives-not-a-list": [Edit(DERIVATIVES, "# A small", "name: x\n# A small")],
    "entry-not-mapping": [Edit(DEPRECATED, "", "\n- just a string\n")],
    "yaml-nesting-flow": [Edit(DERIVATIVES, "  output_differentiability: [True, True]",
                                "  output_differentiability: " + "[" * 1000)],
    "yaml-nesting-block": [Edit(DERIVATIVES, "  output_differentiability: [True, True]\n",
                                 "  output_differentiability:\n"
                                 + "".join("  " * (i + 2) + f"k{i}:\n" for i in range(150))
                                 + "  " * 152 + "v\n")],
    "split-hides-parse": [Edit(DEPRECATED, DEPRECATED_ADD + "\n", ""),
                        Edit(NATIVE, MUL_FUNC, "- func: mul.Tensor(Tensor self, Tensr other)")],
    # --- per-entry parsing
    "yaml-syntax": [Edit(DERIVATIVES, EXPAND_SELF, EXPAND_SELF + "\n   bad: [unclosed")],
    "yaml-duplicate-key": [Edit(NATIVE, "  variants: function, method\n  dispatch:\n    SparseCPU, SparseCUDA: mul_sparse",
                                "  variants: function, method\n  variants: method  # twice\n  dispatch:\n    SparseCPU, SparseCUDA: mul_sparse")],
    "yaml-alias-expansion": [Edit(DERIVATIVES, EXPAND_SELF + "\n", ALIAS_BOMB)],
    "native-unknown-key": [Edit(NATIVE, "  variants: method\n  device_check: NoCheck\n  device_guard: False",
                                "  variant: method\n  device_check: NoCheck\n  device_guard: False")],
    "schema-unknown-type": [Edit(NATIVE, MUL_FUNC, "- func: mul.Tensor(Tensor self, Tensr other)")],
    "schema-not-canonical": [Edit(NATIVE, MUL_FUNC, "- func: mul.Tensor(Tensor self,  Tensor other)")],
    "schema-out-not-kwarg": [Edit(NATIVE, "- func: mul.out(Tensor self, Tensor other, *, Tensor(a!) out)",
                                  "- func: mul.out(Tensor self, Tensor other, Tensor(a!) out)")],
    "schema-inplace-return": [Edit(NATIVE, "- func: mul_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)",
                                   "- func: mul_.Tensor(Tensor(a!) self, Tensor other) -> Tensor")],
    "native-unknown-tag": [Edit(NATIVE, "  autogen: sum.out\n  tags: reduction", "  autogen: sum.out\n  tags: reductoin")],
    "native-bad-dispatch-key": [Edit(NATIVE, "    CPU, CUDA, MPS: mul_out", "    CPU, CUDB, MPS: mul_out")],
    "native-missing-delegate": [Edit(NATIVE, "  structured_delegate: mul.out\n  variants: method",
                                     "  structured_delegate: mul.outt\n  variants: method")],
    "native-keyword-argument": [Edit(NATIVE, "- func: minmax(Tensor self, int dim=0)",
                                     "- func: minmax(Tensor self, int lambda=0)")],
    "native-bad-variant": [Edit(NATIVE, SUM_KERNEL, SUM_KERNEL.replace("function,", "funtion,"))],
    "native-out-with-method": [Edit(NATIVE, "  structured: True\n  structured_inherits: TensorIteratorBase\n  dispatch:\n    CPU, CUDA, MPS: mul_out",
                                    "  structured: True\n  variants: function, method\n  structured_inherits: TensorIteratorBase\n  dispatch:\n    CPU, CUDA, MPS: mul_out")],
    "native-random-untagged": [native(op("my_rand", "Tensor self, *, Generator? generator=None"))],
    "native-duplicate-name": [native(op("mul.Tensor", "Tensor self, Tensor other, int x"))],
    "native-duplicate-signature": [native(op("sum.again", "Tensor self, *, ScalarType? dtype=None"))],
    "native-duplicate-schema": [native(op("expand", "Tensor(a) self, SymInt[] size, *, bool implicit=False",
                                          "Tensor(a)"))],
    "native-lonely-out": [native(op("lonely.out", "Tensor self, *, Tensor(a!) out", "Tensor(a!)"))],
    "native-foreach-device-check": [Edit(NATIVE,
                                         "  device_check: NoCheck   # foreach kernels fall back to slow path when tensor are on different devices\n  variants: function\n  dispatch:\n    CompositeExplicitAutograd: foreach_tensor_add_list_kernel_slow\n",
                                         "  variants: function\n  dispatch:\n    CompositeExplicitAutograd: foreach_tensor_add_list_kernel_slow\n")],
    "views-missing-copy": [native(op("my_view", "Tensor(a) self", "Tensor(a)"))],
    "native-factory-without-dispatch": [native("\n- func: ones_like(Tensor self) -> Tensor\n  variants: function\n")],
    "tags-no-description": [Edit(TAGS, "- tag: reduction\n  desc: Reductions.", "- tag: reduction")],
    "tags-duplicate": [Edit(TAGS, "", "- tag: core  # again\n  desc: Again.\n")],
    "deprecated-unknown-argument": [Edit(DEPRECATED, "aten: add(self, other, alpha)", "aten: add(self, other, beta)")],
    "deprecated-unknown-key": [Edit(DEPRECATED, "  aten: add(self, other, alpha)", "  aten: add(self, other, alpha)\n  atne: x")],
    "derivatives-unknown-schema": [Edit(DERIVATIVES, MUL_NAME, "- name: mul.Tensor(Tensor self, Tensor othr) -> Tensor")],
    "derivatives-unknown-name": [Edit(DERIVATIVES, MUL_NAME, "- name: mull.Tensor(Tensor self, Tensor other) -> Tensor")],
    "derivatives-duplicate-entry": [derivative("\n" + MUL_NAME + "  # again\n  self: grad * other\n")],
    "derivatives-unknown-output": [Edit(DERIVATIVES, MUL_SELF, MUL_SELF.replace("self:", "slef:"))],
    "derivatives-sizes": [Edit(DERIVATIVES, EXPAND_SELF, "  self: at::sum_to(grad, self.sizes())")],
    "derivatives-strides": [Edit(DERIVATIVES, EXPAND_SELF, "  self: at::sum_to(grad, self.strides())")],
    "derivatives-mix-grad-grads": [Edit(DERIVATIVES, "  other: mul_tensor_backward(grad, self, other.scalar_type())",
                                        "  other: mul_tensor_backward(grads[0], self, other.scalar_type())")],
    "derivatives-bad-dispatch-key": [Edit(DERIVATIVES, "    AutogradNestedTensor:", "    AutogradNested:")],
    "derivatives-overlap": [Edit(DERIVATIVES, "  result: other_t * self_p + self_t * other_p",
                                 "  result: other_t * self_p + self_t * other_p\n  self, other: non_differentiable")],
    "derivatives-grads-out-of-bounds": [Edit(DERIVATIVES, MINMAX_SELF, "grads[0].expand_symint(self.sym_sizes()) + grads[5]")],
    "derivatives-auto-element-wise": [Edit(DERIVATIVES, "  result: self_t + maybe_multiply(other_t, alpha)",
                                           "  result: auto_element_wise")],
    "derivatives-forward-bare-name": [Edit(DERIVATIVES, "  result: other_t * self_p + self_t * other_p",
                                           "  result: other_t * self + self_t * other_p")],
    "derivatives-two-conditions": [Edit(DERIVATIVES, "  output_differentiability: [True, True]",
                                        "  output_differentiability: ['a', 'b']")],
    "derivatives-key-beside-dispatch": [Edit(DERIVATIVES, "  dispatch:\n    Default:\n      self: grad.expand_symint",
                                             "  self: grad\n  dispatch:\n    Default:\n      self: grad.expand_symint")],
    "derivatives-formula-not-string": [Edit(DERIVATIVES, EXPAND_SELF, "  self: 1")],
    "derivatives-only-grads0": [Edit(DERIVATIVES, MINMAX_SELF, "grads[0].expand_symint(self.sym_sizes())")],
    "derivatives-missing-name": [derivative("\n- self: grad\n")],
    "derivatives-preprocessor-in-block": [Edit(DERIVATIVES, MUL_SELF + "\n",
                                               "  self: |\n    mul_tensor_backward(grad, other,\n"
                                               "    #include <vector>\n      self.scalar_type())\n")],
    "derivatives-preprocessor-first": [Edit(DERIVATIVES, EXPAND_SELF + "\n",
                                            "  self: |\n    #define G grad\n    at::sum_to(G, self.sym_sizes())\n")],
    "derivatives-many-missing-names": [derivative("".join(f"\n- self: grad  # {i}\n" for i in range(300)))],
    # --- a native entry that fails: its derivatives entry is not blamed too
    "native-fails-its-entry-skipped": [Edit(NATIVE, MUL_FUNC, "- func: mul.Tensor(Tensor self, Tensr other)"),
                                       Edit(DERIVATIVES, MUL_SELF, "  self: at::sum_to(grad, self.sizes())")],
    # a tag whose entry fails still counts as declared (sum's `tags: reduction`)
    "failed-tag-still-declared": [Edit(TAGS, "- tag: reduction\n  desc: Reductions.", "- tag: reduction"),
                                  Edit(NATIVE, "  autogen: sum.out\n  tags: reduction", "  autogen: sum.out\n  tags: reductoin")],
    # --- several mistakes at once, across files (every one is reported)
    "independent-errors": [Edit(NATIVE, MUL_FUNC, "- func: mul.Tensor(Tensor self, Tensr other)"),
                           Edit(TAGS, "- tag: reduction\n  desc: Reductions.", "- tag: reduction"),
                           Edit(DERIVATIVES, EXPAND_SELF, "  self: at::sum_to(grad, self.sizes())"),
                           Edit(DEPRECATED, "aten: add(self, other, alpha)", "aten: add(self, other, beta)")],
    "parse-hides-match": [Edit(DERIVATIVES, "", INPLACE_ADD_ENTRY),
                          Edit(DERIVATIVES, EXPAND_SELF, "  self: at::sum_to(grad, self.sizes())")],
    "parse-hides-binding": [native(QSCHEME_OP), Edit(TAGS, "", "- tag: core  # again\n  desc: Again.\n")],
    # --- matching (found after every entry parsed)
    "match-inplace-uses-self": [derivative(INPLACE_ADD_ENTRY)],
    "match-foreach-unmappable": [Edit(DERIVATIVES, ADD_SELF, STRIDED_ADD_SELF)],
    "match-inplace-strides-shared": [Edit(DERIVATIVES, ADD_SELF, STRIDES_OR_ERROR_ADD_SELF)],
    "match-and-binding": [derivative(INPLACE_ADD_ENTRY), native(QSCHEME_OP)],
    # --- nodes and bindings (reported together, once per fault)
    "python-unsupported-type": [native(QSCHEME_OP)],
    "python-unsupported-return": [native(SEVEN_TENSORS_OP)],
    "python-duplicate-signature": [native(op("sum.again", "Tensor self, *, ScalarType? dtype=None",
                                             "Tensor[]", "  variants: function, method\n"))],
    "python-out-without-base": [Edit(DEPRECATED, DEPRECATED_ADD,
                                     "- name: add(Tensor self, Scalar alpha, Tensor other, *, Tensor(a!) out) -> Tensor(a!)\n"
                                     "  aten: add_out(out, self, other, alpha)")],
    "deprecated-matches-nothing": [Edit(DEPRECATED, "aten: add(self, other, alpha)", "aten: add(self, alpha, other)")],
    "python-unknown-category": [Edit(NATIVE, "  dispatch:\n    CompositeExplicitAutograd: zeros_symint",
                                     "  category_override: factori\n  dispatch:\n    CompositeExplicitAutograd: zeros_symint")],
    "python-requires-grad-argument": [native(op("my_grad_op", "Tensor self, bool requires_grad=False"))],
    "bindings-several": [native(QSCHEME_OP), native(SEVEN_TENSORS_OP),
                         Edit(DEPRECATED, "aten: add(self, other, alpha)", "aten: add(self, alpha, other)")],
    # --- rendering: a template fault, once however many files use the template
    "template-unknown-placeholder": [Edit(f"{TEMPLATES}/Functions.h", "using at::Scalar;\n",
                                          "using at::Scalar;\n// ${no_such_value}\n")],
    "template-shared-by-shards": [Edit(f"{TEMPLATES}/python_functions.cpp", "\n", "\n// ${no_such_value}\n")],
}

# Cases on the packaged spec (many functions share one formula, generated functions abound).
PACKAGED_CASES: dict[str, list[Edit]] = {
    "packaged-several-phases": [
        Edit(DERIVATIVES, "- name: cosh(Tensor self) -> Tensor\n  self: grad * self.sinh().conj()",
             "- name: cosh(Tensor self) -> Tensor\n  self: grad * self.sinh().conj().sizes()"),
        Edit(NATIVE, "- func: sinh(Tensor self) -> Tensor", "- func: sinh(Tensor self) -> Tensr"),
        Edit(TAGS, "", "- tag: core\n  desc: Twice.\n")],
    "packaged-shared-formula-fault": [
        Edit(DERIVATIVES, "  self: handle_r_to_c(self.scalar_type(), grad)\n  other: handle_r_to_c(other.scalar_type(), maybe_multiply(grad, alpha.conj()))",
             "  self: grad * self.sym_strides()[0]\n  other: handle_r_to_c(other.scalar_type(), maybe_multiply(grad, alpha.conj()))")],
}


def bad_spec(root: Path, source: Path, edits: list[Edit]) -> Path:
    spec = root / "spec"
    shutil.copytree(source, spec, ignore=shutil.ignore_patterns("__pycache__"))
    apply_edits(spec, edits)
    return spec


def build_inputs(spec: Path) -> BuildInputs:
    location = locate_spec(str(spec))
    return BuildInputs(decode_spec(location.read_all()),
                       TemplateSet(spec_template_sources(read_spec_templates(location, ALL_TEMPLATES))),
                       TemplateSet(template_sources(gradshard_template_bytes())), location.layout)


def graph_problems(inputs: BuildInputs, store: Store | None) -> tuple[list[dict], int]:
    """The problems the graph reports, and how many tasks ran to find them."""
    engine = Engine(store, code_version(), memory=Memory())
    with pytest.raises(SpecError) as rejected:
        build(engine, inputs)
    engine.finish()
    return [p.to_json() for p in rejected.value.problems], sum(engine.stats.run.values())


def straight_problems(inputs: BuildInputs) -> list[dict]:
    from gradshard.pipeline.codegen import analyze, generate

    with pytest.raises(SpecError) as rejected:
        generate(analyze(inputs.texts), inputs.templates, inputs.spec_templates, inputs.layout)
    return [p.to_json() for p in rejected.value.problems]


def assert_reported_alike(tmp_path: Path, source: Path, edits: list[Edit]) -> None:
    inputs = build_inputs(bad_spec(tmp_path, source, edits))
    expected = straight_problems(inputs)
    assert expected, "the case's spec is not bad"
    assert graph_problems(inputs, None)[0] == expected, "no store"
    store = Store.open(tmp_path / "cache", print)
    try:
        cold, _ = graph_problems(inputs, store)
        assert cold == expected, "cold store"
        cached, ran = graph_problems(inputs, store)
        assert cached == expected and ran == 0, "cached"
    finally:
        store.close()


@pytest.mark.parametrize("name", list(CASES))
def test_the_graph_reports_what_the_straight_pipeline_reported(name, tmp_path):
    assert_reported_alike(tmp_path, MINI_SPEC, CASES[name])


@pytest.mark.parametrize("name", list(PACKAGED_CASES))
def test_the_graph_reports_what_the_straight_pipeline_reported_on_the_real_spec(
        name, tmp_path, packaged_spec):
    assert_reported_alike(tmp_path, packaged_spec, PACKAGED_CASES[name])
