"""Tasks and groups declared by their signatures (cache/engine/jobs.py: task_of, group_of):
their inputs' labels in "why it ran", and group inputs bound by name."""

from __future__ import annotations

import pytest

from gradshard.cache.engine.jobs import group_of, task_of
from gradshard.cache.graph.build_graph import BUILD, NATIVE_SIDE
from gradshard.cache.graph.tasks import FUNCTION_SUMMARY, NUMBERED_INFOS, VIEW_ORDER
from gradshard.pipeline.records import Text


def _body(engine, natives: object, view_order: object) -> Text:
    return Text("")


def test_a_parameter_is_its_own_label_unless_labels_names_it():
    assert VIEW_ORDER.inputs == ("functions",)
    assert FUNCTION_SUMMARY.inputs == ("function",)  # its parameter is `fn`
    assert NUMBERED_INFOS.inputs == ("infos", "op names")
    group = group_of("test.group", "parse", _body, labels={"natives": "native_functions.yaml"})
    assert group.inputs == ("native_functions.yaml", "view order")


def test_the_spec_files_are_named_as_the_user_knows_them():
    assert BUILD.inputs[:4] == ("native_functions.yaml", "tags.yaml", "derivatives.yaml",
                                "deprecated.yaml")
    assert NATIVE_SIDE.inputs == ("native_functions.yaml", "tags.yaml", "release")


def _summary(fn: object) -> Text:
    return Text("")


def test_a_label_for_no_parameter_is_refused():
    with pytest.raises(TypeError, match="labels for no parameter"):
        task_of("test.task", "parse", _summary, labels={"function": "function"})


def test_a_function_without_a_return_annotation_is_refused():
    with pytest.raises(TypeError, match="has none"):
        task_of("test.task", "parse", lambda fn: None)


def test_a_labelled_group_binds_by_its_parameter_names():
    group = group_of("test.group", "parse", _body, labels={"natives": "native_functions.yaml"})
    assert group.bind(view_order=2, natives=1) == [1, 2]
    with pytest.raises(TypeError, match="expected"):
        group.bind(natives=1)
