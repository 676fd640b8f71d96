"""C++ types of schema arguments and returns, as the autograd code generator spells them.

torchgen threads two switches through thread-local state (local.py: parametrize): whether
mutable tensors bind as `const at::Tensor &`, and whether `Tensor[]` binds as
`const at::ITensorListRef &` (for structured groups). Here they are an explicit `CppFlags`
taken from the native function in whose context the types are computed.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from gradshard.pipeline.problems import RuleViolation
from gradshard.pipeline.records import Record
from gradshard.pipeline.schema import (Argument, FunctionSchema, Return, SchemaKind, SchemaType,
                                       TensorOptionsGroup, TypeForm)

__all__ = ["BOOL", "CForm", "CType", "CppBinding", "CppFlags", "INT64", "LAYOUT",
           "REDUNDANT_MEMORY_FORMAT", "SCALAR_TYPE",
           "STRING_VIEW", "SYMINT", "SYMINT_ARRAY_REF", "TENSOR", "TENSOR_GEOMETRY", "TENSOR_LIST",
           "TENSOR_OPTIONS", "TYPE_AND_SIZE", "argument_ctype", "base", "check_list_default",
           "cpp_arguments", "default_expr", "return_ctype", "return_names", "return_value_form",
           "returns_type", "tie_return_values", "wrap"]


class CForm(enum.Enum):
    BASE = "base"
    CONST_REF = "const_ref"
    MUT_REF = "mut_ref"
    OPTIONAL = "optional"
    LIST = "list"
    ARRAY_REF = "array_ref"
    VECTOR = "vector"
    ARRAY = "array"
    TUPLE = "tuple"


@dataclass(frozen=True, slots=True)
class CType(Record):
    """A C++ type; `str()` is its spelling in generated code (api/types/types_base.py)."""

    form: CForm
    name: str = ""
    elems: tuple[CType, ...] = ()
    size: int = 0

    def __str__(self) -> str:
        form = self.form
        if form is CForm.BASE:
            return self.name
        if form is CForm.TUPLE:
            return f"::std::tuple<{','.join(map(str, self.elems))}>"
        inner = str(self.elems[0])
        if form is CForm.CONST_REF:
            return f"const {inner} &"
        if form is CForm.MUT_REF:
            return f"{inner} &"
        if form is CForm.OPTIONAL:
            return f"::std::optional<{inner}>"
        if form is CForm.LIST:
            return f"c10::List<{inner}>"
        if form is CForm.ARRAY_REF:
            return f"at::ArrayRef<{inner}>"
        if form is CForm.VECTOR:
            return f"::std::vector<{inner}>"
        return f"::std::array<{inner},{self.size}>"

    @property
    def elem(self) -> CType:
        return self.elems[0]

    def without_const_ref(self) -> CType:
        """The owning type: references dropped at every level (types_base.py: remove_const_ref)."""
        if self.form in (CForm.CONST_REF, CForm.MUT_REF):
            return self.elem.without_const_ref()
        if not self.elems:
            return self
        return CType(self.form, self.name, tuple(e.without_const_ref() for e in self.elems), self.size)


def base(name: str) -> CType:
    return CType(CForm.BASE, name)


def wrap(form: CForm, elem: CType, size: int = 0) -> CType:
    return CType(form, elems=(elem,), size=size)


TENSOR = base("at::Tensor")
SCALAR = base("at::Scalar")
INT64 = base("int64_t")
SYMINT = base("c10::SymInt")
BOOL = base("bool")
TENSOR_OPTIONS = base("at::TensorOptions")
SYMINT_ARRAY_REF = base("c10::SymIntArrayRef")
SCALAR_TYPE = base("at::ScalarType")
LAYOUT = base("at::Layout")
TENSOR_GEOMETRY = base("at::TensorGeometry")
TYPE_AND_SIZE = base("torch::autograd::generated::TypeAndSize")
STRING_VIEW = base("c10::string_view")
TENSOR_LIST = base("at::TensorList")
ITENSOR_LIST_REF = wrap(CForm.CONST_REF, base("at::ITensorListRef"))
DIMNAME_LIST = base("at::DimnameList")  # api/types/types.py: dimnameListT (Dimname: 2.12)

# Schema base types that bind by value (api/types/types.py: BaseTypeToCppMapping).
_VALUE_TYPES = {
    "int": "int64_t", "float": "double", "bool": "bool", "str": "c10::string_view",
    "Generator": "at::Generator", "ScalarType": "at::ScalarType", "DimVector": "at::DimVector",
    "Layout": "at::Layout", "Device": "at::Device", "DeviceIndex": "at::DeviceIndex",
    "MemoryFormat": "at::MemoryFormat", "QScheme": "at::QScheme", "Storage": "at::Storage",
    "Stream": "at::Stream", "SymInt": "c10::SymInt", "SymBool": "c10::SymBool",
    "Dimname": "at::Dimname",  # api/types/types.py: dimnameT (Dimname: 2.12)
}


@dataclass(frozen=True, slots=True)
class CppFlags(Record):
    """The per-function switches that change C++ spellings (context.py: native_function_manager)."""

    const_ref_for_mutable_tensors: bool = False
    ilistref_for_tensor_lists: bool = False


def _value_type(t: SchemaType, symint: bool) -> CType | None:
    """Types spelled the same as arguments and returns; None for Tensor/Scalar-based ones."""
    if t.form is TypeForm.BASE:
        if t.name in ("Tensor", "Scalar"):
            return None
        if t.name == "SymInt":
            return SYMINT if symint else INT64
        if t.name not in _VALUE_TYPES:
            raise RuleViolation("cpp.unsupported-type",
                                f"type '{t}' has no C++ binding in the autograd codegen",
                                "differentiable functions may only use types with a C++ binding")
        return base(_VALUE_TYPES[t.name])
    if t.form is TypeForm.OPTIONAL:
        inner = _value_type(t.elem, symint)
        return None if inner is None else wrap(CForm.OPTIONAL, inner)
    if t.form is TypeForm.LIST:
        if str(t.elem) == "bool":
            if t.size is None:
                raise RuleViolation("cpp.unsupported-type", "'bool[]' has no size",
                                    "C++ binds bool lists as std::array: write e.g. bool[3]")
            return wrap(CForm.ARRAY, BOOL, t.size)
        return None
    raise RuleViolation("cpp.unsupported-type",
                        f"custom class type '{t}' has no C++ binding in the autograd codegen",
                        "differentiable functions cannot take custom class arguments")


def argument_ctype(t: SchemaType, *, mutable: bool, flags: CppFlags, symint: bool) -> CType:
    """C++ parameter type of a schema type (api/cpp.py: argumenttype_type)."""
    value = _value_type(t, symint)
    if value is not None:
        return value
    mutable_ref = mutable and not flags.const_ref_for_mutable_tensors
    if t.form is TypeForm.BASE:
        if t.name == "Tensor":
            return wrap(CForm.MUT_REF if mutable_ref else CForm.CONST_REF, TENSOR)
        return wrap(CForm.CONST_REF, SCALAR)
    if t.form is TypeForm.OPTIONAL:
        return _optional_argument_ctype(t.elem, mutable_ref=mutable_ref, mutable=mutable,
                                        flags=flags, symint=symint)
    return _list_argument_ctype(t.elem, mutable=mutable, flags=flags, symint=symint)


def _optional_argument_ctype(elem: SchemaType, *, mutable_ref: bool, mutable: bool,
                             flags: CppFlags, symint: bool) -> CType:
    text = str(elem)
    if text == "Tensor":
        # A mutable optional tensor binds as `at::Tensor &`, a known torchgen discrepancy.
        return wrap(CForm.MUT_REF, TENSOR) if mutable_ref else \
            wrap(CForm.CONST_REF, wrap(CForm.OPTIONAL, TENSOR))
    if text == "Scalar":
        return wrap(CForm.CONST_REF, wrap(CForm.OPTIONAL, SCALAR))
    if elem.form is TypeForm.LIST and str(elem.elem) == "int":
        return base("at::OptionalIntArrayRef")
    if elem.form is TypeForm.LIST and str(elem.elem) == "SymInt":
        return base("at::OptionalSymIntArrayRef" if symint else "at::OptionalIntArrayRef")
    inner = argument_ctype(elem, mutable=mutable, flags=flags, symint=symint)
    return wrap(CForm.OPTIONAL, inner)


def _list_argument_ctype(elem: SchemaType, *, mutable: bool, flags: CppFlags,
                         symint: bool) -> CType:
    text = str(elem)
    if text == "int":
        return base("at::IntArrayRef")
    if text == "SymInt":
        return SYMINT_ARRAY_REF if symint else base("at::IntArrayRef")
    if text == "Tensor":
        return ITENSOR_LIST_REF if flags.ilistref_for_tensor_lists else TENSOR_LIST
    if text == "Scalar":
        return wrap(CForm.ARRAY_REF, SCALAR)
    if text == "Dimname":  # api/cpp.py: argumenttype_type, any size (Dimname: 2.12)
        return DIMNAME_LIST
    if text == "Tensor?":
        return wrap(CForm.CONST_REF, wrap(CForm.LIST, wrap(CForm.OPTIONAL, TENSOR)))
    inner = argument_ctype(elem, mutable=mutable, flags=flags, symint=symint)
    return wrap(CForm.ARRAY_REF, inner)


def return_ctype(r: Return, flags: CppFlags) -> CType:
    """C++ type of one return; SymInt always stays SymInt (api/cpp.py: returntype_type)."""
    return _return_type(r.type, mutable=r.is_write, flags=flags)


def _return_type(t: SchemaType, *, mutable: bool, flags: CppFlags) -> CType:
    value = _value_type(t, symint=True)
    if value is not None:
        return value
    if t.form is TypeForm.BASE:
        if t.name == "Scalar":
            return SCALAR
        if not mutable:
            return TENSOR
        return wrap(CForm.CONST_REF if flags.const_ref_for_mutable_tensors else CForm.MUT_REF,
                    TENSOR)
    if t.form is TypeForm.LIST:
        if mutable:
            raise RuleViolation("cpp.unsupported-return",
                                f"return type '{t}' is a mutable list",
                                "functions that mutate a list of tensors return ()")
        if t.size is not None:
            raise RuleViolation("cpp.unsupported-return",
                                f"return type '{t}' has a fixed size, which C++ returns cannot",
                                "return an unsized list, e.g. Tensor[]")
        return wrap(CForm.VECTOR, _return_type(t.elem, mutable=False, flags=flags))
    if t.form is TypeForm.OPTIONAL and str(t.elem) == "Tensor":
        return wrap(CForm.OPTIONAL, _return_type(t.elem, mutable=mutable, flags=flags))
    raise RuleViolation("cpp.unsupported-return", f"return type '{t}' has no C++ spelling",
                        "return Tensor, Tensor?, a list of them, or a value type")


def return_names(schema: FunctionSchema, fallback: str = "result") -> tuple[str, ...]:
    """The C++ names of a schema's returns (api/cpp.py: return_names)."""
    names = []
    arg_names = {a.name for a in schema.arguments.all}
    for i, r in enumerate(schema.returns):
        if schema.name.name.inplace:
            if i != 0:
                raise RuleViolation("cpp.unsupported-return",
                                    "an in-place function returns more than one value",
                                    "an in-place function returns only self")
            names.append("self")
        elif schema.is_out_fn():
            names.append(schema.arguments.out[i].name)
        elif r.name:
            names.append(f"{r.name}_return" if r.name in arg_names else r.name)
        else:
            names.append(fallback if len(schema.returns) == 1 else f"{fallback}{i}")
    return tuple(names)


def returns_type(schema: FunctionSchema, flags: CppFlags) -> str:
    """api/cpp.py: returns_type (symint=True): `::std::tuple<a,b>`, without a space."""
    types = [str(return_ctype(r, flags)) for r in schema.returns]
    if not types:
        return "void"
    return types[0] if len(types) == 1 else f"::std::tuple<{','.join(types)}>"


def tie_return_values(schema: FunctionSchema) -> tuple[str, ...]:
    """gen_trace_type.py: tie_return_values (a single return keeps its schema name)."""
    if len(schema.returns) == 1:
        return (schema.returns[0].name or "result",)
    return return_names(schema)


def return_value_form(schema: FunctionSchema) -> str:
    """gen_trace_type.py: get_return_value ("" without returns; the templates spell each
    form)."""
    if not schema.returns:
        return ""
    if len(schema.returns) == 1:
        return "single"
    return "forward_as_tuple" if schema.kind() is SchemaKind.OUT else "make_tuple"


@dataclass(frozen=True, slots=True)
class CppBinding(Record):
    """One parameter of the C++ API signature the autograd codegen uses.

    `formula_name` is the name formulas can refer to: the redundant `memory_format` next to
    TensorOptions is invisible to them (api/types/types_base.py: SpecialArgName).
    `argument` is the schema argument, or None for the folded TensorOptions `options`.
    """

    name: str
    ctype: CType
    argument: Argument | None = None
    formula_name: str = ""

    @property
    def type(self) -> str:
        return str(self.ctype)


REDUNDANT_MEMORY_FORMAT = "possibly_redundant_memory_format"


def cpp_arguments(schema: FunctionSchema, flags: CppFlags,
                  symint: bool | None = None) -> tuple[CppBinding, ...]:
    """The non-faithful C++ API parameters: outs first, TensorOptions folded into `options`;
    SymInt kept when the schema has any unless `symint` says otherwise
    (load_derivatives.py: cpp_arguments; api/cpp.py: arguments)."""
    symint = schema.has_symint() if symint is None else symint
    has_options = schema.arguments.options is not None
    items: tuple[Argument | TensorOptionsGroup, ...] = (
        schema.arguments.out + schema.arguments.grouped_non_out())
    return tuple(_binding(item, flags, symint, has_options) for item in items)


def _binding(item: Argument | TensorOptionsGroup, flags: CppFlags, symint: bool,
             has_options: bool) -> CppBinding:
    if isinstance(item, TensorOptionsGroup):
        return CppBinding("options", TENSOR_OPTIONS, None, "options")
    ctype = argument_ctype(item.type, mutable=item.is_write, flags=flags, symint=symint)
    formula_name = (REDUNDANT_MEMORY_FORMAT if item.name == "memory_format" and has_options
                    else item.name)
    return CppBinding(item.name, ctype, item, formula_name)


# Schema defaults that C++ spells differently (api/cpp.py: JIT_TO_CPP_DEFAULT).
_CPP_DEFAULTS = {"False": "false", "True": "true", "None": "::std::nullopt",
                 "Mean": "at::Reduction::Mean", "[]": "{}",
                 "contiguous_format": "c10::MemoryFormat::Contiguous", "long": "at::kLong"}


def default_expr(default: str, t: SchemaType, *, symint: bool) -> str:
    """The C++ expression of a schema default (api/cpp.py: default_expr)."""
    if default == "None" and str(t) == "Tensor?":
        return "{}"
    if t.form is TypeForm.BASE and t.name == "str" and len(default) >= 2 \
            and default[0] == "'" and default[-1] == "'":
        return '"' + _c_string_body(default[1:-1]) + '"'
    if t.form is TypeForm.OPTIONAL:
        return "::std::nullopt" if default == "None" else default_expr(default, t.elem, symint=symint)
    if t.form is TypeForm.LIST:
        if default.startswith("[") and default.endswith("]"):
            return "{" + default[1:-1] + "}"
        if symint and default.isdigit() and str(t.elem) == "SymInt":
            return f"c10::SymInt({default})"
        if t.size is None:
            raise RuleViolation(
                "schema.bad-default", f"list type {t} has the default '{default}'",
                "write list defaults as '[...]' in native_functions.yaml (or list the "
                "argument in cpp_no_default_args)")
    return _CPP_DEFAULTS.get(default, default)


def _c_string_body(quoted: str) -> str:
    """A single-quoted schema string's body as a double-quoted C string's body."""
    out, i = [], 0
    while i < len(quoted):
        if quoted[i] != "\\":
            out.append('\\"' if quoted[i] == '"' else quoted[i])
            i += 1
        else:
            out.append("'" if quoted[i + 1:i + 2] == "'" else quoted[i:i + 2])
            i += 2
    return "".join(out)


def check_list_default(arg: Argument, symint: bool) -> None:
    """A C++ default must be printable: evaluated for its RuleViolation."""
    if arg.default is not None:
        default_expr(arg.default, arg.type, symint=symint)
