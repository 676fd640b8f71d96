"""The schema grammar on small hand-written inputs."""

from __future__ import annotations

import pytest

from gradshard.pipeline.problems import RuleViolation
from gradshard.pipeline.schema import (Annotation, Argument, BaseOperatorName, FunctionSchema,
                                       OperatorName, Return, SchemaKind, SchemaType, TypeForm,
                                       cpp_name)

ROUND_TRIP = [
    "add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor",
    "add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)",
    "add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)",
    "__iand__.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)",
    "__and__.Tensor(Tensor self, Tensor other) -> Tensor",
    "zeros(SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, "
    "bool? pin_memory=None) -> Tensor",
    "empty.memory_format(SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, "
    "Device? device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor",
    "split.Tensor(Tensor(a -> *) self, SymInt split_size, int dim=0) -> Tensor(a)[]",
    "max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)",
    "where.self(Tensor condition, Tensor self, Tensor other) -> Tensor",
    "_foreach_add_.List(Tensor(a!)[] self, Tensor[] other, *, Scalar alpha=1) -> ()",
    "index.Tensor(Tensor self, Tensor?[] indices) -> Tensor",
    "mean.dim(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor",
    "native_batch_norm_functional(Tensor input, Tensor(a!) running) -> (Tensor, Tensor)",
    "_amp_foreach_non_finite_check_and_unscale_(Tensor(a!)[] self, Tensor(b!) found_inf, "
    "Tensor inv_scale) -> ()",
    "div.Tensor_mode(Tensor self, Tensor other, *, str? rounding_mode) -> Tensor",
    "custom(__torch__.torch.classes.quantized.Conv2dPackedParamsBase self) -> Tensor",
    "convolution_backward(Tensor grad_output, Tensor input, Tensor weight, SymInt[1]? bias_sizes, "
    "SymInt[] stride, bool[3] output_mask) -> (Tensor, Tensor, Tensor)",
]


@pytest.mark.parametrize("text", ROUND_TRIP)
def test_schema_round_trips(text):
    schema = FunctionSchema.parse(text)
    assert str(schema) == text
    assert FunctionSchema.from_json(schema.to_json()) == schema


def test_self_and_tensor_options_grouping():
    schema = FunctionSchema.parse(
        "empty_like(Tensor self, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, "
        "bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor")
    args = schema.arguments
    assert args.self_arg.name == "self" and not args.pre_self and not args.post_self
    assert [a.name for a in args.options.all()] == ["dtype", "layout", "device", "pin_memory"]
    assert [a.name for a in args.post_options] == ["memory_format"]
    assert [a.name for a in args.kwarg_only] == ["dtype", "layout", "device", "pin_memory",
                                                 "memory_format"]


def test_options_need_the_full_run_in_order():
    schema = FunctionSchema.parse("f(Tensor self, *, ScalarType? dtype=None, Device? device=None) -> Tensor")
    assert schema.arguments.options is None
    assert [a.name for a in schema.arguments.pre_options] == ["dtype", "device"]


def test_pre_self_positional():
    schema = FunctionSchema.parse("where.self(Tensor condition, Tensor self, Tensor other) -> Tensor")
    assert [a.name for a in schema.arguments.pre_self] == ["condition"]
    assert schema.arguments.self_arg.name == "self"


@pytest.mark.parametrize("text, kind", [
    ("add.Tensor(Tensor self, Tensor other) -> Tensor", SchemaKind.FUNCTIONAL),
    ("add_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)", SchemaKind.INPLACE),
    ("add.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)", SchemaKind.OUT),
    ("_fused(Tensor self, Tensor(a!) running) -> Tensor", SchemaKind.MUTABLE),
    ("f.out(Tensor self, *, Tensor(a!) out, Tensor(b!) _scratch_x) -> Tensor(a!)", SchemaKind.SCRATCH),
])
def test_schema_kind(text, kind):
    assert FunctionSchema.parse(text).kind() is kind


@pytest.mark.parametrize("text, expected", [
    ("add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)",
     "add(Tensor self, Tensor other, *, Scalar alpha) -> Tensor"),
    ("add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)",
     "add(Tensor self, Tensor other, *, Scalar alpha) -> Tensor"),
    ("zeros(SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, "
     "bool? pin_memory=None) -> Tensor", "zeros(SymInt[] size) -> Tensor"),
    ("_fused.functional(Tensor self, Tensor running) -> (Tensor output, Tensor running_out)",
     "_fused(Tensor self, Tensor running) -> (Tensor, Tensor)"),
    ("_fused(Tensor self, Tensor(a!) running) -> Tensor output",
     "_fused(Tensor self, Tensor running) -> (Tensor, Tensor)"),
    ("__iand__.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)",
     "__and__(Tensor self, Tensor other) -> Tensor"),
    ("bernoulli.p(Tensor self, float p, *, Generator? generator=None) -> Tensor",
     "bernoulli(Tensor self, float p=0.5, *, Generator? generator) -> Tensor"),
])
def test_signature_strip_default(text, expected):
    assert str(FunctionSchema.parse(text).signature(strip_default=True)) == expected


def test_signature_keeps_defaults_and_names_on_request():
    schema = FunctionSchema.parse("_fused(Tensor self, Tensor(a!) running, int n=3) -> Tensor output")
    assert str(schema.signature(keep_return_names=True)) == \
        "_fused(Tensor self, Tensor running, int n=3) -> (Tensor output, Tensor running_out)"


def test_view_signature_strips_copy_and_scatter():
    copy = FunctionSchema.parse("expand_copy(Tensor self, SymInt[] size) -> Tensor")
    scatter = FunctionSchema.parse("slice_scatter(Tensor self, Tensor src) -> Tensor")
    assert str(copy.view_signature()) == "expand(Tensor self, SymInt[] size) -> Tensor"
    assert str(scatter.view_signature()) == "slice_inverse(Tensor self, Tensor src) -> Tensor"


@pytest.mark.parametrize("text, base, inplace, dunder, functional", [
    ("add", "add", False, False, False),
    ("add_", "add", True, False, False),
    ("__add__", "add", False, True, False),
    ("__iadd__", "add", True, True, False),
    ("batch_norm_functional", "batch_norm", False, False, True),
    ("__foo_bar__", "__foo_bar_", True, False, False),  # not a dunder: it contains '_'
])
def test_operator_names(text, base, inplace, dunder, functional):
    name = BaseOperatorName.parse(text)
    assert (name.base, name.inplace, name.dunder, name.functional_overload) == \
        (base, inplace, dunder, functional)
    assert str(name) == text


def test_overload_split_at_first_dot():
    name = OperatorName.parse("foo.a.b")
    assert name.overload == "a.b" and str(name) == "foo.a.b"


@pytest.mark.parametrize("text, form, rendered", [
    ("Tensor?[]", TypeForm.LIST, "Tensor?[]"),
    ("int[]?", TypeForm.OPTIONAL, "int[]?"),
    ("int[2]", TypeForm.LIST, "int[2]"),
    ("__torch__.torch.classes.x.Y", TypeForm.CUSTOM_CLASS, "__torch__.torch.classes.x.Y"),
])
def test_types(text, form, rendered):
    t = SchemaType.parse(text)
    assert t.form is form and str(t) == rendered


def test_type_predicates():
    assert SchemaType.parse("Tensor?[]").is_tensor_like()
    assert SchemaType.parse("Tensor?[]").is_nullable()
    assert SchemaType.parse("SymInt[]?").is_symint_like()
    assert str(SchemaType.parse("int[]?").list_type()) == "int[]"
    assert SchemaType.parse("int").list_type() is None


@pytest.mark.parametrize("text, alias_set, write, after", [
    ("a", ("a",), False, ()),
    ("a!", ("a",), True, ()),
    ("a|b", ("a", "b"), False, ()),
    ("a -> *", ("a",), False, ("*",)),
])
def test_annotations(text, alias_set, write, after):
    ann = Annotation.parse(text)
    assert (ann.alias_set, ann.is_write, ann.alias_set_after) == (alias_set, write, after)
    assert str(ann) == text


def test_arguments_and_returns():
    arg = Argument.parse("Tensor(a!)? out=None")
    assert (arg.name, str(arg.type), arg.default, str(arg.annotation)) == ("out", "Tensor?", "None", "a!")
    ret = Return.parse("Tensor(a) values")
    assert (ret.name, str(ret.type), str(ret.annotation)) == ("values", "Tensor", "a")
    assert Return.parse("Tensor").name is None


@pytest.mark.parametrize("text, rule, fragment", [
    ("f(Tensr self) -> Tensor", "schema.unknown-type", "unknown type 'Tensr'"),
    ("f(Tensor self,Tensor other) -> Tensor", "schema.syntax", "Tensor self,Tensor"),
    ("f(Tensor self) ->Tensor", "schema.syntax", "is not a schema"),
    ("f(int[0] x) -> Tensor", "schema.syntax", "canonical form"),
    ("f(Tensor self, *, Tensor(a!) out, int x) -> Tensor(a!)", "schema.invariant", "follows the mutable out"),
    ("f_(Tensor self) -> Tensor", "schema.invariant", "mutable self"),
    ("f_(Tensor(a!) self) -> Tensor", "schema.invariant", "must return self"),
    ("f.out(Tensor self, *, Tensor(a!) out) -> Tensor", "schema.invariant", "out argument 'out'"),
    ("f.out(Tensor self, *, Tensor(a!) out, Tensor(b!) o2) -> Tensor(a!)", "schema.invariant", "2 out argument"),
    ("f(Tensor self, *, Tensor(a!)[] out) -> Tensor(a!)", "schema.invariant", "non-Tensor out"),
    ("f(Tensor self, *, Tensor(a!)[] out) -> Tensor", "schema.invariant", "must alias the i-th"),
    ("f(Tensor(a!) self) -> (Tensor(a!), Tensor)", "schema.invariant", "mix mutable"),
    ("f(Tensor self, Tensor(a!) x) -> Tensor(a!)", "schema.invariant", "also returned"),
    ("f.functional(Tensor self, Tensor(a!) x) -> Tensor", "schema.invariant", "'functional'"),
    ("f(Tensor(a|b|c) self) -> Tensor", "schema.syntax", "more than two aliases"),
    ("f(Tensor(a|b!) self) -> Tensor", "schema.syntax", "several aliases"),
    ("f(int(a) x) -> Tensor", "schema.unknown-type", "int(a)"),
    ("f(Tensor(a)[][] x) -> Tensor", "schema.syntax", "must come right after Tensor"),
    ("f_out(Tensor self) -> Tensor", "schema.syntax", "'_out'"),
    ("__ifoo__(Tensor(a!) self) -> Tensor(a!)", "schema.syntax", "not one"),
    ("f(Tensor x=1=2) -> Tensor", "schema.syntax", "more than one '='"),
    ("f(Tensor self, *, *, int x) -> Tensor", "schema.syntax", "appears twice"),
])
def test_schema_errors(text, rule, fragment):
    with pytest.raises(RuleViolation) as caught:
        FunctionSchema.parse(text)
    assert caught.value.rule == rule
    assert fragment in caught.value.message + caught.value.hint
    assert caught.value.hint


def test_cpp_name():
    assert cpp_name(FunctionSchema.parse("add.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)")) == "add_out"
    assert cpp_name(FunctionSchema.parse("add_.Tensor(Tensor(a!) self) -> Tensor(a!)")) == "add_"
