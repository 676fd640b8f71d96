"""The language server's parts that need no server: UTF-16 positions, entries found in a text
that may not parse, definitions' candidates, completion's kinds, the overlay of a spec, the
editor's options."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from support.specs import MINI_SPEC

from gradshard.cache.errors import UsageError
from gradshard.pipeline.problems import SpecFile
from gradshard.service.editor.buffers import SpecBuffers, spec_file_of
from gradshard.service.editor.navigation import completions, definition_entry
from gradshard.service.editor.places import entry_at, entry_starts, formula_line
from gradshard.service.editor.positions import from_utf16, identifier_span, to_utf16
from gradshard.service.editor.settings import EditorSettings
from gradshard.service.editor.try_run import overlay_spec
from gradshard.service.files.spec_location import locate_spec

DERIVATIVES = """\
# a comment
- name: add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor
  self: handle_r_to_c(self.scalar_type(), grad)
  other: handle_r_to_c(other.scalar_type(), maybe_multiply(grad, alpha.conj()))
  result: self_t + maybe_multiply(other_t, alpha)

- name: sum(Tensor self, *, ScalarType? dtype=None) -> Tensor
  dispatch:
    Default:
      self: grad.expand_symint(self.sym_sizes())
      result: auto_linear

- name: minmax(Tensor self, int dim=0) -> (Tensor min, Tensor max)
  self, dim: [broken
"""


def test_utf16_columns_count_a_character_outside_the_bmp_twice():
    line = "a\U0001d6c1b sef"
    assert to_utf16(line, 2) == 3 and to_utf16(line, 4) == 5
    assert from_utf16(line, 3) == 2 and from_utf16(line, 2) == 1  # a pair's second half
    assert from_utf16(line, 99) == len(line) and to_utf16(line, 99) == len(line) + 1
    assert identifier_span(line, 5).start == 4 and identifier_span(line, 7).end == 7
    assert identifier_span("a + b", 2) is None


def test_entries_are_found_line_by_line_even_in_broken_yaml():
    entry = entry_at(SpecFile.DERIVATIVES, DERIVATIVES, 3)
    assert (entry.operator, entry.line, entry.key, entry.key_line) == ("add.Tensor", 1, "other", 3)
    nested = entry_at(SpecFile.DERIVATIVES, DERIVATIVES, 9)
    assert (nested.operator, nested.key) == ("sum", "dispatch")  # the entry's top key
    broken = entry_at(SpecFile.DERIVATIVES, DERIVATIVES, 13)
    assert (broken.operator, broken.key) == ("minmax", "self, dim")
    assert entry_at(SpecFile.DERIVATIVES, DERIVATIVES, 0) is None  # before any entry
    assert entry_starts(SpecFile.DERIVATIVES, DERIVATIVES)["sum"] == 6


def test_a_formulas_line_is_found_by_the_argument_it_differentiates():
    assert formula_line(DERIVATIVES, 1, "other") == 3
    assert formula_line(DERIVATIVES, 1, None) == 2
    assert formula_line(DERIVATIVES, 6, "self") == 9  # under dispatch, Default's line skipped
    assert formula_line(DERIVATIVES, 12, "dim") == 13  # a key naming several
    assert formula_line(DERIVATIVES, 1, "alpha") == 2  # no key names it: the first formula


def test_definitions_go_to_the_closest_name_in_the_other_file():
    native = ("- func: sin(Tensor self) -> Tensor\n\n- func: sin_(Tensor(a!) self) -> Tensor(a!)\n"
              "\n- func: add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor\n")
    derivatives = "- name: sin(Tensor self) -> Tensor\n  self: grad\n"
    to_native = entry_at(SpecFile.DERIVATIVES, derivatives, 0)
    assert definition_entry(to_native, native) == 0
    for line, expected in ((2, 0), (4, None)):
        entry = entry_at(SpecFile.NATIVE_FUNCTIONS, native, line)
        assert definition_entry(entry, derivatives) == expected


def test_completion_follows_the_formulas_kind():
    backward = entry_at(SpecFile.DERIVATIVES, DERIVATIVES, 2)
    labels = [c.label for c in completions(backward, ("handle_r_to_c",))]
    assert labels[:3] == ["self", "other", "alpha"] and "grad" in labels
    assert "self_t" not in labels and labels[-1] == "handle_r_to_c"
    forward = entry_at(SpecFile.DERIVATIVES, DERIVATIVES, 4)
    labels = [c.label for c in completions(forward, ())]
    assert {"self_t", "other_p", "original_self_t", "result"} <= set(labels)
    assert "grad" not in labels
    tuple_returns = entry_at(SpecFile.DERIVATIVES, DERIVATIVES, 13)
    labels = [c.label for c in completions(tuple_returns, ())]
    assert {"grad_min", "grad_max", "min", "result0", "result1"} <= set(labels)
    assert completions(entry_at(SpecFile.DERIVATIVES, DERIVATIVES, 1), ()) == []  # the name


def test_a_file_is_placed_in_its_spec_and_others_are_not(tmp_path):
    location, file = spec_file_of(MINI_SPEC / "autograd" / "derivatives.yaml")
    assert location.root == MINI_SPEC and file is SpecFile.DERIVATIVES
    assert spec_file_of(MINI_SPEC / "autograd" / "templates" / "Functions.h") is None
    stray = tmp_path / "derivatives.yaml"
    stray.write_text("- name: x\n")
    assert spec_file_of(stray) is None
    assert spec_file_of(tmp_path / "missing.yaml") is None


def test_buffers_come_and_go_through_a_request_and_refuse_what_is_not_a_spec_file():
    buffers = SpecBuffers(locate_spec(str(MINI_SPEC))).with_text(SpecFile.DERIVATIVES, "x")
    again = SpecBuffers.from_json(buffers.to_json())
    assert again == buffers and again.inputs().yaml[SpecFile.DERIVATIVES] == b"x"
    for bad in ({"spec": 3}, {"spec": str(MINI_SPEC), "buffers": {"../x.yaml": "x"}},
                {"spec": str(MINI_SPEC), "buffers": {"derivatives.yaml": 1}}, []):
        with pytest.raises(UsageError):
            SpecBuffers.from_json(bad)


def test_the_overlay_holds_the_buffer_and_links_the_rest(tmp_path):
    spec = tmp_path / "spec"
    os.symlink(MINI_SPEC, spec)
    location = locate_spec(str(spec))
    buffers = SpecBuffers(location).with_text(SpecFile.DERIVATIVES, "- name: edited\n")
    on_disk = (MINI_SPEC / "autograd" / "derivatives.yaml").read_bytes()
    with overlay_spec(buffers) as overlay:
        assert overlay.path_of(SpecFile.DERIVATIVES).read_text() == "- name: edited\n"
        assert not overlay.path_of(SpecFile.DERIVATIVES).is_symlink()
        native = overlay.path_of(SpecFile.NATIVE_FUNCTIONS)
        assert (overlay.root / "ATen").is_symlink()  # what holds no buffer: linked whole
        assert native.read_bytes() == location.path_of(SpecFile.NATIVE_FUNCTIONS).read_bytes()
        scratch = overlay.root.parent
    assert not scratch.exists()
    assert (MINI_SPEC / "autograd" / "derivatives.yaml").read_bytes() == on_disk


def test_initialization_options_override_and_bad_ones_are_said(tmp_path):
    settings = EditorSettings(tmp_path / "cache")
    given = settings.overridden({"cache": str(tmp_path / "other"), "debounce": 120,
                                 "daemon": False, "jobs": 3})
    assert (given.cache, given.debounce, given.use_daemon, given.jobs) == (
        tmp_path / "other", 0.12, False, 3)
    bad = settings.overridden({"debounce": -1, "daemon": "yes", "jobs": True, "colour": 1})
    assert bad.cache == settings.cache and len(bad.problems) == 4
    assert "initializationOptions.colour: unknown option" in bad.problems[3]
    assert settings.overridden("x").problems and settings.overridden(None) == settings
    assert Path(given.cache).is_absolute()


def test_a_rule_of_gradshards_warns_where_the_specs_own_generator_decides():
    from gradshard.pipeline.problems import Problem
    from gradshard.service.editor.analysis import ERROR, WARNING, severity_of
    from gradshard.service.generator.identity import GeneratorIdentity

    known = GeneratorIdentity("a" * 32, "2.13.0", True, None, None, "test")
    unknown = GeneratorIdentity("b" * 32, None, False, None, None, "test")
    formula = Problem(SpecFile.DERIVATIVES, "sin", "derivatives.formula-name", "m", "h", 3)
    syntax = Problem(SpecFile.DERIVATIVES, "sin", "yaml.syntax", "m", "h", 3)
    assert severity_of(formula, known) == ERROR  # as `check` reports it
    assert severity_of(formula, unknown) == WARNING  # the host path accepts what it writes
    assert severity_of(syntax, unknown) == ERROR  # no generator reads what is not YAML


def test_the_lenses_tests_part_says_when_the_try_extra_is_missing(tmp_path):
    from gradshard.service.editor.tests_count import MISSING_EXTRA, TestCounts

    counts = TestCounts(tmp_path, lambda: None)
    counts.extra = False  # as check_extra finds it without numpy, expecttest or torch
    assert counts.words([{"op": "sin"}]) == MISSING_EXTRA == "tests: needs the [try] extra"


def test_the_server_without_its_extra_says_how_to_install_it(monkeypatch):
    import importlib.util

    from gradshard.service.editor.command import _check_installed

    found = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *rest: None if name == "pygls" else found(name, *rest))
    with pytest.raises(UsageError) as refused:
        _check_installed()
    assert "needs pygls" in str(refused.value)
    assert refused.value.hint == "pip install 'gradshard[lsp]'"


def test_a_negative_debounce_is_a_usage_error(capsys):
    from gradshard.service.cli import main

    assert main(["lsp", "--debounce", "-5"]) == 2
    assert "--debounce -5: a wait cannot be negative" in capsys.readouterr().err


def test_a_bug_in_a_question_is_an_answer_not_the_servers_end(tmp_path, monkeypatch):
    from gradshard.service.editor import backend as backend_module

    def broken(kind, request, session):
        raise KeyError("boom")

    monkeypatch.setattr(backend_module, "answer_query", broken)
    backend = backend_module.EditorBackend(tmp_path / "cache", use_daemon=False)
    try:
        answer = backend.submit("analyse", SpecBuffers(locate_spec(str(MINI_SPEC)))).result()
    finally:
        backend.close()
    assert answer["ok"] is False and "a bug in gradshard" in answer["error"]
    assert "KeyError" in answer["error"]
