"""gradshard's templates compiled ahead: NAME.j2.compiled beside each NAME.j2 of
templates/codegen and templates/live, the Python code Jinja2 compiles the template into
(pipeline/render/templating.py: compiled_template), headed by the template text's hash and the
Jinja2 version it is valid for. A process that renders loads them instead of compiling (a
fresh `check` or build after a formula edit renders a node and a kernel: ~0.4 s saved); one
whose header does not match is ignored and the template compiled as before.

After editing a template, write them again (tests/test_compiled_templates.py says when):

    python -m gradshard.service.files.template_code
"""

from __future__ import annotations

import importlib.resources
from pathlib import Path

from gradshard.service.files.inputs import CODEGEN_TEMPLATES, COMPILED, gradshard_template_bytes

__all__ = ["PACKAGES", "compiled_texts", "main"]

PACKAGES = (CODEGEN_TEMPLATES, "gradshard.templates.live")


def compiled_texts(package: str) -> dict[str, str]:
    """Each template of the package's, compiled by the running Jinja2: file name → text."""
    from gradshard.pipeline.render.templating import compiled_template
    from gradshard.service.files.inputs import template_set

    templates = template_set(gradshard_template_bytes(package), {})
    return {f"{name}{COMPILED}": compiled_template(templates, name)
            for name, _ in templates.sources}


def main() -> None:
    for package in PACKAGES:
        directory = Path(str(importlib.resources.files(package)))
        for old in directory.glob(f"*{COMPILED}"):
            old.unlink()
        for name, text in compiled_texts(package).items():
            (directory / name).write_text(text)
            print(f"wrote {directory / name}")


if __name__ == "__main__":
    main()
