"""The operator schema grammar: names, types, arguments, returns, and whole schemas.

A schema such as `add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) ->
Tensor(a!)` is parsed into records that print back to exactly the same text; any other
spelling (extra spaces, `int[0]`, a missing `*`) is rejected, as torchgen's parsers assert
`str(parsed) == text` (model.py: FunctionSchema.parse and friends).

Equality of two schemas is equality of their text, which is why the rest of gradshard keys
dictionaries by `str(schema)`.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass, field, replace
from typing import Iterator

from gradshard.pipeline.problems import RuleViolation, did_you_mean
from gradshard.pipeline.records import Record, TextRecord

__all__ = ["Annotation", "Argument", "BaseOperatorName", "DIMNAME", "FunctionSchema", "OperatorName",
           "Return", "SchemaKind", "SchemaType", "TENSOR", "TensorOptionsGroup", "TypeForm",
           "check_schema_invariants", "cpp_name"]

# The base types of the schema language (model.py: BaseTy).
BASE_TYPE_NAMES = frozenset({
    "Generator", "ScalarType", "Tensor", "int", "DimVector", "float", "str", "bool",
    "Layout", "Device", "DeviceIndex", "Scalar", "MemoryFormat", "QScheme", "Storage",
    "Stream", "SymInt", "SymBool", "GraphModule",
})

# The named-tensor base type of torchgen 2.12 (model.py: BaseTy.Dimname), removed in 2.13. The
# grammar reads it whatever the release (a record's text must parse back); the native and
# deprecated parses refuse it where the release has none (parse/native.py: check_release_types).
DIMNAME = "Dimname"

# Python's in-place operator dunders (model.py: AUGMENTED_ASSIGNMENT_NAMES).
INPLACE_DUNDERS = frozenset({
    "add", "sub", "mul", "div", "mod", "pow", "lshift", "rshift", "and", "xor", "or",
})

_CUSTOM_CLASS_PREFIX = "__torch__.torch.classes."


def _grammar_error(message: str, hint: str) -> RuleViolation:
    return RuleViolation("schema.syntax", message, hint)


# ---------------------------------------------------------------------------------------------
# Operator names


@dataclass(frozen=True, slots=True)
class BaseOperatorName(TextRecord):
    """An operator name without its overload: `add`, `add_` (inplace), `__iadd__`, `foo_functional`."""

    base: str
    inplace: bool = False
    dunder: bool = False
    functional_overload: bool = False
    namespace: str = ""  # only names in `autogen:` carry one ("aten::foo.out")

    def __str__(self) -> str:
        prefix = f"{self.namespace}::" if self.namespace else ""
        if self.dunder:
            return f"{prefix}__{'i' if self.inplace else ''}{self.base}__"
        if self.inplace:
            return f"{prefix}{self.base}_"
        return prefix + (f"{self.base}_functional" if self.functional_overload else self.base)

    @classmethod
    def parse(cls, text: str) -> BaseOperatorName:
        # model.py: BaseOperatorName.parse
        if not text:
            raise _grammar_error("the operator name is empty", "a schema starts with its name: 'op(...)'")
        if text.endswith("_out"):
            raise _grammar_error(
                f"operator name '{text}' ends in '_out', which is reserved",
                "name the base operator and put 'out' in the overload: 'foo.out'")
        namespace, _, text = text.rpartition("::")
        name = cls._parse_unqualified(text)
        return replace(name, namespace=namespace) if namespace else name

    @classmethod
    def _parse_unqualified(cls, text: str) -> BaseOperatorName:
        dunder = re.fullmatch(r"__([^_]+)__", text)
        if dunder:
            name = dunder.group(1)
            if name[0] == "i" and name[1:] in INPLACE_DUNDERS:
                return cls._checked(text, cls(name[1:], inplace=True, dunder=True))
            if name[0] == "i":
                raise _grammar_error(
                    f"'{text}' looks like an in-place dunder but '{name[1:]}' is not one",
                    f"in-place dunders are __i{{{','.join(sorted(INPLACE_DUNDERS))}}}__")
            return cls._checked(text, cls(name, dunder=True))
        inplace = text.endswith("_")
        base = text[:-1] if inplace else text
        if base.endswith("_functional"):
            if inplace:
                raise _grammar_error(f"'{text}': a _functional operator cannot be in-place",
                                     "drop the trailing '_'")
            return cls._checked(text, cls(base[: -len("_functional")], functional_overload=True))
        return cls._checked(text, cls(base, inplace=inplace))

    @staticmethod
    def _checked(text: str, name: BaseOperatorName) -> BaseOperatorName:
        if str(name) != text:
            raise _grammar_error(f"'{text}' is not a valid operator name",
                                 "operator names are identifiers, optionally ending in '_'")
        return name


@dataclass(frozen=True, slots=True)
class OperatorName(TextRecord):
    """`base.overload`; the overload may be empty (`relu`)."""

    name: BaseOperatorName
    overload: str = ""

    def __str__(self) -> str:
        return f"{self.name}.{self.overload}" if self.overload else str(self.name)

    @classmethod
    def parse(cls, text: str) -> OperatorName:
        # model.py: OperatorName.parse — split at the first '.'
        base, dot, overload = text.partition(".")
        if dot and not overload:
            raise _grammar_error(f"'{text}' has an empty overload name after '.'",
                                 "drop the '.' or name the overload")
        return cls(BaseOperatorName.parse(base), overload)

    def without_inplace(self) -> OperatorName:
        return OperatorName(BaseOperatorName(self.name.base, dunder=self.name.dunder), self.overload)

    def with_overload(self, overload: str) -> OperatorName:
        return OperatorName(BaseOperatorName(self.name.base, dunder=self.name.dunder), overload)


# ---------------------------------------------------------------------------------------------
# Alias annotations and types

_ANNOTATION = re.compile(r"([a-z])((?:\|[a-z])*)(!?)(?: -> (\*|[a-z](?:\|[a-z])*))?")


@dataclass(frozen=True, slots=True)
class Annotation(TextRecord):
    """An alias annotation: `a`, `a!`, `a|b`, `a -> *`."""

    alias_set: tuple[str, ...]
    is_write: bool = False
    alias_set_after: tuple[str, ...] = ()

    def __str__(self) -> str:
        text = "|".join(self.alias_set) + ("!" if self.is_write else "")
        return f"{text} -> {'|'.join(self.alias_set_after)}" if self.alias_set_after else text

    @classmethod
    def parse(cls, text: str) -> Annotation:
        # model.py: Annotation.parse
        m = _ANNOTATION.fullmatch(text)
        if m is None:
            raise _grammar_error(f"'{text}' is not an alias annotation",
                                 "write e.g. 'a', 'a!' or 'a -> *'")
        alias_set = tuple((m.group(1) + m.group(2)).split("|"))
        after = tuple(m.group(4).split("|")) if m.group(4) else ()
        if len(alias_set) > 2:
            # torchgen's regex keeps only the last '|x' of the set, so it rejects these
            raise _grammar_error(f"alias annotation '{text}' names more than two aliases",
                                 "torchgen's grammar allows at most 'a|b'")
        if m.group(3) and len(alias_set) > 1:
            raise _grammar_error(f"alias annotation '{text}' writes to a set of several aliases",
                                 "a mutable (!) annotation names exactly one alias")
        if len(alias_set) > 1 and len(after) > 1:
            raise _grammar_error(f"alias annotation '{text}' has sets on both sides of '->'",
                                 "only one side of '->' may name several aliases")
        return cls(alias_set, bool(m.group(3)), after)


class TypeForm(enum.Enum):
    BASE = "base"
    OPTIONAL = "optional"
    LIST = "list"
    CUSTOM_CLASS = "class"


@dataclass(frozen=True, slots=True)
class SchemaType(TextRecord):
    """A schema type: a base type, `T?`, `T[]`/`T[N]`, or `__torch__.torch.classes.X`."""

    form: TypeForm
    name: str = ""
    elem: SchemaType | None = None
    size: int | None = None
    _text: str | None = field(default=None, init=False, repr=False, compare=False)

    def __str__(self) -> str:
        if self._text is None:
            object.__setattr__(self, "_text", self._render())
        return self._text

    def _render(self) -> str:
        if self.form is TypeForm.BASE:
            return self.name
        if self.form is TypeForm.OPTIONAL:
            return f"{self.elem}?"
        if self.form is TypeForm.LIST:
            return f"{self.elem}[{self.size or ''}]"
        return _CUSTOM_CLASS_PREFIX + self.name

    @classmethod
    def parse(cls, text: str) -> SchemaType:
        # model.py: Type._parse — a trailing '?' binds loosest, then '[N]', then base names
        if text.endswith("?"):
            parsed = cls(TypeForm.OPTIONAL, elem=cls.parse(text[:-1]))
        elif (m := re.fullmatch(r"(.+)\[([0-9]+)?\]", text)) is not None:
            size = int(m.group(2)) if m.group(2) is not None else None
            parsed = cls(TypeForm.LIST, elem=cls.parse(m.group(1)), size=size)
        elif (m := re.fullmatch(r"__torch__\.torch\.classes\.([a-zA-Z0-9_.]+)", text)) is not None:
            parsed = cls(TypeForm.CUSTOM_CLASS, name=m.group(1))
        elif text in BASE_TYPE_NAMES or text == DIMNAME:
            parsed = cls(TypeForm.BASE, name=text)
        else:
            raise RuleViolation("schema.unknown-type", f"unknown type '{text}'",
                                did_you_mean(text, BASE_TYPE_NAMES)
                                or f"known base types: {', '.join(sorted(BASE_TYPE_NAMES))}")
        if str(parsed) != text:
            raise _grammar_error(f"type '{text}' is not in canonical form (it reads as '{parsed}')",
                                 f"write '{parsed}'")
        return parsed

    @classmethod
    def base(cls, name: str) -> SchemaType:
        return cls(TypeForm.BASE, name=name)

    def _base_name(self) -> str | None:
        if self.form is TypeForm.BASE:
            return self.name
        if self.form in (TypeForm.OPTIONAL, TypeForm.LIST):
            return self.elem._base_name()
        return None

    def is_tensor_like(self) -> bool:
        return self._base_name() == "Tensor"

    def is_dimname_like(self) -> bool:
        return self._base_name() == DIMNAME

    def is_symint_like(self) -> bool:
        return self._base_name() == "SymInt"

    def is_generator_like(self) -> bool:
        return self._base_name() == "Generator"

    def is_nullable(self) -> bool:
        if self.form is TypeForm.OPTIONAL:
            return True
        return self.form is TypeForm.LIST and self.elem.is_nullable()

    def list_type(self) -> SchemaType | None:
        """The list inside this type (`int[]` for `int[]?`), or None."""
        if self.form is TypeForm.LIST:
            return self
        return self.elem.list_type() if self.form is TypeForm.OPTIONAL else None


TENSOR = SchemaType.base("Tensor")


def _split_annotated_type(text: str) -> tuple[SchemaType, Annotation | None]:
    """`Tensor(a!)?` → (Tensor?, a!). Only Tensor, Tensor? and Tensor[] carry annotations."""
    m = re.match(r"Tensor\((.+)\)(.*)", text)
    if m is None:
        return SchemaType.parse(text), None
    if m.group(2) not in ("", "?", "[]"):
        raise _grammar_error(f"'{text}': an alias annotation must come right after Tensor",
                             "write Tensor(a), Tensor(a)? or Tensor(a)[]")
    return SchemaType.parse("Tensor" + m.group(2)), Annotation.parse(m.group(1))


def _annotated_type_text(type_: SchemaType, annotation: Annotation | None) -> str:
    text = str(type_)
    if annotation is None:
        return text
    if text not in ("Tensor", "Tensor?", "Tensor[]"):
        raise _grammar_error(f"alias annotation on the non-Tensor type '{text}'",
                             "only Tensor, Tensor? and Tensor[] carry alias annotations")
    return text.replace("Tensor", f"Tensor({annotation})", 1)


@dataclass(frozen=True, slots=True)
class Argument(TextRecord):
    """`TYPE NAME[=DEFAULT]`; the default stays raw schema text (`[]`, `None`, `'mean'`)."""

    name: str
    type: SchemaType
    default: str | None = None
    annotation: Annotation | None = None

    def __str__(self) -> str:
        text = f"{_annotated_type_text(self.type, self.annotation)} {self.name}"
        return f"{text}={self.default}" if self.default else text

    @classmethod
    def parse(cls, text: str) -> Argument:
        # model.py: Argument.parse
        if " " not in text:
            raise _grammar_error(f"argument '{text}' needs a type and a name",
                                 "write arguments as 'TYPE NAME' or 'TYPE NAME=DEFAULT'")
        default = None
        declared = text
        if "=" in text:
            if text.count("=") != 1:
                raise _grammar_error(f"argument '{text}' has more than one '='",
                                     "a default value cannot contain '='")
            declared, default = text.split("=")
        type_text, _, name = declared.rpartition(" ")
        type_, annotation = _split_annotated_type(type_text)
        return cls(name, type_, default, annotation)

    @property
    def is_write(self) -> bool:
        return self.annotation is not None and self.annotation.is_write

    def without_annotation(self, *, strip_default: bool = False) -> Argument:
        return Argument(self.name, self.type, None if strip_default else self.default)


@dataclass(frozen=True, slots=True)
class Return(TextRecord):
    """`TYPE[ NAME]` in a schema's returns."""

    type: SchemaType
    name: str | None = None
    annotation: Annotation | None = None

    def __str__(self) -> str:
        text = _annotated_type_text(self.type, self.annotation)
        return f"{text} {self.name}" if self.name is not None else text

    @classmethod
    def parse(cls, text: str) -> Return:
        # model.py: Return.parse — the name, if any, follows the last space
        type_text, name = text.rsplit(" ", 1) if " " in text else (text, None)
        type_, annotation = _split_annotated_type(type_text)
        return cls(type_, name, annotation)

    @property
    def is_write(self) -> bool:
        return self.annotation is not None and self.annotation.is_write


# ---------------------------------------------------------------------------------------------
# Argument lists

_TENSOR_OPTION_FIELDS = (("dtype", "ScalarType"), ("layout", "Layout"),
                         ("device", "Device"), ("pin_memory", "bool"))


@dataclass(frozen=True, slots=True)
class TensorOptionsGroup(Record):
    """The kwarg-only run `dtype, layout, device, pin_memory` that C++ folds into TensorOptions."""

    dtype: Argument
    layout: Argument
    device: Argument
    pin_memory: Argument

    def all(self) -> tuple[Argument, ...]:
        return (self.dtype, self.layout, self.device, self.pin_memory)


@dataclass(frozen=True, slots=True)
class Arguments(Record):
    """A schema's arguments, grouped the way every consumer needs them."""

    pre_self: tuple[Argument, ...] = ()
    self_arg: Argument | None = None
    post_self: tuple[Argument, ...] = ()
    pre_options: tuple[Argument, ...] = ()
    options: TensorOptionsGroup | None = None
    post_options: tuple[Argument, ...] = ()
    out: tuple[Argument, ...] = ()

    @property
    def positional(self) -> tuple[Argument, ...]:
        me = (self.self_arg,) if self.self_arg is not None else ()
        return self.pre_self + me + self.post_self

    @property
    def kwarg_only(self) -> tuple[Argument, ...]:
        opts = self.options.all() if self.options is not None else ()
        return self.pre_options + opts + self.post_options

    @property
    def non_out(self) -> tuple[Argument, ...]:
        return self.positional + self.kwarg_only

    @property
    def all(self) -> tuple[Argument, ...]:
        return self.positional + self.kwarg_only + self.out

    def grouped_non_out(self) -> tuple[Argument | TensorOptionsGroup, ...]:
        """Non-out arguments with the TensorOptions run kept as one item (the C++ view)."""
        opts = (self.options,) if self.options is not None else ()
        return self.positional + self.pre_options + opts + self.post_options

    def has_tensor_arg(self) -> bool:
        return any(a.type.is_tensor_like() for a in self.non_out)

    def has_symint_arg(self) -> bool:
        return any(a.type.is_symint_like() for a in self.non_out)

    def has_generator_arg(self) -> bool:
        return any(a.type.is_generator_like() for a in self.non_out)

    def __str__(self) -> str:
        parts = [str(a) for a in self.positional]
        if self.kwarg_only or self.out:
            parts.append("*")
        parts.extend(str(a) for a in self.kwarg_only + self.out)
        return ", ".join(parts)

    def signature(self, *, strip_default: bool = False) -> Arguments:
        """Annotations dropped, TensorOptions and outs removed (model.py: Arguments.signature)."""
        me = self.self_arg.without_annotation(strip_default=strip_default) if self.self_arg else None
        return Arguments(_plain(self.pre_self, strip_default), me,
                         _plain(self.post_self, strip_default),
                         _plain(self.pre_options + self.post_options, strip_default))


def _plain(args: tuple[Argument, ...], strip_default: bool) -> tuple[Argument, ...]:
    return tuple(a.without_annotation(strip_default=strip_default) for a in args)


def parse_arguments(text: str) -> Arguments:
    """Parse the text between a schema's parentheses (model.py: Arguments.parse/_preparse)."""
    positional, kwarg_only, out = _split_argument_kinds(text)
    self_index = next((i for i, a in enumerate(positional) if a.name == "self"), None)
    if self_index is None:
        pre_self, self_arg, post_self = (), None, tuple(positional)
    else:
        pre_self = tuple(positional[:self_index])
        self_arg = positional[self_index]
        post_self = tuple(positional[self_index + 1:])
    if any(a.is_write for a in pre_self):
        raise RuleViolation("schema.invariant", "a mutable argument comes before 'self'",
                            "mutable positional arguments must follow self")
    pre, options, post = _group_tensor_options(kwarg_only)
    return Arguments(pre_self, self_arg, post_self, pre, options, post, tuple(out))


def _split_argument_kinds(text: str) -> tuple[list[Argument], list[Argument], list[Argument]]:
    positional: list[Argument] = []
    kwarg_only: list[Argument] = []
    out: list[Argument] = []
    current = positional
    for piece in text.split(", "):
        if not piece:
            continue
        declared = piece.split("=", 1)[0]
        if declared != declared.lstrip() or "  " in declared:
            raise _grammar_error(f"argument '{piece}' has extra spaces",
                                 "separate arguments with exactly ', ' and use single spaces")
        if "," in declared.rpartition(" ")[0]:
            raise _grammar_error(f"'{piece}' runs two arguments together",
                                 "separate arguments with ', ' (a comma and one space)")
        if piece == "*":
            if current is not positional:
                raise _grammar_error("'*' (start of keyword-only arguments) appears twice",
                                     "write '*' once, before the keyword-only arguments")
            current = kwarg_only
            continue
        arg = Argument.parse(piece)
        if arg.is_write and current is kwarg_only:
            current = out
        elif not arg.is_write and current is out:
            raise RuleViolation(
                "schema.invariant",
                f"non-mutable argument '{arg.name}' follows the mutable out arguments",
                "keyword-only arguments come first, then the out (Tensor(a!)) arguments")
        current.append(arg)
    return positional, kwarg_only, out


def _is_option(arg: Argument, field: tuple[str, str]) -> bool:
    name, base = field
    return arg.name == name and str(arg.type) in (base, base + "?")


def _group_tensor_options(kwargs: list[Argument]) -> tuple[tuple, TensorOptionsGroup | None, tuple]:
    pre: list[Argument] = []
    post: list[Argument] = []
    options = None
    i = 0
    while i < len(kwargs):
        window = kwargs[i:i + 4]
        if len(window) == 4 and all(map(_is_option, window, _TENSOR_OPTION_FIELDS)):
            if options is not None:
                raise RuleViolation("schema.invariant",
                                    "the tensor options (dtype, layout, device, pin_memory) "
                                    "appear twice", "a schema takes one set of tensor options")
            options = TensorOptionsGroup(*window)
            i += 4
            continue
        (pre if options is None else post).append(kwargs[i])
        i += 1
    return tuple(pre), options, tuple(post)


# ---------------------------------------------------------------------------------------------
# Whole schemas


class SchemaKind(enum.Enum):
    """What a schema does with its inputs (model.py: SchemaKind, FunctionSchema.kind)."""

    FUNCTIONAL = "functional"
    INPLACE = "inplace"
    OUT = "out"
    MUTABLE = "mutable"
    SCRATCH = "scratch"


_DECLARATION = re.compile(r"([^(]+)\((.*)\) -> (.*)")


@dataclass(frozen=True, slots=True)
class FunctionSchema(TextRecord):
    name: OperatorName
    arguments: Arguments
    returns: tuple[Return, ...] = ()
    # The canonical text, rendered once: schemas are compared and keyed by it everywhere.
    _text: str | None = field(default=None, init=False, repr=False, compare=False)
    # signature() by its flags, made once: five stages group and match functions by it.
    _signatures: dict | None = field(default=None, init=False, repr=False, compare=False)

    def __str__(self) -> str:
        if self._text is None:
            returns = (str(self.returns[0]) if len(self.returns) == 1
                       else "(" + ", ".join(map(str, self.returns)) + ")")
            object.__setattr__(self, "_text", f"{self.name}({self.arguments}) -> {returns}")
        return self._text

    @classmethod
    def parse(cls, text: str) -> FunctionSchema:
        # model.py: FunctionSchema.parse, then __post_init__'s invariants
        m = _DECLARATION.fullmatch(text)
        if m is None:
            raise _grammar_error(f"'{text}' is not a schema",
                                 "a schema reads 'name.overload(ARGS) -> RETURNS'")
        schema = cls(OperatorName.parse(m.group(1)), parse_arguments(m.group(2)),
                     _parse_returns(m.group(3)))
        if str(schema) != text:
            raise _grammar_error(f"schema is not in canonical form; it reads back as '{schema}'",
                                 _first_difference(text, str(schema)))
        check_schema_invariants(schema)
        return schema

    # -- classification

    def is_out_fn(self) -> bool:
        return bool(self.arguments.out)

    def is_functional_fn(self) -> bool:
        return "functional" in self.name.overload

    def has_symint(self) -> bool:
        return self.arguments.has_symint_arg()

    def kind(self) -> SchemaKind:
        if self.name.name.inplace:
            return SchemaKind.INPLACE
        if any(a.name.startswith("_scratch_") for a in self.arguments.out):
            return SchemaKind.SCRATCH
        if self.arguments.out:
            return SchemaKind.OUT
        if any(a.is_write for a in self.arguments.post_self):
            return SchemaKind.MUTABLE
        return SchemaKind.FUNCTIONAL

    def schema_order_arguments(self) -> tuple[Argument, ...]:
        return self.arguments.all

    def with_name(self, name: OperatorName) -> FunctionSchema:
        return replace(self, name=name)

    # -- signatures

    def signature(self, *, strip_default: bool = False, strip_view_copy_name: bool = False,
                  keep_return_names: bool = False) -> FunctionSchema:
        """The overload-free, mutation-free core shared by a functional/inplace/out family.

        model.py: FunctionSchema.signature — mutable inputs not returned become returns,
        outs and TensorOptions are dropped, annotations (and optionally defaults) stripped.
        """
        flags = (strip_default, strip_view_copy_name, keep_return_names)
        made = self._signatures
        if made is None:
            made = {}
            object.__setattr__(self, "_signatures", made)
        found = made.get(flags)
        if found is None:
            found = made[flags] = self._signature(*flags)
        return found

    def _signature(self, strip_default: bool, strip_view_copy_name: bool,
                   keep_return_names: bool) -> FunctionSchema:
        base = self.name.name.base
        if strip_view_copy_name:
            if base.endswith("_copy"):
                base = base.replace("_copy", "")
            elif base.endswith("_scatter"):
                base = base.replace("scatter", "inverse")
        returned = {r.annotation for r in self.returns}
        mutated = [a for a in self._signature_mutation_order()
                   if a.is_write and a.annotation not in returned]
        returns = tuple(Return(r.type, r.name if keep_return_names else None) for r in self.returns)
        returns += tuple(Return(a.type, f"{a.name}_out" if keep_return_names else None)
                         for a in mutated)
        arguments = self.arguments.signature(strip_default=strip_default)
        if str(self.name) == "bernoulli.p":
            # model.py: FunctionSchema.signature's Note [bernoulli.p schema]
            arguments = parse_arguments(str(arguments).replace("float p", "float p=0.5"))
        name = OperatorName(BaseOperatorName(base, dunder=self.name.name.dunder))
        return FunctionSchema(name, arguments, returns)

    def _signature_mutation_order(self) -> Iterator[Argument]:
        if self.arguments.self_arg is not None:
            yield self.arguments.self_arg
        yield from self.arguments.out
        yield from self.arguments.post_self

    def view_signature(self) -> FunctionSchema:
        return self.signature(strip_view_copy_name=True)


def _parse_returns(text: str) -> tuple[Return, ...]:
    # model.py: parse_returns — '()' is empty; otherwise strip one pair of parentheses
    if text == "()":
        return ()
    if text.startswith("(") and text.endswith(")"):
        text = text[1:-1]
    return tuple(Return.parse(piece) for piece in text.split(", "))


def _first_difference(written: str, canonical: str) -> str:
    i = next((i for i, (a, b) in enumerate(zip(written, canonical)) if a != b),
             min(len(written), len(canonical)))
    return (f"the text differs at column {i + 1}: written '{written[i:i + 20]}', "
            f"canonical '{canonical[i:i + 20]}' (use ', ' between arguments, ' -> ' before "
            "returns, no spaces around '=')")


def check_schema_invariants(schema: FunctionSchema) -> None:
    """The consistency rules of model.py: FunctionSchema.__post_init__ and kind()."""
    args = schema.arguments
    for arg, ret in zip(args.out, schema.returns):
        if arg.annotation != ret.annotation:
            _invariant(f"out argument '{arg.name}' is annotated '{arg.annotation}' but the "
                       f"matching return is annotated '{ret.annotation}'",
                       "the i-th out argument must alias the i-th return")
    returned = {r.annotation for r in schema.returns}
    for arg in args.post_self:
        if arg.is_write and arg.annotation in returned:
            _invariant(f"mutable positional argument '{arg.name}' is also returned",
                       "mutable positional arguments must not be returned")
    mutable = [r for r in schema.returns if r.is_write]
    if mutable and len(mutable) != len(schema.returns):
        _invariant("the returns mix mutable and immutable tensors",
                   "return either only mutated arguments or only new values")
    aliasable = {a.annotation for a in args.out}
    aliasable |= {a.annotation for a in args.positional if a.name == "self"}
    for ret in mutable:
        if ret.annotation not in aliasable:
            _invariant(f"mutable return '{ret}' aliases neither an out argument nor self",
                       "did you forget to make the out argument keyword-only (after '*')?")
    if args.out:
        _check_out_returns(schema)
    if schema.name.name.inplace:
        _check_inplace_returns(schema)
    if args.options is not None and schema.kind() is not SchemaKind.FUNCTIONAL:
        _invariant("tensor options (dtype, layout, device, pin_memory) on a schema that is not "
                   "functional", "only factory-style functional schemas take tensor options")
    if schema.is_functional_fn() and schema.kind() is not SchemaKind.FUNCTIONAL:
        _invariant(f"overload '{schema.name.overload}' says 'functional' but the schema mutates",
                   "'functional' is reserved in overload names; pick another overload name")


def _check_out_returns(schema: FunctionSchema) -> None:
    out = schema.arguments.out
    if schema.name.name.inplace:
        _invariant("a schema cannot be both in-place and out=",
                   "drop the trailing '_' or the out arguments")
    if any(a.type != TENSOR for a in out):
        if schema.returns:
            _invariant("an out= schema with non-Tensor out arguments returns something",
                       "out= schemas whose outs are not plain Tensors must return ()")
        return
    named_outs = [a for a in out if not a.name.startswith("_scratch_")]
    if len(named_outs) != len(schema.returns):
        _invariant(f"{len(named_outs)} out argument(s) but {len(schema.returns)} return(s)",
                   "return each out argument, or return nothing")


def _check_inplace_returns(schema: FunctionSchema) -> None:
    me = schema.arguments.self_arg
    if me is None or not me.is_write:
        _invariant(f"in-place operator {schema.name} needs a mutable self argument",
                   "write 'Tensor(a!) self'")
    if me.type == TENSOR:
        if len(schema.returns) != 1 or schema.returns[0].annotation != me.annotation:
            _invariant(f"in-place operator {schema.name} must return self",
                       f"return '{_annotated_type_text(me.type, me.annotation)}'")
    elif schema.returns:
        _invariant(f"in-place operator {schema.name} with a non-Tensor self must return ()",
                   "write '-> ()'")


def _invariant(message: str, hint: str) -> None:
    raise RuleViolation("schema.invariant", message, hint)


def cpp_name(schema: FunctionSchema, *, symint_overload: bool = False) -> str:
    """The C++ API name: the base name (with `_`), `_symint` for the SymInt overload, then
    `_out` for out= schemas (api/cpp.py: name)."""
    name = str(schema.name.name) + ("_symint" if symint_overload else "")
    return name + "_out" if schema.is_out_fn() else name
