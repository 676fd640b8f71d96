"""A bad spec's problems come from the build graph, every one located at its file and line:
with no store, and with a store both cold and cached (a cached run reports them without
running a task), they are exactly the problems the straight pipeline reported before the
graph took its place (issue 16, item 3): EXPECTED holds them, captured from it.

Each case edits a copy of the mini spec (or the packaged one) with mistakes in every phase —
splitting, parsing, matching, binding, rendering — several at once across files.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from support.spec_edits import Edit, apply_edits
from support.specs import DEPRECATED, DERIVATIVES, MINI_SPEC, NATIVE, TAGS, TEMPLATES

from gradshard.cache.engine.core import Engine
from gradshard.cache.engine.memory import Memory
from gradshard.cache.graph.build_graph import build_index
from gradshard.cache.graph.group_records import BuildInputs
from gradshard.cache.store.database import Store
from gradshard.cache.version import code_version
from gradshard.pipeline.parse.spec import decode_spec
from gradshard.pipeline.problems import SpecError
from gradshard.pipeline.releases import DEFAULT_RELEASE, release_named
from gradshard.pipeline.render.template_names import ALL_TEMPLATES
from gradshard.pipeline.render.templating import TemplateSet
from gradshard.service.files.inputs import (gradshard_template_bytes, read_spec_templates,
                                            spec_file_bytes, spec_template_sources,
                                            template_sources)
from gradshard.service.files.spec_location import locate_spec

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
    "derivatives-many-missing-names": [derivative("".join(f"\n- self: grad  # {i}\n" for i in range(12)))],
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
    return BuildInputs(decode_spec(spec_file_bytes(location)),
                       TemplateSet(spec_template_sources(read_spec_templates(location, ALL_TEMPLATES))),
                       TemplateSet(template_sources(gradshard_template_bytes())), location.layout,
                       release_named(DEFAULT_RELEASE))


def graph_problems(inputs: BuildInputs, store: Store | None) -> tuple[list[tuple], int]:
    """The problems the graph reports (as EXPECTED writes them), and how many tasks ran."""
    engine = Engine(store, code_version(), memory=Memory())
    with pytest.raises(SpecError) as rejected:
        build_index(engine, inputs)
    engine.finish()
    return ([(p.file.name, p.line, p.column, p.entry, p.rule, p.line_in_entry, p.message, p.hint)
             for p in rejected.value.problems], sum(engine.stats.run.values()))


def assert_reported(tmp_path: Path, source: Path, name: str, edits: list[Edit]) -> None:
    inputs = build_inputs(bad_spec(tmp_path, source, edits))
    expected = EXPECTED[name]
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
def test_the_graph_reports_every_problem_at_its_line(name, tmp_path):
    assert_reported(tmp_path, MINI_SPEC, name, CASES[name])


@pytest.mark.parametrize("name", list(PACKAGED_CASES))
def test_the_graph_reports_every_problem_at_its_line_in_the_real_spec(name, tmp_path,
                                                                      packaged_spec):
    assert_reported(tmp_path, packaged_spec, name, PACKAGED_CASES[name])


def test_fixing_one_problem_leaves_the_others_reported_from_the_cache(tmp_path):
    """Two independent mistakes, then one fixed: the second run reruns only what the fix
    reaches and still reports the other mistake, kept in its group's index."""
    store = Store.open(tmp_path / "cache", print)
    try:
        spec = bad_spec(tmp_path, MINI_SPEC, CASES["independent-errors"])
        assert graph_problems(build_inputs(spec), store)[0] == EXPECTED["independent-errors"]
        apply_edits(spec, [Edit(TAGS, "- tag: reduction", "- tag: reduction\n  desc: Reductions.")])
        problems, ran = graph_problems(build_inputs(spec), store)
        assert problems == [p for p in EXPECTED["independent-errors"] if p[0] != "TAGS"]
        # the tag, the tag names, each native function (they read the tag names), the enum
        # tag file and the groups holding them (20 for the mini spec's 13 functions)
        assert 0 < ran < 24
    finally:
        store.close()


# ---------------------------------------------------------------------------------------------
# What the straight pipeline (pipeline/codegen.py: analyze, then generate) reported for each
# case: (file, line, column, entry, rule, line in entry, message, hint).

EXPECTED: dict[str, list[tuple]] = {
    'split-tags-not-a-list': [
        ('TAGS', 1, None, '', 'yaml.not-a-list', 0,
         "expected a list entry ('- ' at column 0), found: tags:",
         "a spec file is a YAML list of mappings; start each entry with '- ' at column 0"),
    ],
    'split-two-files': [
        ('TAGS', 1, None, '', 'yaml.not-a-list', 0,
         "expected a list entry ('- ' at column 0), found: tags:",
         "a spec file is a YAML list of mappings; start each entry with '- ' at column 0"),
        ('DEPRECATED', 1, None, '', 'yaml.empty-file', 0,
         'the file holds no entries',
         "a spec file is a YAML list: each entry starts with '- ' at column 0"),
    ],
    'split-derivatives-not-a-list': [
        ('DERIVATIVES', 1, None, '', 'yaml.not-a-list', 0,
         "expected a list entry ('- ' at column 0), found: name: x",
         "a spec file is a YAML list of mappings; start each entry with '- ' at column 0"),
    ],
    'entry-not-mapping': [
        ('DEPRECATED', 6, None, 'entry at line 6', 'yaml.entry-not-mapping', 0,
         'an entry must be a mapping of keys to values',
         "write the entry as '- key: value' lines"),
    ],
    'yaml-nesting-flow': [
        ('DERIVATIVES', 28, 127, 'minmax', 'yaml.nesting-too-deep', 2,
         'the entry nests deeper than 100 levels here',
         'spec entries nest a few levels (keys, dispatch keys, lists of booleans); look for '
         "an unclosed '[' or '{' or indentation that keeps growing"),
    ],
    'yaml-nesting-block': [
        ('DERIVATIVES', 127, 201, 'minmax', 'yaml.nesting-too-deep', 101,
         'the entry nests deeper than 100 levels here',
         'spec entries nest a few levels (keys, dispatch keys, lists of booleans); look for '
         "an unclosed '[' or '{' or indentation that keeps growing"),
    ],
    'split-hides-parse': [
        ('DEPRECATED', 1, None, '', 'yaml.empty-file', 0,
         'the file holds no entries',
         "a spec file is a YAML list: each entry starts with '- ' at column 0"),
    ],
    'yaml-syntax': [
        ('DERIVATIVES', 15, 7, 'expand', 'yaml.syntax', 2,
         'YAML syntax error: mapping values are not allowed in this context',
         'check the indentation and quoting of this entry'),
    ],
    'yaml-duplicate-key': [
        ('NATIVE_FUNCTIONS', 37, 3, 'mul.Tensor', 'yaml.duplicate-key', 4,
         "key 'variants' is given twice in one mapping",
         "the first 'variants' is 1 line(s) above; keep one of them"),
    ],
    'yaml-alias-expansion': [
        ('DERIVATIVES', 19, 7, 'expand', 'yaml.alias-expansion', 6,
         'this value expands through its aliases to more than 100,966 values and characters',
         'aliases may repeat a value a few times; write the values out, or restructure the '
         'entry'),
    ],
    'native-unknown-key': [
        ('NATIVE_FUNCTIONS', 56, None, 'expand', 'native.unknown-key', 1,
         "unknown key 'variant'",
         "did you mean 'variants'?"),
    ],
    'schema-unknown-type': [
        ('NATIVE_FUNCTIONS', 33, None, 'mul.Tensor', 'schema.unknown-type', 0,
         "unknown type 'Tensr'",
         "did you mean 'Tensor'?"),
    ],
    'schema-not-canonical': [
        ('NATIVE_FUNCTIONS', 33, None, 'mul.Tensor', 'schema.syntax', 0,
         "argument ' Tensor other' has extra spaces",
         "separate arguments with exactly ', ' and use single spaces"),
    ],
    'schema-out-not-kwarg': [
        ('NATIVE_FUNCTIONS', 33, None, 'mul.Tensor', 'native.missing-delegate', 0,
         'structured_delegate mul.out does not exist',
         "name an existing out= function marked 'structured: True'"),
        ('NATIVE_FUNCTIONS', 41, None, 'mul_.Tensor', 'native.missing-delegate', 0,
         'structured_delegate mul.out does not exist',
         "name an existing out= function marked 'structured: True'"),
        ('NATIVE_FUNCTIONS', 47, None, 'mul.out', 'schema.invariant', 0,
         "mutable positional argument 'out' is also returned",
         'mutable positional arguments must not be returned'),
    ],
    'schema-inplace-return': [
        ('NATIVE_FUNCTIONS', 41, None, 'mul_.Tensor', 'schema.invariant', 0,
         'in-place operator mul_.Tensor must return self',
         "return 'Tensor(a!)'"),
    ],
    'native-unknown-tag': [
        ('NATIVE_FUNCTIONS', 76, None, 'sum', 'native.unknown-tag', 6,
         "tag 'reductoin' is not defined in tags.yaml",
         "did you mean 'reduction'?"),
    ],
    'native-bad-dispatch-key': [
        ('NATIVE_FUNCTIONS', 33, None, 'mul.Tensor', 'native.missing-delegate', 0,
         'structured_delegate mul.out does not exist',
         "name an existing out= function marked 'structured: True'"),
        ('NATIVE_FUNCTIONS', 41, None, 'mul_.Tensor', 'native.missing-delegate', 0,
         'structured_delegate mul.out does not exist',
         "name an existing out= function marked 'structured: True'"),
        ('NATIVE_FUNCTIONS', 51, None, 'mul.out', 'native.dispatch', 4,
         "unsupported dispatch key 'CUDB'",
         "did you mean 'CUDA'?"),
    ],
    'native-missing-delegate': [
        ('NATIVE_FUNCTIONS', 41, None, 'mul_.Tensor', 'native.missing-delegate', 0,
         'structured_delegate mul.outt does not exist',
         "name an existing out= function marked 'structured: True'"),
    ],
    'native-keyword-argument': [
        ('NATIVE_FUNCTIONS', 95, None, 'minmax', 'native.keyword-argument', 0,
         "argument 'lambda' is a reserved Python keyword",
         'rename the argument'),
        ('DERIVATIVES', 26, None, 'minmax', 'derivatives.unknown-schema', 0,
         "no native function has the schema 'minmax(Tensor self, int dim=0) -> (Tensor min, "
         "Tensor max)'",
         'schemas with this name: minmax(Tensor self, int lambda=0) -> (Tensor min, Tensor '
         'max)'),
    ],
    'native-bad-variant': [
        ('NATIVE_FUNCTIONS', 72, None, 'sum', 'native.bad-variant', 2,
         "unknown variant 'funtion'",
         "variants are 'function', 'method' or 'function, method'"),
    ],
    'native-out-with-method': [
        ('NATIVE_FUNCTIONS', 33, None, 'mul.Tensor', 'native.missing-delegate', 0,
         'structured_delegate mul.out does not exist',
         "name an existing out= function marked 'structured: True'"),
        ('NATIVE_FUNCTIONS', 41, None, 'mul_.Tensor', 'native.missing-delegate', 0,
         'structured_delegate mul.out does not exist',
         "name an existing out= function marked 'structured: True'"),
        ('NATIVE_FUNCTIONS', 50, None, 'mul.out', 'native.inconsistent', 3,
         "an out= function must have only the 'function' variant",
         "remove 'method' from variants"),
    ],
    'native-random-untagged': [
        ('NATIVE_FUNCTIONS', 101, None, 'my_rand', 'native.inconsistent', 0,
         'my_rand is random (its name or a Generator argument says so) but is not tagged '
         'nondeterministic_seeded',
         "add 'tags: nondeterministic_seeded'"),
    ],
    'native-duplicate-name': [
        ('NATIVE_FUNCTIONS', 33, None, 'mul.Tensor', 'native.duplicate-name', 0,
         'operator mul.Tensor is declared twice',
         'every operator name (name.overload) must be unique'),
    ],
    'native-duplicate-signature': [
        ('NATIVE_FUNCTIONS', 101, None, 'sum.again', 'native.duplicate-signature', 0,
         "sum.again and sum are both functional variants of the same signature 'sum(Tensor "
         "self, *, ScalarType? dtype=None) -> Tensor'",
         'two overloads of one kind must differ in their argument types'),
    ],
    'native-duplicate-schema': [
        ('NATIVE_FUNCTIONS', 55, None, 'expand', 'native.duplicate-name', 0,
         'operator expand is declared twice',
         'every operator name (name.overload) must be unique'),
        ('NATIVE_FUNCTIONS', 55, None, 'expand', 'native.duplicate-signature', 0,
         'expand and expand are both functional variants of the same signature '
         "'expand(Tensor self, SymInt[] size, *, bool implicit=False) -> Tensor'",
         'two overloads of one kind must differ in their argument types'),
    ],
    'native-lonely-out': [
        ('NATIVE_FUNCTIONS', 101, None, 'lonely.out', 'native.lonely-out', 0,
         'out= function lonely.out has no functional variant',
         'add the functional (and in-place) variant next to it'),
    ],
    'native-foreach-device-check': [
        ('NATIVE_FUNCTIONS', 82, None, '_foreach_add.List', 'native.inconsistent', 0,
         'foreach functions must not check devices',
         "add 'device_check: NoCheck'"),
    ],
    'views-missing-copy': [
        ('NATIVE_FUNCTIONS', 101, None, 'my_view', 'views.missing-copy', 0,
         'my_view returns an alias of its input but there is no my_view_copy',
         "add 'my_view_copy' (tagged view_copy) to native_functions.yaml, as for the other "
         'view ops'),
    ],
    'native-factory-without-dispatch': [
        ('NATIVE_FUNCTIONS', 101, None, 'ones_like', 'native.dispatch', 0,
         'factory function ones_like has no dispatch table',
         "factory functions need an explicit 'CompositeExplicitAutograd' kernel so that "
         'they are not decomposed'),
    ],
    'tags-no-description': [
        ('TAGS', 18, None, 'reduction', 'tags.no-description', 0,
         "tag 'reduction' has no description",
         "every tag needs a non-empty 'desc'"),
    ],
    'tags-duplicate': [
        ('TAGS', 24, None, 'core', 'tags.duplicate', 0,
         "tag 'core' is defined twice",
         'remove one definition'),
    ],
    'deprecated-unknown-argument': [
        ('DEPRECATED', 4, None,
         'add(Tensor self, Scalar alpha, Tensor other) -> Tensor',
         'deprecated.unknown-argument', 1,
         "the call passes 'beta', which is not an argument of the deprecated schema",
         "use the schema's argument names (alpha, other, self) or 1"),
    ],
    'deprecated-unknown-key': [
        ('DEPRECATED', 5, None,
         'add(Tensor self, Scalar alpha, Tensor other) -> Tensor',
         'deprecated.unknown-key', 2,
         "unknown key 'atne'",
         "did you mean 'aten'?"),
    ],
    'derivatives-unknown-schema': [
        ('DERIVATIVES', 8, None, 'mul.Tensor', 'derivatives.unknown-schema', 0,
         "no native function has the schema 'mul.Tensor(Tensor self, Tensor othr) -> Tensor'",
         'schemas with this name: mul.Tensor(Tensor self, Tensor other) -> Tensor'),
    ],
    'derivatives-unknown-name': [
        ('DERIVATIVES', 8, None, 'mull.Tensor', 'derivatives.unknown-schema', 0,
         "no native function has the schema 'mull.Tensor(Tensor self, Tensor other) -> Tensor'",
         "did you mean 'mul.Tensor'?"),
    ],
    'derivatives-duplicate-entry': [
        ('DERIVATIVES', 30, None, 'mul.Tensor', 'derivatives.duplicate', 0,
         'a second entry for mul.Tensor (the first is at line 8); torchgen would silently '
         'keep both',
         'merge the two entries into one'),
    ],
    'derivatives-unknown-output': [
        ('DERIVATIVES', 9, None, 'mul.Tensor', 'derivatives.unknown-formula-key', 1,
         "'slef' is neither an argument nor an output of mul.Tensor",
         "did you mean 'self'?"),
    ],
    'derivatives-sizes': [
        ('DERIVATIVES', 14, None, 'expand', 'derivatives.sizes', 1,
         '.sizes() is not supported in derivative formulas',
         'use the SymInt version, .sym_sizes()'),
    ],
    'derivatives-strides': [
        ('DERIVATIVES', 14, None, 'expand', 'derivatives.strides', 1,
         '.strides() is not supported in derivative formulas',
         'use the SymInt version, .sym_strides()'),
    ],
    'derivatives-mix-grad-grads': [
        ('DERIVATIVES', 8, None, 'mul.Tensor', 'derivatives.grads-usage', 0,
         "the formulas of mul mix 'grad' and 'grads'",
         "replace 'grad' with 'grads[0]'"),
    ],
    'derivatives-bad-dispatch-key': [
        ('DERIVATIVES', 22, None, 'sum', 'derivatives.bad-dispatch-key', 5,
         "invalid dispatch key 'AutogradNested'",
         "did you mean 'AutogradNestedTensor'?"),
    ],
    'derivatives-overlap': [
        ('DERIVATIVES', 8, None, 'mul.Tensor', 'derivatives.overlap', 0,
         'other, self has both a formula and non_differentiable',
         'keep one of them'),
    ],
    'derivatives-grads-out-of-bounds': [
        ('DERIVATIVES', 27, None, 'minmax', 'derivatives.grads-out-of-bounds', 1,
         'the formula uses grads[5] but minmax has 2 output(s)',
         'index grads from 0'),
    ],
    'derivatives-auto-element-wise': [
        ('DERIVATIVES', 6, None, 'add.Tensor', 'derivatives.auto-element-wise', 3,
         'auto_element_wise needs exactly one differentiable input and one differentiable '
         'output',
         "write the forward formula explicitly, e.g. 'result: self_t * other_p'"),
    ],
    'derivatives-forward-bare-name': [
        ('DERIVATIVES', 11, None, 'mul.Tensor', 'derivatives.forward-bare-name', 3,
         "the forward formula uses 'self' itself, which is ambiguous",
         'use self_p for the primal value or self_t for the tangent'),
    ],
    'derivatives-two-conditions': [
        ('DERIVATIVES', 28, None, 'minmax', 'derivatives.bad-output-differentiability', 2,
         'a condition in output_differentiability is only supported for single-output '
         'functions',
         'use a list of booleans, or a single condition'),
    ],
    'derivatives-key-beside-dispatch': [
        ('DERIVATIVES', 18, None, 'sum', 'derivatives.unknown-key', 1,
         "key 'self' sits beside 'dispatch:' and is ignored",
         "move it under a dispatch key such as 'Default:'"),
    ],
    'derivatives-formula-not-string': [
        ('DERIVATIVES', 14, None, 'expand', 'derivatives.bad-formula', 1,
         "the formula for 'self' is int 1, not a C++ expression",
         'quote the formula if YAML reads it as another type'),
    ],
    'derivatives-only-grads0': [
        ('DERIVATIVES', 26, None, 'minmax', 'derivatives.grads-usage', 0,
         'the formulas of minmax only use grads[0]',
         "if the first output is the only differentiable one, write 'grad'"),
    ],
    'derivatives-missing-name': [
        ('DERIVATIVES', 30, None, 'entry at line 30', 'derivatives.missing-name', 0,
         "the entry has no 'name: SCHEMA'",
         "every entry starts with '- name: op.overload(ARGS) -> RETURNS'"),
    ],
    'derivatives-preprocessor-in-block': [
        ('DERIVATIVES', 11, None, 'mul.Tensor', 'derivatives.preprocessor', 3,
         "line 2 of the formula for 'self' starts with '#': '#include <vector>'",
         "a formula is one C++ expression and cannot hold preprocessor lines; inside a '|' "
         "or '>' block YAML keeps '#' lines as text, so write comments above the key instead"),
    ],
    'derivatives-preprocessor-first': [
        ('DERIVATIVES', 15, None, 'expand', 'derivatives.preprocessor', 2,
         "line 1 of the formula for 'self' starts with '#': '#define G grad'",
         "a formula is one C++ expression and cannot hold preprocessor lines; inside a '|' "
         "or '>' block YAML keeps '#' lines as text, so write comments above the key instead"),
    ],
    'derivatives-many-missing-names': [
        ('DERIVATIVES', 30, None, 'entry at line 30', 'derivatives.missing-name', 0,
         "the entry has no 'name: SCHEMA'",
         "every entry starts with '- name: op.overload(ARGS) -> RETURNS'"),
        ('DERIVATIVES', 32, None, 'entry at line 32', 'derivatives.missing-name', 0,
         "the entry has no 'name: SCHEMA'",
         "every entry starts with '- name: op.overload(ARGS) -> RETURNS'"),
        ('DERIVATIVES', 34, None, 'entry at line 34', 'derivatives.missing-name', 0,
         "the entry has no 'name: SCHEMA'",
         "every entry starts with '- name: op.overload(ARGS) -> RETURNS'"),
        ('DERIVATIVES', 36, None, 'entry at line 36', 'derivatives.missing-name', 0,
         "the entry has no 'name: SCHEMA'",
         "every entry starts with '- name: op.overload(ARGS) -> RETURNS'"),
        ('DERIVATIVES', 38, None, 'entry at line 38', 'derivatives.missing-name', 0,
         "the entry has no 'name: SCHEMA'",
         "every entry starts with '- name: op.overload(ARGS) -> RETURNS'"),
        ('DERIVATIVES', 40, None, 'entry at line 40', 'derivatives.missing-name', 0,
         "the entry has no 'name: SCHEMA'",
         "every entry starts with '- name: op.overload(ARGS) -> RETURNS'"),
        ('DERIVATIVES', 42, None, 'entry at line 42', 'derivatives.missing-name', 0,
         "the entry has no 'name: SCHEMA'",
         "every entry starts with '- name: op.overload(ARGS) -> RETURNS'"),
        ('DERIVATIVES', 44, None, 'entry at line 44', 'derivatives.missing-name', 0,
         "the entry has no 'name: SCHEMA'",
         "every entry starts with '- name: op.overload(ARGS) -> RETURNS'"),
        ('DERIVATIVES', 46, None, 'entry at line 46', 'derivatives.missing-name', 0,
         "the entry has no 'name: SCHEMA'",
         "every entry starts with '- name: op.overload(ARGS) -> RETURNS'"),
        ('DERIVATIVES', 48, None, 'entry at line 48', 'derivatives.missing-name', 0,
         "the entry has no 'name: SCHEMA'",
         "every entry starts with '- name: op.overload(ARGS) -> RETURNS'"),
        ('DERIVATIVES', 50, None, 'entry at line 50', 'derivatives.missing-name', 0,
         "the entry has no 'name: SCHEMA'",
         "every entry starts with '- name: op.overload(ARGS) -> RETURNS'"),
        ('DERIVATIVES', 52, None, 'entry at line 52', 'derivatives.missing-name', 0,
         "the entry has no 'name: SCHEMA'",
         "every entry starts with '- name: op.overload(ARGS) -> RETURNS'"),
    ],
    'native-fails-its-entry-skipped': [
        ('NATIVE_FUNCTIONS', 33, None, 'mul.Tensor', 'schema.unknown-type', 0,
         "unknown type 'Tensr'",
         "did you mean 'Tensor'?"),
    ],
    'failed-tag-still-declared': [
        ('NATIVE_FUNCTIONS', 76, None, 'sum', 'native.unknown-tag', 6,
         "tag 'reductoin' is not defined in tags.yaml",
         "did you mean 'reduction'?"),
        ('TAGS', 18, None, 'reduction', 'tags.no-description', 0,
         "tag 'reduction' has no description",
         "every tag needs a non-empty 'desc'"),
    ],
    'independent-errors': [
        ('NATIVE_FUNCTIONS', 33, None, 'mul.Tensor', 'schema.unknown-type', 0,
         "unknown type 'Tensr'",
         "did you mean 'Tensor'?"),
        ('TAGS', 18, None, 'reduction', 'tags.no-description', 0,
         "tag 'reduction' has no description",
         "every tag needs a non-empty 'desc'"),
        ('DERIVATIVES', 14, None, 'expand', 'derivatives.sizes', 1,
         '.sizes() is not supported in derivative formulas',
         'use the SymInt version, .sym_sizes()'),
        ('DEPRECATED', 4, None,
         'add(Tensor self, Scalar alpha, Tensor other) -> Tensor',
         'deprecated.unknown-argument', 1,
         "the call passes 'beta', which is not an argument of the deprecated schema",
         "use the schema's argument names (alpha, other, self) or 1"),
    ],
    'parse-hides-match': [
        ('DERIVATIVES', 14, None, 'expand', 'derivatives.sizes', 1,
         '.sizes() is not supported in derivative formulas',
         'use the SymInt version, .sym_sizes()'),
    ],
    'parse-hides-binding': [
        ('TAGS', 24, None, 'core', 'tags.duplicate', 0,
         "tag 'core' is defined twice",
         'remove one definition'),
    ],
    'match-inplace-uses-self': [
        ('DERIVATIVES', 33, None, 'add_.Tensor', 'match.inplace-uses-self', 3,
         'the forward formula of the in-place add_.Tensor uses self_p, the value being '
         'overwritten',
         "use 'result' (the new value) or 'original_self_p' (self before the call) in "
         'in-place formulas'),
    ],
    'match-foreach-unmappable': [
        ('DERIVATIVES', 4, None, 'add.Tensor', 'foreach.unmappable-saved-value', 1,
         "_foreach_add.List cannot reuse the saved value 'TensorGeometry(self)' of "
         "add.Tensor's formula",
         '_foreach_add.List reuses this formula per tensor and can only map saved values of '
         "the form 'argument' or 'argument.method()'; change the formula, or give "
         '_foreach_add.List its own entry'),
    ],
    'match-inplace-strides-shared': [
        ('DERIVATIVES', 4, None, 'add.Tensor', 'foreach.unmappable-saved-value', 1,
         '_foreach_add.List cannot reuse the saved value \'strides_or_error(self, "self")\' '
         "of add.Tensor's formula",
         '_foreach_add.List reuses this formula per tensor and can only map saved values of '
         "the form 'argument' or 'argument.method()'; change the formula, or give "
         '_foreach_add.List its own entry'),
        ('DERIVATIVES', 4, None, 'add.Tensor', 'match.inplace-strides', 1,
         'the self formula used by the in-place _foreach_add_.List calls .sym_strides() '
         '(also for add_.Tensor)',
         'in-place functions cannot save strides of self; write a formula without them'),
    ],
    'match-and-binding': [
        ('DERIVATIVES', 33, None, 'add_.Tensor', 'match.inplace-uses-self', 3,
         'the forward formula of the in-place add_.Tensor uses self_p, the value being '
         'overwritten',
         "use 'result' (the new value) or 'original_self_p' (self before the call) in "
         'in-place formulas'),
    ],
    'python-unsupported-type': [
        ('NATIVE_FUNCTIONS', 101, None, 'qfoo', 'python.unsupported-type', 0,
         "type 'QScheme' is not supported by PythonArgParser",
         'bind the function by hand, or use a parser-supported type'),
    ],
    'python-unsupported-return': [
        ('NATIVE_FUNCTIONS', 101, None, 'seven', 'python.unsupported-return', 0,
         'seven returns ::std::tuple<at::Tensor,at::Tensor,at::Tensor,at::Tensor,at::Tensor,'
         'at::Tensor,at::Tensor>, which Python bindings cannot wrap',
         'add a wrap() overload in torch/csrc/autograd/utils/wrap_outputs.h first'),
    ],
    'python-duplicate-signature': [
        ('NATIVE_FUNCTIONS', 101, None, 'sum.again', 'python.duplicate-signature', 0,
         'sum.again and sum have the same Python signature sum(*, ScalarType? dtype=None) '
         'as Tensor methods',
         'make the overloads differ in their argument types'),
    ],
    'python-out-without-base': [
        ('DEPRECATED', 3, None,
         'add(Tensor self, Scalar alpha, Tensor other, *, Tensor(a!) out) -> Tensor(a!)',
         'python.out-without-base', 0,
         'out variant add(Tensor self, Scalar alpha, Tensor other, *, Tensor(a!) out) -> '
         'Tensor(a!) has no non-out variant with the Python signature add(Tensor input, '
         'Scalar alpha, Tensor other)|deprecated',
         'check the spelling of the schemas; candidates: add(Tensor input, Tensor other, *, '
         'Scalar alpha=1)'),
    ],
    'deprecated-matches-nothing': [
        ('DEPRECATED', 3, None,
         'add(Tensor self, Scalar alpha, Tensor other) -> Tensor',
         'deprecated.no-match', 0,
         "no native function named add fits the call 'add(self, alpha, other)' of "
         'add(Tensor self, Scalar alpha, Tensor other) -> Tensor',
         "the call's arguments must match an ATen overload's types and annotations in order"),
    ],
    'python-unknown-category': [
        ('NATIVE_FUNCTIONS', 79, None, 'zeros', 'native.bad-category', 1,
         "unknown category_override 'factori'",
         "did you mean 'factory'?"),
    ],
    'python-requires-grad-argument': [
        ('NATIVE_FUNCTIONS', 101, None, 'my_grad_op', 'python.requires-grad-argument', 0,
         'an argument is named requires_grad, which Python bindings reserve',
         'rename the argument; factory functions get requires_grad anyway'),
    ],
    'bindings-several': [
        ('NATIVE_FUNCTIONS', 101, None, 'qfoo', 'python.unsupported-type', 0,
         "type 'QScheme' is not supported by PythonArgParser",
         'bind the function by hand, or use a parser-supported type'),
        ('NATIVE_FUNCTIONS', 106, None, 'seven', 'python.unsupported-return', 0,
         'seven returns ::std::tuple<at::Tensor,at::Tensor,at::Tensor,at::Tensor,at::Tensor,'
         'at::Tensor,at::Tensor>, which Python bindings cannot wrap',
         'add a wrap() overload in torch/csrc/autograd/utils/wrap_outputs.h first'),
        ('DEPRECATED', 3, None,
         'add(Tensor self, Scalar alpha, Tensor other) -> Tensor',
         'deprecated.no-match', 0,
         "no native function named add fits the call 'add(self, alpha, other)' of "
         'add(Tensor self, Scalar alpha, Tensor other) -> Tensor',
         "the call's arguments must match an ATen overload's types and annotations in order"),
    ],
    'template-unknown-placeholder': [
        ('TEMPLATES', 19, None, 'Functions.h', 'templates.unknown-placeholder', 18,
         'template Functions.h uses $no_such_value, which the generator does not provide',
         'placeholders provided for this file: $autograd_function_declarations, '
         '$autograd_function_definitions, $generated_comment'),
    ],
    'template-shared-by-shards': [
        ('TEMPLATES', 2, None, 'python_functions.cpp', 'templates.unknown-placeholder', 1,
         'template python_functions.cpp uses $no_such_value, which the generator does not '
         'provide',
         'placeholders provided for this file: $generated_comment, '
         '$py_function_initializers, $py_function_props_and_getters, $shard_id'),
    ],
    'packaged-several-phases': [
        ('NATIVE_FUNCTIONS', 5349, None, 'sinh', 'schema.unknown-type', 0,
         "unknown type 'Tensr'",
         "did you mean 'Tensor'?"),
        ('TAGS', 115, None, 'core', 'tags.duplicate', 0,
         "tag 'core' is defined twice",
         'remove one definition'),
        ('DERIVATIVES', 507, None, 'cosh', 'derivatives.sizes', 1,
         '.sizes() is not supported in derivative formulas',
         'use the SymInt version, .sym_sizes()'),
    ],
    'packaged-shared-formula-fault': [
        ('DERIVATIVES', 230, None, 'add.Tensor', 'foreach.unmappable-saved-value', 1,
         '_foreach_add.List cannot reuse the saved value \'strides_or_error(self, "self")\' '
         "of add.Tensor's formula (also for _foreach_add.Tensor)",
         '_foreach_add.List reuses this formula per tensor and can only map saved values of '
         "the form 'argument' or 'argument.method()'; change the formula, or give "
         '_foreach_add.List its own entry'),
        ('DERIVATIVES', 230, None, 'add.Tensor', 'match.inplace-strides', 1,
         'the self formula used by the in-place _foreach_add_.List calls .sym_strides() '
         '(also for _foreach_add_.Tensor, add_.Tensor)',
         'in-place functions cannot save strides of self; write a formula without them'),
    ],
}
