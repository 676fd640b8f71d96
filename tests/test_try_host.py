"""`gradshard try` on a generator gradshard does not reproduce (service/live/host_patch.py):
a venv whose installed torch's torchgen has a kernel template statement changed so that it
compiles to the same code. Its patches are that generator's own nodes and kernels (the host
path); the verdicts are those of the pristine torch's.

The venv holds the edited copy of torchgen and reaches the test interpreter's packages (torch,
gradshard) through a .pth file: torch is not installed twice. The same spec copy is the host
path's in the venv (its installed torchgen is the edited one) and the ported path's here.
How long each takes is benchmarks/'s to say (the guide keeps timings out of tests).
"""

from __future__ import annotations

import json
import os
import shutil
import site
import subprocess
import sys
from pathlib import Path

import pytest
from support.specs import edited_derivatives as edited
from test_try import SIN, recompiled_parts, unit_parts


# gen_variable_type's SETUP_ANY_REQUIRES_GRAD, as 2.9.1 to 2.14.1 write it, and the same
# statement written otherwise (compute_requires_grad returns a bool)
STATEMENT = "[[maybe_unused]] auto _any_requires_grad = compute_requires_grad("
CHANGED = "[[maybe_unused]] const bool _any_requires_grad = compute_requires_grad("


@pytest.fixture(scope="module")
def edited_torch(tmp_path_factory) -> Path:
    """The venv's python: the test interpreter's packages, with an edited torchgen first."""
    import torchgen

    root = tmp_path_factory.mktemp("edited-torch")
    base = getattr(sys, "_base_executable", None) or sys.executable
    subprocess.run([base, "-m", "venv", "--without-pip", str(root)], check=True)
    packages = next(root.glob("lib/python*/site-packages"))
    shutil.copytree(Path(torchgen.__file__).parent, packages / "torchgen",
                    ignore=shutil.ignore_patterns("__pycache__"))
    generator = packages / "torchgen" / "packaged" / "autograd" / "gen_variable_type.py"
    text = generator.read_text()
    assert text.count(STATEMENT) == 1
    generator.write_text(text.replace(STATEMENT, CHANGED))
    lines = [f"import site; site.addsitedir({path!r})" for path in site.getsitepackages()]
    (packages / "zz_test_packages.pth").write_text("\n".join(lines) + "\n")
    return root / "bin" / "python"


def run_try(python: Path | str, *args: str) -> tuple[int, dict]:
    done = subprocess.run([str(python), "-m", "gradshard.service.entry", "try", *args, "--json"],
                          capture_output=True, text=True, env=dict(os.environ), timeout=900)
    assert done.stdout.strip(), done.stderr
    return done.returncode, json.loads(done.stdout)


def verdicts(report: dict) -> dict:
    return {op["op"]: (op["functions"], op["nodes"], op["line"], op["reason"],
                       sorted((s["variant"], s["dtype"], s["verdict"]) for s in op["samples"]))
            for op in report["ops"]}


@pytest.mark.compiler
@pytest.mark.slow
def test_try_on_an_edited_generator_gives_the_pristine_verdicts(try_workspace, edited_torch):
    spec, cache = try_workspace
    where = ("--spec", str(spec), "--cache", str(cache), "--dtype", "float64")
    with edited(spec, SIN, SIN.replace("conj()\n", "conj() * 2\n")) as line:
        # the second host run reads the installed spec's generation back from the cache
        host = [run_try(edited_torch, *where) for _ in range(2)]
        ported = [run_try(sys.executable, *where)]
    for code, report in host + ported:
        assert code == 5, report
    assert {r["generator_path"] for _, r in host} == {"host"}
    assert {r["generator_path"] for _, r in ported} == {"ported"}
    found = verdicts(host[-1][1])
    assert set(found) == {"sin", "_foreach_sin"}
    assert found["sin"][:3] == (["sin", "sin_", "sin.out"], ["SinBackward0"], line)
    assert found == verdicts(ported[-1][1])
    # the stock formula, named: every sample passes
    code, report = run_try(edited_torch, "sin", *where)
    assert code == 0 and report["generator_path"] == "host", report
    assert all(s["verdict"] == "PASS" for s in report["ops"][0]["samples"])


@pytest.mark.compiler
@pytest.mark.slow
def test_a_formula_edit_on_the_host_path_compiles_its_nodes_and_kernels(try_workspace,
                                                                        edited_torch):
    """One formula's edit compiles the nodes' unit and the kernels' unit (its forward
    formula is in the kernels), not the registrations or the Python classes; the kernels
    compiled are the edited generator's."""
    spec, cache = try_workspace
    where = ("sin", "--spec", str(spec), "--cache", str(cache), "--dtype", "float64")
    # other factors than test_try's: the try directory is shared, and the nodes' unit text is
    # the same on both paths
    compiled, before, after = recompiled_parts(spec, lambda: run_try(edited_torch, *where),
                                               3, 4)
    assert compiled and set().union(*compiled) == {"nodes", "kernels"}, compiled
    kernels = [p for p in set(after) - set(before) if "kernels" in unit_parts(p)]
    assert any(CHANGED.split(" = ")[0] in _unit_text(p) for p in kernels)


def _unit_text(unit_object: Path) -> str:
    """A unit's source with the parts it includes."""
    source = unit_object.with_suffix(".cpp").read_text()
    return source + "".join(Path(line.split('"')[1]).read_text()
                            for line in source.splitlines() if line.startswith('#include "/'))
