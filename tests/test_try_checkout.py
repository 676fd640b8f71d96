"""`gradshard try` on a PyTorch checkout: its FunctionsManual.cpp is compiled into the patch,
so that a formula may call a helper written there (which the installed torch has not got)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.specs import stage_checkout_spec

from gradshard.service.cli import main
from gradshard.service.live.command import torch_library_dir

SIN = "- name: sin(Tensor self) -> Tensor\n  self: grad * self.cos().conj()\n"
CALLS_HELPER = "- name: sin(Tensor self) -> Tensor\n  self: gradshard_sin_backward(grad, self)\n"
DECLARATION = """
namespace torch::autograd::generated::details {
at::Tensor gradshard_sin_backward(const at::Tensor& grad, const at::Tensor& self);
}
"""
DEFINITION = """#include <torch/csrc/autograd/FunctionsManual.h>

namespace torch::autograd::generated::details {
at::Tensor gradshard_sin_backward(const at::Tensor& grad, const at::Tensor& self) {
  return grad * self.cos().conj() * FACTOR;
}
}
"""


def checkout_with_helper(root, factor: str):
    """The packaged spec as a checkout whose FunctionsManual declares and defines a new
    helper, and whose sin formula calls it."""
    _, checkout = stage_checkout_spec(root)
    manual = checkout / "torch" / "csrc" / "autograd"
    manual.mkdir(parents=True)
    installed = Path(torch_library_dir()).parent / "include"
    header = (installed / "torch/csrc/autograd/FunctionsManual.h").read_text()
    (manual / "FunctionsManual.h").write_text(header + DECLARATION)
    (manual / "FunctionsManual.cpp").write_text(DEFINITION.replace("FACTOR", factor))
    derivatives = checkout / "tools" / "autograd" / "derivatives.yaml"
    derivatives.write_text(derivatives.read_text().replace(SIN, CALLS_HELPER))
    return checkout


@pytest.mark.compiler
@pytest.mark.slow
def test_a_helper_written_in_the_checkout_is_compiled_in(try_workspace, tmp_path, capsys):
    _, cache = try_workspace
    checkout = checkout_with_helper(tmp_path / "checkout", "1")
    code = main(["try", "sin", "--spec", str(checkout), "--cache", str(cache), "--dtype",
                 "float64", "--json"])
    report = json.loads(capsys.readouterr().out)
    assert code == 0, report
    (sin,) = report["ops"]
    assert sin["samples"] and {s["verdict"] for s in sin["samples"]} == {"PASS"}

    # the helper's own edit is what the patch runs: wrong by a factor of 3, it fails
    source = checkout / "torch" / "csrc" / "autograd" / "FunctionsManual.cpp"
    source.write_text(DEFINITION.replace("FACTOR", "3"))
    code = main(["try", "sin", "--spec", str(checkout), "--cache", str(cache), "--dtype",
                 "float64", "--json"])
    report = json.loads(capsys.readouterr().out)
    assert code == 5, report
    assert {s["verdict"] for s in report["ops"][0]["samples"]} == {"FAIL"}
