"""Python signatures: how each ATen overload looks to the PythonArgParser.

A native function becomes a `PySignature` (api/python.py: signature_from_schema): its
positional and keyword arguments with Python types and defaults, its out arguments (packed
into one `out` when there are several), and the scattered TensorOptions of factory, new and
like functions. Overloads of one name are grouped by their signature without outputs (an out
variant joins its base) and ordered so that the parser tries narrower types first
(gen_python_functions.py: group_overloads, sort_overloads).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, replace
from typing import Iterable, Mapping, Sequence

from gradshard.pipeline.cpp import default_expr
from gradshard.pipeline.parse.deprecated import KNOWN_CONSTANTS, DeprecatedSignature
from gradshard.pipeline.parse.native import NativeFunction
from gradshard.pipeline.problems import RuleViolation, SpecFile
from gradshard.pipeline.records import Record
from gradshard.pipeline.schema import (DIMNAME, Argument, FunctionSchema, SchemaType, TypeForm,
                                       cpp_name)

__all__ = ["PyArgument", "PyOverload", "PyPair", "PySignature", "argument_type_str",
           "deprecated_pairs", "group_overloads", "pairs_by_name", "python_pair",
           "structseq_fieldnames", "unpack_method"]

# Schema base types whose Python parser type has the same name (api/python.py: argument_type_str).
_SAME_NAME_TYPES = frozenset({"Tensor", "bool", "QScheme", "Scalar", "ScalarType", "Generator",
                              "Storage", "Layout", "Device", "DeviceIndex", "MemoryFormat",
                              "Stream", "SymInt", "Dimname"})
_RENAMED_TYPES = {"int": "int64_t", "float": "double", "str": "c10::string_view"}
_NONE_DEFAULTS = frozenset({"nullptr", "::std::nullopt", "std::nullopt", "{}"})
# Types whose parser accessor takes a default init (api/python.py: arg_parser_unpack_method).
_DEFAULT_INIT_TYPES = frozenset({"ScalarType?", "ScalarType", "Device", "Device?", "Layout",
                                 "Layout?", "bool", "bool?"})


def argument_type_str(t: SchemaType, *, simple_type: bool = False) -> str:
    """The type as python_arg_parser spells it (SymInt kept)."""
    if t.form is TypeForm.BASE:
        if t.name in _RENAMED_TYPES:
            return _RENAMED_TYPES[t.name]
        if t.name in _SAME_NAME_TYPES:
            return t.name
    elif t.form is TypeForm.OPTIONAL:
        return argument_type_str(t.elem, simple_type=simple_type) + "?"
    elif t.form is TypeForm.LIST:
        return _list_type_str(t, simple_type)
    raise RuleViolation("python.unsupported-type", f"type '{t}' has no Python argument parser type",
                        "functions bound to Python may only use the parser's types")


def _list_type_str(t: SchemaType, simple_type: bool) -> str:
    size = None if simple_type else t.size
    sized = f"[{size}]" if size is not None else ""
    elem = str(t.elem)
    if elem == "bool":
        if t.size is None:
            raise RuleViolation("python.unsupported-type", "'bool[]' has no size",
                                "write a sized bool list such as bool[3]")
        return f"::std::array<bool,{t.size}>"
    named = {"int": "IntArrayRef", "SymInt": "SymIntArrayRef", "Tensor": "TensorList",
             "Scalar": "ScalarList",
             "Dimname": "DimnameList"}  # api/python.py: argument_type_str (Dimname: 2.12)
    if elem in named:
        return named[elem] + sized
    if elem == "Tensor?":
        return ("c10::List<::std::optional<Tensor>>" if simple_type
                else "const c10::List<::std::optional<Tensor>> &")
    return f"ArrayRef<{argument_type_str(t.elem, simple_type=simple_type)}>"


def unpack_method(t, default: str | None, default_init: str | None) -> str:
    """The PythonArgParser accessor for a type (api/python.py: arg_parser_unpack_method)."""
    if default_init is not None and str(t) not in _DEFAULT_INIT_TYPES:
        raise RuleViolation("python.unsupported-default", f"type '{t}' cannot be unpacked with "
                            "a default", "only dtype, layout, device and bool take defaults here")
    with_default = default_init is not None
    if t.form is TypeForm.BASE:
        simple = {"Tensor": "tensor", "Stream": "stream", "Storage": "storage", "Scalar": "scalar",
                  "DeviceIndex": "toInt64", "int": "toInt64", "SymInt": "toSymInt",
                  "float": "toDouble", "str": "stringView", "MemoryFormat": "memoryformat",
                  "ScalarType": "scalartype", "Device": "device", "bool": "toBool",
                  "Layout": "layout",
                  "Dimname": "dimname"}  # arg_parser_unpack_method (Dimname: 2.12)
        if t.name in simple:
            method = simple[t.name]
            if with_default and t.name in ("ScalarType", "Device", "bool", "Layout"):
                method += "WithDefault"
            return method
    elif t.form is TypeForm.OPTIONAL:
        if str(t.elem) == "Tensor":
            return "optionalTensor"
        if str(t.elem) == "Generator":
            return "generator"
        if str(t.elem) == "Dimname[]":  # arg_parser_unpack_method (Dimname: 2.12)
            return "toDimnameListOptional"
        if not with_default and default in (None, "None", "::std::nullopt", "std::nullopt"):
            return unpack_method(t.elem, None, None) + "Optional"
        return unpack_method(t.elem, default, default_init)
    elif t.form is TypeForm.LIST:
        elem = str(t.elem)
        if elem == "Tensor":
            return f"tensorlist_n<{t.size}>" if t.size is not None else "tensorlist"
        lists = {"Tensor?": "list_of_optional_tensors", "int": "intlist", "float": "doublelist",
                 "SymInt": "symintlist", "Scalar": "scalarlist",
                 "Dimname": "dimnamelist"}  # arg_parser_unpack_method (Dimname: 2.12)
        if elem in lists:
            return lists[elem]
    raise RuleViolation("python.unsupported-type",
                        f"type '{t}' is not supported by PythonArgParser",
                        "bind the function by hand, or use a parser-supported type")


def python_default(default: str, t: SchemaType) -> str:
    """The C++ default turned back into a Python literal (gen.py: pythonify_default)."""
    cpp = default_expr(default, t, symint=False)
    if cpp in ("true", "false"):
        return str(cpp == "true")
    for number in (int, float):
        try:
            return str(number(cpp))
        except ValueError:
            continue
    return cpp


@dataclass(frozen=True, slots=True)
class PyArgument(Record):
    """One argument of a Python signature. `outputs` is set for the out argument: the schema's
    out arguments it stands for (several are packed into one `Tensor[N] out`)."""

    name: str
    type: SchemaType
    default: str | None = None
    default_init: str | None = None
    outputs: tuple[PyArgument, ...] = ()

    def parser_str(self, method: bool) -> str:
        """The argument as the parser signature string spells it (argument_str)."""
        type_str = argument_type_str(self.type).replace("const ", "").replace(" &", "")
        name = "input" if self.name == "self" and type_str in ("Tensor", "Number") and not method \
            else self.name
        if self.default is None:
            return f"{type_str} {name}"
        default = "None" if self.default in _NONE_DEFAULTS else self.default
        return f"{type_str} {name}={default}"


@dataclass(frozen=True, slots=True)
class PySignature(Record):
    name: str
    input_args: tuple[PyArgument, ...]
    input_kwargs: tuple[PyArgument, ...]
    output: PyArgument | None
    tensor_options_args: tuple[PyArgument, ...]
    method: bool
    deprecated_schema: FunctionSchema | None = None
    deprecated_args_exprs: tuple[str, ...] = ()

    @property
    def deprecated(self) -> bool:
        return self.deprecated_schema is not None

    def arguments(self, *, skip_outputs: bool = False,
                  skip_tensor_options: bool = False) -> tuple[PyArgument, ...]:
        result = self.input_args + self.input_kwargs
        if self.output is not None and not skip_outputs:
            result += (self.output,)
        return result if skip_tensor_options else result + self.tensor_options_args

    def arguments_count(self) -> int:
        return len(self.arguments())

    def output_idx(self) -> int:
        return len(self.input_args) + len(self.input_kwargs)

    def signature_str(self, *, skip_outputs: bool = False) -> str:
        formals = [a.parser_str(self.method) for a in self.arguments(skip_outputs=skip_outputs)]
        if len(formals) > len(self.input_args):
            formals.insert(len(self.input_args), "*")
        text = f"{self.name}({', '.join(formals)})"
        return text + "|deprecated" if self.deprecated else text


def _python_argument(a: Argument) -> PyArgument:
    default = python_default(a.default, a.type) if a.default is not None else None
    return PyArgument(a.name, a.type, default)


def _packed_out(outputs: tuple[PyArgument, ...]) -> PyArgument | None:
    """api/python.py: PythonOutArgument.from_outputs."""
    if not outputs:
        return None
    if len(outputs) == 1:
        return replace(outputs[0], default="None", default_init=None, outputs=outputs)
    if any(not o.type.is_tensor_like() for o in outputs):
        raise RuleViolation("python.unsupported-out", "several out arguments that are not all "
                            "tensors", "the Python binding packs several outs into Tensor[N] out")
    packed_type = SchemaType(TypeForm.LIST, elem=SchemaType.base("Tensor"), size=len(outputs))
    return PyArgument("out", packed_type, "None", None, outputs)


_OPTION_TYPES = (("dtype", "ScalarType"), ("layout", "Layout"), ("device", "Device"))


def signature_from_schema(func: FunctionSchema, category_override: str | None,
                          method: bool) -> PySignature:
    """api/python.py: signature_from_schema (self dropped for methods; TensorOptions
    re-created from the Python rules, not the schema's)."""
    args = func.arguments
    if any(a.name == "requires_grad" for a in args.all):
        raise RuleViolation("python.requires-grad-argument",
                            "an argument is named requires_grad, which Python bindings reserve",
                            "rename the argument; factory functions get requires_grad anyway")
    me = () if method or args.self_arg is None else (args.self_arg,)
    inputs = tuple(_python_argument(a) for a in args.pre_self + me + args.post_self)
    kwargs = tuple(_python_argument(a) for a in args.pre_options + args.post_options)
    outputs = tuple(_python_argument(a) for a in args.out)
    name = cpp_name(func)
    factory = category_override == "factory" or (
        any(r.type.is_tensor_like() for r in func.returns)
        and not any(a.type.is_tensor_like() for a in args.non_out))
    new_or_like = (category_override in ("new", "like") or name.startswith("new_")
                   or name.endswith("_like"))
    options = ()
    if (factory or new_or_like) and category_override != "dummy":
        options = _tensor_options_args(func, new_or_like)
    return PySignature(str(func.name.name), inputs, kwargs, _packed_out(outputs), options, method)


def _tensor_options_args(func: FunctionSchema, new_or_like: bool) -> tuple[PyArgument, ...]:
    """dtype, layout, device, pin_memory, requires_grad with their parser default inits."""
    scattered = []
    for name, base in _OPTION_TYPES:
        init = None if new_or_like else _option_default_init(func, name)
        if name == "device" and not new_or_like:
            init = init or "torch::tensors::get_default_device()"
        scattered.append(PyArgument(name, _optional(base), "None", init))
    scattered.append(PyArgument("pin_memory", _optional("bool"), "False"))
    scattered.append(PyArgument("requires_grad", _optional("bool"), "False"))
    return tuple(scattered)


def _optional(base: str) -> SchemaType:
    return SchemaType(TypeForm.OPTIONAL, elem=SchemaType.base(base))


def _option_default_init(func: FunctionSchema, name: str) -> str | None:
    options = func.arguments.options
    if options is None:
        return None
    arg = getattr(options, name)
    if arg.default is None or arg.default == "None":
        return None
    return default_expr(arg.default, arg.type, symint=False)


def structseq_fieldnames(func: FunctionSchema) -> list[str]:
    """Field names of a named-tuple return, or [] (api/python.py: structseq_fieldnames)."""
    returns = func.returns
    if len(returns) <= 1 or all(r.name is None for r in returns):
        return []
    if any(r.name is None for r in returns):
        raise RuleViolation("python.unnamed-return",
                            f"{func.name} names some of its returns but not all",
                            "name every return or none (the Python named tuple needs them all)")
    return [r.name for r in returns]


# ---------------------------------------------------------------------------------------------
# Pairs and deprecated signatures


@dataclass(frozen=True, slots=True)
class PyPair(Record):
    """A Python signature and the native function it calls."""

    signature: PySignature
    function: NativeFunction


def python_pair(fn: NativeFunction, method: bool) -> PyPair:
    """gen_python_functions.py: load_signatures' gen_signature_pairs, with the argument types
    checked here rather than when each binding (function and method) is made, so that a bad
    type is one problem of the function, not one per binding."""
    try:
        signature = signature_from_schema(fn.func, fn.category_override, method)
        check_parser_types(signature)
        return PyPair(signature, fn)
    except RuleViolation as violation:
        violation.entry = violation.entry or str(fn.func.name)
        raise


def check_parser_types(signature: PySignature) -> None:
    """Every argument has a parser type and an accessor (api/python.py: argument_type_str and
    arg_parser_unpack_method, which torchgen calls while printing each binding). A method's
    arguments are its function's minus self, so the function pass finds every fault."""
    for argument in signature.arguments():
        argument.parser_str(signature.method)
        unpack_method(argument.type, argument.default, argument.default_init)


def pairs_by_name(pairs: Iterable[PyPair]) -> dict[str, list[PyPair]]:
    by_name: dict[str, list[PyPair]] = defaultdict(list)
    for pair in pairs:
        by_name[pair.signature.name].append(pair)
    return by_name


def deprecated_pairs(entry: DeprecatedSignature, by_name: Mapping[str, list[PyPair]],
                     method: bool) -> list[PyPair]:
    """A deprecated signature joined to every ATen overload its call fits
    (gen_python_functions.py: load_deprecated_signatures)."""
    matches = [p for p in by_name.get(entry.aten_name, []) if _fits(entry, p.function.func)]
    if not matches:
        raise RuleViolation("deprecated.no-match",
                            f"no native function named {entry.aten_name} fits the call "
                            f"'{entry.aten}' of {entry.schema}",
                            "the call's arguments must match an ATen overload's types and "
                            "annotations in order")
    result = []
    for pair in matches:
        python = signature_from_schema(entry.schema, pair.function.category_override, method)
        check_parser_types(python)
        result.append(PyPair(replace(python, deprecated_schema=entry.schema,
                                     deprecated_args_exprs=entry.call_args), pair.function))
    return result


def _fits(entry: DeprecatedSignature, aten: FunctionSchema) -> bool:
    by_name = {a.name: a for a in entry.schema.arguments.all}
    arguments = aten.arguments.out + aten.arguments.non_out if entry.is_out else aten.arguments.all
    for i, arg in enumerate(arguments):
        if i < len(entry.call_args):
            passed = entry.call_args[i]
            if passed in KNOWN_CONSTANTS:
                kind, annotation = SchemaType.parse(KNOWN_CONSTANTS[passed]), None
            else:
                kind, annotation = by_name[passed].type, by_name[passed].annotation
            if kind != arg.type or annotation != arg.annotation:
                return False
        elif arg.default is None:
            return False
    return len(entry.schema.returns) == len(aten.returns) and all(
        a == b for a, b in zip(entry.schema.returns, aten.returns))


# ---------------------------------------------------------------------------------------------
# Overload groups


@dataclass(frozen=True, slots=True)
class PyOverload(Record):
    """One parser signature: a base function, and its out variant when it has one."""

    signature: PySignature
    base: NativeFunction
    outplace: NativeFunction | None = None


def group_overloads(pairs: Sequence[PyPair]) -> list[PyOverload]:
    """Out variants join the base with the same signature sans outputs; parser order
    (gen_python_functions.py: group_overloads)."""
    bases: dict[str, PyPair] = {}
    outplaces: dict[str, PyPair] = {}
    for pair in pairs:
        key = pair.signature.signature_str(skip_outputs=True)
        table = outplaces if pair.function.func.is_out_fn() else bases
        if key in table:
            raise RuleViolation(
                "python.duplicate-signature",
                f"{pair.function.func.name} and {table[key].function.func.name} have the same "
                f"Python signature {key}{' as Tensor methods' if pair.signature.method else ''}",
                "make the overloads differ in their argument types",
                entry=str(pair.function.func.name))
        table[key] = pair
    for key, out in outplaces.items():
        if key not in bases:
            raise _orphan_out(pairs, key, out)
    return sort_overloads([_overload(bases[k], outplaces.get(k)) for k in bases])


def _orphan_out(pairs: Sequence[PyPair], key: str, out: PyPair) -> RuleViolation:
    name = str(out.function.func.name.name)
    candidates = [p.signature.signature_str(skip_outputs=True) for p in pairs
                  if str(p.function.func.name.name) == name and not p.function.func.is_out_fn()
                  and not p.signature.deprecated]
    deprecated = out.signature.deprecated_schema
    return RuleViolation(
        "python.out-without-base",
        f"out variant {deprecated or out.function.func.name} has no non-out variant with the "
        f"Python signature {key}",
        "check the spelling of the schemas; candidates: " + ("; ".join(candidates) or "none"),
        entry=str(deprecated or out.function.func.name),
        file=SpecFile.DEPRECATED if deprecated else None)


def _overload(base: PyPair, out: PyPair | None) -> PyOverload:
    if out is None:
        return PyOverload(base.signature, base.function)
    # the out signature parses both; the functional one brings the TensorOptions
    signature = replace(out.signature, tensor_options_args=base.signature.tensor_options_args)
    return PyOverload(signature, base.function, out.function)


def _is_arg_smaller(t1: str, t2: str) -> bool:
    """The parser must try t2 before t1 (gen_python_functions.py: sort_overloads)."""
    return ((t1 == "Scalar" and t2 == "Tensor") or (t1 == "Scalar?" and t2 == "Tensor?")
            or _is_dimname_smaller(t1, t2)
            or (t1 == "int[]" and t2 in ("int", "int?"))
            or (t1 == "Tensor[]" and "[]" in t2)
            or (t1 == "SymInt[]" and t2 == "int[]")
            or (t1 in ("SymInt", "int") and t2 == "Tensor"))


def _is_dimname_smaller(t1: str, t2: str) -> bool:
    """A named-tensor overload after its positional one (sort_overloads: is_arg_smaller,
    Dimname: 2.12)."""
    return DIMNAME in t1 and DIMNAME not in t2


def _is_smaller(s1: PySignature, s2: PySignature) -> bool:
    args1, args2 = s1.arguments(skip_outputs=True), s2.arguments(skip_outputs=True)
    if len(args1) != len(args2):
        return False
    types = [(str(a.type), str(b.type)) for a, b in zip(args1, args2)]
    equal = all(a.type == b.type for a, b in zip(args1, args2))
    return not equal and all(t1 == t2 or _is_arg_smaller(t1, t2) for t1, t2 in types)


def sort_overloads(overloads: list[PyOverload]) -> list[PyOverload]:
    """By signature text, then a topological order where narrower types come first."""
    ordered = sorted(overloads, key=lambda o: o.signature.signature_str())
    larger_than: dict[int, set[int]] = defaultdict(set)
    for i, a in enumerate(ordered):
        for j, b in enumerate(ordered):
            if _is_smaller(a.signature, b.signature):
                larger_than[i].add(j)
    if not larger_than:
        return ordered
    result = [i for i in range(len(ordered)) if i not in larger_than]
    for position in range(len(ordered)):
        current = result[position]
        for j in sorted(larger_than):
            waiting = larger_than[j]
            waiting.discard(current)
            if not waiting:
                del larger_than[j]
                result.append(j)
    return [ordered[i] for i in result]
