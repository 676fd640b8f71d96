"""The Python bindings' tasks (see tasks.py for the conventions)."""

from __future__ import annotations

from gradshard.cache.engine.jobs import task_of
from gradshard.cache.graph.tasks import Passed, single_template
from gradshard.pipeline.parse.deprecated import DeprecatedSignature
from gradshard.pipeline.parse.native import NativeFunction
from gradshard.pipeline.parse.source import Entry
from gradshard.pipeline.parse.spec import parse_deprecated_entry
from gradshard.pipeline.parse.tags import TagNames
from gradshard.pipeline.problems import SpecFile
from gradshard.pipeline.records import Text
from gradshard.pipeline.releases import Release
from gradshard.pipeline.render.python.files import (RenderedBinding,
                                                    StructseqTypes, bind, binding_file,
                                                    binding_key, binding_plan, check_deprecated,
                                                    enum_tag_file, render_binding,
                                                    return_types_file, return_types_header,
                                                    structseq_types, torch_file)
from gradshard.pipeline.render.templating import TemplateSet

__all__ = ["BIND", "BINDING_FILE", "BINDING_KEY", "BINDING_PLAN", "CHECK_DEPRECATED",
           "ENUM_TAG_FILE", "PARSE_DEPRECATED", "RENDER_BINDING", "RETURN_TYPES",
           "RETURN_TYPES_FILE", "RETURN_TYPES_HEADER", "TORCH_FILE"]


def parse_deprecated(entry: Text, release: Release) -> DeprecatedSignature:
    return parse_deprecated_entry(Entry(SpecFile.DEPRECATED, 1, entry.text), release)


PARSE_DEPRECATED = task_of("parse.deprecated", "parse", parse_deprecated,
                           blames=SpecFile.DEPRECATED)


def fits_a_function(signature: DeprecatedSignature, functions: tuple[NativeFunction, ...]
                    ) -> Passed:
    check_deprecated(signature, functions)
    return Passed()


def assemble_binding_file(rendered: tuple[RenderedBinding, ...], template: Text, layout: Text,
                          name: Text) -> Text:
    return Text(binding_file(name.text, rendered, single_template(name.text, template), layout.text))


def assemble_torch_file(rendered: tuple[RenderedBinding, ...], template: Text, layout: Text,
                        shard: Text) -> Text:
    return Text(torch_file(shard.text, rendered, single_template("python_torch_functions.cpp", template),
                           layout.text))


def assemble_return_types(groups: tuple[StructseqTypes, ...], templates: TemplateSet,
                          template: Text, layout: Text) -> Text:
    return Text(return_types_file(groups, templates,
                                  single_template("python_return_types.cpp", template), layout.text))


def assemble_return_types_header(groups: tuple[StructseqTypes, ...], templates: TemplateSet,
                                 template: Text, layout: Text) -> Text:
    return Text(return_types_header(groups, templates,
                                    single_template("python_return_types.h", template), layout.text))


def assemble_enum_tag(tags: TagNames, templates: TemplateSet, template: Text,
                      layout: Text) -> Text:
    return Text(enum_tag_file(sorted(tags.names), templates,
                              single_template("python_enum_tag.cpp", template), layout.text))


BINDING_KEY = task_of("bindings.key", "bindings", binding_key, labels={"fn": "function"})
BINDING_PLAN = task_of("bindings.plan", "bindings", binding_plan)
CHECK_DEPRECATED = task_of("bindings.deprecated_check", "bindings", fits_a_function,
                           labels={"signature": "deprecated"})
BIND = task_of("bindings.bind", "bindings", bind)
RENDER_BINDING = task_of("bindings.render", "bindings", render_binding, labels={"b": "binding"})
RETURN_TYPES = task_of("bindings.return_types", "bindings", structseq_types,
                       blames=SpecFile.NATIVE_FUNCTIONS)
BINDING_FILE = task_of("assemble.binding_file", "assemble", assemble_binding_file,
                       labels={"rendered": "bindings", "name": "file"})
TORCH_FILE = task_of("assemble.torch_functions", "assemble", assemble_torch_file,
                     labels={"rendered": "bindings"})
RETURN_TYPES_FILE = task_of("assemble.return_types", "assemble", assemble_return_types,
                            labels={"groups": "types"})
RETURN_TYPES_HEADER = task_of("assemble.return_types_h", "assemble", assemble_return_types_header,
                              labels={"groups": "types"})
ENUM_TAG_FILE = task_of("assemble.enum_tag", "assemble", assemble_enum_tag)
