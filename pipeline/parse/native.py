"""native_functions.yaml entries → `NativeFunction` records, one entry at a time.

The parse of one entry depends only on its own text and the set of valid tags, so it can be
cached per entry. Every check torchgen makes while reading an entry (model.py:
NativeFunction.from_yaml and __post_init__) is made here, each as a named rule.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from gradshard.pipeline.cpp import CppFlags
from gradshard.pipeline.parse.source import LoadedEntry, quote_value
from gradshard.pipeline.problems import RuleViolation, did_you_mean
from gradshard.pipeline.records import Record
from gradshard.pipeline.releases import Release
from gradshard.pipeline.schema import (DIMNAME, Argument, FunctionSchema, OperatorName, SchemaKind,
                                       cpp_name)

__all__ = ["COMPOSITE_EXPLICIT", "COMPOSITE_IMPLICIT", "Kernel", "NativeFunction",
           "check_release_types", "parse_native_function"]

# Backend keys a kernel may be registered for in native_functions.yaml (model.py: dispatch_keys).
SUPPORTED_DISPATCH_KEYS = (
    "CPU", "SparseCPU", "SparseCsrCPU", "MkldnnCPU", "CUDA", "MPS", "XPU", "SparseXPU",
    "SparseCsrXPU", "SparseCUDA", "SparseCsrCUDA", "SparseMPS", "SparseCsrMPS", "QuantizedCPU",
    "QuantizedCUDA", "CompositeImplicitAutograd", "CompositeImplicitAutogradNestedTensor",
    "CompositeExplicitAutograd", "CompositeExplicitAutogradNonFunctional", "NestedTensorCPU",
    "NestedTensorCUDA", "NestedTensorXPU", "NestedTensorHPU", "Meta", "SparseMeta",
    "SparseCsrMeta", "QuantizedMeta", "NestedTensorMeta", "ZeroTensor", "MTIA",
)
STRUCTURED_DISPATCH_KEYS = frozenset({"MPS", "CUDA", "CPU", "XPU", "MTIA"})
UFUNC_DISPATCH_KEYS = ("CPU", "CUDA")
UFUNC_KEYS = frozenset({"CUDAFunctor", "CUDAFunctorOnOther", "CUDAFunctorOnSelf", "CPUScalar",
                        "CPUVector", "ScalarOnly", "Generic"})
SCALAR_TYPES = frozenset({
    "Byte", "Char", "Short", "Int", "Long", "Half", "Float", "Double", "ComplexHalf",
    "ComplexFloat", "ComplexDouble", "Bool", "BFloat16", "Float8_e5m2", "Float8_e5m2fnuz",
    "Float8_e4m3fn", "Float8_e4m3fnuz", "Float8_e8m0fnu",
})
DTYPE_CLASSES = frozenset({"Integral", "Floating", "Complex", "All", "AllAndComplex",
                           "FloatingAndComplex"})

COMPOSITE_IMPLICIT = "CompositeImplicitAutograd"
COMPOSITE_IMPLICIT_NESTED = "CompositeImplicitAutogradNestedTensor"
COMPOSITE_EXPLICIT = "CompositeExplicitAutograd"
COMPOSITE_EXPLICIT_NON_FUNCTIONAL = "CompositeExplicitAutogradNonFunctional"

# The keys a native_functions.yaml entry may have.
NATIVE_KEYS = (
    "func", "variants", "python_module", "category_override", "tags", "dispatch", "autogen",
    "structured", "structured_delegate", "structured_inherits", "precomputed",
    "manual_cpp_binding", "manual_kernel_registration", "use_const_ref_for_mutable_tensors",
    "device_guard", "device_check", "cpp_no_default_args", "ufunc_inner_loop",
)


@dataclass(frozen=True, slots=True)
class Kernel(Record):
    """One backend kernel from a `dispatch:` table."""

    key: str
    name: str
    namespace: str = "at::native"


@dataclass(frozen=True, slots=True)
class NativeFunction(Record):
    """One operator as native_functions.yaml declares it (or as torchgen synthesizes it)."""

    func: FunctionSchema
    namespace: str = "aten"
    variants: tuple[str, ...] = ("function",)
    python_module: str | None = None
    category_override: str | None = None
    tags: tuple[str, ...] = ()
    dispatch: tuple[Kernel, ...] = ()
    is_abstract: bool = False
    autogen: tuple[OperatorName, ...] = ()
    structured: bool = False
    structured_delegate: OperatorName | None = None
    structured_inherits: str | None = None
    manual_cpp_binding: bool = False
    manual_kernel_registration: bool = False
    use_const_ref_for_mutable_tensors: bool = False
    device_guard: bool = True
    device_check: str = "ExactSame"
    cpp_no_default_args: tuple[str, ...] = ()
    ufunc_inner_loop: tuple[tuple[str, str], ...] = ()
    precomputed: tuple[str, ...] = ()
    generated_from: OperatorName | None = None

    @property
    def name(self) -> OperatorName:
        return self.func.name

    def has_kernel_for(self, key: str) -> bool:
        return any(k.key == key for k in self.dispatch)

    @property
    def has_composite_implicit_autograd_kernel(self) -> bool:
        return self.has_kernel_for(COMPOSITE_IMPLICIT)

    @property
    def has_composite_implicit_autograd_nested_tensor_kernel(self) -> bool:
        return self.has_kernel_for(COMPOSITE_IMPLICIT_NESTED)

    @property
    def has_composite_explicit_autograd_kernel(self) -> bool:
        return self.has_kernel_for(COMPOSITE_EXPLICIT)

    @property
    def part_of_structured_group(self) -> bool:
        return self.structured or self.structured_delegate is not None

    @property
    def cpp_flags(self) -> CppFlags:
        return CppFlags(self.use_const_ref_for_mutable_tensors, self.part_of_structured_group)

    @property
    def is_view_op(self) -> bool:
        """Returns an alias of an input, is an in-place view, or aliases as a wildcard
        (model.py: NativeFunction.is_view_op)."""
        name = str(self.func.name)
        returns_view = any(r.annotation is not None and not r.annotation.is_write
                           for r in self.func.returns)
        inplace_view = "inplace_view" in self.tags and name not in ("resize_", "resize_as_")
        wildcard = any(a.annotation is not None and "*" in a.annotation.alias_set_after
                       for a in self.func.arguments.all)
        return returns_view or inplace_view or wildcard


# ---------------------------------------------------------------------------------------------
# Parsing one entry


def parse_native_function(loaded: LoadedEntry, valid_tags: frozenset[str], release: Release
                          ) -> NativeFunction:
    """The record for one native_functions.yaml entry, or a RuleViolation at its key's line."""
    entry = loaded.value
    unknown = [k for k in entry if k not in NATIVE_KEYS]
    if unknown:
        key = str(unknown[0])
        raise RuleViolation("native.unknown-key", f"unknown key {quote_value(key)}",
                            did_you_mean(key, NATIVE_KEYS) or
                            f"valid keys: {', '.join(NATIVE_KEYS)}",
                            line_in_entry=loaded.offset_of(key))
    fields = _FieldReader(loaded)
    namespace, func = fields.read("func", _parse_func, required=True)
    check_release_types(func, release, loaded.offset_of("func"))
    fn = NativeFunction(
        func=func,
        namespace=namespace,
        variants=fields.read("variants", _parse_variants, default="function"),
        python_module=fields.read("python_module", _optional_str),
        category_override=fields.read("category_override", _category),
        cpp_no_default_args=fields.read("cpp_no_default_args", _string_list, default=[]),
        use_const_ref_for_mutable_tensors=fields.read("use_const_ref_for_mutable_tensors",
                                                      _bool, default=False),
        manual_kernel_registration=fields.read("manual_kernel_registration", _bool, default=False),
        manual_cpp_binding=fields.read("manual_cpp_binding", _bool, default=False),
        device_guard=fields.read("device_guard", _bool, default=True),
        device_check=fields.read("device_check", _device_check),
        structured=fields.read("structured", _bool, default=False),
        structured_delegate=fields.read("structured_delegate", _delegate),
        structured_inherits=fields.read("structured_inherits", _inherits),
        autogen=fields.read("autogen", _autogen, default=""),
        ufunc_inner_loop=fields.read("ufunc_inner_loop", _ufunc_loops, default={}),
        precomputed=fields.read("precomputed", _precomputed),
        tags=fields.read("tags", _raw_tags, default=[]),
    )
    fn = _with_tags(fn, valid_tags, loaded.offset_of("tags"))
    fn = fields.read("dispatch", _DispatchTable(fn).resolve)
    _check_function(fn, loaded)
    return fn


def check_release_types(func: FunctionSchema, release: Release, line_in_entry: int) -> None:
    """model.py: Type._parse: a release without named tensors (2.13 on) has no Dimname, in
    native_functions.yaml or deprecated.yaml (gen_python_functions.py:
    load_deprecated_signatures parses its schemas alike)."""
    types = [a.type for a in func.arguments.all] + [r.type for r in func.returns]
    if not release.dimname and any(t.is_dimname_like() for t in types):
        raise RuleViolation("schema.unknown-type", f"unknown type '{DIMNAME}'",
                            f"torchgen {release.name} has no named tensors: Dimname was "
                            f"removed in 2.13 (2.12's specs use it)",
                            line_in_entry=line_in_entry)


class _FieldReader:
    """Reads one key with its converter, pinning any violation to that key's line."""

    def __init__(self, loaded: LoadedEntry) -> None:
        self.loaded = loaded

    def read(self, key: str, convert: Any, default: Any = None, required: bool = False) -> Any:
        entry = self.loaded.value
        if key not in entry and required:
            raise RuleViolation("native.missing-key", f"the entry has no '{key}'",
                                "every entry starts with '- func: SCHEMA'", line_in_entry=0)
        try:
            return convert(entry.get(key, default))
        except RuleViolation as violation:
            if violation.rule == "native.bad-value":
                violation.message = f"'{key}' {violation.message}"
            raise violation.at(self.loaded.offset_of(key)) from None


def _expect(condition: bool, what: str, value: Any) -> None:
    """A type check whose message the field reader prefixes with the key's name."""
    if not condition:
        raise RuleViolation("native.bad-value", f"must be {what}, not {quote_value(value)}",
                            "see the documentation at the top of native_functions.yaml")


def _bool(value: Any) -> bool:
    _expect(isinstance(value, bool), "True or False", value)
    return value


def _optional_str(value: Any) -> str | None:
    _expect(value is None or isinstance(value, str), "a string", value)
    return value


# What category_override may say (api/python.py: signature_from_schema reads these).
CATEGORIES = ("factory", "new", "like", "dummy")


def _category(value: Any) -> str | None:
    _expect(value is None or isinstance(value, str), "a string", value)
    if value is not None and value not in CATEGORIES:
        raise RuleViolation("native.bad-category", f"unknown category_override '{value}'",
                            did_you_mean(value, CATEGORIES) or
                            f"category_override is one of {', '.join(CATEGORIES)}")
    return value


def _string_list(value: Any) -> tuple[str, ...]:
    _expect(isinstance(value, list) and all(isinstance(v, str) for v in value),
            "a list of argument names", value)
    return tuple(sorted(set(value)))


def _parse_func(value: Any) -> tuple[str, FunctionSchema]:
    _expect(isinstance(value, str), "a schema string", value)
    # gen.py / utils.py: NamespaceHelper.from_namespaced_entity(func, max_level=1)
    *namespaces, text = value.split("::")
    if len(namespaces) > 1:
        raise RuleViolation("native.namespace", f"namespace '{'::'.join(namespaces)}' has more "
                            "than one level", "write at most one namespace: 'ns::op(...)'")
    return (namespaces[0] if namespaces and namespaces[0] else "aten"), FunctionSchema.parse(text)


def _parse_variants(value: Any) -> tuple[str, ...]:
    _expect(isinstance(value, str), "a string such as 'function, method'", value)
    variants = set()
    for v in value.split(", "):
        if v not in ("function", "method"):
            raise RuleViolation("native.bad-variant", f"unknown variant '{v}'",
                                "variants are 'function', 'method' or 'function, method'")
        variants.add(v)
    return tuple(sorted(variants))


def _device_check(value: Any) -> str:
    if value is None:
        return "ExactSame"
    _expect(value in ("NoCheck", "ExactSame"), "NoCheck or ExactSame", value)
    return value


def _delegate(value: Any) -> OperatorName | None:
    _expect(value is None or isinstance(value, str), "an operator name", value)
    if value is not None and "::" in value:
        raise RuleViolation("native.namespace", "structured_delegate may not name a namespace",
                            "the delegate lives in the function's own namespace")
    return None if value is None else OperatorName.parse(value)


def _inherits(value: Any) -> str | None:
    _expect(value is None or isinstance(value, str), "a class name", value)
    if value is not None and "::" in value:
        raise RuleViolation("native.namespace", "structured_inherits may not name a namespace",
                            "the base class lives in the function's own namespace")
    return value


def _autogen(value: Any) -> tuple[OperatorName, ...]:
    _expect(isinstance(value, str), "a string such as 'foo.out'", value)
    return tuple(OperatorName.parse(x) for x in value.split(", ")) if value else ()


def _raw_tags(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    _expect(isinstance(value, list) and all(isinstance(t, str) for t in value),
            "a tag name or a list of tag names", value)
    return tuple(value)


def _ufunc_loops(value: Any) -> tuple[tuple[str, str], ...]:
    # model.py: from_yaml's ufunc_inner_loop handling and UfuncInnerLoop.parse
    if isinstance(value, str):
        value = {"Generic": value}
    _expect(isinstance(value, dict), "a string or a mapping", value)
    loops = []
    for key, spec in value.items():
        if key not in UFUNC_KEYS:
            raise RuleViolation("native.bad-ufunc", f"unknown ufunc key {quote_value(key)}",
                                did_you_mean(str(key), UFUNC_KEYS))
        _expect(isinstance(spec, str), "'name (dtypes)'", spec)
        _check_ufunc_loop(spec)
        loops.append((key, spec))
    return tuple(loops)


def _check_ufunc_loop(spec: str) -> None:
    name, _, dtypes = spec.partition(" ")
    if not dtypes.startswith("(") or not dtypes.endswith(")"):
        raise RuleViolation("native.bad-ufunc", f"ufunc loop '{spec}' needs '(dtypes)' after its name",
                            "write e.g. 'add (AllAndComplex, BFloat16)'")
    for dtype in dtypes[1:-1].split(", "):
        if dtype not in SCALAR_TYPES and dtype not in DTYPE_CLASSES:
            raise RuleViolation("native.bad-ufunc", f"unknown dtype '{dtype}' in '{spec}'",
                                did_you_mean(dtype, SCALAR_TYPES | DTYPE_CLASSES))


def _precomputed(value: Any) -> tuple[str, ...]:
    # model.py: Precompute.parse — 'param -> decl, decl' lines, then optional added decls
    if not value:
        return ()
    _expect(isinstance(value, list) and all(isinstance(v, str) for v in value),
            "a list of 'param -> replacement' lines", value)
    lines = list(value)
    if " -> " not in lines[-1]:
        _precomputed_arguments(lines.pop())
    replaced: dict[str, str] = {}
    for line in lines:
        if " -> " not in line:
            raise RuleViolation("native.bad-precomputed", f"precomputed line '{line}' has no ' -> '",
                                "only the last line may list parameters without a replacement")
        param, decls = line.split(" -> ", 1)
        if " " in param:
            raise RuleViolation("native.bad-precomputed",
                                f"'{param}' is not a kernel parameter name", "write 'param -> TYPE name'")
        replaced[param] = ", ".join(str(a) for a in _precomputed_arguments(decls))
    canonical = [f"{param} -> {decls}" for param, decls in replaced.items()]
    if canonical != lines:
        raise RuleViolation("native.bad-precomputed",
                            "precomputed lines are not in canonical form: "
                            + "; ".join(canonical), "list each parameter once and separate "
                            "declarations with ', '")
    return tuple(value)


def _precomputed_arguments(decls: str) -> list[Argument]:
    arguments = [Argument.parse(decl.strip()) for decl in decls.split(",")]
    for arg in arguments:
        if arg.name.upper() == arg.name:
            raise RuleViolation("native.bad-precomputed",
                                f"precomputed parameter '{arg.name}' is all upper case",
                                "upper-case names clash with template parameters")
    return arguments


def _with_tags(fn: NativeFunction, valid_tags: frozenset[str], offset: int | None) -> NativeFunction:
    """Checks the written tags and adds the implied ones (model.py: from_yaml's tags)."""
    tags = list(fn.tags)
    if fn.namespace == "aten" and "pt2_compliant_tag" in valid_tags:
        tags.append("pt2_compliant_tag")
    if fn.func.is_out_fn() and "out" in valid_tags:
        tags.append("out")
    if fn.func.name.name.inplace and "inplace" in valid_tags:
        tags.append("inplace")
    for tag in tags:
        if tag not in valid_tags:
            raise RuleViolation("native.unknown-tag", f"tag '{tag}' is not defined in tags.yaml",
                                did_you_mean(tag, valid_tags) or "add it to tags.yaml first",
                                line_in_entry=offset)
    return replace(fn, tags=tuple(sorted(set(tags))))


class _DispatchTable:
    """Resolves `dispatch:` into kernels and the abstract/composite facts derived from it
    (model.py: NativeFunction.from_yaml's dispatch handling)."""

    def __init__(self, fn: NativeFunction) -> None:
        self.fn = fn

    def resolve(self, raw: Any) -> NativeFunction:
        fn = self.fn
        if raw is None:
            kernels = self._implicit_kernels()
        else:
            _expect(isinstance(raw, dict), "a mapping of backend keys to kernels", raw)
            if fn.manual_kernel_registration:
                raise RuleViolation("native.dispatch",
                                    "manual_kernel_registration and dispatch are both given",
                                    "with manual registration the dispatch table has no effect; "
                                    "remove one of them")
            kernels = self._explicit_kernels(raw)
        kernels = self._with_ufunc_kernels(kernels)
        keys = {k.key for k in kernels}
        _check_composites(keys)
        if fn.structured_delegate is not None and keys & STRUCTURED_DISPATCH_KEYS:
            raise RuleViolation("native.dispatch",
                                f"a structured_delegate function lists kernels for "
                                f"{', '.join(sorted(keys & STRUCTURED_DISPATCH_KEYS))}",
                                "these backends are delegated to the structured out= function")
        composite_only = keys in ({COMPOSITE_IMPLICIT}, {COMPOSITE_IMPLICIT_NESTED},
                                  {COMPOSITE_IMPLICIT, COMPOSITE_IMPLICIT_NESTED})
        abstract = fn.structured_delegate is not None or not composite_only
        return replace(fn, dispatch=kernels, is_abstract=abstract)

    def _implicit_kernels(self) -> tuple[Kernel, ...]:
        fn = self.fn
        if fn.structured or fn.structured_delegate is not None:
            return ()
        name = str(fn.func.name.name)
        args = fn.func.arguments
        if (name.startswith("new_") or name.endswith("_like")
                or (args.options is not None and not args.has_tensor_arg())):
            raise RuleViolation("native.dispatch",
                                f"factory function {name} has no dispatch table",
                                "factory functions need an explicit 'CompositeExplicitAutograd' "
                                "kernel so that they are not decomposed")
        return (Kernel(COMPOSITE_IMPLICIT, cpp_name(fn.func)),)

    def _explicit_kernels(self, raw: dict) -> tuple[Kernel, ...]:
        kernels: dict[str, Kernel] = {}
        count = 0
        redundant = False
        for keys, kernel in raw.items():
            _expect(isinstance(keys, str), "keyed by backend names", keys)
            _expect(isinstance(kernel, str), "a kernel name for each key", kernel)
            for key in (k.strip() for k in keys.split(",")):
                if key not in SUPPORTED_DISPATCH_KEYS:
                    raise RuleViolation("native.dispatch",
                                        f"unsupported dispatch key {quote_value(key)}",
                                        did_you_mean(key, SUPPORTED_DISPATCH_KEYS) or
                                        f"supported keys: {', '.join(SUPPORTED_DISPATCH_KEYS)}")
                count += 1
                kernels[key] = _kernel(key, kernel)
                redundant |= key == COMPOSITE_IMPLICIT and kernel == cpp_name(self.fn.func)
        if count == 1 and redundant:
            raise RuleViolation("native.dispatch",
                                "the dispatch table only names the default CompositeImplicitAutograd "
                                "kernel", "delete the dispatch table; this kernel is implied")
        only = kernels.get(COMPOSITE_IMPLICIT)
        if (self.fn.structured_delegate is None and set(kernels) == {COMPOSITE_IMPLICIT}
                and "_symint" not in only.name and count == 1):
            raise RuleViolation(
                "native.dispatch",
                f"a lone CompositeImplicitAutograd kernel must be named {cpp_name(self.fn.func)}, "
                f"not {only.name}", "rename the implementation, then delete the dispatch table")
        return tuple(kernels.values())

    def _with_ufunc_kernels(self, kernels: tuple[Kernel, ...]) -> tuple[Kernel, ...]:
        fn = self.fn
        if not fn.ufunc_inner_loop:
            return kernels
        if not fn.structured:
            raise RuleViolation("native.bad-ufunc", "ufunc_inner_loop on a function that is not "
                                "structured", "ufunc kernels are structured out= kernels")
        present = {k.key for k in kernels}
        for key in UFUNC_DISPATCH_KEYS:
            if key in present:
                raise RuleViolation("native.bad-ufunc",
                                    f"ufunc function also lists a {key} kernel",
                                    f"the ufunc codegen provides the {key} kernel")
        return kernels + tuple(Kernel(key, f"ufunc_{key}") for key in UFUNC_DISPATCH_KEYS)


def _kernel(key: str, written: str) -> Kernel:
    # utils.py: NamespaceHelper(kernel, max_level=3); custom namespaces get '::native'
    *namespaces, name = written.split("::")
    if len(namespaces) > 3:
        raise RuleViolation("native.namespace", f"kernel '{written}' has more than 3 namespaces",
                            "kernels may use at most ns1::ns2::ns3::name")
    return Kernel(key, name, ("::".join(namespaces) or "at") + "::native")


def _check_composites(keys: set[str]) -> None:
    composites = keys & {COMPOSITE_EXPLICIT, COMPOSITE_EXPLICIT_NON_FUNCTIONAL,
                         COMPOSITE_IMPLICIT, COMPOSITE_IMPLICIT_NESTED}
    allowed_pair = (len(composites) == 2 and COMPOSITE_EXPLICIT_NON_FUNCTIONAL not in composites
                    and COMPOSITE_IMPLICIT_NESTED in composites)
    if len(composites) > 1 and not allowed_pair:
        raise RuleViolation("native.dispatch",
                            f"more than one composite kernel: {', '.join(sorted(composites))}",
                            "each composite key subsumes the others; keep one "
                            "(CompositeExplicitAutograd for an explicit autograd formula)")


def _check_function(fn: NativeFunction, loaded: LoadedEntry) -> None:
    """Whole-function consistency rules (model.py: NativeFunction.__post_init__)."""
    problem = _first_inconsistency(fn)
    if problem is not None:
        key, message, hint = problem
        raise RuleViolation("native.inconsistent", message, hint,
                            line_in_entry=loaded.offset_of(key) or 0)


def _first_inconsistency(fn: NativeFunction) -> tuple[str, str, str] | None:
    """(key to blame, message, hint) for the first broken rule, or None."""
    func = fn.func
    name = str(func.name)
    defaulted = {a.name for a in func.arguments.all if a.default is not None}
    stray = sorted(set(fn.cpp_no_default_args) - defaulted)
    rules = [
        (fn.use_const_ref_for_mutable_tensors and bool(func.arguments.out),
         "use_const_ref_for_mutable_tensors",
         "use_const_ref_for_mutable_tensors on an out= function",
         "see https://github.com/pytorch/pytorch/issues/145522"),
        (bool(func.arguments.out) and fn.variants != ("function",), "variants",
         "an out= function must have only the 'function' variant", "remove 'method' from variants"),
        (fn.python_module is not None and "method" in fn.variants, "python_module",
         "a function in a python_module cannot be a method",
         "remove 'method' from variants or drop python_module"),
        (fn.structured and func.kind() is not SchemaKind.OUT, "structured",
         "'structured' is set on a function that is not out=",
         "put 'structured: True' on the out= variant; did you mean structured_delegate?"),
        (fn.structured_delegate is not None and func.kind() is SchemaKind.OUT,
         "structured_delegate", "'structured_delegate' is set on an out= function",
         "did you mean 'structured: True'?"),
        (fn.part_of_structured_group and not fn.device_guard, "device_guard",
         "device_guard: False is not respected by structured kernels",
         "remove device_guard: False"),
        (fn.structured and fn.structured_delegate is not None, "structured",
         "both structured and structured_delegate are set", "keep one of them"),
        (bool(fn.precomputed) and not fn.structured, "precomputed",
         "'precomputed' needs 'structured: True'",
         "precomputed values come from a structured kernel's meta function"),
        (bool(stray), "cpp_no_default_args",
         f"cpp_no_default_args names {', '.join(stray)}, which has no default",
         "list only arguments that have a default value"),
        (fn.structured_inherits is not None and not fn.structured, "structured_inherits",
         "structured_inherits needs 'structured: True'",
         "add 'structured: True' or remove structured_inherits"),
        (name.startswith("_foreach") and fn.device_check != "NoCheck", "device_check",
         "foreach functions must not check devices", "add 'device_check: NoCheck'"),
        (_needs_seeded_tag(fn) and "nondeterministic_seeded" not in fn.tags, "tags",
         f"{name} is random (its name or a Generator argument says so) but is not tagged "
         "nondeterministic_seeded", "add 'tags: nondeterministic_seeded'"),
    ]
    return next(((key, message, hint) for broken, key, message, hint in rules if broken), None)


def _needs_seeded_tag(fn: NativeFunction) -> bool:
    name = str(fn.func.name)
    dropout = ("dropout" in name or any("dropout" in a.name for a in fn.func.arguments.all))
    dropout = dropout and "backward" not in name and str(fn.func.name.name) != "_cudnn_init_dropout_state"
    return "rand" in name or dropout or fn.func.arguments.has_generator_arg()
