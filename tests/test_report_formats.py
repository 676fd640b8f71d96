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

from gradshard.cache.errors import (CompileDiagnostic, CompileError, GeneratorFailed,
                                    GeneratorMismatch)
from gradshard.pipeline.problems import Problem, SpecError, SpecFile
from gradshard.service.cli import main
from gradshard.service.files.spec_location import locate_spec
from gradshard.service.report import sarif
from gradshard.service.report.findings import (COMPILE_RULE, WARNING, Finding, Place,
                                               compile_findings, generator_findings, spec_findings)
from gradshard.service.report.formats import error_findings
from gradshard.service.report.lintrunner import LINT_CODE, lint_lines
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
        Problem(SpecFile.NATIVE_FUNCTIONS, "foo", "native_functions.bad-schema",
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
    assert rules == ["derivatives.bad-formula", "native_functions.bad-schema"]
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


def test_a_warning_and_a_finding_without_a_place_validate():
    findings = [Finding("generator.differs", WARNING, "differs", Place("/x/VariableType_0.cpp")),
                Finding("usage", "error", "no such option")]
    results = validated_sarif(sarif_log(findings, "0.1.0", None))["runs"][0]["results"]
    assert [r["level"] for r in results] == ["warning", "error"]
    assert "locations" not in results[1]


def test_past_githubs_result_limit_a_summary_says_how_many_were_left_out():
    findings = [Finding("derivatives.bad-formula", "error", f"bad {n}", Place("/s.yaml", n + 1))
                for n in range(sarif.MAX_RESULTS + 1)]
    results = sarif_log(findings, "0.1.0", None)["runs"][0]["results"]
    assert len(results) == sarif.MAX_RESULTS
    assert results[-1]["ruleId"] == sarif.LEFT_OUT_RULE
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


# ---------------------------------------------------------------------------------------------
# The command line: `check --format`, `--output`


@pytest.fixture
def work_tree(tmp_path) -> Path:
    """A git work tree (its .git only) holding a copy of the mini spec at spec/, its mul
    formula keyed by a name mul has not (derivatives.forward-output)."""
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
    assert result["ruleId"] == "derivatives.forward-output"
    assert result["locations"][0]["physicalLocation"] == {
        "artifactLocation": {"uri": "spec/autograd/derivatives.yaml", "uriBaseId": "%SRCROOT%"},
        "region": {"startLine": line}}


def test_check_lintrunner_exits_0_when_it_reports(work_tree, capsys):
    line = broken(work_tree)
    code = main(["check", "--spec", str(work_tree / "spec"), "--format", "lintrunner"])
    (message,) = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert code == 0
    assert (message["path"], message["line"], message["name"]) == (
        "spec/autograd/derivatives.yaml", line, "derivatives.forward-output")


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


def test_a_usage_error_is_one_result_without_a_place(tmp_path, capsys):
    code = main(["check", "--spec", str(tmp_path / "absent"), "--format", "sarif"])
    (result,) = validated_sarif(json.loads(capsys.readouterr().out))["runs"][0]["results"]
    assert code == 2 and result["ruleId"] == "usage" and "locations" not in result


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


def test_a_failure_without_a_place_is_at_the_spec_file(checkout):
    """Code scanning refuses a result without a location: a failure located nowhere of its
    own (a failed generator) is placed at the spec's derivatives.yaml."""
    location = locate_spec(str(checkout))
    error = GeneratorFailed("the spec's generator raised", "trace", "see its error")
    findings = error_findings(error, location, argparse.Namespace())
    log = validated_sarif(sarif_log(findings, "0.1.0", checkout,
                                    location.path_of(SpecFile.DERIVATIVES)))
    (result,) = log["runs"][0]["results"]
    assert result["ruleId"] == "generator.failed"
    assert (result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
            == "tools/autograd/derivatives.yaml")
