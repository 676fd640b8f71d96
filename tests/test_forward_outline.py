"""Forward formulas compiled out of their kernels (pipeline/render/forward_outline.py) and the kernel
and forward units that print them (pipeline/layout/compile_layout.py). The real spec's set compiles
in tests/test_compile_full.py; an edited forward formula recompiles its forward unit alone in
tests/test_compile_kernels.py."""

from __future__ import annotations

from dataclasses import replace

import pytest

from gradshard.pipeline.layout.compile_layout import forward_shard_source, kernel_shard_source
from gradshard.pipeline.render.forward_outline import formula_names, outline_forward
from gradshard.pipeline.render.templating import TemplateSet
from gradshard.pipeline.render.variable_type import (Formal, ForwardFormula, TangentInput,
                                                     VariableKernel)
from gradshard.pipeline.render.variable_type_files import DispatchKeys, RenderedKernel
from gradshard.service.files.inputs import gradshard_template_bytes, template_sources

TENSOR = "const at::Tensor &"
LOCAL = "at::Tensor &"
ERFINV_FORMULA = "(0.5 * sqrt(M_PI) * exp(self_p.erfinv().pow(2)) * self_t.conj() * 4).conj()"


def formula(text: str, *, per_element: bool = False, outputs: str = "result") -> ForwardFormula:
    unpacked = (TangentInput("self", "self[i]" if per_element else "self", True, True,
                             "_efficientzerotensor_symint", True),)
    return ForwardFormula(outputs, "tensor", 1, "_any_has_forward_grad_result", unpacked, False,
                          text, per_element)


def kernel(*formulas: ForwardFormula, formals: tuple[Formal, ...] = (Formal(TENSOR, "self"),),
           wrapper: str = "erfinv") -> VariableKernel:
    return VariableKernel("aten::erfinv", wrapper, "Default", formals=formals, ties=("result",),
                          tie_types=("at::Tensor",), forward_formulas=formulas)


def test_a_formula_becomes_a_function_of_the_values_it_uses() -> None:
    [function] = outline_forward(kernel(formula(ERFINV_FORMULA)))
    assert function.name == "erfinv_forward_0"
    assert function.params == (Formal(LOCAL, "self_t"), Formal(LOCAL, "self_p"))
    assert (function.target, function.slot) == ("result_new_fw_grad_opt",
                                                "result_new_fw_grad_opt")
    assert function.formula == ERFINV_FORMULA


def test_parameters_outputs_and_the_element_index_keep_their_kernel_types() -> None:
    formals = (Formal("at::TensorList", "self"), Formal("at::ArrayRef<at::Scalar>", "scalars"))
    each = formula("self_t * scalars[i] + result[i]", per_element=True)
    foreach = replace(kernel(each, formals=formals), ties=("result",),
                      tie_types=("::std::vector<at::Tensor>",))
    [function] = outline_forward(foreach)
    assert function.params == (Formal("at::ArrayRef<at::Scalar>", "scalars"),
                               Formal("::std::vector<at::Tensor> &", "result"),
                               Formal(LOCAL, "self_t"), Formal("size_t", "i"))
    assert function.target == "result_new_fw_grad_opts[i]"


def test_an_edit_using_the_same_values_keeps_the_call() -> None:
    [one] = outline_forward(kernel(formula("self_t * self_p")))
    [other] = outline_forward(kernel(formula("self_p.conj() * self_t")))
    assert one.params == other.params


def test_an_unpacked_local_hides_a_parameter_of_its_name() -> None:
    formals = (Formal(TENSOR, "self"), Formal("int64_t", "self_t"))
    [function] = outline_forward(kernel(formula("self_t * 2"), formals=formals))
    assert function.params == (Formal(LOCAL, "self_t"),)


@pytest.mark.parametrize("text", ["grad_fn->saved_self_ * self_t", "self_t * _any_requires_grad",
                                  "original_self.value() * self_t", "self_.conj() * self_t",
                                  "self_t * ks.size()", "result_new_fw_grad_opt.value()"])
def test_a_formula_naming_another_kernel_local_stays_inline(text: str) -> None:
    assert outline_forward(kernel(formula(text))) == ()


def test_an_unqualified_aten_name_is_no_local() -> None:
    [function] = outline_forward(kernel(formula("_trilinear(self_t, self_p) + _tmp_like(self_t)")))
    assert function.params == (Formal(LOCAL, "self_t"), Formal(LOCAL, "self_p"))
    assert outline_forward(kernel(formula("_tmp * self_t"))) == ()


def test_members_qualified_names_and_literals_are_no_locals() -> None:
    assert formula_names('at::grad_fn(self_t.grad_fn(), "ks _tmp", \'_\') -> x') == [
        "at", "self_t"]
    [function] = outline_forward(kernel(formula('at::result(self_t).grad_fn()')))
    assert function.params == (Formal(LOCAL, "self_t"),)


def test_the_kernel_unit_calls_what_the_forward_unit_defines() -> None:
    templates = TemplateSet(template_sources(gradshard_template_bytes()))
    definition = ("at::Tensor erfinv(c10::DispatchKeySet ks, const at::Tensor & self) {\n"
                  f"  result_new_fw_grad_opt = {ERFINV_FORMULA};\n  return result;\n}}")
    outlined = outline_forward(kernel(formula(ERFINV_FORMULA)))
    rendered = RenderedKernel("erfinv", "Default", definition, "m.impl(...);", forward=outlined)
    unit = kernel_shard_source([rendered], DispatchKeys(("Default",)), templates, "erfinv", False)
    call = ("::torch::autograd::VariableType::fw_erfinv::erfinv_forward_0("
            "result_new_fw_grad_opt, self_t, self_p);")
    assert call in unit.text and ERFINV_FORMULA not in unit.text
    assert ("void erfinv_forward_0(::std::optional<at::Tensor> & result_new_fw_grad_opt, "
            "at::Tensor & self_t, at::Tensor & self_p);") in unit.text
    forward = forward_shard_source([rendered], templates, "erfinv")
    lines = forward.text.split("\n")
    assert forward.kernels == ("erfinv",)
    assert "GRADSHARD_KERNEL_LINKAGE void erfinv_forward_0(" in lines[forward.node_lines[0] - 1]
    assert f"  result_new_fw_grad_opt = {ERFINV_FORMULA};" in lines
    assert "namespace torch::autograd::VariableType::fw_erfinv {" in lines


def test_an_assignment_not_found_once_stays_inline() -> None:
    templates = TemplateSet(template_sources(gradshard_template_bytes()))
    outlined = outline_forward(kernel(formula("self_t")))
    twice = "void erfinv() {\n  result_new_fw_grad_opt = self_t;\n  result_new_fw_grad_opt = self_t;\n}"
    rendered = RenderedKernel("erfinv", "Default", twice, "", forward=outlined)
    unit = kernel_shard_source([rendered], DispatchKeys(("Default",)), templates, "erfinv", False)
    assert unit.text.count("result_new_fw_grad_opt = self_t;") == 2
