"""The out= and functional variants synthesized from native_functions.yaml entries."""

from __future__ import annotations

from gradshard.pipeline.parse.source import split_entries
from gradshard.pipeline.parse.spec import parse_native_entry
from gradshard.pipeline.parse.variants import generated_functions, group_by_signature
from gradshard.pipeline.problems import SpecFile
from gradshard.pipeline.releases import DEFAULT_RELEASE, release_named

RELEASE = release_named(DEFAULT_RELEASE)

TAGS = frozenset({"generated", "out", "inplace", "pt2_compliant_tag", "core",
                  "nondeterministic_seeded", "view_copy"})


def generate(yaml_text: str) -> list[str]:
    entries = split_entries(SpecFile.NATIVE_FUNCTIONS, yaml_text)
    functions = [parse_native_entry(e, TAGS, RELEASE) for e in entries]
    groups, problems = group_by_signature(functions)
    generated, more = generated_functions(groups)
    assert not problems + more
    return [str(f.func) for f in generated]


def test_out_from_inplace_then_functional():
    assert generate("""
- func: foo_(Tensor(a!) self, int k) -> Tensor(a!)
  dispatch:
    CPU: foo_
  autogen: foo.out
""") == ["foo.out(Tensor self, int k, *, Tensor(a!) out) -> Tensor(a!)",
         "foo(Tensor self, int k) -> Tensor"]


def test_out_from_functional_with_several_returns():
    assert generate("""
- func: bar.x(Tensor self, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> (Tensor a, Tensor b)
  dispatch:
    CompositeExplicitAutograd: bar
  autogen: bar.x_out
""") == ["bar.x_out(Tensor self, *, Tensor(a!) out0, Tensor(b!) out1) -> (Tensor(a!), Tensor(b!))"]


def test_out_from_mutable_skips_used_letters_and_names_functional():
    assert generate("""
- func: baz(Tensor self, Tensor(a!) running) -> (Tensor x, Tensor y)
  dispatch:
    CPU: baz
  autogen: baz.out
""") == ["baz.out(Tensor self, Tensor(a!) running, *, Tensor(b!) out0, Tensor(c!) out1) "
         "-> (Tensor(b!), Tensor(c!))",
         "baz_functional(Tensor self, Tensor running) -> (Tensor x, Tensor y, Tensor running_out)"]


def test_generated_schema_must_satisfy_the_invariants():
    entries = split_entries(SpecFile.NATIVE_FUNCTIONS, """
- func: baz(Tensor self, Tensor(a!) running) -> (Tensor, int)
  dispatch:
    CPU: baz
  autogen: baz.out
""")
    groups, _ = group_by_signature([parse_native_entry(e, TAGS, RELEASE) for e in entries])
    _, problems = generated_functions(groups)
    assert [(p.entry, p.rule) for p in problems] == [("baz", "schema.invariant")]


def test_nothing_without_autogen_or_for_implicit_composites():
    assert generate("""
- func: qux(Tensor self) -> Tensor
  dispatch:
    CPU: qux
- func: quux(Tensor self) -> Tensor
  autogen: quux.out
""") == []


def test_generated_attributes():
    entries = split_entries(SpecFile.NATIVE_FUNCTIONS, """
- func: foo_(Tensor(a!) self) -> Tensor(a!)
  dispatch:
    CPU: foo_
  autogen: foo.out
  tags: core
""")
    groups, _ = group_by_signature([parse_native_entry(e, TAGS, RELEASE) for e in entries])
    out, functional = generated_functions(groups)[0]
    assert out.tags == ("generated", "out", "pt2_compliant_tag")
    assert out.variants == ("function",) and out.device_check == "NoCheck" and not out.device_guard
    assert [(k.key, k.name) for k in out.dispatch] == [("CompositeExplicitAutograd", "foo_out")]
    assert [(k.key, k.name) for k in functional.dispatch] == [("CompositeExplicitAutograd", "foo")]
    assert str(out.generated_from) == "foo_"
