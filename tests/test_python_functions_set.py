"""The node classes gradshard's python_functions* bind, against the installed torch 2.13.

PyTorch's build renders python_functions* from the derivatives infos as loaded, before
matching adds the foreach infos (tools/setup_helpers/generate_code.py runs
gen_autograd_python before gen_autograd), so the installed torch has a Python class for every
node of a loaded info and none for a synthesized foreach node (its grad_fn is a CppFunction).
"""

from __future__ import annotations

import re

import pytest

from gradshard.service.files.inputs import read_inputs
from gradshard.service.files.spec_location import locate_spec
from gradshard.service.graph_run import DecodedInputs, run_graph

pytestmark = pytest.mark.filterwarnings("ignore:Failed to initialize NumPy")

# Classes torch._C._functions holds besides the generated ones
# (torch/csrc/autograd/functions/init.cpp: THPAutograd_initFunctions).
HANDWRITTEN = frozenset({"AccumulateGrad", "CopyBackwards", "CopySlices", "DelayedError", "Error",
                         "NotImplemented", "SendRpcBackward", "UndefinedGrad",
                         "UndefinedGradBackward"})
ADD_CLASS = re.compile(r"addClass<(\w+)>\(module, ")


@pytest.fixture(scope="module")
def built(packaged_spec) -> dict[str, str]:
    """What `gradshard build` writes for the real spec: Functions.h and python_functions*."""
    result = run_graph(DecodedInputs.decode(read_inputs(locate_spec(str(packaged_spec)))), None)
    return result.load([n for n in result.files
                        if n == "Functions.h" or n.startswith("python_functions")])


def bound_classes(text: str) -> list[str]:
    return ADD_CLASS.findall(text)


def installed_classes() -> set[str]:
    import torch

    assert torch.__version__.startswith("2.13."), torch.__version__
    return {name for name in dir(torch._C._functions) if not name.startswith("_")}


def test_python_functions_bind_what_the_installed_torch_binds(built):
    ours = bound_classes(built["python_functionsEverything.cpp"])
    assert len(ours) == len(set(ours)) == 649
    assert installed_classes() == set(ours) | HANDWRITTEN
    shards = [c for k in range(5) for c in bound_classes(built[f"python_functions_{k}.cpp"])]
    assert sorted(shards) == sorted(ours)


def test_a_synthesized_foreach_node_is_declared_but_not_bound(built):
    """ForeachAddBackward0List is in Functions.h, and torch's _foreach_add.List makes a node of
    the plain CppFunction type, as a node without a Python class does."""
    import torch

    assert built["Functions.h"].count("struct TORCH_API ") == 711
    assert "struct TORCH_API ForeachAddBackward0List " in built["Functions.h"]
    ours = set(bound_classes(built["python_functionsEverything.cpp"]))
    assert "ForeachAddBackward0List" not in ours and "AddBackward0" in ours
    x = torch.ones(2, requires_grad=True)
    assert type(torch._foreach_add([x], [x])[0].grad_fn).__name__ == "CppFunction"
    assert type(torch.add(x, x).grad_fn).__name__ == "AddBackward0"
