"""Every rule gradshard reports, in one table: its id, family, short and full description,
and help (what to do, and where docs/usage.md's "Error rules" explain it). SARIF's driver
lists its rules from here (service/report/sarif.py), and docs/usage.md's tables are checked
against it (tests/test_report_rules.py): the full description is the table's meaning, word
for word.

It lives in the reports, outside the code version (cache/version.py hashes pipeline/, not
service/): rewording a description leaves every cache warm. The spec's rules are raised by
the pipeline (RuleViolation, Problem); a command's failures (usage, compile, generator,
cache, internal) get theirs from service/report/formats.py, by the constants here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Mapping

__all__ = ["CACHE_DAMAGED_RULE", "COMPILE_FAILED_RULE", "COMPILE_RULE", "ERROR_RULE",
           "GENERATOR_FAILED_RULE", "GENERATOR_RAISED_RULE", "GENERATOR_RULE", "LEFT_OUT_RULE", "RULES", "Rule",
           "SECTIONS", "USAGE", "USAGE_RULE", "VERIFY_RULE", "anchor_of", "plain", "rule_of"]

USAGE = "docs/usage.md"
# the rules of a command's failures, which are no problem of the spec's
USAGE_RULE = "usage"
COMPILE_RULE = "compile.error"
COMPILE_FAILED_RULE = "compile.failed"
GENERATOR_RULE = "generator.differs"
GENERATOR_FAILED_RULE = "generator.failed"
GENERATOR_RAISED_RULE = "generator.raised"
VERIFY_RULE = "cache.disagreement"
CACHE_DAMAGED_RULE = "cache.damaged"
ERROR_RULE = "gradshard.error"
LEFT_OUT_RULE = "gradshard.results-left-out"


@dataclass(frozen=True)
class Rule:
    """One rule; the descriptions and help in Markdown, as usage.md writes them (`plain`
    gives their text)."""

    id: str
    short: str  # a phrase: what breaks the rule
    full: str  # usage.md's meaning of the rule, word for word
    help: str  # what to do, then where usage.md explains it
    section: str  # the heading of usage.md's table that lists it

    @property
    def family(self) -> str:
        """The part before the first dot: yaml, derivatives, compile, generator…"""
        return self.id.split(".", 1)[0]


@dataclass(frozen=True)
class _Row:
    """One row of a usage.md table: its meaning, and each rule id it lists with its own
    short description (a row may list several rules of one meaning)."""

    full: str
    rules: tuple[tuple[str, str], ...]
    help: str = ""  # what to do, when the section's help does not say it


def _row(full: str, *rules: tuple[str, str], help: str = "") -> _Row:
    return _Row(full, rules, help)


def _section(heading: str, help: str, *rows: _Row) -> tuple[Rule, ...]:
    """The rules of one usage.md table, each with the row's help, else the section's."""
    where = f"See {USAGE}#{anchor_of(heading)}."
    return tuple(Rule(rule, short, row.full, f"{row.help or help} {where}", heading)
                 for row in rows for rule, short in row.rules)


def anchor_of(heading: str) -> str:
    """The anchor GitHub gives a Markdown heading: lower case, punctuation but `-` and `_`
    dropped, spaces as `-`."""
    return re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")


def plain(markdown: str) -> str:
    """A description's text without Markdown: no backticks nor emphasis, `\\|` as `|`."""
    return re.sub(r"\*(\w+)\*", r"\1", markdown.replace("`", "")).replace("\\|", "|")


_HELP_YAML = (
    "Correct the YAML at the line and column given (the message's hint says what is expected "
    "there): torchgen reads these files with libyaml and refuses them too.")
_HELP_SCHEMAS = (
    "Write the schema as torchgen's model.py parses it, `name.overload(ARGS) -> RETURNS` in "
    "canonical spelling, with the types and defaults native_functions.yaml uses; the hint names "
    "the part at fault.")
_HELP_NATIVE = (
    "Correct the native_functions.yaml entry at the line given, as the message's hint says: "
    "torchgen refuses it (a *gradshard* rule: torchgen would go on and generate wrong or "
    "surprising code).")
_HELP_TAGS_DEPRECATED = (
    "Correct the tags.yaml or deprecated.yaml entry at the line given, as the message's hint "
    "says.")
_HELP_DERIVATIVES = (
    "Correct the derivatives.yaml entry at the line given (its key, or its formula), as the "
    "message's hint says.")
_HELP_LATER_STAGES = (
    "Correct the derivatives.yaml formula, native function or template the message names, as its "
    "hint says: no generator can write this code from it.")
_HELP_VARIABLE_TYPE = (
    "Correct the derivatives.yaml entry or the native function the message names, as its hint "
    "says: PyTorch's build stops on it while generating VariableType.")
_HELP_VIEWS = (
    "Correct the view op the message names (its schema in native_functions.yaml, or its "
    "derivatives.yaml entry), as its hint says: torchgen stops on it with an assertion.")


_YAML = _section(
    "YAML (`pipeline/parse/source.py`)",
    _HELP_YAML,
    _row("a byte that is not UTF-8 (line and column of the byte)",
         ("yaml.not-utf8", "a byte that is not UTF-8")),
    _row("the file holds no entries",
         ("yaml.empty-file", "the file holds no entries")),
    _row("something other than comments before the first `- ` entry (*gradshard*)",
         ("yaml.not-a-list", "something other than comments before the first `- ` entry")),
    _row("libyaml could not parse the entry (line and column)",
         ("yaml.syntax", "YAML that libyaml cannot parse")),
    _row("a key given twice in one mapping (torchgen: yaml_utils.YamlLoader)",
         ("yaml.duplicate-key", "a key given twice in one mapping")),
    _row("an entry that is not a mapping",
         ("yaml.entry-not-mapping", "an entry that is not a mapping")),
    _row("a YAML alias referring to an anchor in another entry: gradshard parses each entry on "
         "its own (torchgen reads the whole file; repeat the value instead)",
         ("yaml.cross-entry-alias", "a YAML alias referring to an anchor in another entry")),
    _row("a character libyaml refuses (NUL, another C0 or C1 control, DEL, U+FFFE, U+FFFF) "
         "anywhere in the file, comments included (line and column); torchgen's loader rejects "
         "the whole file",
         ("yaml.control-character", "a character libyaml refuses (a control character, U+FFFE, "
                                    "U+FFFF)")),
    _row("an entry nested deeper than 100 levels (open `[`/`{` plus block indentation levels), at "
         "the first collection too deep; refused before libyaml sees it (*gradshard*: libyaml's "
         "composer crashes on very deep input, and its scanner slows down with the square of the "
         "depth)",
         ("yaml.nesting-too-deep", "an entry nested deeper than 100 levels")),
    _row("aliases that expand an entry past twice its text plus 100,000 nodes and characters, or "
         'an alias inside its own anchor (*gradshard*: a "billion laughs"); small anchors and '
         "aliases within one entry work as in torchgen",
         ("yaml.alias-expansion", "aliases that expand an entry too far")))

_SCHEMAS = _section(
    "Schemas (`pipeline/schema.py`, `pipeline/cpp.py`; model.py)",
    _HELP_SCHEMAS,
    _row("not `name.overload(ARGS) -> RETURNS` in canonical spelling: spaces, commas, `int[0]`, "
         "bad annotations, `_out` names, a second `*`",
         ("schema.syntax", "a schema not in canonical `name.overload(ARGS) -> RETURNS` spelling")),
    _row("a type that is not a schema base type (with a suggestion)",
         ("schema.unknown-type", "a type that is not a schema base type")),
    _row("FunctionSchema's consistency rules: outs alias returns, in-place returns self, no mixed "
         "mutable returns, tensor options only on functional schemas, `functional` overloads",
         ("schema.invariant", "a schema that breaks FunctionSchema's consistency rules")),
    _row("a list argument whose default is not a `[...]` literal (api/cpp.py: default_expr)",
         ("schema.bad-default", "a list argument whose default is not a `[...]` literal")))

_NATIVE = _section(
    "native_functions.yaml (`pipeline/parse/native.py`, `native_checks.py`, `variants.py`, "
    "`views.py`, `differentiability.py`)",
    _HELP_NATIVE,
    _row("no `func:`",
         ("native.missing-key", "an entry without `func:`")),
    _row("a key torchgen does not know (with a suggestion)",
         ("native.unknown-key", "a key torchgen does not know")),
    _row("a key with a value of the wrong kind (e.g. `structured: yes please`)",
         ("native.bad-value", "a key with a value of the wrong kind")),
    _row("`variants` other than function/method",
         ("native.bad-variant", "`variants` other than function/method")),
    _row("too many namespace levels, or a namespace where none is allowed",
         ("native.namespace", "a namespace torchgen refuses")),
    _row("a tag not defined in tags.yaml",
         ("native.unknown-tag", "a tag not defined in tags.yaml")),
    _row("unsupported dispatch key, redundant or misnamed lone CompositeImplicitAutograd kernel, "
         "factory without dispatch, several composite kernels, delegated backends listed, manual "
         "registration with dispatch",
         ("native.dispatch", "a `dispatch:` section torchgen refuses")),
    _row("unknown ufunc key or dtype, ufunc on a non-structured function, explicit CPU/CUDA "
         "kernel next to a ufunc",
         ("native.bad-ufunc", "a ufunc section torchgen refuses")),
    _row("malformed `precomputed` lines",
         ("native.bad-precomputed", "malformed `precomputed` lines")),
    _row("NativeFunction.__post_init__'s rules: out= with a method variant, structured on a "
         "non-out function, structured_delegate on an out= function, device_guard off for "
         "structured kernels, stray cpp_no_default_args, foreach without `device_check: NoCheck`, "
         "random ops without `nondeterministic_seeded`",
         ("native.inconsistent", "keys that break NativeFunction's consistency rules")),
    _row("structured_delegate names no function",
         ("native.missing-delegate", "structured_delegate names no function")),
    _row("structured_delegate names a function that is not structured",
         ("native.delegate-not-structured", "structured_delegate names a function that is not "
                                            "structured")),
    _row("an argument named after a Python keyword",
         ("native.keyword-argument", "an argument named after a Python keyword")),
    _row("`category_override` other than factory, new, like, dummy (*gradshard*: torchgen ignores "
         "it)",
         ("native.bad-category", "`category_override` other than factory, new, like, dummy")),
    _row("inplace_view tag on a name without a trailing `_`",
         ("native.inplace-view-name", "inplace_view tag on a name without a trailing `_`")),
    _row("inplace_view op with no out-of-place view",
         ("native.inplace-view-twin", "inplace_view op with no out-of-place view")),
    _row("an operator name declared twice (*gradshard*)",
         ("native.duplicate-name", "an operator name declared twice")),
    _row("the same schema declared twice (load_derivatives)",
         ("native.duplicate-schema", "the same schema declared twice")),
    _row("two functions of one kind with the same signature",
         ("native.duplicate-signature", "two functions of one kind with the same signature")),
    _row("an out= function with no functional variant",
         ("native.lonely-out", "an out= function with no functional variant")),
    _row("autogen cannot make an out= variant (no tensor-like return)",
         ("native.no-out-variant", "autogen cannot make an out= variant")),
    _row("an in-place view op without the inplace_view tag",
         ("views.missing-inplace-view-tag", "an in-place view op without the inplace_view tag")),
    _row("two functions of one kind whose view signatures match but whose signatures do not, e.g. "
         "`foo` and a non-view `foo_copy` (a clash that is also `native.duplicate-signature` is "
         "reported only as that)",
         ("views.duplicate-kind", "two functions of one kind whose view signatures clash")),
    _row("a new view op without its `_copy` variant",
         ("views.missing-copy", "a new view op without its `_copy` variant")),
    _row("a view copy not named `*_copy` / `*_scatter`",
         ("views.copy-name", "a view copy not named `*_copy` / `*_scatter`")),
    _row("a view copy whose signature differs from its view",
         ("views.copy-signature", "a view copy whose signature differs from its view")),
    _row("a view copy without the view_copy tag",
         ("views.copy-tag", "a view copy without the view_copy tag")),
    _row("an in-place view whose signature differs from its view",
         ("views.inplace-signature", "an in-place view whose signature differs from its view")),
    _row("a view and its in-place view disagree on composite kernels",
         ("views.composite-mismatch", "a view and its in-place view disagree on composite "
                                       "kernels")))

_TAGS_DEPRECATED = _section(
    "tags.yaml and deprecated.yaml (`pipeline/parse/tags.py`, `pipeline/parse/deprecated.py`, "
    "`pipeline/render/python/signatures.py`)",
    _HELP_TAGS_DEPRECATED,
    _row("a key other than `tag` and `desc` (*gradshard*)",
         ("tags.unknown-key", "a key other than `tag` and `desc`")),
    _row("`tag` missing or not a name",
         ("tags.bad-value", "`tag` missing or not a name")),
    _row("a tag with an empty `desc`",
         ("tags.no-description", "a tag with an empty `desc`")),
    _row("a tag defined twice (*gradshard*)",
         ("tags.duplicate", "a tag defined twice")),
    _row("a key other than `name` and `aten` (*gradshard*)",
         ("deprecated.unknown-key", "a key other than `name` and `aten`")),
    _row("`name` or `aten` missing",
         ("deprecated.missing-key", "`name` or `aten` missing")),
    _row("`aten` is not a call",
         ("deprecated.bad-call", "`aten` is not a call")),
    _row("the call passes something that is not an argument of the deprecated schema",
         ("deprecated.unknown-argument", "the call passes something that is not an argument of "
                                         "the deprecated schema")),
    _row("no ATen overload of the called name fits the call's arguments and returns",
         ("deprecated.no-match", "no ATen overload of the called name fits the call's arguments "
                                 "and returns")))

_DERIVATIVES = _section(
    "derivatives.yaml (`pipeline/parse/derivatives.py`, `pipeline/parse/differentiability.py`, "
    "`pipeline/cpp.py`)",
    _HELP_DERIVATIVES,
    _row("no `name:`",
         ("derivatives.missing-name", "an entry without `name:`")),
    _row("`name` that load_derivatives cannot split",
         ("derivatives.bad-name", "a `name` that load_derivatives cannot split")),
    _row("a key beside `dispatch:` that torchgen would silently ignore (*gradshard*)",
         ("derivatives.unknown-key", "a key beside `dispatch:` that torchgen would silently "
                                     "ignore")),
    _row("`dispatch:` that does not map keys to formulas",
         ("derivatives.bad-dispatch", "`dispatch:` that does not map keys to formulas")),
    _row("a dispatch key other than Default or an Autograd key",
         ("derivatives.bad-dispatch-key", "a dispatch key other than Default or an Autograd key")),
    _row("a formula key that is not a name",
         ("derivatives.bad-formula-key", "a formula key that is not a name")),
    _row("a formula that YAML read as a number or boolean (*gradshard*)",
         ("derivatives.bad-formula", "a formula that YAML read as a number or boolean")),
    _row("not a list of booleans, or a condition for several outputs",
         ("derivatives.bad-output-differentiability", "an `output_differentiability` that is not "
                                                      "a list of booleans")),
    _row("no native function has this exact schema (lists the schemas of that name)",
         ("derivatives.unknown-schema", "no native function has this exact schema")),
    _row("the schema's family has no function named like the entry",
         ("derivatives.no-canonical-function", "the schema's family has no function named like "
                                               "the entry")),
    _row("an argument named `grad_input_mask` or `result`",
         ("derivatives.reserved-argument", "an argument named `grad_input_mask` or `result`")),
    _row("a second entry for the same function; torchgen silently keeps both (*gradshard*)",
         ("derivatives.duplicate", "a second entry for the same function")),
    _row("a name that is both an input and a named output",
         ("derivatives.ambiguous-name", "a name that is both an input and a named output")),
    _row("a backward formula key listing a name that is not an argument (*gradshard*)",
         ("derivatives.unknown-input", "a backward formula key listing a name that is not an "
                                       "argument")),
    _row("an argument both differentiable and `non_differentiable`",
         ("derivatives.overlap", "an argument both differentiable and `non_differentiable`")),
    _row("`.sizes()` or `.size(N)` in a formula (use the SymInt versions)",
         ("derivatives.sizes", "`.sizes()` or `.size(N)` in a formula")),
    _row("`.strides()` in a formula, or `.sym_strides()` outside a single-variable formula",
         ("derivatives.strides", "`.strides()` in a formula, or `.sym_strides()` where it cannot "
                                 "be")),
    _row("`grads[k]` past the function's outputs",
         ("derivatives.grads-out-of-bounds", "`grads[k]` past the function's outputs")),
    _row("`grad` mixed with `grads`, only `grads[0]` used, or `grad_<output>` mixed with either",
         ("derivatives.grads-usage", "`grad`, `grads` and `grad_<output>` mixed in one entry")),
    _row("a formula key that names neither an argument nor an output (`slef:`), with the "
         "closest name",
         ("derivatives.unknown-formula-key", "a formula key that names neither an argument nor "
                                             "an output")),
    _row("a forward formula whose names match no output",
         ("derivatives.forward-output", "a forward formula whose names match no output")),
    _row("a forward formula using an input's bare name instead of `_p`/`_t`",
         ("derivatives.forward-bare-name", "a forward formula using an input's bare name instead "
                                           "of `_p`/`_t`")),
    _row("auto_element_wise where it cannot apply",
         ("derivatives.auto-element-wise", "auto_element_wise where it cannot apply")),
    _row("auto_linear where it cannot apply",
         ("derivatives.auto-linear", "auto_linear where it cannot apply")),
    _row("a formula line whose first non-blank character is `#` (`#include`, `#define`, or a "
         '"comment" inside a `\\|` or `>` block, which YAML keeps as text), at that line '
         "(*gradshard*: torchgen pastes it into Functions.cpp, where it breaks the compile of "
         "unrelated code)",
         ("derivatives.preprocessor", "a formula line that starts with `#`")),
    _row("a name in a formula that it cannot use: none of its op's arguments, outputs and the "
         "forms torchgen derives from them, FunctionsManual.h's helpers, at:: functions, the "
         "templates' `using` names or C++'s own words; at its line and column, with the closest "
         "name (*gradshard*: `check` fails, `build` warns and writes what torchgen writes)",
         ("derivatives.formula-name", "a name in a formula that it cannot use")),
    _row("a formula whose brackets or quotes do not balance, at the first one left open or "
         "closed wrongly (*gradshard*: `check` fails, `build` warns and writes what torchgen "
         "writes)",
         ("derivatives.formula-brackets", "a formula whose brackets or quotes do not balance")),
    _row("a differentiable function with an argument type that has no C++ binding",
         ("cpp.unsupported-type", "a differentiable function with an argument type that has no "
                                  "C++ binding")),
    _row("a return type with no C++ spelling",
         ("cpp.unsupported-return", "a return type with no C++ spelling")))

_LATER_STAGES = _section(
    "Matching, foreach synthesis, rendering, Python bindings (`pipeline/match/match_infos.py`, "
    "`foreach.py`; `pipeline/render/nodes.py`, `templating.py`, `code_template.py`; "
    "`pipeline/render/python/signatures.py`, `bindings.py`)",
    _HELP_LATER_STAGES,
    _row("a generated functional variant would reuse a mutable op's formula that saves `self`",
         ("match.mutable-formula-saves-self", "a generated functional variant would reuse a "
                                              "formula that saves `self`")),
    _row("the `self` formula an in-place function uses saves strides (at the formula in "
         "derivatives.yaml; the message names the in-place function)",
         ("match.inplace-strides", "the `self` formula an in-place function uses saves strides")),
    _row("an in-place function reuses infos with more than one forward formula",
         ("match.inplace-forward", "an in-place function reuses infos with more than one forward "
                                   "formula")),
    _row("an in-place function's own forward formula reads `self_p`, the value being overwritten "
         "(at the formula in derivatives.yaml; use `result` or `original_self_p`)",
         ("match.inplace-uses-self", "an in-place function's forward formula reads `self_p`")),
    _row("a foreach op's reference entry has no Default dispatch key",
         ("foreach.reference-without-default", "a foreach op's reference entry has no Default "
                                               "dispatch key")),
    _row("a reference formula saves something the foreach op cannot map to its arguments (at that "
         "formula in the reference's derivatives.yaml entry; the message names the foreach op(s))",
         ("foreach.unmappable-saved-value", "a reference formula saves what the foreach op cannot "
                                            "map")),
    _row("a foreach op takes a plain Tensor where its reference formula needs a list",
         ("foreach.tensor-argument", "a foreach op takes a plain Tensor where its reference "
                                     "formula needs a list")),
    _row("a node saves `std::vector<Tensor>` outside a foreach output",
         ("render.saved-tensor-vector", "a node saves `std::vector<Tensor>` outside a foreach "
                                        "output")),
    _row("a node would save a non-owning reference type",
         ("render.non-owning-saved-value", "a node would save a non-owning reference type")),
    _row("a formula names an input that is not differentiable",
         ("render.unknown-input", "a formula names an input that is not differentiable")),
    _row("a template the generator needs is missing from the spec's templates directory",
         ("templates.missing", "a template the generator needs is missing from the spec's "
                               "templates directory")),
    _row("a template that is not UTF-8",
         ("templates.not-utf8", "a template that is not UTF-8")),
    _row("two overloads of one name with the same Python signature",
         ("python.duplicate-signature", "two overloads of one name with the same Python "
                                         "signature")),
    _row("an out variant (or deprecated out signature) whose non-out Python signature does not "
         "exist",
         ("python.out-without-base", "an out variant without its non-out Python signature")),
    _row("an argument named `requires_grad`, which Python bindings reserve",
         ("python.requires-grad-argument", "an argument named `requires_grad`, which Python "
                                           "bindings reserve")),
    _row("an argument type the Python argument parser cannot take",
         ("python.unsupported-type", "an argument type the Python argument parser cannot take")),
    _row("a parser default on a type that cannot have one",
         ("python.unsupported-default", "a parser default on a type that cannot have one")),
    _row("a return type the wrap() helpers cannot return to Python",
         ("python.unsupported-return", "a return type the wrap() helpers cannot return to "
                                        "Python")),
    _row("several out arguments that are not all tensors",
         ("python.unsupported-out", "several out arguments that are not all tensors")),
    _row("some returns named and others not (named tuples need all names)",
         ("python.unnamed-return", "some returns named and others not")),
    _row("a Python signature that gives no value for one of the C++ call's arguments",
         ("python.unbound-argument", "a Python signature that leaves a C++ argument without a "
                                     "value")),
    _row("TensorOptions on a function with out arguments",
         ("python.options-with-out", "TensorOptions on a function with out arguments")),
    _row("incomplete or mistyped TensorOptions fields in a Python signature",
         ("python.bad-options", "incomplete or mistyped TensorOptions fields in a Python "
                                "signature")),
    _row("a function bound to Python that is neither a function nor a method",
         ("python.no-variant", "a function bound to Python that is neither a function nor a "
                               "method")),
    _row("an in-place foreach op whose self is not a tensor list",
         ("python.foreach-self", "an in-place foreach op whose self is not a tensor list")),
    _row("a template uses a `$placeholder` the generator does not provide (line of the template)",
         ("templates.unknown-placeholder", "a template uses a `$placeholder` the generator does "
                                           "not provide")))

_VARIABLE_TYPE = _section(
    "VariableType (`pipeline/render/variable_type.py`; PA/gen_variable_type.py and "
    "api/autograd.py: the checks PyTorch's build runs while generating VariableType)",
    _HELP_VARIABLE_TYPE,
    _row("a formula for a function without a dispatch section (CompositeImplicitAutograd), at its "
         "derivatives.yaml entry",
         ("variable_type.formula-needs-dispatch", "a formula for a function without a dispatch "
                                                  "section")),
    _row("`manual_kernel_registration: True` on a function that gets a generated kernel, at the "
         "native function",
         ("variable_type.manual-kernel-registration", "`manual_kernel_registration: True` on a "
                                                      "function with a generated kernel")),
    _row("`output_differentiability` with another length than the function's returns (also for a "
         "function borrowing the entry, e.g. an in-place foreach op, which returns nothing)",
         ("variable_type.output-differentiability-length", "`output_differentiability` with "
                                                           "another length than the function's "
                                                           "returns")),
    _row("`output_differentiability` False for an in-place function",
         ("variable_type.inplace-not-differentiable", "`output_differentiability` False for an "
                                                      "in-place function")),
    _row('a formula for an argument that is not a differentiable input ("Missing arguments for '
         'derivatives"), at that formula',
         ("variable_type.missing-arguments", "a formula for an argument that is not a "
                                             "differentiable input")),
    _row("formulas for a function with no differentiable input or output",
         ("variable_type.derivative-ignored", "formulas for a function with no differentiable "
                                              "input or output")),
    _row("forward formulas for another number of outputs than are differentiable, at the first "
         "forward formula",
         ("variable_type.forward-count", "forward formulas for another number of outputs than are "
                                         "differentiable")),
    _row("a forward formula that reads no input tangent, for a function that does not take a "
         "single TensorList",
         ("variable_type.forward-without-tangent",
          "a forward formula that reads no input tangent")),
    _row("a forward formula for outputs torchgen cannot set a tangent on",
         ("variable_type.forward-output-type", "a forward formula for an output that is not a "
                                               "Tensor or Tensor[]"),
         ("variable_type.forward-list-outputs", "a function returning a list with forward "
                                                "formulas for several outputs"),
         ("variable_type.inplace-forward-outputs", "an in-place function with forward formulas "
                                                   "for several outputs"),
         ("variable_type.foreach-forward-output", "a foreach op's forward formula for another "
                                                  "output than its own")),
    _row("`wrap_opt_if(<name>` that is not a call `wrap_opt_if(<name>, <condition>)` where a save "
         "guard is read from it",
         ("variable_type.wrap-opt-if", "a `wrap_opt_if(<name>` that is not a two-argument call")),
    _row("an in-place foreach op with no formulas of its own and no reference to borrow from (at "
         "the native function)",
         ("variable_type.foreach-without-info", "an in-place foreach op with no formulas to use")),
    _row("an in-place foreach op whose reference takes other arguments (kept for parity: matching "
         "already picks only references that fit)",
         ("variable_type.foreach-arity", "an in-place foreach op with another number of arguments "
                                         "than its reference"),
         ("variable_type.foreach-argument-type", "an in-place foreach op's argument of another "
                                                 "type than its reference's")),
    _row("shapes of functions torchgen's kernel generator cannot handle (a multi-output view, a "
         "list-of-tensors return of a non-in-place function, …)",
         ("variable_type.view-outputs", "a view function that returns more than one tensor"),
         ("variable_type.return-use-count", "a return of a list of optional tensors or a "
                                            "TensorList (not a vector of tensors)"),
         ("variable_type.saved-vector", "a node saving a vector of tensors that is not a foreach "
                                        "output"),
         ("variable_type.inplace-output", "an in-place function saving its output by name"),
         ("variable_type.reset-grad-accumulator", "a function that resets the grad accumulator "
                                                  "but is not in-place")))

_VIEWS = _section(
    "ADInplaceOrViewType, ViewFuncs and FunctionalInverses.h "
    "(`pipeline/render/inplace_or_view.py`, `view_funcs.py`, "
    "`pipeline/layout/functional_inverses.py`; PA/gen_inplace_or_view_type.py, "
    "PA/gen_view_funcs.py, gen_functionalization_type.py: where torchgen stops with an assertion "
    "or a TypeError)",
    _HELP_VIEWS,
    _row("a differentiable view takes an argument of a type its reverse view function cannot hold "
         '(torchgen: "You are adding an … argument to op … in addition to known types")',
         ("inplace_or_view.view-argument-type", "a view taking an argument its reverse view "
                                                "function cannot hold")),
    _row("a view whose derivatives infos have no `Default` dispatch key",
         ("inplace_or_view.view-without-default", "a view whose derivatives infos have no "
                                                  "`Default` dispatch key")),
    _row("a view with more than one differentiable output",
         ("inplace_or_view.multiple-view-outputs", "a view with more than one differentiable "
                                                   "output")),
    _row("a view whose differentiable output is neither Tensor nor Tensor[]",
         ("inplace_or_view.view-output-type", "a view whose differentiable output is neither "
                                              "Tensor nor Tensor[]")),
    _row("a view taking a mutable tensor or a Tensor[] (a ViewFunc cannot hold it)",
         ("view_funcs.argument-type", "a view taking a mutable tensor or a Tensor[]")),
    _row("a view with more than one return",
         ("view_funcs.returns", "a view with more than one return")),
    _row("a view whose first argument is not `self` (its bindings and arguments do not line up)",
         ("view_funcs.argument-order", "a view whose first argument is not `self`")),
    _row("a view (for FunctionalInverses.h, which gradshard writes for its own compile) whose "
         "first argument is not a Tensor",
         ("views.inverse-first-argument", "a view whose first argument is not a Tensor "
                                          "(FunctionalInverses.h)")),
    _row("such a view returning something other than tensors",
         ("views.inverse-returns", "a view returning something other than tensors "
                                   "(FunctionalInverses.h)")))

_FAILURES = _section(
    "A command's failures (`service/report/formats.py`: `--format sarif` and `lintrunner`)",
    "Read the text report on stderr, which says more.",
    _row("a usage or environment error: bad arguments, no spec found, a bad configuration "
         "file, a file that cannot be read or written, a full disk; at the file it names (a "
         "configuration file at the key's line)",
         (USAGE_RULE, "the command line, the configuration or the machine is wrong"),
         help="Correct the command line, the configuration file or the environment as the "
              "message's hint says, and run the command again."),
    _row("generated code that the compiler rejected, at its formula's derivatives.yaml line "
         "(the generated file's line is a related location), or at the generated code when "
         "it came from no formula",
         (COMPILE_RULE, "generated code does not compile"),
         help="Correct the formula at that line: the message quotes the compiler; `build "
              "--raw` prints the compiler's output as it is."),
    _row("generated code failed to compile with no error gradshard could place (the compiler "
         "or its launcher crashed, was killed or could not run)",
         (COMPILE_FAILED_RULE, "the compile failed"),
         help="Read the compiler's output in the text report (`build --raw` prints it as it "
              "is), and check the compiler and its launcher."),
    _row("a file the spec's own generator writes differently from gradshard (the file written "
         "is the generator's): a warning, an error under `--generator-check strict`",
         (GENERATOR_RULE, "the spec's generator writes this file differently"),
         help="gradshard reproduces the generators of torchgen 2.12.0, 2.13.0 and 2.14.x; "
              "`gradshard generator` compares the spec's generator with gradshard on demand."),
    _row("the spec's generator raised or ran too long when run to check gradshard's files "
         "(gradshard's files were written, unverified)",
         (GENERATOR_FAILED_RULE, "the spec's generator failed"),
         help="Read the generator's error (its last lines are in the text report) and correct "
              "the generator or the spec it failed on."),
    _row("the spec's own generator refused the spec on the host path (`--generator-path "
         "host`), at the entry its message names (nothing was written)",
         (GENERATOR_RAISED_RULE, "the spec's generator refused the spec"),
         help="The generator is the authority on its spec: correct the entry its message "
              "names (the message is the generator's own, in the text report)."),
    _row("`build --verify` found cached results that disagree with a fresh run of their task "
         "(the rows were rewritten)",
         (VERIFY_RULE, "cached results disagree with their task"),
         help="The cache was written by other code or altered: its rows were rewritten; "
              "check who else writes it."),
    _row("the cache database is damaged, at its file (it was moved aside)",
         (CACHE_DAMAGED_RULE, "the cache database is damaged"),
         help="Run the command again: a new cache is started."),
    _row("an internal error: a bug in gradshard, never the spec's fault",
         (ERROR_RULE, "gradshard failed"),
         help="Report it with the command you ran (`GRADSHARD_DEBUG=1` shows the "
              "traceback)."),
    _row("a note that results past GitHub's limits of one upload (25,000 results, 10 MB "
         "compressed) were left out",
         (LEFT_OUT_RULE, "more results were left out"),
         help="`--format json` lists every problem; correct the first ones and run again."))

# usage.md's tables, in its order
SECTIONS: tuple[tuple[Rule, ...], ...] = (
    _YAML, _SCHEMAS, _NATIVE, _TAGS_DEPRECATED, _DERIVATIVES, _LATER_STAGES, _VARIABLE_TYPE,
    _VIEWS, _FAILURES)
RULES: Mapping[str, Rule] = {rule.id: rule for section in SECTIONS for rule in section}


def rule_of(rule: str) -> Rule:
    """The rule's entry; a rule missing from the table (a bug the tests look for) is
    described by its id rather than failing a report."""
    return RULES.get(rule) or Rule(rule, f"gradshard rule {rule}", f"gradshard rule {rule}",
                                   f"See {USAGE}#error-rules.", "Error rules")
