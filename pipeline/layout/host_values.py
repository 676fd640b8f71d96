"""What the spec's own generator's item values hold, read as gradshard's records: the host
path's layout (cache/graph/host_layout_group.py) and `try` (service/live/host_patch.py) cut
units from them.

gen_variable_type.gen_variable_type_func returns, per dispatch key KEY its info has (Default
for an op without one), `type_derived_method_definitions_KEY` (the kernels' definitions) and
`wrapper_registrations_KEY` (their `m.impl` lines): the environment its shard's template is
substituted with.
"""

from __future__ import annotations

from gradshard.pipeline.render.variable_type_files import RenderedKernel

__all__ = ["DEFINITIONS", "REGISTRATIONS", "kernel_signature", "rendered_kernels"]

DEFINITIONS = "type_derived_method_definitions_"  # gen_variable_type_func's keys, + dispatch key
REGISTRATIONS = "wrapper_registrations_"


def rendered_kernels(value: dict, nodes: dict[str, tuple[str, str]]) -> list[RenderedKernel]:
    """gen_variable_type_func's value as one RenderedKernel per dispatch key."""
    found = []
    for name, registrations in value.items():
        if not name.startswith(REGISTRATIONS):
            continue
        key = name[len(REGISTRATIONS):]
        definition = "".join(value.get(DEFINITIONS + key, []))
        node, entry = nodes.get(key, ("", ""))
        signature = kernel_signature(definition)
        found.append(RenderedKernel(signature[0], key, definition, "".join(registrations),
                                    node, entry, (), signature[1]))
    return found


def kernel_signature(definition: str) -> tuple[str, str]:
    """A function definition's name and its declaration: the text before its body's brace
    (the first `{` outside parentheses), with a semicolon; ("", "") for no definition (a
    fallback registration)."""
    depth = 0
    for position, character in enumerate(definition):
        if character == "(":
            depth += 1
        elif character == ")":
            depth -= 1
        elif character == "{" and depth == 0:
            head = definition[:position].strip()
            name = head.split("(", 1)[0].split()[-1] if "(" in head else ""
            return name.rsplit("::", 1)[-1], head + ";"
    return "", ""
