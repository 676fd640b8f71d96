"""What `gradshard try` plans to patch when an edit reaches no kernel or node: an edit that
changes only Python bindings gets a reason per binding, not "nothing differs"."""

from __future__ import annotations

from gradshard.service.files.spec_location import locate_spec
from gradshard.service.live.plan import PYTHON_ONLY, plan_patch
from gradshard.service.session import Session

# a deprecated signature: it makes Python bindings only (gen_python_functions' deprecated
# overloads), nothing in VariableType or Functions
DEPRECATED = ("- name: addbmm(Scalar beta, Tensor self, Scalar alpha, Tensor batch1, "
              "Tensor batch2) -> Tensor\n  aten: addbmm(self, batch1, batch2, beta, alpha)\n")
DROPPED_ALPHA = DEPRECATED.replace("beta, alpha)", "beta)")


def plan_with(try_workspace, relative: str, old: str, new: str):
    """The plan of the shared spec copy with one file's `old` text replaced by `new` (the
    file restored after)."""
    spec, cache = try_workspace
    path = spec / relative
    text = path.read_text()
    assert text.count(old) == 1
    path.write_text(text.replace(old, new))
    session = Session(cache)
    try:
        return plan_patch(locate_spec(str(spec)), session, ())
    finally:
        session.close()
        path.write_text(text)


def test_an_edit_of_python_bindings_only_is_named_with_its_reason(try_workspace):
    plan = plan_with(try_workspace, "autograd/deprecated.yaml", DEPRECATED, DROPPED_ALPHA)
    assert plan.sources is None and plan.patched == ()
    assert plan.ops and all(op.reason == PYTHON_ONLY for op in plan.ops)
    assert {op.name.rsplit(".", 1)[-1] for op in plan.ops} == {"addbmm"}, plan.ops


NEW_OP = "- func: gradshard_probe(Tensor self) -> Tensor\n  variants: function\n"


def test_a_native_functions_edit_compares_the_schemas(try_workspace):
    """When native_functions.yaml differs from the installed torch's, the plan reads every
    function of both specs (they are not read otherwise: their collections' hashes agree)
    and names an op whose schema changed; a new CompositeImplicitAutograd function has no
    kernel to patch, only its binding."""
    last = "- func: _foreach_pow.ScalarAndTensor"  # a line the file holds once
    plan = plan_with(try_workspace, "ATen/native/native_functions.yaml", last,
                     NEW_OP + "\n" + last)
    assert [(op.name, op.reason) for op in plan.ops] == [("torch.gradshard_probe", PYTHON_ONLY)]
