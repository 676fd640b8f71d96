"""The formula check (pipeline/formulas/): every name a formula uses and every bracket it
opens, at its line and column, with the closest name; `check` fails on a finding, `build`
warns and writes what torchgen writes; no finding on the packaged specs of six releases;
a cached `check` (warm, or after an edit) finds what a cold one finds."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from support.releases import release_generator, release_torchgen
from support.specs import MINI_SPEC, installed_torchgen

from gradshard.cache.engine.memory import Memory
from gradshard.cache.graph.build_graph import spec_findings
from gradshard.pipeline.formulas.lexer import bracket_fault, identifier_uses, tokens
from gradshard.pipeline.formulas.names import helper_names
from gradshard.pipeline.parse.spec import decode_spec
from gradshard.pipeline.releases import release_named
from gradshard.pipeline.render.templating import TemplateSet
from gradshard.service.cli import main
from gradshard.service.files.inputs import read_inputs, spec_template_sources
from gradshard.service.files.spec_location import locate_spec
from gradshard.service.graph_run import formula_sources, new_engine

DERIVATIVES = "autograd/derivatives.yaml"
MUL_SELF = "  self: mul_tensor_backward(grad, other, self.scalar_type())"
MUL_FORWARD = "  result: other_t * self_p + self_t * other_p"


def fault(formula: str) -> str | None:
    found = bracket_fault(formula, tokens(formula))
    return None if found is None else f"{found.start}:{found.text}"


def test_brackets_and_literals_balance_outside_strings_and_comments():
    assert fault('f(a, ")", \'(\') /* ( */ + g[0] // (') is None
    assert fault("f(a") == "1:("
    assert fault("f(a])") == "3:]"
    assert fault("a)") == "1:)"
    assert fault('f("a)') == '2:"'


def test_members_and_qualified_names_are_not_the_formulas_own():
    used, declared = identifier_uses(tokens(
        "at::where(self.sym_sizes(), std::get<0>(t)->x, [](c10::SymInt i){return -i;})"))
    assert [t.text for t in used] == ["self", "t", "i", "return", "i"]
    assert declared == {"i"}


def test_helper_names_are_declarations_not_parameters():
    header = """
    namespace torch::autograd::generated::details {
    extern const char* kMessage;
    using at::Tensor;
    TORCH_API Tensor wrap_grad(const Tensor& grad, int64_t dim = 0);
    inline std::optional<Tensor> opt_if(const Tensor& t, const bool cond) { return t; }
    struct IndexRange;
    }"""
    names = set(helper_names(header))
    assert {"kMessage", "Tensor", "wrap_grad", "opt_if", "IndexRange"} <= names
    assert not names & {"grad", "dim", "t", "cond"}


def mini(tmp_path: Path, old: str, new: str) -> Path:
    spec = tmp_path / "mini"
    shutil.copytree(MINI_SPEC, spec)
    path = spec / DERIVATIVES
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))
    return spec


def check_json(spec: Path, capsys, *words: str) -> tuple[int, dict]:
    code = main(["check", "--spec", str(spec), "--json", *words])
    return code, json.loads(capsys.readouterr().out)


def line_of(spec: Path, text: str) -> int:
    return (spec / DERIVATIVES).read_text().splitlines().index(text) + 1


@pytest.mark.parametrize("old, new, word, rule, suggestion", [
    (MUL_SELF, MUL_SELF.replace("other, self.", "other, slef."), "slef",
     "derivatives.formula-name", "did you mean 'self'?"),
    (MUL_FORWARD, MUL_FORWARD.replace("self_p +", "self_p + reslt +"), "reslt",
     "derivatives.formula-name", "did you mean 'result'?"),
    # the `(` left open is mul_tensor_backward's, the first of the line
    (MUL_SELF, MUL_SELF.replace("scalar_type())", "scalar_type()"), "(",
     "derivatives.formula-brackets", "close every"),
])
def test_a_formula_mistake_is_found_at_its_line_and_column(tmp_path, capsys, old, new, word,
                                                           rule, suggestion):
    spec = mini(tmp_path, old, new)
    code, report = check_json(spec, capsys)
    assert code == 1 and report["ok"] is False
    (problem,) = report["problems"]
    assert (problem["rule"], problem["line"], problem["column"]) == (
        rule, line_of(spec, new), new.index(word) + 1)
    assert suggestion in problem["hint"] and problem["entry"] == "mul.Tensor"
    # what it breaks: the backward node, or the kernel's forward-mode code
    assert ("MulBackward0" if "self:" in new else "autograd kernel of mul") in problem["message"]


def test_build_warns_and_writes_what_torchgen_writes(tmp_path, capsys):
    spec = mini(tmp_path, MUL_SELF, MUL_SELF.replace("other, self.", "other, slef."))
    out = tmp_path / "out"
    code = main(["build", "--spec", str(spec), "--out", str(out), "--codegen-only", "--json"])
    report = json.loads(capsys.readouterr().out)
    assert code == 0
    (finding,) = report["findings"]
    assert finding["rule"] == "derivatives.formula-name" and finding["severity"] == "warning"
    assert "slef.scalar_type()" in (out / "Functions.cpp").read_text()
    main(["build", "--spec", str(spec), "--out", str(tmp_path / "text"), "--codegen-only"])
    assert "[derivatives.formula-name]" in capsys.readouterr().out


def test_a_misspelled_key_is_an_unknown_formula_key(tmp_path, capsys):
    spec = mini(tmp_path, MUL_SELF, MUL_SELF.replace("self:", "slef:"))
    code, report = check_json(spec, capsys)
    (problem,) = report["problems"]
    assert code == 1 and problem["rule"] == "derivatives.unknown-formula-key"
    assert "'slef'" in problem["message"] and "did you mean 'self'?" in problem["hint"]


def test_a_cached_check_finds_what_a_cold_one_finds(tmp_path, capsys):
    """Warm (the same spec again) and after an edit of one formula: the findings of a check
    that runs every task."""
    spec = mini(tmp_path, MUL_SELF, MUL_SELF.replace("other, self.", "other, slef."))
    cold = check_json(spec, capsys, "--no-cache")
    assert cold[0] == 1
    assert check_json(spec, capsys) == cold  # the cache is filled
    assert check_json(spec, capsys) == cold  # and answers
    path = spec / DERIVATIVES
    path.write_text(path.read_text().replace(MUL_FORWARD, MUL_FORWARD.replace("+", "+ reslt +")))
    warm = check_json(spec, capsys)
    assert warm == check_json(spec, capsys, "--no-cache")
    assert [p["rule"] for p in warm[1]["problems"]] == ["derivatives.formula-name"] * 2
    path.write_text((MINI_SPEC / DERIVATIVES).read_text())
    code, fixed = check_json(spec, capsys)
    assert code == 0 and fixed["ok"] and fixed == check_json(spec, capsys, "--no-cache")[1] | {
        "seconds": fixed["seconds"]}


def test_checks_counts_from_the_indexes_are_the_records(tmp_path):
    """spec_counts reads the indexes (a collection's size, the autograd side's own counts):
    the same numbers as the records themselves give, on the real spec."""
    from gradshard.cache.graph.spec_records import spec_counts
    from gradshard.service.graph_run import DecodedInputs, run_graph
    from gradshard.service.query.analysis import records_of

    run = run_graph(DecodedInputs.decode(read_inputs(locate_spec(None))), None)
    spec = records_of(run)
    infos = [k.info for e in spec.infos for k in e.infos]
    assert spec_counts(run.engine, run.index) == {
        "native_functions": len(spec.native_functions),
        "generated_functions": sum(1 for f in spec.native_functions if f.generated_from),
        "tags": len(spec.tags),
        "deprecated_signatures": len(spec.deprecated),
        "derivatives_entries": len(spec.derivative_entries),
        "info_schemas": len(spec.infos),
        "infos": len(infos),
        "infos_with_derivatives": sum(1 for i in infos if i.has_derivatives),
        "matched_functions": sum(1 for m in spec.matches if m.infos is not None),
        "foreach_synthesized": len(spec.foreach),
        "backward_nodes": len(spec.nodes),
    }


def test_the_issues_three_mistakes_in_the_real_spec(tmp_path, capsys):
    spec = tmp_path / "packaged"
    shutil.copytree(installed_torchgen() / "packaged", spec,
                    ignore=shutil.ignore_patterns("__pycache__"))
    path = spec / DERIVATIVES
    text = path.read_text()
    edits = {"sin": ("  self: grad * self.cos().conj()\n  result: auto_element_wise",
                     "  self: grad * slef.cos().conj()\n  result: auto_element_wise"),
             "tanh": ("  self: tanh_backward(grad, result)\n  result: auto_element_wise",
                      "  self: tanh_backward(grad, result)\n  result: (1 - reslt.pow(2)) * self_t"),
             "cos": ("  self: grad * -self.sin().conj()", "  self: grad * -self.sin().conj(")}
    for old, new in edits.values():
        assert text.count(old) == 1
        text = text.replace(old, new)
    path.write_text(text)
    lines = text.splitlines()
    code, report = check_json(spec, capsys)
    assert code == 1
    found = {p["entry"]: p for p in report["problems"]}
    assert set(found) == set(edits) and len(report["problems"]) == 3
    expected = {"sin": ("slef", "did you mean 'self'?", "SinBackward0"),
                "tanh": ("reslt", "did you mean 'result'?", "autograd kernel of tanh"),
                "cos": ("(", "close every", "CosBackward0")}
    for entry, (word, hint, breaks) in expected.items():
        problem = found[entry]
        line = lines[problem["line"] - 1]
        assert line[problem["column"] - 1:].startswith(word), (entry, line)
        assert hint in problem["hint"] and breaks in problem["message"]
    assert lines[found["cos"]["line"] - 1].rstrip().endswith("conj(")


# the rules that read each release's spec whole (2.9.1 to 2.11.0 name Dimname arguments,
# which only 2.12's rules accept: pipeline/releases.py)
RELEASE_RULES = {"2.9.1": "2.12.0", "2.10.0": "2.12.0", "2.11.0": "2.12.0", "2.12.0": "2.12.0",
                 "2.13.0": "2.13.0", "2.14.1": "2.14.x"}


@pytest.mark.parametrize("version", sorted(RELEASE_RULES))
def test_no_finding_on_a_releases_packaged_spec(version):
    """Every formula of the release's spec, checked against its own FunctionsManual.h."""
    torchgen = release_torchgen(version) if version in ("2.12.0", "2.14.1") else \
        release_generator(version)
    location = locate_spec(str(torchgen / "packaged"))
    raw = read_inputs(location)
    assert raw.helpers is not None and Path(raw.helpers[0]).is_relative_to(torchgen.parent)
    problems, findings = spec_findings(
        new_engine(None, Memory()), decode_spec(raw.yaml), release_named(RELEASE_RULES[version]),
        formula_sources(raw, TemplateSet(spec_template_sources(raw.spec_templates))))
    assert problems == () and findings == (), [p.message for p in (*problems, *findings)][:5]


def test_a_daemons_rebuild_line_counts_the_warnings():
    from gradshard.service.daemon.server import rebuild_line

    result = {"ok": True, "files": {"written": ["Functions.cpp"]}, "seconds": 0.2,
              "changed": [], "findings": [{"rule": "derivatives.formula-name"}]}
    line = rebuild_line(result, locate_spec(str(MINI_SPEC)))
    assert "1 file(s) written, 1 warning (gradshard's own rules)" in line


def test_one_formulas_compile_errors_collapse_to_one():
    """A formula pasted into several units (its node's, each kernel's) fails alike in each:
    one diagnostic per formula and message; errors at no formula are all kept."""
    from gradshard.cache.errors import CompileDiagnostic
    from gradshard.service.compile.diagnostics import collapsed

    def at(unit: str, line: int | None, message: str) -> CompileDiagnostic:
        return CompileDiagnostic("sin", "SinBackward0", "self", "grad * slef.cos()", line,
                                 f"{unit}.cpp:10:5", message)

    same = [at(f"unit{k}", 1557, "'slef' was not declared in this scope") for k in range(8)]
    other = at("unit9", 1557, "no match for 'operator*'")
    loose = [at("a", None, "boom"), at("b", None, "boom")]
    assert collapsed([*same, other, *loose]) == [same[0], other, *loose]
