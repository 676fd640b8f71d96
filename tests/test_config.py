"""[tool.gradshard] (service/config_file.py): the nearest pyproject.toml with the table, or a
gradshard.toml, is found from the working directory up; file < environment < flags; a bad
key or value is an error at its line, the known keys as the hint; `gradshard config` says
where each value comes from."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support.specs import MINI_SPEC

from gradshard.service.cli import given_options, main
from gradshard.service.config_file import applied_config, find_config

PYPROJECT = """[project]
name = "somewhere"

[tool.gradshard]
cache = "file-cache"
tree = "pytorch"
cache-max-size = "3G"
"""


@pytest.fixture
def project(tmp_path, monkeypatch) -> Path:
    """A project whose pyproject.toml has the table, the command run from a subdirectory,
    none of the variables the file's keys yield to set."""
    (tmp_path / "pyproject.toml").write_text(PYPROJECT)
    (tmp_path / "src" / "deep").mkdir(parents=True)
    monkeypatch.chdir(tmp_path / "src" / "deep")
    for variable in ("GRADSHARD_CACHE", "GRADSHARD_CACHE_MAX", "CXX", "CXXFLAGS",
                     "CXX_LAUNCHER", "GRADSHARD_TRY_CXX", "GRADSHARD_TRY_MAX_SIZE"):
        monkeypatch.delenv(variable, raising=False)
    return tmp_path


def missing_cache(capsys, *words: str) -> str:
    """The cache directory `stats` was asked for (it exists nowhere: its error names it)."""
    assert main(["stats", "--json", *words]) == 2
    return json.loads(capsys.readouterr().out)["error"].removeprefix("there is no cache at ")


def test_file_then_environment_then_flags(project, capsys, monkeypatch):
    assert missing_cache(capsys) == str(project / "file-cache")  # relative to the file
    monkeypatch.setenv("GRADSHARD_CACHE", str(project / "env-cache"))
    assert missing_cache(capsys) == str(project / "env-cache")
    assert missing_cache(capsys, "--cache", "flag-cache") == "flag-cache"
    assert missing_cache(capsys, "--cache=flag-cache") == "flag-cache"


def test_the_nearest_file_with_the_table_decides(project):
    (project / "src" / "pyproject.toml").write_text('[project]\nname = "inner"\n')
    assert find_config(Path.cwd()).path == project / "pyproject.toml"  # no table: passed
    (project / "src" / "gradshard.toml").write_text('tree = "flat"\n')
    found = find_config(Path.cwd())
    assert found.path == project / "src" / "gradshard.toml" and found.values == {"tree": "flat"}
    assert found.lines == {"tree": 1}


def test_a_variable_the_file_fills_is_set_for_the_command_only(project):
    config = find_config(Path.cwd())
    args = type("Args", (), {})()
    with applied_config(args, config, "build", set()):
        assert os.environ["GRADSHARD_CACHE_MAX"] == "3G"
        assert args.tree == "pytorch" and args.cache == str(project / "file-cache")
    assert "GRADSHARD_CACHE_MAX" not in os.environ
    args = type("Args", (), {"tree": "flat"})()
    with applied_config(args, config, "build", given_options(["build", "--tree", "flat"],
                                                            "build")):
        assert args.tree == "flat"  # the flag


def test_given_options_are_what_the_words_name():
    assert given_options(["build", "--tree=flat", "-j", "3"], "build") == {"tree", "jobs"}
    assert given_options(["build"], "build") == set()
    assert given_options(["try", "--cxx", "g++"], "try") == {"cxx"}


@pytest.mark.parametrize("line, expected", [
    ('colour = "red"', "unknown key 'colour'"),
    ('tree = "wide"', "'tree' is not valid: expected one of flat, pytorch"),
    ("jobs = -1", "'jobs' must be a whole number"),
    ("include = 3", "'include' must be a list of strings"),
    ('cache-max-size = "lots"', "'cache-max-size' must be a size"),
])
def test_a_bad_key_or_value_is_an_error_at_its_line(project, capsys, line, expected):
    (project / "pyproject.toml").write_text(f'[project]\nname = "x"\n\n[tool.gradshard]\n{line}\n')
    assert main(["check", "--spec", str(project / "nowhere")]) == 2
    error = capsys.readouterr().err
    assert f"{project / 'pyproject.toml'}:5: {expected}" in error
    if "unknown" in expected:
        assert "known keys: spec, out, tree, codegen-only, cache" in error


BAD = """[project]
name = "x"

[tool.gradshard]
jobz = 3
tree = "wide"
codegen_only = true
include = ["fine"]
colour = "red"
jobs = "many"

[tool.gradshard.compile]
flags = "-O2"
"""


def test_every_bad_key_and_value_is_reported_at_its_line(project, capsys):
    """All of them at once, in the file's order, each at its line, an unknown key with the
    known key it is closest to (issue 47: only the first was reported, with no did-you-mean);
    --json gives each one's file, line, key, message and hint."""
    pyproject = project / "pyproject.toml"
    pyproject.write_text(BAD)
    assert main(["check", "--spec", str(project / "nowhere")]) == 2
    error = capsys.readouterr().err
    expected = [f"{pyproject}:5: unknown key 'jobz': did you mean 'jobs'?",
                f"{pyproject}:6: 'tree' is not valid: expected one of flat, pytorch",
                f"{pyproject}:7: unknown key 'codegen_only': did you mean 'codegen-only'?",
                f"{pyproject}:9: unknown key 'colour'\n",
                f"{pyproject}:10: 'jobs' must be a whole number",
                f"{pyproject}:12: unknown key 'compile'"]  # a table of its own
    places = [error.index(line) for line in expected]
    assert places == sorted(places) and error.count("gradshard: error:") == 1
    assert "hint: known keys: spec, out, tree, codegen-only" in error
    assert "tree: flat or pytorch (--tree)" in error
    assert main(["stats", "--json"]) == 2
    problems = json.loads(capsys.readouterr().out)["problems"]
    assert [(p["file"], p["line"], p["key"]) for p in problems] == \
        [(str(pyproject), n, k) for n, k in ((5, "jobz"), (6, "tree"), (7, "codegen_only"),
                                            (9, "colour"), (10, "jobs"), (12, "compile"))]
    assert problems[0]["hint"].startswith("known keys: ")


def test_codegen_only_and_a_relative_spec_from_the_file(project, capsys):
    """`codegen-only = true` is a key: a build with no flag generates without compiling;
    `spec` relative to the file's directory, through `..`, is shown and used normalised."""
    spec = os.path.relpath(MINI_SPEC, project)
    assert ".." in spec
    (project / "pyproject.toml").write_text(f'[tool.gradshard]\nspec = "{spec}"\n'
                                            'codegen-only = true\nout = "out"\ncache = "cache"\n')
    assert main(["config", "--json"]) == 0
    shown = {s["key"]: s for s in json.loads(capsys.readouterr().out)["settings"]}
    assert shown["spec"]["value"] == str(MINI_SPEC.resolve())
    assert shown["codegen-only"]["value"] is True and shown["codegen-only"]["origin"] == "file"
    assert main(["config"]) == 0
    assert f"spec           = {MINI_SPEC.resolve()}  (file:" in capsys.readouterr().out
    assert main(["build", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["spec"] == str(MINI_SPEC.resolve()) and "compile" not in report
    assert report["out"] == str(project / "out") and (project / "out").is_dir()


def test_a_file_that_is_not_toml_is_an_error_naming_it(project, capsys):
    (project / "pyproject.toml").write_text(PYPROJECT + "tree = \n")
    assert main(["check"]) == 2
    assert f"{project / 'pyproject.toml'}: not valid TOML" in capsys.readouterr().err


def test_config_shows_each_value_and_its_origin(project, capsys, monkeypatch):
    monkeypatch.setenv("CXX", "clang++")
    assert main(["config", "--json"]) == 0
    shown = {s["key"]: s for s in json.loads(capsys.readouterr().out)["settings"]}
    assert shown["tree"] == {"key": "tree", "value": "pytorch", "origin": "file",
                             "where": f"{project / 'pyproject.toml'}:6"}
    assert shown["cxx"]["origin"] == "environment" and shown["cxx"]["where"] == "$CXX"
    assert shown["jobs"]["origin"] == "default"
    assert main(["config"]) == 0
    text = capsys.readouterr().out
    assert f"gradshard config: {project / 'pyproject.toml'}" in text
    assert "cache-max-size = 3G  (file:" in text and "(environment: $CXX)" in text


def test_the_daemon_starts_from_the_file_and_says_when_it_changed(tmp_path):
    """`daemon start` with nothing but --codegen-only in a project whose file names the spec,
    the cache and the out directory; `daemon status` (from the same directory: the file
    names its daemon) shows the file, then that it changed."""
    shutil.copytree(MINI_SPEC, tmp_path / "spec")
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text('[tool.gradshard]\nspec = "spec"\ncache = "cache"\nout = "out"\n')
    (tmp_path / "run").mkdir(mode=0o700)
    env = dict(os.environ, XDG_RUNTIME_DIR=str(tmp_path / "run"))

    def cli(*words: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "gradshard.service.entry", *words],
                              cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)

    started = cli("daemon", "start", "--codegen-only")
    assert started.returncode == 0, started.stderr
    try:
        status = wait_idle(cli)
        assert status["spec"] == str((tmp_path / "spec").resolve())
        assert status["config"] == {"file": str(pyproject), "changed": False}
        assert (tmp_path / "out").is_dir()
        pyproject.write_text(pyproject.read_text() + "# edited\n")
        assert json.loads(cli("daemon", "status", "--json").stdout)["config"]["changed"]
        assert "changed since the daemon started" in cli("daemon", "status").stdout
    finally:
        cli("daemon", "stop")


def wait_idle(cli, timeout: float = 120) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status = json.loads(cli("daemon", "status", "--json").stdout or "{}")
        if status.get("state") == "idle" and status.get("builds"):
            return status
        time.sleep(0.1)
    raise AssertionError("the daemon did not settle")


def test_a_setting_fills_its_option_as_the_option_reads_it():
    """A key that fills an option is carried by the option's record (service/options.py:
    Option.settings: the option and its key declared once) and has the option's kind of
    value: a flag's is true or false, a repeatable path option's a list of paths, a count's a
    whole number; it fills it only in commands that take it. Every key has its place in
    `gradshard config`'s order; every variable is one record of the environment's table, and
    the names cache/ says in its messages (it cannot import the table) are the table's."""
    from gradshard.cache.store.directory import CACHE_MAX_VARIABLE
    from gradshard.cache.store.verdicts import STATE_VARIABLE
    from gradshard.service.config_file import KEYS, ORDER
    from gradshard.service.defaults import (BOOLEAN, ENVIRONMENT, GRADSHARD_CACHE_MAX,
                                            GRADSHARD_STATE, PATHS, WHOLE)
    from gradshard.service.options import OPTIONS

    for option in OPTIONS:
        for setting in option.settings:
            assert (setting.kind == BOOLEAN) == (option.action == "store_true"), setting.key
            assert (setting.kind == PATHS) <= (option.action == "append"), setting.key
            assert (setting.kind == WHOLE) == (option.parse is int), setting.key
            assert setting.commands is None or setting.commands <= option.commands, setting.key
    assert [s.key for s in KEYS] == list(ORDER)
    variables = [s.variable for s in ENVIRONMENT]
    assert len(set(variables)) == len(variables)
    assert {s.variable for o in OPTIONS for s in o.settings if s.variable} <= set(variables)
    assert CACHE_MAX_VARIABLE == GRADSHARD_CACHE_MAX.variable
    assert STATE_VARIABLE == GRADSHARD_STATE.variable


def test_a_spec_reached_through_a_link_keeps_the_link(project, capsys):
    """`spec = "link"` in the file is the path --spec link gives (service/files/spec_location.py
    keeps links: the generator beside the link is the spec's), with `..` removed."""
    (project / "link").symlink_to(MINI_SPEC, target_is_directory=True)
    (project / "pyproject.toml").write_text('[tool.gradshard]\nspec = "sub/../link"\n')
    assert main(["config", "--json"]) == 0
    shown = {s["key"]: s for s in json.loads(capsys.readouterr().out)["settings"]}
    assert shown["spec"]["value"] == str(project / "link")
