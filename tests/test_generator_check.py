"""Never silently wrong: the spec's generator is identified by the hash of its sources, a
generator gradshard does not reproduce is run and compared, and what differs is served from
it, reported once per (generator, spec), an error under --generator-check strict, said under
skip; its verdicts are this machine's, never the cache's.

The unknown generator of most tests is a copy of the installed torchgen (2.13) with one
statement of VariableType's kernels changed (DECLARE_GRAD_FN), so nothing is downloaded; the
tests marked `releases` run 2.12.0's and 2.14.1's own torchgen (tests/support/releases.py).
Where what is served must be the checked spec's own, a fake generator of a few lines beside a
copy of the packaged spec (`printing_spec`) prints a comment gradshard does not read, in a
second.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support.daemon import Running
from support.releases import release_torchgen
from support.specs import DERIVATIVES, installed_torchgen, stage_packaged_spec
from test_generator_runner import fake_generator

from gradshard.cache.errors import GeneratorFailed
from gradshard.cache.store.database import blob_hash
from gradshard.cache.store.verdicts import (KEPT_CHECKS, KEPT_VERSIONS, LEDGER_FILE,
                                            STATE_VARIABLE, VerdictLedger)
from gradshard.service.cli import main
from gradshard.service.exit_codes import EXIT_COMPILE
from gradshard.service.files.spec_location import SpecLocation, locate_spec
from gradshard.service.generator.compare import first_difference
from gradshard.service.generator.identity import Origin, identify_generator
from gradshard.service.generator.known import KNOWN_GENERATORS
from gradshard.service.generator.runner import run_generator

DECLARATION = "c10::intrusive_ptr<${op}> grad_fn;"
CHANGED_DECLARATION = "c10::intrusive_ptr<${op}> grad_fn = nullptr;"
CHANGED_LINE = "grad_fn = nullptr;"  # what the changed statement writes into the kernels
VARIABLE_TYPE_FILES = {"VariableTypeEverything.cpp", *(f"VariableType_{k}.cpp" for k in range(10))}
SIN = "- name: sin(Tensor self) -> Tensor\n  self: grad * self.cos().conj()\n"
SIN_EDITED = "- name: sin(Tensor self) -> Tensor\n  self: grad * self.cos().conj() * 2\n"


@pytest.fixture(scope="module")
def module_cache(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("cache")


@pytest.fixture(autouse=True)
def shared_cache(private_cache, module_cache, monkeypatch) -> Path:
    """One gradshard cache for the module's builds (the altered generators' specs are the
    installed one's, so every build after the first is answered by it): what these tests
    check is the generator, run against this machine's verdicts, which stay per test."""
    monkeypatch.setenv("GRADSHARD_CACHE", str(module_cache))
    return module_cache


def altered_torchgen(root: Path, source: Path, old: str = DECLARATION,
                     new: str = CHANGED_DECLARATION,
                     module: str = "gen_variable_type.py") -> Path:
    """A copy of the torchgen package `source` with one statement of an autograd generator
    changed; its packaged spec."""
    target = root / "torchgen"
    shutil.copytree(source, target, ignore=shutil.ignore_patterns("__pycache__"))
    path = target / "packaged" / "autograd" / module
    text = path.read_text()
    assert text.count(old) == 1, old
    path.write_text(text.replace(old, new))
    return target / "packaged"


# the check of gradshard's own files is the ported path's (auto would take the host path for
# these generators in a --codegen-only build: tests/test_host_*.py)
PORTED = ("--generator-path", "ported")


def build(capsys, spec: Path, out: Path, *extra: str) -> tuple[int, dict, str]:
    """`gradshard build --codegen-only --json` on the ported path: its exit code, its JSON (or
    {}) and stderr."""
    code = main(["build", "--codegen-only", "--json", "--spec", str(spec), "--out", str(out),
                 *PORTED, *extra])
    captured = capsys.readouterr()
    return code, json.loads(captured.out) if captured.out.strip() else {}, captured.err


def texts(directory: Path) -> dict[str, bytes]:
    return {p.relative_to(directory).as_posix(): p.read_bytes()
            for p in directory.rglob("*") if p.is_file()}


def printing_spec(root: Path, packaged_spec: Path, printed: str) -> Path:
    """A copy of the packaged spec beside a fake torchgen (tests/test_generator_runner.py)
    whose generator writes Functions.h as the lines of derivatives.yaml that start with
    PRINTED, a comment gradshard does not read, and its own few files: an unknown generator
    that runs in a second and whose output gradshard's files do not determine."""
    spec = root / "torchgen" / "packaged"
    shutil.copytree(packaged_spec, spec, ignore=shutil.ignore_patterns("__pycache__", "*.py"))
    fake_generator(root, """\
        with open(os.path.join(autograd_dir, "derivatives.yaml")) as spec:
            write(out, "Functions.h", "".join(l for l in spec if l.startswith("# printed")))
        """, spec / "autograd")
    print_in(spec, printed)
    return spec


def print_in(spec: Path, printed: str) -> None:
    """The spec's derivatives.yaml with `# printed: <printed>` as its first line."""
    path = spec / DERIVATIVES
    lines = path.read_text().splitlines(keepends=True)
    lines = lines[1:] if lines[0].startswith("# printed") else lines
    path.write_text(f"# printed: {printed}\n" + "".join(lines))


# -- identity (fast) ------------------------------------------------------------------------


def test_the_installed_generator_is_known_by_its_hash():
    identity = identify_generator(locate_spec(None))
    assert identity.release == "2.13.0" and identity.reproduced and identity.known
    assert identity.origin == Origin.BESIDE and identity.torchgen == installed_torchgen()
    assert KNOWN_GENERATORS[identity.hash].release == "2.13.0"
    assert "known: gradshard reproduces it" in identity.describe()


def test_copies_of_a_spec_keep_its_generator(tmp_path, packaged_spec):
    """A staged torchgen of symbolic links, a packaged copy with its autograd generators and
    no torchgen (the installed one goes with them), and a hand-made spec with no generator
    files (the installed one's): one hash, each origin said."""
    known = identify_generator(locate_spec(None)).hash
    _, staged = stage_packaged_spec(tmp_path / "staged")
    assert identify_generator(locate_spec(str(staged))).hash == known
    shutil.copytree(packaged_spec, tmp_path / "copy", ignore=shutil.ignore_patterns("__pycache__"))
    copied = identify_generator(locate_spec(str(tmp_path / "copy")))
    assert (copied.hash, copied.origin) == (known, Origin.INSTALLED_TORCHGEN)
    shutil.copytree(packaged_spec, tmp_path / "bare",
                    ignore=shutil.ignore_patterns("__pycache__", "*.py"))
    bare = identify_generator(locate_spec(str(tmp_path / "bare")))
    assert (bare.hash, bare.origin) == (known, Origin.INSTALLED)


def test_one_changed_statement_is_another_generator(tmp_path):
    spec = altered_torchgen(tmp_path, installed_torchgen())
    identity = identify_generator(locate_spec(str(spec)))
    assert identity.hash not in KNOWN_GENERATORS and identity.release is None
    assert not identity.known and identity.torchgen == tmp_path / "torchgen"
    assert "not known to gradshard" in identity.describe()


def test_a_link_back_up_the_torchgen_tree_is_hashed_once(tmp_path):
    """A hostile (or careless) symbolic link to a parent directory neither hangs the hash
    nor changes it: each directory is read once."""
    spec = altered_torchgen(tmp_path, installed_torchgen())
    before = identify_generator(locate_spec(str(spec))).hash
    (tmp_path / "torchgen" / "api" / "up").symlink_to("..")
    assert identify_generator(locate_spec(str(spec))).hash == before


def test_a_known_generator_never_opens_the_verdicts(tmp_path, capsys, monkeypatch):
    """The default spec costs nothing more: recognised by hash, never run, the machine's
    verdicts never opened; every build names its generator."""
    state = tmp_path / "state"
    monkeypatch.setenv(STATE_VARIABLE, str(state))
    code, report, _ = build(capsys, Path(locate_spec(None).root), tmp_path / "out")
    assert code == 0 and report["generator"]["state"] == "known"
    assert report["generator"]["generator"]["release"] == "2.13.0"
    assert not state.exists()


# -- the ledger and the report (fast) -------------------------------------------------------


def test_records_are_keyed_by_generator_and_spec_and_texts_checked_on_read(tmp_path):
    ledger = VerdictLedger(tmp_path)
    text = b"the real b"
    real_b = blob_hash("text", text)
    ledger.record("gen", "spec", {real_b: text}, {"b.cpp": real_b, "c.cpp": ""}, {})
    record = ledger.check_record("gen", "spec")
    assert record.differing == ("b.cpp", "c.cpp") and not record.reported
    assert ledger.real_text(real_b) == text
    assert ledger.check_record("gen", "another spec") is None  # never another spec's
    assert ledger.check_record("other", "spec") is None
    # a stored text that is not what its hash says is never served
    with sqlite3.connect(tmp_path / LEDGER_FILE) as db:
        db.execute("INSERT INTO real_files VALUES ('0123', x'41')")
    assert ledger.real_text("0123") is None
    ledger.close()


def test_a_ledger_of_the_earlier_layout_is_started_anew(tmp_path):
    """Its verdicts were keyed by gradshard's hash of each file and may serve another spec's
    text: none is kept, and every spec is checked again."""
    with sqlite3.connect(tmp_path / LEDGER_FILE) as db:
        db.execute("CREATE TABLE file_verdicts (generator, name, ours, real)")
        db.execute("CREATE TABLE checks (generator, spec, checked, differing, extra, "
                   "reported)")
        db.execute("INSERT INTO checks VALUES ('gen', 'spec', 0, '{}', '{}', 1)")
    ledger = VerdictLedger(tmp_path)
    assert ledger.check_record("gen", "spec") is None
    ledger.record("gen", "spec", {}, {}, {})
    assert ledger.check_record("gen", "spec") is not None
    ledger.close()


def test_a_damaged_ledger_is_set_aside(tmp_path):
    (tmp_path / LEDGER_FILE).write_bytes(b"not a database" * 100)
    ledger = VerdictLedger(tmp_path)
    assert ledger.check_record("gen", "spec") is None
    assert list(tmp_path.glob(f"{LEDGER_FILE}.damaged-*"))
    ledger.close()


def test_the_first_difference_shows_both_sides():
    lines = first_difference("a\nb\nc\n", "a\nB\nc\n")
    assert lines[0] == "  line 2:" and "  - b" in lines and "  + B" in lines
    assert "does not write" in first_difference(None, "x")[0]


# -- what is served is the checked spec's own (a fake generator: fast) ---------------------


def test_an_edit_only_the_generator_reads_runs_it_again(tmp_path, capsys, packaged_spec):
    """A comment gradshard does not read, printed by the generator: gradshard writes the
    same files, yet the spec is another one, checked anew, its own text served."""
    spec = printing_spec(tmp_path / "gen", packaged_spec, "one")
    code, first, _ = build(capsys, spec, tmp_path / "out")
    assert code == 0 and first["generator"]["state"] == "differs", first
    assert (tmp_path / "out" / "Functions.h").read_text() == "# printed: one\n"
    print_in(spec, "two")
    code, second, _ = build(capsys, spec, tmp_path / "out")
    assert code == 0 and "Functions.h" in second["generator"]["checked"]
    assert (tmp_path / "out" / "Functions.h").read_text() == "# printed: two\n"


def test_an_undo_is_served_its_own_specs_text(tmp_path, capsys, packaged_spec):
    """S1, then S2 (a formula and the printed comment edited: the generator runs), then S1
    again: S1's own real text, from this machine's record of S1, without running it."""
    spec = printing_spec(tmp_path / "gen", packaged_spec, "one")
    derivatives = spec / DERIVATIVES
    original = derivatives.read_text()
    assert build(capsys, spec, tmp_path / "out")[0] == 0
    derivatives.write_text(original.replace(SIN, SIN_EDITED))
    print_in(spec, "two")
    code, edited, _ = build(capsys, spec, tmp_path / "out")
    assert code == 0 and edited["generator"]["checked"]
    assert (tmp_path / "out" / "Functions.h").read_text() == "# printed: two\n"
    derivatives.write_text(original)
    code, undone, _ = build(capsys, spec, tmp_path / "out")
    assert code == 0 and undone["generator"]["checked"] == []  # S1's record: not run
    assert (tmp_path / "out" / "Functions.h").read_text() == "# printed: one\n"


def test_a_copy_elsewhere_is_served_its_own_text(tmp_path, capsys, packaged_spec):
    """The same bytes at another path are another spec to a generator that prints where its
    spec is (torchgen's `@generated from` is the templates' path relative to torchgen, which
    a copy with the installed torchgen moves): the copy runs the generator."""
    for copy in ("a", "b"):
        spec = printing_spec(tmp_path / copy, packaged_spec, "one")
        path = spec / "autograd" / "gen_autograd.py"
        printed = '"".join(l for l in spec if l.startswith("# printed"))'
        assert printed in path.read_text()
        path.write_text(path.read_text().replace(printed, "autograd_dir"))
        code, report, _ = build(capsys, spec, tmp_path / f"out-{copy}")
        assert code == 0 and report["generator"]["checked"], report["generator"]
        assert (tmp_path / f"out-{copy}" / "Functions.h").read_text() == str(spec / "autograd")


def gradshard_in(directory: Path, *words: str) -> subprocess.CompletedProcess:
    """The real command, run in `directory` (this process's cache and state directories)."""
    script = Path(sys.executable).with_name("gradshard")
    return subprocess.run([str(script), *words], cwd=directory, capture_output=True,
                          text=True, env=dict(os.environ), timeout=600)


def test_a_relative_spec_runs_its_generator(tmp_path, packaged_spec):
    """`--spec packaged` from the spec's parent: `generator` and a build run the generator
    with absolute paths (they once ran it in its own directory with relative ones, and
    blamed the generator)."""
    spec = printing_spec(tmp_path / "gen", packaged_spec, "one")
    done = gradshard_in(spec.parent, "build", "--codegen-only", "--spec", "packaged",
                        "--out", "out", "--json", *PORTED)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["generator"]["checked"]  # run by the build
    assert (spec.parent / "out" / "Functions.h").read_text() == "# printed: one\n"
    done = gradshard_in(spec.parent, "generator", "--spec", "packaged")
    assert done.returncode == 7, done.stderr  # the fake differs from gradshard: reported
    assert "Functions.h" in done.stdout and "could not" not in done.stderr


# -- an unknown generator, run and compared (slow: each run is ~5 s) ----------------------


@pytest.fixture(scope="module")
def unknown_spec(tmp_path_factory) -> Path:
    """The installed torchgen with VariableType's grad_fn declaration changed."""
    return altered_torchgen(tmp_path_factory.mktemp("unknown"), installed_torchgen())


@pytest.mark.slow
def test_an_unknown_generator_is_run_and_what_differs_is_served_from_it(unknown_spec, tmp_path,
                                                                       capsys):
    code, report, _ = build(capsys, unknown_spec, tmp_path / "out")
    verdict = report["generator"]
    assert code == 0 and verdict["state"] == "differs"
    assert set(verdict["differing"]) == VARIABLE_TYPE_FILES
    assert verdict["report"].count("grad_fn = nullptr;") >= 1  # the first differing lines
    real = run_generator(identify_generator(locate_spec(str(unknown_spec))),
                         locate_spec(str(unknown_spec)), 300).files
    written = texts(tmp_path / "out")
    # file for file: every file the generator writes but its first stage (flat leaves it out)
    assert written == {n: t for n, t in real.items() if n != "templates/VariableType.cpp"}
    assert CHANGED_LINE in written["VariableType_0.cpp"].decode()

    # reported once per (generator, spec); the next build into another directory says how
    # many files came from the generator, without running it, and the next is up to date
    code, again, _ = build(capsys, unknown_spec, tmp_path / "out2")
    assert code == 0 and again["generator"]["report"] is None
    assert again["generator"]["checked"] == [] and again["generator"]["state"] == "differs"
    assert texts(tmp_path / "out2") == written
    code, third, _ = build(capsys, unknown_spec, tmp_path / "out2")
    assert third["status"] == "up to date" and third["generator"]["state"] == "differs"


@pytest.mark.slow
def test_strict_fails_skip_says_so_and_a_restored_cache_checks_again(unknown_spec, tmp_path,
                                                                    capsys, monkeypatch):
    code, _, err = build(capsys, unknown_spec, tmp_path / "strict", "--generator-check",
                         "strict")
    assert code == 7 and "VariableType_0.cpp" in err
    assert not (tmp_path / "strict").exists()  # nothing written

    code, report, _ = build(capsys, unknown_spec, tmp_path / "skip", "--generator-check", "skip")
    assert code == 0 and report["generator"]["state"] == "skipped"
    assert "unverified" in report["generator"]["summary"]
    assert CHANGED_LINE not in (tmp_path / "skip" / "VariableType_0.cpp").read_text()

    # another machine (a fresh state directory) restoring this cache checks again
    monkeypatch.setenv(STATE_VARIABLE, str(tmp_path / "another-machine"))
    code, report, _ = build(capsys, unknown_spec, tmp_path / "restored")
    assert code == 0 and report["generator"]["report"]  # the generator ran: reported
    assert len(report["generator"]["checked"]) == 54


@pytest.mark.slow
def test_a_generator_that_fails_leaves_gradshards_files_unverified(tmp_path, capsys):
    spec = altered_torchgen(tmp_path / "gen", installed_torchgen(),
                            "def gen_autograd(\n", "def gen_autograd(*_a, **_k):\n    raise "
                            "RuntimeError('the generator broke')\n\n\ndef _unused(\n",
                            "gen_autograd.py")
    code, _, err = build(capsys, spec, tmp_path / "out")
    assert code == 8 and "the generator broke" in err and "raised" in err
    assert (tmp_path / "out" / "VariableType_0.cpp").is_file()  # gradshard's, written
    code, _, err = build(capsys, spec, tmp_path / "out")  # never "up to date": tried again
    assert code == 8 and "the generator broke" in err

    code, _, err = build(capsys, unknown_twin(tmp_path), tmp_path / "slow",
                         "--generator-timeout", "0.5")
    assert code == 8 and "did not finish within 0.5 s" in err


def unknown_twin(tmp_path: Path) -> Path:
    return altered_torchgen(tmp_path / "twin", installed_torchgen())


@pytest.mark.slow
def test_the_generator_command_runs_it_on_demand(unknown_spec, capsys):
    code = main(["generator", "--spec", str(locate_spec(None).root), "--json"])
    answer = json.loads(capsys.readouterr().out)
    assert code == 0 and answer["ok"] and answer["compared"] == 54  # the known one, run too
    code = main(["generator", "--spec", str(unknown_spec)])
    out = capsys.readouterr().out
    assert code == 7 and "11 differ" in out and "VariableType_0.cpp" in out


@pytest.mark.slow
def test_try_runs_the_ops_of_a_differing_generator_on_the_host_path(unknown_spec, tmp_path,
                                                                    capsys):
    """Unnamed, another generator's spec is refused outright (its ops cannot be compared with
    the installed ones); named, an op whose kernels that generator writes differently is tried
    on the host path: its own kernels, compiled and checked (tests/test_try_host.py checks the
    patched code itself)."""
    code = main(["try", "--spec", str(unknown_spec), "--json"])
    assert code == 2 and "cannot be compared" in capsys.readouterr().out
    assert build(capsys, unknown_spec, tmp_path / "out")[0] == 0
    code = main(["try", "sin", "--spec", str(unknown_spec), "--json"])
    answer = json.loads(capsys.readouterr().out)
    assert code == 0 and answer["generator_path"] == "host"
    assert {s["verdict"] for op in answer["ops"] for s in op["samples"]} == {"PASS"}


# -- other releases' own torchgen ----------------------------------------------------------


@pytest.mark.releases
def test_the_other_releases_are_known_and_never_run(tmp_path, capsys, monkeypatch):
    """2.12.0 and 2.14.1 are reproduced: their builds run no generator and report nothing
    (tests/test_releases.py compares their files with each release's own)."""
    state = tmp_path / "state"
    monkeypatch.setenv(STATE_VARIABLE, str(state))
    for version, release in (("2.12.0", "2.12.0"), ("2.14.1", "2.14.x")):
        spec = release_torchgen(version) / "packaged"
        identity = identify_generator(SpecLocation(spec, "packaged"))
        assert identity.release == release and identity.known
        code, report, _ = build(capsys, spec, tmp_path / version)
        assert code == 0 and report["generator"]["state"] == "known"
        assert not report["generator"].get("differing")
    assert not state.exists()  # no verdict was looked for, no generator run


@pytest.mark.releases
def test_a_changed_2_12_0_generators_spec_errors_name_it(tmp_path, capsys):
    """An unknown generator is built with the default release's rules: 2.12.0's spec, read
    as 2.13.0 reads it, has Dimname errors, said to be where the rules differ."""
    spec = altered_torchgen(tmp_path / "gen", release_torchgen("2.12.0"),
                            "std::shared_ptr<${op}> grad_fn;", "std::shared_ptr<${op}> grad_fn{};")
    code = main(["check", "--spec", str(spec)])
    err = capsys.readouterr().err
    assert code == 1 and "unknown type 'Dimname'" in err
    assert err.count("an unknown generator (") == 2  # before and after the errors
    assert "cannot read this one yet" in err.splitlines()[-1]


# -- the daemon ---------------------------------------------------------------------------


def settled(running: Running, done, timeout: float = 240) -> dict:
    """The daemon's status once `done(status)` holds and it is idle."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status = running.status()
        if status.get("state") == "idle" and done(status):
            return status
        time.sleep(0.1)
    raise AssertionError(f"the daemon did not get there: {running.status()}")


def last_check(status: dict) -> dict:
    return ((status.get("generator") or {}).get("background") or {}).get("last") or {}


@pytest.mark.slow
def test_the_daemon_checks_in_the_background_rechecks_an_edit_and_a_saved_generator(
        tmp_path):
    spec = altered_torchgen(tmp_path / "gen", installed_torchgen())
    running = Running(tmp_path, spec, "--codegen-only", *PORTED)
    assert running.start().returncode == 0
    try:
        status = settled(running, lambda s: last_check(s).get("state") == "differs"
                         and s["last"].get("generator", {}).get("state") == "differs")
        assert len(last_check(status)["checked"]) == 54
        assert CHANGED_LINE in (running.out / "VariableType_0.cpp").read_text()
        log = running.cli("daemon", "logs", *running.where()).stdout
        # the first build's files were written before the check ran, then built again
        pending = log.index("generator check pending")
        assert pending < log.index("generator check: running") < log.index(
            "11 from the spec's generator")
        assert "WARNING" in status["last"]["text"]  # the report, once

        running.edit(SIN, SIN_EDITED)
        status = settled(running, lambda s: "Functions.cpp" in last_check(s).get("checked", ())
                         and s["last"].get("generator", {}).get("state") == "differs")
        assert len(last_check(status)["checked"]) == 54  # another spec: checked whole
        assert "* 2" in (running.out / "Functions.cpp").read_text()
        assert CHANGED_LINE in (running.out / "VariableType_0.cpp").read_text()

        # the generator's own source saved back as torchgen 2.13.0 has it: a rebuild, known
        generator = spec / "autograd" / "gen_variable_type.py"
        generator.write_text(generator.read_text().replace(CHANGED_DECLARATION, DECLARATION))
        status = settled(running, lambda s: s["last"].get("generator", {}).get("state")
                         == "known")
        assert CHANGED_LINE not in (running.out / "VariableType_0.cpp").read_text()
        assert "* 2" in (running.out / "Functions.cpp").read_text()
    finally:
        running.cli("daemon", "stop", *running.where(), check=False)


@pytest.mark.slow
@pytest.mark.compiler
def test_the_compile_compiles_the_real_files_as_they_are(unknown_spec, tmp_path, capsys):
    """On the ported path, one of the real VariableType files, compiled as it is from --out
    (compiling them all takes minutes: pipeline/layout/as_is.py's tests check the whole
    layout; the host path cuts units of its own: tests/test_host_compile.py)."""
    out = tmp_path / "out"
    code = main(["build", "--spec", str(unknown_spec), "--out", str(out), "--json",
                 "--units", "VariableType_0", *PORTED])
    report = json.loads(capsys.readouterr().out)
    assert code == 0, report
    assert report["compile"]["units"] >= 1
    commands = json.loads((out / "compile" / "compile_commands.json").read_text())
    (unit,) = [c for c in commands if c["file"].endswith("VariableType_0.cpp")]
    assert Path(unit["file"]).resolve() == (out / "VariableType_0.cpp").resolve()
    assert CHANGED_LINE in (out / "VariableType_0.cpp").read_text()


@pytest.mark.releases
@pytest.mark.slow
def test_a_changed_2_14_1_generator_is_caught_the_same_way(tmp_path, capsys):
    spec = altered_torchgen(tmp_path / "gen", release_torchgen("2.14.1"))
    assert identify_generator(locate_spec(str(spec))).release is None  # not 2.14.x any more
    code, report, _ = build(capsys, spec, tmp_path / "out")
    assert code == 0 and set(report["generator"]["differing"]) == VARIABLE_TYPE_FILES
    text = (tmp_path / "out" / "VariableType_0.cpp").read_text()
    assert CHANGED_LINE in text and "fire_node_creation_hooks" in text
    code, _, err = build(capsys, spec, tmp_path / "strict", "--generator-check", "strict")
    assert code == 7 and CHANGED_LINE in err
    # tried on the host path, its kernels call what the installed torch 2.13's headers lack:
    # the compiler says so, placed at sin's entry
    code = main(["try", "sin", "--spec", str(spec), "--json"])
    answer = json.loads(capsys.readouterr().out)
    assert code == EXIT_COMPILE and answer["failed"] == ["kernels.cpp"]
    assert any("fire_node_creation_hooks" in e["message"] and e["entry"] == "sin"
               for e in answer["errors"])


def test_the_ledger_stays_bounded(tmp_path):
    """A day of saves under a differing generator: each generator keeps its last KEPT_CHECKS
    spec records, fewer when a file's real texts among them would be more than
    KEPT_VERSIONS, and a real text no record names is dropped."""
    ledger = VerdictLedger(tmp_path)
    for version in range(KEPT_CHECKS + 5):  # one file the same in every spec
        ledger.record("same", f"spec{version}", {}, {"a.cpp": ""}, {})
    assert ledger.check_record("same", f"spec{KEPT_CHECKS + 4}") is not None
    assert ledger.check_record("same", "spec4") is None  # the oldest go
    assert ledger.check_record("same", "spec5") is not None
    for version in range(KEPT_VERSIONS + 5):  # one file a new text in every spec
        text = f"real {version}".encode()
        digest = blob_hash("text", text)
        ledger.record("gen", f"spec{version}", {digest: text}, {"a.cpp": digest}, {})
    newest = ledger.check_record("gen", f"spec{KEPT_VERSIONS + 4}")
    assert ledger.real_text(newest.served["a.cpp"]) == f"real {KEPT_VERSIONS + 4}".encode()
    assert ledger.check_record("gen", f"spec{KEPT_VERSIONS + 4 - KEPT_VERSIONS}") is None
    with sqlite3.connect(tmp_path / LEDGER_FILE) as db:
        assert db.execute("SELECT COUNT(*) FROM real_files").fetchone()[0] == KEPT_VERSIONS
        assert db.execute("SELECT COUNT(*) FROM checks WHERE generator = 'gen'"
                          ).fetchone()[0] == KEPT_VERSIONS
    ledger.close()


@pytest.mark.parametrize("damage", ["not json", "[1, 2]", '{"a.cpp": 3}'])
def test_a_record_this_module_did_not_write_is_a_miss_and_pruned_like_any(damage, tmp_path):
    """One reading of a record (verdicts.py: _names_and_hashes) for lookups and pruning: a
    row whose differing files are not names to hashes is a miss (the check runs again) and
    the next record's pruning passes over it, its real texts too (SQLite's json_each)."""
    ledger = VerdictLedger(tmp_path)
    ledger.record("gen", "spec0", {}, {"a.cpp": ""}, {})
    with sqlite3.connect(tmp_path / LEDGER_FILE) as db:
        db.execute("UPDATE checks SET differing = ? WHERE spec = 'spec0'", (damage,))
    assert ledger.check_record("gen", "spec0") is None
    digest = blob_hash("text", b"real")
    ledger.record("gen", "spec1", {digest: b"real"}, {"a.cpp": digest}, {})
    assert ledger.check_record("gen", "spec1").served == {"a.cpp": digest}
    assert ledger.real_text(digest) == b"real"
    ledger.close()


def test_a_ledger_damaged_in_use_fails_the_check_not_gradshard(tmp_path):
    """Pages damaged behind a valid header: the check fails with its own error (exit 8), the
    ledger is set aside, and a new one serves the next build."""
    ledger = VerdictLedger(tmp_path)
    ledger.record("gen", "spec", {}, {f"f{i}.cpp": "" for i in range(2000)}, {})
    ledger.close()
    with sqlite3.connect(tmp_path / LEDGER_FILE) as db:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    data = bytearray((tmp_path / LEDGER_FILE).read_bytes())
    data[8192:40960] = b"\xff" * (40960 - 8192)  # pages after the header
    (tmp_path / LEDGER_FILE).write_bytes(bytes(data))
    with pytest.raises(GeneratorFailed, match="damaged"):
        VerdictLedger(tmp_path).check_record("gen", "spec")
    assert list(tmp_path.glob(f"{LEDGER_FILE}.damaged-*"))
    assert VerdictLedger(tmp_path).check_record("gen", "spec") is None
