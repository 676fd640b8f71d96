"""The ATen headers the autograd files include that the torch wheel does not ship, written by
the spec's own torchgen in the host worker: what a host-path build's compile needs besides the
autograd files (service/host/generation.py: host_compile_input).

ADInplaceOrViewType_k.cpp includes <ATen/FunctionalInverses.h>, which torchgen/gen.py writes with
the ATen files (gen_source_files: `cpu_fm.write("FunctionalInverses.h", ...)`, one inverse
declaration per view group of the spec's native functions). Here the same functions run on the
native functions the worker's last generation parsed (torchgen.gen.parse_native_yaml, cached by
path), so a view op added to the spec gets its declaration as PyTorch's build would write it.

Standard library and the generator's torchgen only: this module runs in the host worker.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

__all__ = ["ATEN_HEADERS", "aten_header"]


def functional_inverses(native_yaml: str, tags_yaml: str, templates: Path) -> str:
    """gen.py's FunctionalInverses.h: its template over the view groups' inverse
    declarations (gen_functionalization_type.gen_functionalization_view_inverse_declaration)."""
    from torchgen.gen import get_grouped_by_view_native_functions, parse_native_yaml
    from torchgen.gen_functionalization_type import (
        gen_functionalization_view_inverse_declaration)
    from torchgen.model import NativeFunctionsViewGroup
    from torchgen.selective_build.selector import SelectiveBuilder
    from torchgen.utils import FileManager, mapMaybe

    parsed = parse_native_yaml(native_yaml, tags_yaml)
    groups = [g for g in get_grouped_by_view_native_functions(parsed.native_functions)
              if isinstance(g, NativeFunctionsViewGroup)]
    selector = SelectiveBuilder.get_nop_selector()
    manager = FileManager(install_dir=templates, template_dir=templates, dry_run=True)
    return manager.substitute_with_template("FunctionalInverses.h", lambda: {
        "view_inverse_declarations": list(mapMaybe(
            lambda g: gen_functionalization_view_inverse_declaration(selector, g), groups))})


# header name → its writer (native_functions.yaml, tags.yaml, ATen's templates directory)
ATEN_HEADERS: dict[str, Callable[[str, str, Path], str]] = {
    "FunctionalInverses.h": functional_inverses}


def aten_header(name: str, native_yaml: str, tags_yaml: str) -> str:
    """The header `name` for the spec whose native_functions.yaml is `native_yaml` (ATen's
    templates are beside its native/ directory, in a checkout and a packaged spec alike)."""
    templates = Path(native_yaml).parent.parent / "templates"
    return ATEN_HEADERS[name](native_yaml, tags_yaml, templates)
