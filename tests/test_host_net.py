"""The host path's net (service/generator/check.py: host_net): a generator's first host build on
this machine runs it whole on the spec, after the files are written, and compares; the builds
after it run no whole generator. A difference is reported (under --generator-check strict, an
error): here a generator whose text depends on the process that runs it."""

from __future__ import annotations

import shutil

import pytest
from support.compile import run_build
from support.specs import DERIVATIVES, installed_torchgen, stage_packaged_spec

from gradshard.service.exit_codes import EXIT_GENERATOR_MISMATCH

HOST = ("--codegen-only", "--generator-path", "host")
FACTORIES = "autograd/gen_variable_factories.py"
COMMENT = '"generated_comment": "@"'


@pytest.mark.slow
def test_the_net_runs_on_a_generators_first_host_build_only(capsys, tmp_path):
    _, spec = stage_packaged_spec(tmp_path / "spec")
    out, cache = tmp_path / "out", tmp_path / "cache"
    code, first, err = run_build(capsys, spec, out, cache, *HOST)
    assert code == 0, err
    generator = first["generator"]
    assert generator["checked"] and generator["state"] == "host", generator
    assert "checked against its whole run: every file the same" in generator["summary"]
    assert first["seconds"]["check"] > 1.0 and generator["report"] is None
    derivatives = spec / DERIVATIVES
    derivatives.write_text(derivatives.read_text().replace(
        "self: grad * self.cos().conj()", "self: grad * 2 * self.cos().conj()", 1))
    code, edited, err = run_build(capsys, spec, out, cache, *HOST)
    assert code == 0 and edited["status"] == "built", err
    assert edited["generator"]["checked"] == [] and "check" not in edited["seconds"]


def _process_dependent_generator(root) -> tuple:
    """The installed torchgen, its variable_factories.h comment printing the pid."""
    torchgen = root / "torchgen"
    shutil.copytree(installed_torchgen(), torchgen, ignore=shutil.ignore_patterns("__pycache__"))
    source = torchgen / "packaged" / FACTORIES
    text = source.read_text()
    assert COMMENT in text
    source.write_text(text.replace(
        COMMENT, '"generated_comment": f"pid {__import__(\'os\').getpid()} @"', 1))
    return torchgen


@pytest.mark.slow
def test_a_difference_from_the_whole_run_is_reported(capsys, tmp_path):
    _, spec = stage_packaged_spec(tmp_path / "spec", _process_dependent_generator(tmp_path))
    code, report, err = run_build(capsys, spec, tmp_path / "out", tmp_path / "cache", *HOST)
    assert code == 0, err
    generator = report["generator"]
    assert generator["differing"] == ["variable_factories.h"], generator
    assert "1 files differ from its whole run: variable_factories.h" in generator["summary"]
    assert "the host path wrote 1 files otherwise than a whole run" in generator["report"]
    assert (tmp_path / "out" / "variable_factories.h").read_text().count("pid ") == 1
    # strict (CI): the net runs on every build, and a difference is an error, again on the
    # next build of the same spec (the first one's files were recorded before its net ran)
    for _ in range(2):
        code, _, err = run_build(capsys, spec, tmp_path / "out2", tmp_path / "cache", *HOST,
                                 "--generator-check", "strict")
        assert code == EXIT_GENERATOR_MISMATCH and "variable_factories.h" in err
