"""Python binding data: what the templates need to print the binding of one op name.

For each name, its overloads' parser signatures, and for each native function the dispatch:
which PythonArgParser outputs feed which lambda parameters, the local inits (self, packed
outs, TensorOptions), the C++ call, and how the result returns (gen_python_functions.py:
method_impl, emit_single_dispatch; api/python.py: dispatch_lambda_args,
dispatch_lambda_exprs, arg_parser_unpack_method, cpp_dispatch_target/exprs). Every C++
spelling is left to templates/codegen/python_binding.j2.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from gradshard.pipeline.cpp import CForm, CppFlags, CType, cpp_arguments, return_ctype
from gradshard.pipeline.parse.native import NativeFunction
from gradshard.pipeline.problems import RuleViolation
from gradshard.pipeline.records import Record
from gradshard.pipeline.releases import Release
from gradshard.pipeline.render.python.signatures import (PyArgument, PyOverload, PyPair,
                                                         PySignature, group_overloads,
                                                         structseq_fieldnames, unpack_method)
from gradshard.pipeline.schema import FunctionSchema, Return, SchemaKind, cpp_name

__all__ = ["Binding", "DONT_RECORD_TRACE", "SUPPORTED_RETURN_TYPES", "binding"]

# Return types the wrap() helpers accept (api/python.py: SUPPORTED_RETURN_TYPES): these
# scalars and lists, and tuples of these element types.
_TENSOR, _INT, _FLOAT = "at::Tensor", "int64_t", "double"
_SUPPORTED_TUPLES = (
    *((_TENSOR,) * n for n in range(2, 7)),
    (_TENSOR, _TENSOR, _TENSOR, _INT), (_TENSOR, _TENSOR, _FLOAT, _INT),
    (_TENSOR, _TENSOR, _TENSOR, _TENSOR, _INT), (_TENSOR, _TENSOR, _FLOAT, _TENSOR, _INT),
    (_FLOAT, _INT), (_TENSOR, "::std::vector<at::Tensor>"),
    (_TENSOR,) * 4 + ("c10::SymInt",) * 2 + (_TENSOR,) * 3,
)
SUPPORTED_RETURN_TYPES = frozenset(
    {"::std::tuple<" + ",".join(elements) + ">" for elements in _SUPPORTED_TUPLES}
    | {_TENSOR, _INT, _FLOAT, "::std::vector<at::Tensor>", "at::Scalar", "bool", "void*", "void",
       "at::QScheme", "at::IntArrayRef", "at::ScalarType", "at::Stream"})
# Ops whose calls are not recorded by the tracer (gen_trace_type.py: DONT_RECORD_TRACE).
DONT_RECORD_TRACE = frozenset({
    "convolution", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
    "conv_transpose3d", "lstm_cell", "gru_cell", "rnn_tanh_cell", "rnn_relu_cell", "_coalesced",
})
# The Python module objects bindings are checked against for __torch_function__.
MODULE_OBJECTS = {
    "torch": "THPVariableFunctionsModule", "torch.nn": "THPNNVariableFunctionsModule",
    "torch.fft": "THPFFTVariableFunctionsModule", "torch.linalg": "THPLinalgVariableFunctionsModule",
    "torch.nested": "THPNestedVariableFunctionsModule",
    "torch.sparse": "THPSparseVariableFunctionsModule",
    "torch.special": "THPSpecialVariableFunctionsModule",
}
_TENSOR_OPTIONS_FIELDS = {"dtype": "ScalarType?", "device": "Device?", "layout": "Layout?",
                          "pin_memory": "bool?", "requires_grad": "bool?"}


@dataclass(frozen=True, slots=True)
class ParserOutput(Record):
    """`_r.<unpack>(<index>[, <default_init>])`: one value the argument parser produced."""

    unpack: str
    index: int
    default_init: str | None = None


@dataclass(frozen=True, slots=True)
class LambdaInput(Record):
    """What is passed for one lambda parameter: a parser output, or a local (`self`,
    `options`, or `out[element]`)."""

    parsed: ParserOutput | None = None
    local: str = ""
    element: int | None = None


@dataclass(frozen=True, slots=True)
class LocalInit(Record):
    """A local made from a parser output before the call (dispatch_lambda_exprs): `self` or
    the packed `out` as parsed ("parsed"), or an optional DimnameList rewrapped from the
    parser's optional vector ("dimnames", Dimname: 2.12)."""

    kind: str
    name: str
    parsed: ParserOutput


@dataclass(frozen=True, slots=True)
class OptionsInit(Record):
    """The TensorOptions packing; `guarded_device_init`: maybe_initialize_device only for a
    receiver without a dispatch key (a method's, from 2.13)."""

    dtype: ParserOutput
    device: ParserOutput
    layout: ParserOutput
    requires_grad: ParserOutput
    pin_memory: ParserOutput
    guarded_device_init: bool


@dataclass(frozen=True, slots=True)
class OutTypeCheck(Record):
    out: ParserOutput
    dtype: ParserOutput
    layout: ParserOutput
    device: ParserOutput


@dataclass(frozen=True, slots=True)
class Dispatch(Record):
    """The call of one native function from parsed arguments (emit_single_dispatch)."""

    schema: str
    deprecated: bool
    local_inits: tuple[LocalInit, ...]
    options: OptionsInit | None
    out_check: OutTypeCheck | None
    name: str
    formals: tuple[tuple[str, str], ...]
    return_type: str
    callee_object: str   # "self" for a method call, else the namespace ("at", "torch")
    callee: str
    call_args: tuple[str, ...]
    inputs: tuple[LambdaInput, ...]
    requires_grad: ParserOutput | None
    returns: str         # "value", "none", or "self_list" (in-place foreach returns self)
    structseq: str | None = None


@dataclass(frozen=True, slots=True)
class DispatchCase(Record):
    signature: str
    base: Dispatch
    out: Dispatch | None = None
    out_index: int = 0


@dataclass(frozen=True, slots=True)
class StructseqType(Record):
    typename: str
    function: str


@dataclass(frozen=True, slots=True)
class Binding(Record):
    """Every overload of one op name in one Python module (method_impl, method_def,
    forward_decls)."""

    name: str
    base: str
    dunder: bool
    method: bool
    module: str | None
    module_object: str
    form: str  # "noarg", "singleton" or "varargs"
    structseqs: tuple[StructseqType, ...]
    traceable: bool
    max_args: int
    cases: tuple[DispatchCase, ...]
    # gen_python_functions.py: gen_has_torch_function_check, noarg method (2.12)
    checked_noarg_method: bool = False


def binding(name: str, pairs: Sequence[PyPair], module: str | None, method: bool,
            release: Release) -> Binding:
    first = pairs[0].function.func.name.name
    structseqs, typenames = _structseq_types(pairs)
    noarg = len(pairs) == 1 and pairs[0].signature.arguments_count() == 0
    overloads = group_overloads(pairs)
    form = "noarg" if noarg else "singleton" if len(overloads) == 1 else "varargs"
    return Binding(
        name=name, base=first.base, dunder=first.dunder, method=method, module=module,
        module_object=MODULE_OBJECTS[module] if module else "THPVariableClass", form=form,
        structseqs=structseqs, traceable=all(should_trace(p.function) for p in pairs),
        max_args=max(p.signature.arguments_count() for p in pairs),
        cases=tuple(_case(o, typenames, release) for o in overloads),
        checked_noarg_method=release.checked_noarg_methods)


def should_trace(fn: NativeFunction) -> bool:
    """gen_trace_type.py: should_trace."""
    if any(str(a.type) in ("Storage", "Type") for a in fn.func.arguments.all):
        return False
    return (any(r.type.is_tensor_like() for r in fn.func.returns)
            and fn.func.name.name.base not in DONT_RECORD_TRACE)


def structseq_key(func: FunctionSchema) -> str:
    """gen_python_functions.py: gen_structseq_typename_key."""
    return "_".join([cpp_name(func)] + structseq_fieldnames(func))


def _structseq_types(pairs: Sequence[PyPair]) -> tuple[tuple[StructseqType, ...], dict[str, str]]:
    """One typedef per distinct named-tuple return (emit_structseq_call)."""
    typenames: dict[str, str] = {}
    types: list[StructseqType] = []
    for pair in pairs:
        func = pair.function.func
        if not structseq_fieldnames(func):
            continue
        key = structseq_key(func)
        if key not in typenames:
            typenames[key] = f"NamedTuple{'' if not types else len(types)}"
            types.append(StructseqType(typenames[key], cpp_name(func)))
    return tuple(types), typenames


def _case(overload: PyOverload, typenames: dict[str, str], release: Release) -> DispatchCase:
    signature = overload.signature
    base = dispatch(signature, overload.base, typenames, release)
    if overload.outplace is None:
        return DispatchCase(signature.signature_str(), base)
    return DispatchCase(signature.signature_str(), base,
                        dispatch(signature, overload.outplace, typenames, release),
                        signature.output_idx())


# ---------------------------------------------------------------------------------------------
# One dispatch


def dispatch(ps: PySignature, fn: NativeFunction, typenames: dict[str, str],
             release: Release) -> Dispatch:
    """How a parsed call reaches one native function (gen_python_functions.py:
    emit_single_dispatch)."""
    try:
        return _dispatch(ps, fn, typenames, release)
    except RuleViolation as violation:
        violation.entry = violation.entry or str(fn.func.name)
        raise


def _dispatch(ps: PySignature, fn: NativeFunction, typenames: dict[str, str],
              release: Release) -> Dispatch:
    parsed = {a.name: parser_output(i, a) for i, a in enumerate(ps.arguments())}
    formals = lambda_formals(ps, fn)
    has_options = fn.func.arguments.options is not None
    inputs, local_inits = _lambda_inputs(ps, fn, parsed, formals, has_options)
    options = _options_init(ps, fn, parsed, release) if has_options else None
    out_check = _out_check(ps, fn, parsed) if not has_options else None
    needs_requires_grad = bool(ps.tensor_options_args) and (
        not has_options or (ps.method and "requires_grad" in parsed))
    return_type = lambda_return_type(fn)
    callee_object, callee = dispatch_target(fn)
    return Dispatch(
        schema=str(ps.deprecated_schema if ps.deprecated else fn.func), deprecated=ps.deprecated,
        local_inits=local_inits, options=options, out_check=out_check,
        name=cpp_name(fn.func), formals=formals,
        return_type=return_type, callee_object=callee_object, callee=callee,
        call_args=dispatch_exprs(fn, ps), inputs=inputs,
        requires_grad=parsed["requires_grad"] if needs_requires_grad else None,
        returns=_return_kind(fn, return_type),
        structseq=typenames.get(structseq_key(fn.func)) if return_type != "void" else None)


def parser_output(index: int, a: PyArgument) -> ParserOutput:
    return ParserOutput(unpack_method(a.type, a.default, a.default_init), index, a.default_init)


def lambda_formals(ps: PySignature, fn: NativeFunction) -> tuple[tuple[str, str], ...]:
    """(C++ type, name) of each lambda parameter (api/python.py: dispatch_lambda_args)."""
    schema = ps.deprecated_schema if ps.deprecated else fn.func
    outs = {a.name for a in schema.arguments.out}
    flags = CppFlags(fn.use_const_ref_for_mutable_tensors, fn.part_of_structured_group)
    formals = []
    for b in cpp_arguments(schema, flags, symint=True):
        type_str = b.type
        if ps.method and b.name == "self":
            type_str = "const at::Tensor &"
        elif (len(outs) <= 1 or b.name not in outs) and type_str == "at::Tensor &":
            type_str = "at::Tensor"  # passed a temporary from the parser: by value
        formals.append((type_str, b.name))
    return tuple(formals)


def lambda_return_type(fn: NativeFunction) -> str:
    """api/python.py: dispatch_lambda_return_str — returns by value, never by reference."""
    returns = [return_ctype(Return(r.type, r.name), fn.cpp_flags) for r in fn.func.returns]
    text = ("void" if not returns else str(returns[0]) if len(returns) == 1
            else str(CType(CForm.TUPLE, elems=tuple(returns))))
    if text not in SUPPORTED_RETURN_TYPES:
        raise RuleViolation("python.unsupported-return", f"{fn.func.name} returns {text}, which "
                            "Python bindings cannot wrap", "add a wrap() overload in "
                            "torch/csrc/autograd/utils/wrap_outputs.h first")
    return text


def dispatch_target(fn: NativeFunction) -> tuple[str, str]:
    """(object or namespace, C++ name) of the call (api/python.py: cpp_dispatch_target)."""
    name = cpp_name(fn.func, symint_overload=fn.func.has_symint())
    if "method" in fn.variants:
        return "self", name
    if "function" in fn.variants:
        torch = fn.func.arguments.options is not None or fn.func.name.name.base.endswith("_like")
        return ("torch" if torch else "at"), name
    raise RuleViolation("python.no-variant", f"{fn.func.name} is neither a function nor a method",
                        "give it 'variants: function' or 'method'")


def dispatch_exprs(fn: NativeFunction, ps: PySignature) -> tuple[str, ...]:
    """The C++ call's arguments (api/python.py: cpp_dispatch_exprs)."""
    if ps.deprecated:
        exprs = tuple(n for n in ps.deprecated_args_exprs if n != "out" or fn.func.is_out_fn())
    else:
        exprs = tuple(b.name for b in cpp_arguments(fn.func, fn.cpp_flags, symint=False))
    return tuple(e for e in exprs if e != "self") if "method" in fn.variants else exprs


def _lambda_inputs(ps: PySignature, fn: NativeFunction, parsed: dict[str, ParserOutput],
                   formals: tuple[tuple[str, str], ...], has_options: bool
                   ) -> tuple[tuple[LambdaInput, ...], tuple[LocalInit, ...]]:
    """What feeds each lambda parameter, and the local inits it needs, in argument order
    (dispatch_lambda_exprs)."""
    by_name: dict[str, LambdaInput] = {}
    local_inits: list[LocalInit] = []
    for a in ps.arguments(skip_tensor_options=True):
        if has_options and a.name == "self":
            local_inits.append(LocalInit("parsed", "self", parsed[a.name]))
            by_name["self"] = LambdaInput(local="self")
        elif a.outputs and len(a.outputs) > 1 and fn.func.is_out_fn():
            local_inits.append(LocalInit("parsed", "out", parsed[a.name]))
            for i, out in enumerate(a.outputs):
                by_name[out.name] = LambdaInput(local="out", element=i)
        elif str(a.type) == "Dimname[]?":  # dispatch_lambda_exprs (Dimname: 2.12)
            local_inits.append(LocalInit("dimnames", a.name, parsed[a.name]))
            by_name[a.name] = LambdaInput(local=a.name)
        else:
            by_name[a.name] = LambdaInput(parsed=parsed[a.name])
    if ps.method:
        by_name["self"] = LambdaInput(local="self")
    if has_options:
        by_name["options"] = LambdaInput(local="options")
    missing = [name for _, name in formals if name not in by_name]
    if missing:
        raise RuleViolation("python.unbound-argument",
                            f"{fn.func.name}: the Python signature provides no value for "
                            f"{', '.join(missing)}", "check the deprecated signature's arguments")
    return tuple(by_name[name] for _, name in formals), tuple(local_inits)


def _options_init(ps: PySignature, fn: NativeFunction, parsed: dict[str, ParserOutput],
                  release: Release) -> OptionsInit:
    if fn.func.is_out_fn():
        raise RuleViolation("python.options-with-out", f"{fn.func}: tensor options with an out "
                            "argument", "out= variants take their options from the output")
    names = [a.name for a in ps.tensor_options_args]
    for a in ps.tensor_options_args:
        if _TENSOR_OPTIONS_FIELDS.get(a.name) != str(a.type):
            raise RuleViolation("python.bad-options", f"{fn.func}: tensor options field "
                                f"'{a.name}' of type {a.type}", "the fields are dtype, device, "
                                "layout, pin_memory, requires_grad")
    if not all(field in names for field in _TENSOR_OPTIONS_FIELDS):
        raise RuleViolation("python.bad-options", f"{fn.func}: incomplete tensor options {names}",
                            "factory functions take dtype, layout, device, pin_memory and "
                            "requires_grad in Python")
    # api/python.py: dispatch_lambda_exprs, maybe_initialize_device (unguarded: 2.12)
    guarded = ps.method and release.guarded_method_device_init
    return OptionsInit(parsed["dtype"], parsed["device"], parsed["layout"],
                       parsed["requires_grad"], parsed["pin_memory"], guarded)


def _out_check(ps: PySignature, fn: NativeFunction,
               parsed: dict[str, ParserOutput]) -> OutTypeCheck | None:
    names = {a.name for a in ps.tensor_options_args}
    if not names:
        return None
    check = None
    if "dtype" in names:
        if not fn.func.is_out_fn():
            raise RuleViolation("python.bad-options", f"{fn.func}: dtype among the Python "
                                "arguments of a function with no out argument",
                                "factory functions carry TensorOptions in their schema")
        if not {"layout", "device"} <= names:
            raise RuleViolation("python.bad-options", f"{fn.func}: incomplete tensor options for "
                                "the output check", "take dtype, layout and device together")
        check = OutTypeCheck(parsed["out"], parsed["dtype"], parsed["layout"], parsed["device"])
    if "requires_grad" not in names:
        raise RuleViolation("python.bad-options", f"{fn.func}: requires_grad missing from the "
                            "tensor options", "factory functions take requires_grad in Python")
    return check


def _return_kind(fn: NativeFunction, return_type: str) -> str:
    if return_type != "void":
        return "value"
    if str(fn.func.name).startswith("_foreach_") and fn.func.kind() is SchemaKind.INPLACE:
        me = fn.func.arguments.self_arg
        if me is None or not (me.type.is_tensor_like() and me.type.list_type() is not None):
            raise RuleViolation("python.foreach-self", f"in-place foreach {fn.func.name} has no "
                                "tensor-list self", "in-place foreach ops take Tensor(a!)[] self")
        return "self_list"
    return "none"
