"""The machine formats of what a command finds (service/report/findings.py, sarif.py,
lintrunner.py), on hand-made spec and compile errors: SARIF validates against the official
2.1.0 schema (tests/data/sarif-schema-2.1.0.json, OASIS) with jsonschema's Draft 4
validator, names each file relative to its repository's root (absolute outside one), keeps
GitHub's limits, and lintrunner's lines are its LintMessages."""

from __future__ import annotations

import argparse
import gzip
import json
import shutil
from pathlib import Path

import pytest
from support.reports import validated_sarif
from support.specs import DERIVATIVES, MINI_SPEC

from gradshard.cache.errors import (CompileDiagnostic, CompileError, EnvironmentFailure,
                                    GeneratorFailed, GeneratorMismatch, UsageError,
                                    VerifyMismatch)
from gradshard.cache.store.database import StoreDamaged
from gradshard.pipeline.problems import Problem, SpecError, SpecFile
from gradshard.service.cli import main
from gradshard.service.files.spec_location import locate_spec
from gradshard.service.report import sarif
from gradshard.service.report.findings import (WARNING, Finding, Place, compile_findings,
                                               generator_findings, placed_at, spec_findings)
from gradshard.service.report.formats import emit_findings, error_findings
from gradshard.service.report.lintrunner import LINT_CODE, lint_lines
from gradshard.service.report.rules import COMPILE_RULE, LEFT_OUT_RULE, RULES, plain
from gradshard.service.report.sarif import repository_root, sarif_log

LINT_FIELDS = {"path", "line", "char", "code", "severity", "name", "original", "replacement",
               "description"}


@pytest.fixture
def checkout(tmp_path) -> Path:
    """A git work tree (its .git only) with a spec's files where a PyTorch checkout has them
    (their text is not read here), at a path with a space."""
    root = tmp_path / "py torch"
    (root / ".git").mkdir(parents=True)
    for name in ("aten/src/ATen/native/native_functions.yaml", "aten/src/ATen/native/tags.yaml",
                 "tools/autograd/derivatives.yaml", "tools/autograd/deprecated.yaml"):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text("")
    (root / "tools/autograd/templates").mkdir()
    return root


def two_problems() -> SpecError:
    return SpecError([
        Problem(SpecFile.DERIVATIVES, "sin(Tensor self) -> Tensor", "derivatives.bad-formula",
                "the formula does not parse", "write a C++ expression", line=12, column=9),
        Problem(SpecFile.NATIVE_FUNCTIONS, "foo", "schema.syntax",
                "the schema does not parse", "see the schema grammar", line=3)])


def test_spec_errors_are_results_at_their_lines_relative_to_the_repository(checkout):
    location = locate_spec(str(checkout))
    findings = spec_findings(two_problems(), location)
    root = repository_root(location.root)
    assert root == checkout
    log = validated_sarif(sarif_log(findings, "0.1.0", root))
    (run,) = log["runs"]
    assert run["originalUriBaseIds"]["%SRCROOT%"]["uri"] == checkout.as_uri() + "/"
    first, second = run["results"]
    assert first["ruleId"] == "derivatives.bad-formula" and first["level"] == "error"
    place = first["locations"][0]["physicalLocation"]
    assert place["artifactLocation"] == {"uri": "tools/autograd/derivatives.yaml",
                                         "uriBaseId": "%SRCROOT%"}
    assert place["region"] == {"startLine": 12, "startColumn": 9}
    assert "write a C++ expression" in first["message"]["text"]
    assert first["properties"] == {"entry": "sin(Tensor self) -> Tensor"}
    assert (second["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
            == "aten/src/ATen/native/native_functions.yaml")
    rules = [r["id"] for r in run["tool"]["driver"]["rules"]]
    assert rules == ["derivatives.bad-formula", "schema.syntax"]
    assert [r["ruleIndex"] for r in run["results"]] == [0, 1]


def test_a_compile_error_is_at_its_formula_with_the_generated_line_related(checkout):
    derivatives = checkout / "tools/autograd/derivatives.yaml"
    generated = checkout / "out/Functions.cpp"
    error = CompileError([CompileDiagnostic("sin(Tensor self) -> Tensor", "SinBackward0",
                                            "self", "grad * nope(self)", 1556,
                                            f"{generated}:120:18", "'nope' was not declared")],
                         ["Functions_0"], "raw", str(derivatives))
    log = validated_sarif(sarif_log(compile_findings(error), "0.1.0", checkout))
    (result,) = log["runs"][0]["results"]
    assert result["ruleId"] == COMPILE_RULE
    place = result["locations"][0]["physicalLocation"]
    assert place["artifactLocation"]["uri"] == "tools/autograd/derivatives.yaml"
    assert place["region"] == {"startLine": 1556}
    (related,) = result["relatedLocations"]
    assert related["physicalLocation"]["artifactLocation"]["uri"] == "out/Functions.cpp"
    assert related["physicalLocation"]["region"] == {"startLine": 120, "startColumn": 18}
    assert "'nope' was not declared" in result["message"]["text"]


def test_outside_a_repository_places_are_absolute_file_uris(tmp_path):
    finding = Finding("derivatives.bad-formula", "error", "bad",
                      Place(str(tmp_path / "a b.yaml"), 2))
    log = validated_sarif(sarif_log([finding], "0.1.0", repository_root(tmp_path)))
    run = log["runs"][0]
    assert "originalUriBaseIds" not in run
    uri = run["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
    assert uri == (tmp_path / "a b.yaml").as_uri() and "%20" in uri


def test_a_finding_without_a_place_of_its_own_takes_the_reports_default():
    findings = placed_at([Finding("generator.differs", WARNING, "differs",
                                  Place("/x/VariableType_0.cpp")),
                          Finding("usage", "error", "no such option")], Place("/s/d.yaml"))
    results = validated_sarif(sarif_log(findings, "0.1.0", None))["runs"][0]["results"]
    assert [r["level"] for r in results] == ["warning", "error"]
    assert [r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
            for r in results] == ["file:///x/VariableType_0.cpp", "file:///s/d.yaml"]


def test_each_rule_carries_the_tables_descriptions_and_help(checkout):
    location = locate_spec(str(checkout))
    log = validated_sarif(sarif_log(spec_findings(two_problems(), location), "0.1.0", checkout))
    first = log["runs"][0]["tool"]["driver"]["rules"][0]
    rule = RULES["derivatives.bad-formula"]
    assert first == {
        "id": "derivatives.bad-formula",
        "shortDescription": {"text": "a formula that YAML read as a number or boolean",
                             "markdown": rule.short},
        "fullDescription": {"text": "a formula that YAML read as a number or boolean "
                                    "(gradshard)", "markdown": rule.full},
        "help": {"text": plain(rule.help), "markdown": rule.help},
        "properties": {"tags": ["derivatives"]}}
    assert "as the message's hint says" in first["help"]["text"]
    assert "docs/usage.md#derivativesyaml-pipelineparsederivativespy" in first["help"]["text"]


def test_past_githubs_result_limit_a_summary_says_how_many_were_left_out():
    findings = [Finding("derivatives.bad-formula", "error", f"bad {n}", Place("/s.yaml", n + 1))
                for n in range(sarif.MAX_RESULTS + 1)]
    results = sarif_log(findings, "0.1.0", None)["runs"][0]["results"]
    assert len(results) == sarif.MAX_RESULTS
    assert results[-1]["ruleId"] == LEFT_OUT_RULE
    assert "2 more" in results[-1]["message"]["text"]
    assert results[-2]["message"]["text"] == f"bad {sarif.MAX_RESULTS - 2}"


def test_past_the_compressed_size_limit_results_are_left_out_until_it_fits(monkeypatch):
    findings = [Finding("derivatives.bad-formula", "error", f"bad {n} " + "x" * n,
                        Place(f"/s{n}.yaml", 1)) for n in range(400)]
    monkeypatch.setattr(sarif, "MAX_COMPRESSED_BYTES", 4000)
    log = validated_sarif(sarif_log(findings, "0.1.0", None))
    results = log["runs"][0]["results"]
    assert len(gzip.compress(json.dumps(log).encode())) <= 4000
    kept = len(results) - 1
    assert 0 < kept < 400 and f"{400 - kept} more" in results[-1]["message"]["text"]


def test_lintrunner_lines_are_lint_messages(checkout):
    location = locate_spec(str(checkout))
    findings = spec_findings(two_problems(), location)
    findings.append(Finding("generator.differs", WARNING, "differs"))
    lines = lint_lines(findings, repository_root(location.root))
    messages = [json.loads(line) for line in lines]
    assert all(set(m) == LINT_FIELDS and m["code"] == LINT_CODE for m in messages)
    first, second, third = messages
    assert (first["path"], first["line"], first["char"]) == ("tools/autograd/derivatives.yaml",
                                                             12, 9)
    assert first["severity"] == "error" and first["name"] == "derivatives.bad-formula"
    assert "hint: write a C++ expression" in first["description"]
    assert second["path"] == "aten/src/ATen/native/native_functions.yaml"
    assert (third["path"], third["line"], third["severity"]) == (None, None, "warning")
    (placed,) = lint_lines(placed_at(findings[2:], Place(str(checkout / "pyproject.toml"))),
                           checkout)
    assert json.loads(placed)["path"] == "pyproject.toml"


# ---------------------------------------------------------------------------------------------
# The command line: `check --format`, `--output`


@pytest.fixture
def work_tree(tmp_path) -> Path:
    """A git work tree (its .git only) holding a copy of the mini spec at spec/, its mul
    formula keyed by a name mul has not (derivatives.unknown-formula-key)."""
    (tmp_path / ".git").mkdir()
    shutil.copytree(MINI_SPEC, tmp_path / "spec")
    return tmp_path


def broken(work_tree: Path) -> int:
    """The line of the bad key written into the work tree's spec."""
    path = work_tree / "spec" / DERIVATIVES
    text = path.read_text()
    good = "  self: mul_tensor_backward(grad, other, self.scalar_type())"
    assert good in text
    path.write_text(text.replace(good, good.replace("self:", "nosuch:"), 1))
    return text.splitlines().index(good) + 1


def test_check_sarif_puts_the_problem_at_its_line_and_keeps_the_exit_code(work_tree, capsys):
    line = broken(work_tree)
    code = main(["check", "--spec", str(work_tree / "spec"), "--format", "sarif"])
    captured = capsys.readouterr()
    assert code == 1 and f"derivatives.yaml:{line}: error:" in captured.err  # text: stderr
    (result,) = validated_sarif(json.loads(captured.out))["runs"][0]["results"]
    assert result["ruleId"] == "derivatives.unknown-formula-key"
    assert result["locations"][0]["physicalLocation"] == {
        "artifactLocation": {"uri": "spec/autograd/derivatives.yaml", "uriBaseId": "%SRCROOT%"},
        "region": {"startLine": line}}


def test_check_lintrunner_exits_0_when_it_reports(work_tree, capsys):
    line = broken(work_tree)
    code = main(["check", "--spec", str(work_tree / "spec"), "--format", "lintrunner"])
    (message,) = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert code == 0
    assert (message["path"], message["line"], message["name"]) == (
        "spec/autograd/derivatives.yaml", line, "derivatives.unknown-formula-key")


def test_a_clean_spec_is_an_empty_log_and_no_lint_line(work_tree, capsys):
    assert main(["check", "--spec", str(work_tree / "spec"), "--format", "sarif"]) == 0
    captured = capsys.readouterr()
    assert validated_sarif(json.loads(captured.out))["runs"][0]["results"] == []
    assert "spec OK" in captured.err
    assert main(["check", "--spec", str(work_tree / "spec"), "--format", "lintrunner"]) == 0
    assert capsys.readouterr().out == ""


def test_output_is_written_whole_and_stdout_stays_empty(work_tree, capsys):
    line = broken(work_tree)
    report = work_tree / "reports" / "check.sarif"
    report.parent.mkdir()
    code = main(["check", "--spec", str(work_tree / "spec"), "--format", "sarif",
                 "--output", str(report)])
    assert code == 1 and capsys.readouterr().out == ""
    (result,) = validated_sarif(json.loads(report.read_text()))["runs"][0]["results"]
    assert result["locations"][0]["physicalLocation"]["region"]["startLine"] == line
    code = main(["check", "--spec", str(work_tree / "spec"), "--json", "--output", str(report)])
    assert code == 1 and json.loads(report.read_text())["ok"] is False


def test_an_output_that_cannot_be_written_is_a_usage_error(work_tree, capsys):
    missing = work_tree / "no-such-dir" / "check.sarif"
    code = main(["check", "--spec", str(work_tree / "spec"), "--format", "sarif",
                 "--output", str(missing)])
    captured = capsys.readouterr()
    assert code == 2 and not missing.exists() and captured.out == ""
    assert f"cannot write --output {missing}" in captured.err


def test_json_and_another_format_are_refused(work_tree, capsys):
    code = main(["check", "--spec", str(work_tree / "spec"), "--json", "--format", "sarif"])
    captured = capsys.readouterr()
    assert code == 2 and "--json and --format sarif" in captured.err
    assert main(["check", "--spec", str(work_tree / "spec"), "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["ok"] is True


def sarif_and_lint(words: list[str], capsys) -> tuple[int, dict, int, list[dict]]:
    """The command's exit code and SARIF log (validated), then its exit code and lintrunner
    messages."""
    code = main([*words, "--format", "sarif"])
    log = validated_sarif(json.loads(capsys.readouterr().out))
    lint_code = main([*words, "--format", "lintrunner"])
    return code, log, lint_code, [json.loads(x) for x in capsys.readouterr().out.splitlines()]


def only_place(log: dict) -> dict:
    (result,) = log["runs"][0]["results"]
    (location,) = result["locations"]
    return location["physicalLocation"]


@pytest.fixture
def project(tmp_path, monkeypatch) -> Path:
    """An empty git work tree as the working directory."""
    (tmp_path / ".git").mkdir()
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_a_usage_error_without_a_spec_is_at_the_working_directorys_pyproject(project, capsys):
    """Code scanning refuses a whole upload for one result without a location: no spec and
    no configuration file, the result is at pyproject.toml (where a project's settings go)."""
    code, log, lint_code, (message,) = sarif_and_lint(
        ["check", "--spec", str(project / "absent")], capsys)
    assert code == lint_code == 2
    assert log["runs"][0]["results"][0]["ruleId"] == "usage"
    assert only_place(log) == {"artifactLocation": {"uri": "pyproject.toml",
                                                    "uriBaseId": "%SRCROOT%"}}
    (rule,) = log["runs"][0]["tool"]["driver"]["rules"]
    assert rule["fullDescription"]["text"] == plain(RULES["usage"].full)
    assert (message["path"], message["name"]) == ("pyproject.toml", "usage")


def test_a_spec_the_configuration_names_is_placed_at_its_key(project, capsys):
    (project / "pyproject.toml").write_text('[project]\nname = "x"\n\n[tool.gradshard]\n'
                                            'out = "gen"\nspec = "absent"\n')
    code, log, _, (message,) = sarif_and_lint(["check"], capsys)
    assert code == 2 and "absent: no such directory" in message["description"]
    assert only_place(log) == {"artifactLocation": {"uri": "pyproject.toml",
                                                    "uriBaseId": "%SRCROOT%"},
                               "region": {"startLine": 6}}
    assert (message["path"], message["line"]) == ("pyproject.toml", 6)
    # a --spec of the command line is not the key's doing: the file, at no line
    code, log, _, (message,) = sarif_and_lint(["check", "--spec", str(project / "other")],
                                              capsys)
    assert code == 2 and "other: no such directory" in message["description"]
    assert only_place(log) == {"artifactLocation": {"uri": "pyproject.toml",
                                                    "uriBaseId": "%SRCROOT%"}}
    assert message["line"] is None


def test_a_bad_configuration_file_is_a_result_at_each_bad_key(project, capsys):
    (project / "gradshard.toml").write_text("jobs = 2\njobz = 3\ntree = 5\n")
    code, log, _, messages = sarif_and_lint(["check", "--spec", str(MINI_SPEC)], capsys)
    results = log["runs"][0]["results"]
    assert code == 2 and [r["ruleId"] for r in results] == ["usage", "usage"]
    assert [r["locations"][0]["physicalLocation"] for r in results] == [
        {"artifactLocation": {"uri": "gradshard.toml", "uriBaseId": "%SRCROOT%"},
         "region": {"startLine": line}} for line in (2, 3)]
    assert "unknown key 'jobz'" in results[0]["message"]["text"]
    assert [(m["path"], m["line"]) for m in messages] == [("gradshard.toml", 2),
                                                          ("gradshard.toml", 3)]
    (project / "gradshard.toml").write_text("jobs = \n")
    code, log, _, (message,) = sarif_and_lint(["check", "--spec", str(MINI_SPEC)], capsys)
    assert code == 2 and "not valid TOML" in message["description"]
    assert only_place(log) == {"artifactLocation": {"uri": "gradshard.toml",
                                                    "uriBaseId": "%SRCROOT%"}}


def test_an_internal_error_is_at_the_specs_derivatives(work_tree, monkeypatch, capsys):
    def failing(location, session, rules):
        raise RuntimeError("boom")

    monkeypatch.setattr("gradshard.service.query.analysis.check_spec", failing)
    code, log, lint_code, (message,) = sarif_and_lint(
        ["check", "--spec", str(work_tree / "spec")], capsys)
    assert code == lint_code == 4
    (result,) = log["runs"][0]["results"]
    assert result["ruleId"] == "gradshard.error"
    assert "RuntimeError: boom" in result["message"]["text"]
    assert "bug in gradshard" in result["message"]["text"]
    assert only_place(log)["artifactLocation"]["uri"] == "spec/autograd/derivatives.yaml"
    assert message["path"] == "spec/autograd/derivatives.yaml"


def failures(root: Path) -> dict[str, tuple[BaseException, str]]:
    """Every kind of failure a command reports, with the file its finding is at (relative
    to the root; the spec's derivatives.yaml when it names none)."""
    derivatives = root / "tools/autograd/derivatives.yaml"
    placed = CompileDiagnostic("sin(Tensor self) -> Tensor", "SinBackward0", "self",
                               "grad * nope(self)", 1556, f"{root}/out/Functions.cpp:120:18",
                               "'nope' was not declared")
    return {
        "spec": (two_problems(), "tools/autograd/derivatives.yaml"),
        "usage": (UsageError("bad -j", "give a number"), "tools/autograd/derivatives.yaml"),
        "environment": (EnvironmentFailure("No space left", "free space",
                                           str(root / "cache/store.db")), "cache/store.db"),
        "compile": (CompileError([placed], ["Functions_0"], "raw", str(derivatives)),
                    "tools/autograd/derivatives.yaml"),
        "compile without a place": (CompileError([], ["Functions_0"], "killed"),
                                    "tools/autograd/derivatives.yaml"),
        "generator mismatch": (GeneratorMismatch(["Functions.cpp"], "report", "hint"),
                               "out/Functions.cpp"),
        "generator failure": (GeneratorFailed("it raised", "trace", "see its error"),
                              "tools/autograd/derivatives.yaml"),
        "verify": (VerifyMismatch(["parse sin: a != b"]), "tools/autograd/derivatives.yaml"),
        "damaged cache": (StoreDamaged("is damaged", root / "cache/store.db"),
                          "cache/store.db"),
        "internal": (KeyError("boom"), "tools/autograd/derivatives.yaml"),
    }


@pytest.mark.parametrize("kind", list(failures(Path("/r"))))
def test_every_failure_is_a_valid_result_at_a_place_with_its_rule(kind, checkout, capsys):
    """What the command line prints for each failure (cli.py: error_findings, then
    emit_findings): a valid log, each result at a file, its rule in the table, described."""
    error, where = failures(checkout)[kind]
    location = locate_spec(str(checkout))
    args = argparse.Namespace(format="sarif", out=str(checkout / "out"), tree="flat")
    emit_findings(args, error_findings(error, location, args), location)
    log = validated_sarif(json.loads(capsys.readouterr().out))
    results, rules = log["runs"][0]["results"], log["runs"][0]["tool"]["driver"]["rules"]
    assert results and all(r["locations"] for r in results)
    assert (results[0]["locations"][0]["physicalLocation"]["artifactLocation"]
            == {"uri": where, "uriBaseId": "%SRCROOT%"})
    for rule in rules:
        assert rule["fullDescription"]["markdown"] == RULES[rule["id"]].full
    args.format = "lintrunner"
    emit_findings(args, error_findings(error, location, args), location)
    messages = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert messages and all(m["path"] for m in messages) and messages[0]["path"] == where


def test_check_finds_the_spec_of_the_files_it_is_given(work_tree, capsys, tmp_path):
    """lintrunner's way: the files (or @FILE listing them), not --spec; files of no spec, of
    two specs, or outside --spec are usage errors."""
    line = broken(work_tree)
    listed = work_tree / "paths.txt"
    listed.write_text(f"{work_tree / 'spec' / DERIVATIVES}\n")
    assert main(["check", "--format", "lintrunner", f"@{listed}"]) == 0
    (message,) = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert message["line"] == line and message["path"] == "spec/" + DERIVATIVES
    shutil.copytree(MINI_SPEC, work_tree / "other")
    for words, expected in (
            ([str(work_tree / "paths.txt")], "is in no spec"),
            ([str(work_tree / "spec" / DERIVATIVES), str(work_tree / "other" / DERIVATIVES)],
             "belong to 2 specs"),
            (["--spec", str(work_tree / "other"), str(work_tree / "spec" / DERIVATIVES)],
             "is not inside --spec")):
        assert main(["check", *words]) == 2
        assert expected in capsys.readouterr().err


class _Verdict:
    """What generator_findings reads of a build's generator verdict."""

    differing = ("VariableType_0.cpp", "VariableType_1.cpp")

    def summary(self) -> str:
        return "generator: torchgen (altered), not known; 2 files differ"


class _Outcome:
    def __init__(self, out: Path, tree: str) -> None:
        self.out, self.tree, self.generator = out, tree, _Verdict()


def test_a_differing_generator_is_a_warning_at_each_file_it_wrote(checkout):
    findings = generator_findings(_Outcome(checkout / "out", "flat"))
    log = validated_sarif(sarif_log(findings, "0.1.0", checkout))
    results = log["runs"][0]["results"]
    assert [r["level"] for r in results] == ["warning", "warning"]
    assert [r["ruleId"] for r in results] == ["generator.differs"] * 2
    uris = [r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in results]
    assert uris == ["out/VariableType_0.cpp", "out/VariableType_1.cpp"]
    (placed, _) = generator_findings(_Outcome(checkout / "out", "pytorch"))
    assert placed.place.path.endswith("out/torch/csrc/autograd/generated/VariableType_0.cpp")


def test_under_strict_a_differing_generator_is_an_error_at_each_file(checkout):
    error = GeneratorMismatch(["VariableType_0.cpp"], "report", "hint")
    args = argparse.Namespace(out=str(checkout / "out"), tree="pytorch")
    (finding,) = error_findings(error, None, args)
    assert finding.level == "error" and finding.rule == "generator.differs"
    assert finding.place.path == str(
        checkout / "out/torch/csrc/autograd/generated/VariableType_0.cpp")

