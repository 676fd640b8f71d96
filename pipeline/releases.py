"""What torchgen releases generate differently: one record of rules per release, in one table.

gradshard reproduces torchgen 2.12.0, 2.13.0 and 2.14.x (2.14.0 and 2.14.1 are one generator).
Their autograd generators differ in a handful of places, each a datum here, named by its
torchgen counterpart and the release it appears in; the stages read the datum, and every C++
spelling stays in the templates. A task whose output depends on one takes the release's
record as an input (so its key holds the release, and a cache never mixes releases), and the
record it makes carries the datum on to the rendering that prints it.

Which release a spec belongs to is the service's to say (service/generator/known.py, by the
hash of the spec's own generator); the pipeline is told.
"""

from __future__ import annotations

from dataclasses import dataclass

from gradshard.pipeline.records import Record

__all__ = ["DEFAULT_RELEASE", "RELEASES", "Release", "release_named", "release_series"]


@dataclass(frozen=True, slots=True)
class Release(Record):
    """One release's rules, where releases differ (../docs/usage.md lists them)."""

    name: str
    # model.py: BaseTy.Dimname and the named-tensor types; 2.13 removed them ("unrecognized
    # type Dimname"). The types, the argument parser and the overload order handle Dimname
    # unconditionally: a spec of a release without it never gets one past the parse.
    dimname: bool
    # gen_variable_type.py: DECLARE_GRAD_FN / ASSIGN_GRAD_FN: std::shared_ptr(new …,
    # deleteNode) until 2.12, c10::intrusive_ptr and c10::make_intrusive from 2.13.
    shared_ptr_nodes: bool
    # gen_autograd_functions.py: process_function: a saved output unpacks with
    # shared_from_this() until 2.12, getptr() from 2.13.
    saved_outputs_shared_from_this: bool
    # gen_python_functions.py: gen_has_torch_function_check: a no-argument method checks
    # `if(check_has_torch_function(self_))` until 2.12, `if (has_torch_function(self_))` after.
    checked_noarg_methods: bool
    # api/python.py: dispatch_lambda_exprs: a method's maybe_initialize_device is guarded by
    # !at::impl::tensor_has_dispatch(self) from 2.13.
    guarded_method_device_init: bool
    # gen_variable_type.py: gen_variable_type and gen_trace_type.py: gen_trace_type:
    # write_sharded(num_shards=…), 5 until 2.12, 10 from 2.13.
    variable_type_shards: int
    trace_type_shards: int
    # gen_variable_type.py: emit_fire_creation_hooks, REBASE_HISTORY (2.14): each
    # differentiable kernel fires the node-creation hooks of the node it made or rebased.
    node_creation_hooks: bool
    # gen_variable_type.py: GRADIENT_IMPLEMENTED_FOR_COMPLEX as this release changes it from
    # 2.13's list (pipeline/render/kernel_lists.py).
    complex_gradients_added: tuple[str, ...] = ()
    complex_gradients_removed: tuple[str, ...] = ()
    # Not here: api/cpp.py's owning value types for const Tensor& / const Scalar& (2.14) change
    # only a ViewFunc of a view op with a Scalar argument, which gen_inplace_or_view_type
    # rejects first in every release (pipeline/render/inplace_or_view.py: view-argument-type).

    def has_complex_gradient(self, name: str, base: frozenset[str]) -> bool:
        """Whether `name` is in this release's GRADIENT_IMPLEMENTED_FOR_COMPLEX, given 2.13's
        list `base` (asked once per kernel: no set is built)."""
        if name in self.complex_gradients_added:
            return True
        return name in base and name not in self.complex_gradients_removed


RELEASES: dict[str, Release] = {
    "2.12.0": Release("2.12.0", dimname=True, shared_ptr_nodes=True,
                      saved_outputs_shared_from_this=True, checked_noarg_methods=True,
                      guarded_method_device_init=False, variable_type_shards=5,
                      trace_type_shards=5, node_creation_hooks=False),
    "2.13.0": Release("2.13.0", dimname=False, shared_ptr_nodes=False,
                      saved_outputs_shared_from_this=False, checked_noarg_methods=False,
                      guarded_method_device_init=True, variable_type_shards=10,
                      trace_type_shards=10, node_creation_hooks=False),
    "2.14.x": Release("2.14.x", dimname=False, shared_ptr_nodes=False,
                      saved_outputs_shared_from_this=False, checked_noarg_methods=False,
                      guarded_method_device_init=True, variable_type_shards=10,
                      trace_type_shards=10, node_creation_hooks=True,
                      complex_gradients_added=("linalg_matrix_sqrth", "linalg_polar"),
                      complex_gradients_removed=("cholesky",)),
}

DEFAULT_RELEASE = "2.13.0"  # the installed reference; the rules of a generator gradshard does not know


def release_series(version: str) -> str:
    """`2.14` of `2.14.1`, `2.14.x` or `2.14.1+cpu`: what generated code and headers must
    share to compile together."""
    return ".".join(version.split("+")[0].split(".")[:2])


def release_named(name: str) -> Release:
    """The rules of a release in RELEASES; any other name gets the default release's."""
    return RELEASES.get(name, RELEASES[DEFAULT_RELEASE])
