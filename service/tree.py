"""Where a build's files go under --out: `--tree flat` (the default) or `--tree pytorch`.

A build's index names its files as torchgen's generators name them (`Functions.h`,
`annotated_fn_args.py`, `templates/VariableType.cpp`: VariableType's first stage). Flat puts
every file but the first stage directly in --out, as gradshard always has. `pytorch` lays
them out as tools/setup_helpers/generate_code.py does under a checkout's root, so that
`--out` can be the checkout (or its build directory) and PyTorch's CMake compiles from it:

    torch/csrc/autograd/generated/             every autograd file, with templates/VariableType.cpp
    torch/testing/_internal/generated/         annotated_fn_args.py (gen_annotated's python_install_dir)

Files are written only when their content changed (service/outputs.py: sync_outputs), so
CMake's ninja (restat) recompiles only what an edit changed.
"""

from __future__ import annotations

from pathlib import Path

FLAT, PYTORCH = "flat", "pytorch"
TREES = (FLAT, PYTORCH)

FIRST_STAGE = "templates/VariableType.cpp"  # gen_variable_type's first FileManager writes it
ANNOTATED_ARGS = "annotated_fn_args.py"
# generate_code.py: autograd_gen_dir and python_install_dir, under the checkout's root
AUTOGRAD_GENERATED = "torch/csrc/autograd/generated"
PYTHON_GENERATED = "torch/testing/_internal/generated"


def placed_name(name: str, tree: str) -> str | None:
    """Where the index's file `name` goes under --out (None: not written in this tree)."""
    if tree == FLAT:
        return None if name == FIRST_STAGE else name
    if name == ANNOTATED_ARGS:
        return f"{PYTHON_GENERATED}/{name}"
    return f"{AUTOGRAD_GENERATED}/{name}"


def placed_files(files: dict[str, str], tree: str) -> dict[str, str]:
    """The index's files (name → hash) as written under --out (placed name → hash)."""
    placed = {}
    for name, digest in files.items():
        where = placed_name(name, tree)
        if where is not None:
            placed[where] = digest
    return placed


def index_names(files: dict[str, str], tree: str) -> dict[str, str]:
    """Each placed name's name in the index."""
    names = {}
    for name in files:
        where = placed_name(name, tree)
        if where is not None:
            names[where] = name
    return names


def generated_dir(out: Path, tree: str) -> Path:
    """The directory holding the generated C++ (what the compile reads --out files from)."""
    return out if tree == FLAT else out / AUTOGRAD_GENERATED
