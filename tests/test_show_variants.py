"""`gradshard show BASE` lists every overload and variant of the base name (functional,
in-place, out), the same way whether or not the base name is itself an operator (issue 47:
`show sin` showed `sin` alone, `show mul` its overloads but not `mul_`), on a copy of the mini
spec with sin's family and an op that has only an out variant (as in the real spec)."""

from __future__ import annotations

import json
import shutil

import pytest
from support.specs import MINI_SPEC

from gradshard.service.cli import main

NATIVE_ADDED = """
- func: sin(Tensor self) -> Tensor
  variants: function, method
  dispatch:
    CompositeExplicitAutograd: sin

- func: sin_(Tensor(a!) self) -> Tensor(a!)
  variants: function, method
  dispatch:
    CompositeExplicitAutograd: sin_

- func: sin.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
  dispatch:
    CompositeExplicitAutograd: sin_out

- func: adaptive_avg_pool3d_backward.grad_input(Tensor grad_output, Tensor self, *, Tensor(a!) grad_input) -> Tensor(a!)
  python_module: nn
  dispatch:
    CPU: adaptive_avg_pool3d_backward_out_cpu
"""

DERIVATIVES_ADDED = """
- name: sin(Tensor self) -> Tensor
  self: grad * self.cos().conj()
"""

# What each base name (and its in-place spelling) shows, in the spec's order.
FAMILIES = {
    "sin": (["sin", "sin_", "sin.out"], ["sin"]),
    "mul": (["mul.Tensor", "mul_.Tensor", "mul.out"], ["mul.Tensor"]),
    "add": (["add.Tensor", "add_.Tensor", "add.out"], ["add.Tensor"]),
    # one of the two out= functions torchgen allows without a functional variant
    "adaptive_avg_pool3d_backward": (["adaptive_avg_pool3d_backward.grad_input"], []),
}


@pytest.fixture(scope="module")
def spec(tmp_path_factory):
    spec = tmp_path_factory.mktemp("show") / "spec"
    shutil.copytree(MINI_SPEC, spec)
    for path, added in ((spec / "ATen/native/native_functions.yaml", NATIVE_ADDED),
                        (spec / "autograd/derivatives.yaml", DERIVATIVES_ADDED)):
        path.write_text(path.read_text() + added)
    return spec


def show(capsys, spec, name: str, *words: str) -> str:
    assert main(["show", name, "--spec", str(spec), *words]) == 0
    return capsys.readouterr().out


@pytest.mark.parametrize("base", FAMILIES)
def test_a_base_name_shows_every_overload_and_variant(base, spec, capsys):
    natives, entries = FAMILIES[base]
    for name in (base, f"{base}_"):  # the in-place spelling names the same family
        shown = json.loads(show(capsys, spec, name, "--json"))
        assert [n["name"] for n in shown["native_functions"]] == natives, name
        assert [d["name"].split("(")[0] for d in shown["derivatives"]] == entries, name
    text = show(capsys, spec, base)
    for native in natives:
        assert f"native function {native}\n" in text
    if len(natives) > 1:  # the overview first: each with its kind
        kinds = [f"{n} ({k})" for n, k in zip(natives, ("functional", "inplace", "out"))]
        assert text.startswith(f"{base}: {len(natives)} native functions: {', '.join(kinds)}\n")


def test_an_overload_or_schema_shows_that_one(spec, capsys):
    for name in ("sin.out", "mul_.Tensor", "sin(Tensor self) -> Tensor"):
        shown = json.loads(show(capsys, spec, name, "--json"))
        assert len(shown["native_functions"]) == 1, name
