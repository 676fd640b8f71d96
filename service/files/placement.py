"""Where a build's files go under --out (`--tree flat`, the default, or `--tree pytorch`), and
which of them (generate_code's `--subset` and `--disable-autograd`).

A build's index names its files as torchgen's generators name them (`Functions.h`,
`annotated_fn_args.py`, `templates/VariableType.cpp`: VariableType's first stage). Flat puts
every file but the first stage directly in --out, as gradshard always has. `pytorch` lays
them out as tools/setup_helpers/generate_code.py does under a checkout's root, so that
`--out` can be the checkout (or its build directory) and PyTorch's CMake compiles from it:

    torch/csrc/autograd/generated/             every autograd file, with templates/VariableType.cpp
    torch/testing/_internal/generated/         annotated_fn_args.py (gen_annotated's python_install_dir)

Files are written only when their content changed (service/files/outputs.py: sync_outputs), so
CMake's ninja (restat) recompiles only what an edit changed.

generate_code's selection, with its effect: `--subset pybindings` writes what
gen_autograd_python writes (python_functions*, gen_python_functions' files), `libtorch` what
gen_autograd writes, `python` annotated_fn_args.py; `--disable-autograd` leaves out what
gen_autograd then skips (VariableType*, its first stage, ADInplaceOrViewType*, TraceType*).
The build itself is the same: these choose the files written.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

__all__ = ["FIRST_STAGE", "FLAT", "Placement", "generated_dir", "index_name", "index_names",
           "placed_files", "placed_name", "subset_of"]

FLAT, PYTORCH = "flat", "pytorch"
TREES = (FLAT, PYTORCH)

FIRST_STAGE = "templates/VariableType.cpp"  # gen_variable_type's first FileManager writes it
ANNOTATED_ARGS = "annotated_fn_args.py"
# generate_code.py: autograd_gen_dir and python_install_dir, under the checkout's root
AUTOGRAD_GENERATED = "torch/csrc/autograd/generated"
PYTHON_GENERATED = "torch/testing/_internal/generated"


SUBSETS = ("pybindings", "libtorch", "python")  # generate_code.py's --subset
# gen_autograd_python's files (gen_autograd_functions_python, gen_python_functions.gen)
PYBINDINGS_PREFIXES = ("python_",)
# what gen_autograd skips with disable_autograd (gen_variable_type, gen_inplace_or_view_type,
# gen_trace_type)
AUTOGRAD_KERNEL_PREFIXES = ("VariableType", "ADInplaceOrViewType", "TraceType", FIRST_STAGE)


@dataclass(frozen=True)
class Placement:
    """How a build's files go under --out: the tree, generate_code's subset (None: all) and
    whether the autograd kernels are written."""

    tree: str = FLAT
    subset: str | None = None
    autograd: bool = True

    def words(self) -> dict[str, str]:
        """What a build's fingerprint adds (nothing for the default: flat, everything)."""
        words = {}
        if self.tree != FLAT:
            words["tree"] = self.tree
        if self.subset is not None:
            words["subset"] = self.subset
        if not self.autograd:
            words["autograd"] = "disabled"
        return words

    def owns(self, placed: str) -> bool:
        """Whether a file an earlier build wrote at `placed` is this build's to remove once
        it no longer writes it: a file of another tree is (the layout changed), and so is a
        file of this tree that this selection writes; one that another subset writes (or,
        with --disable-autograd, an autograd kernel file) is left, as generate_code leaves
        every file it does not write."""
        name = index_name(placed, self.tree)
        return name is None or self.writes(name)

    def writes(self, name: str) -> bool:
        """Whether the index's file `name` is written (generate_code.py: generate_code)."""
        if not self.autograd and name.startswith(AUTOGRAD_KERNEL_PREFIXES):
            return False
        return self.subset is None or subset_of(name) == self.subset


def index_name(placed: str, tree: str) -> str | None:
    """The index's file that `tree` places at `placed` (None: no file of this tree goes
    there)."""
    if tree == FLAT:
        return placed if "/" not in placed else None
    for directory in (AUTOGRAD_GENERATED, PYTHON_GENERATED):
        name = placed.removeprefix(directory + "/")
        if name != placed and placed_name(name, tree) == placed:
            return name
    return None


def subset_of(name: str) -> str:
    """The generate_code subset whose generator writes the index's file `name`."""
    if name == ANNOTATED_ARGS:
        return "python"
    return "pybindings" if name.startswith(PYBINDINGS_PREFIXES) else "libtorch"


def placed_name(name: str, tree: str) -> str | None:
    """Where the index's file `name` goes under --out (None: not written in this tree)."""
    if tree == FLAT:
        return None if name == FIRST_STAGE else name
    if name == ANNOTATED_ARGS:
        return f"{PYTHON_GENERATED}/{name}"
    return f"{AUTOGRAD_GENERATED}/{name}"


def index_names(files: dict[str, str], placement: Placement) -> dict[str, str]:
    """Each written file's name under --out → its name in the index."""
    names = {}
    for name in files:
        where = placed_name(name, placement.tree)
        if where is not None and placement.writes(name):
            names[where] = name
    return names


def placed_files(files: dict[str, str], placement: Placement) -> dict[str, str]:
    """The index's files (name → hash) as written under --out (placed name → hash)."""
    return {where: files[name] for where, name in index_names(files, placement).items()}


def generated_dir(out: Path, tree: str) -> Path:
    """The directory holding the generated C++ (what the compile reads --out files from)."""
    return out if tree == FLAT else out / AUTOGRAD_GENERATED
