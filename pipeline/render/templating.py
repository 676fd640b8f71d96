"""Render stage: backward nodes → C++ text, and the spec's templates → whole files.

Every node is rendered on its own from its `BackwardNode` (so it can be cached per node) by
gradshard's Jinja2 templates (`templates/codegen/autograd_node.j2`). Whole files are the spec's own
templates (`autograd/templates/Functions.h`…) expanded with the node texts, so edits to
those templates are honoured. Template texts are inputs here, not files read from disk.
"""

from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass
from typing import Mapping, Sequence

import jinja2

from gradshard.pipeline.problems import RuleViolation, SpecError, SpecFile
from gradshard.pipeline.records import Record, content_hash
from gradshard.pipeline.render.code_template import Value, block, expand_template, inline
from gradshard.pipeline.render.nodes import BackwardNode

__all__ = ["TemplateSet", "compiled_template", "expand_spec_template", "functions_file", "functions_files",
           "generated_comment", "jinja_module", "python_function_shards",
           "python_functions_header", "python_functions_shard", "render_node",
           "render_node_formula", "render_node_methods", "shard_of", "sharded_positions",
           "warm_templates"]

NUM_PYTHON_FUNCTION_SHARDS = 5  # gen_autograd_functions.py: gen_autograd_functions_python


@dataclass(frozen=True, slots=True)
class TemplateSet(Record):
    """Template texts by file name: gradshard's Jinja2 ones, or the spec's own."""

    sources: tuple[tuple[str, str], ...]
    # gradshard's templates as Jinja2 compiled them ahead (templates/*/NAME.compiled): each
    # used only where its first line names this template text's hash and the running Jinja2
    compiled: tuple[tuple[str, str], ...] = ()

    def text(self, name: str) -> str:
        return dict(self.sources)[name]


@dataclass(frozen=True, slots=True)
class RenderedNode(Record):
    """One node's four pieces of C++."""

    op: str
    name: str
    declaration: str
    definition: str
    python_properties: str
    python_class: str


def _lines(text: str) -> list[str]:
    return [line for line in str(text).splitlines() if line.strip()]


def _last_word(text: str) -> str:
    return text.rsplit(" ", 1)[-1]


def _arg_type(text: str) -> str:
    return text.rsplit(" ", 1)[0]


def _comma_list(items: Sequence[str]) -> str:
    return inline(list(items), comma_before=True)


def _block_filter(value: Value, indent: int) -> str:
    return block(str(value) if not isinstance(value, list) else value, " " * indent)


# Compiled templates live in this process only (memoized per template set): a stored compiled
# template is code, and a cache directory is input (Jinja's bytecode cache unpickles and runs
# what it reads), so none is configured anywhere. Compiling ours costs ~0.1 s a template per
# process, so gradshard's package ships them compiled ahead (`compiled_template`; a fresh
# process that renders a node and a kernel saves ~0.4 s): package code, never the cache's.
class _Loader(jinja2.DictLoader):
    """The template set's texts; a template compiled ahead for this very text and this
    Jinja2 is loaded from its code, any other is compiled (jinja2.BaseLoader.load)."""

    def __init__(self, templates: TemplateSet) -> None:
        sources = dict(templates.sources)
        super().__init__(sources)
        self.codes = {}
        for name, compiled in templates.compiled:
            header, _, code = compiled.partition("\n")
            if name in sources and header == _code_header(sources[name]):
                self.codes[name] = code

    def load(self, environment: jinja2.Environment, name: str, globals=None) -> jinja2.Template:
        code = self.codes.get(name)
        if code is None:
            return super().load(environment, name, globals)
        return environment.template_class.from_code(
            environment, compile(code, "<template>", "exec"), globals or {}, lambda: True)


def _code_header(source: str) -> str:
    return f"# jinja2 {jinja2.__version__} template {content_hash(source)}"


def compiled_template(templates: TemplateSet, name: str) -> str:
    """The Python code Jinja2 compiles one of gradshard's templates into (what
    `Environment.compile` runs), headed by the Jinja2 and the template text it is valid for."""
    env = _environment(TemplateSet(templates.sources))
    code = env.compile(templates.text(name), name, raw=True)
    return f"{_code_header(templates.text(name))}\n{code}"


@functools.lru_cache(maxsize=4)
def _environment(templates: TemplateSet) -> jinja2.Environment:
    env = jinja2.Environment(loader=_Loader(templates),
                             trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True,
                             undefined=jinja2.StrictUndefined, autoescape=False)
    env.filters.update(block=_block_filter, comma_list=_comma_list, lines=_lines, c_string=c_string,
                       last_word=_last_word, arg_type=_arg_type,
                       unref=lambda t: t.removesuffix("&"),
                       unconst=lambda t: t.removeprefix("const").strip())
    return env


def c_string(text: str) -> str:
    """A C++ string literal of the text (gen.py: cpp_string)."""
    for raw, escaped in (("\\", "\\\\"), ('"', '\\"'), ("\a", "\\a"), ("\b", "\\b"),
                         ("\f", "\\f"), ("\n", "\\n"), ("\v", "\\v"), ("\t", "\\t")):
        text = text.replace(raw, escaped)
    return f'"{text}"'


def jinja_module(templates: TemplateSet, name: str):
    """The macros of one of gradshard's templates."""
    return _environment(templates).get_template(name).module


def warm_templates(templates: TemplateSet, names: Sequence[str]) -> None:
    """Compile these templates now (memoized for the process): while another waits."""
    for name in names:
        jinja_module(templates, name)


def render_node(node: BackwardNode, templates: TemplateSet) -> RenderedNode:
    """The node's declaration, definition and Python type (gen_autograd_functions.py:
    process_function with each of its templates)."""
    macros = jinja_module(templates, "autograd_node.j2")
    data = node.to_json()
    index = _input_positions(node)
    return RenderedNode(
        op=node.op, name=node.name,
        declaration=str(macros.declaration(data)),
        definition=str(macros.definition(data, index)),
        python_properties=str(macros.python_properties(data)),
        python_class=str(macros.python_class(data)))


def render_node_formula(node: BackwardNode, templates: TemplateSet) -> str:
    """The node's formula as the compile layout's formula units print it: apply_functional
    with external linkage, which needs only FunctionsManual.h and no struct."""
    macros = jinja_module(templates, "autograd_node.j2")
    return str(macros.formula_part(node.to_json(), _input_positions(node)))


def render_node_methods(node: BackwardNode, templates: TemplateSet) -> str:
    """The node's methods (apply, compiled_args, apply_with_saved) as the compile layout's
    Functions units print them, calling the formula through its declaration."""
    return str(jinja_module(templates, "autograd_node.j2").compiled_part(node.to_json()))


def _input_positions(node: BackwardNode) -> dict[str, int]:
    return {slot.name: i for i, slot in enumerate(node.inputs)}


# ---------------------------------------------------------------------------------------------
# Whole files


def generated_comment(layout: str, template_name: str) -> str:
    """What follows `// ` on the first lines: the template's path relative to torchgen, as
    torchgen prints it when it runs from the same tree (utils.py: template_dir_for_comments)."""
    directory = "packaged/autograd/templates" if layout == "packaged" else "../tools/autograd/templates"
    return "@" + f"generated from {directory}/{template_name}"


def shard_of(key: str, num_shards: int) -> int:
    """utils.py: FileManager.write_sharded — SHA-1 of the key, read little-endian, mod n."""
    return int.from_bytes(hashlib.sha1(key.encode("latin1")).digest(), "little") % num_shards


def expand_spec_template(templates: TemplateSet, name: str, env: Mapping[str, Value]) -> str:
    """One of the spec's templates expanded; a problem in it is reported at its line."""
    sources = dict(templates.sources)
    try:
        if name not in sources:
            raise RuleViolation("templates.missing", f"the spec has no template {name}",
                                "the templates directory must hold every file torchgen renders")
        return expand_template(sources[name], env, name)
    except RuleViolation as violation:
        raise SpecError([violation.to_problem(SpecFile.TEMPLATES, name, entry_line=1)]) from None


FUNCTIONS_FILES = (("Functions.h", "declaration"), ("Functions.cpp", "definition"))
PYTHON_FUNCTION_SHARD_IDS = tuple(f"_{i}" for i in range(NUM_PYTHON_FUNCTION_SHARDS)) + \
    ("Everything",)


def functions_files(nodes: Sequence[RenderedNode], spec_templates: TemplateSet,
                    layout: str) -> dict[str, str]:
    """Functions.h and Functions.cpp (gen_autograd_functions.py: gen_autograd_functions_lib)."""
    return {name: functions_file(name, [getattr(n, piece) for n in nodes], spec_templates, layout)
            for name, piece in FUNCTIONS_FILES}


def functions_file(name: str, pieces: Sequence[str], spec_templates: TemplateSet,
                   layout: str) -> str:
    """One of Functions.h (declarations) or Functions.cpp (definitions)."""
    return expand_spec_template(spec_templates, name, {
        "generated_comment": generated_comment(layout, name),
        "autograd_function_declarations": list(pieces),
        "autograd_function_definitions": list(pieces),
    })


def python_functions_header(spec_templates: TemplateSet, templates: TemplateSet,
                            layout: str) -> str:
    macros = _environment(templates).get_template("python_functions.j2").module
    shards = range(NUM_PYTHON_FUNCTION_SHARDS)
    return expand_spec_template(spec_templates, "python_functions.h", {
        "generated_comment": generated_comment(layout, "python_functions.h"),
        "shard_forward_declare": [str(macros.forward_declaration(i)) for i in shards],
        "shard_call": [str(macros.initializer_call(i)) for i in shards],
    })


def sharded_positions(keys: Sequence[str], num_shards: int) -> dict[str, list[int]]:
    """The items (positions) of each file `write_sharded` writes: `_0` … by shard key, and
    `Everything` with all of them."""
    shards: dict[str, list[int]] = {f"_{i}": [] for i in range(num_shards)}
    shards["Everything"] = []
    for position, key in enumerate(keys):
        shards[f"_{shard_of(key, num_shards)}"].append(position)
        shards["Everything"].append(position)
    return shards


def python_function_shards(names: Sequence[str]) -> dict[str, list[int]]:
    """The nodes (positions) of each python_functions file, sharded by node name."""
    return sharded_positions(names, NUM_PYTHON_FUNCTION_SHARDS)


def python_functions_shard(shard_id: str, classes: Sequence[str], properties: Sequence[str],
                           spec_templates: TemplateSet, layout: str) -> str:
    return expand_spec_template(spec_templates, "python_functions.cpp", {
        "generated_comment": generated_comment(layout, "python_functions.cpp"),
        "shard_id": shard_id,
        "py_function_initializers": list(classes),
        "py_function_props_and_getters": list(properties),
    })
