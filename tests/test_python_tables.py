"""The fixed tables of the Python bindings equal torchgen 2.13's: they are written in our own
form (built from parts), so check the sets they expand to."""

from __future__ import annotations

from gradshard.pipeline.render.python.bindings import DONT_RECORD_TRACE, SUPPORTED_RETURN_TYPES
from gradshard.pipeline.render.python.files import SKIP_PYTHON_BINDINGS_SIGNATURES


def test_supported_return_types():
    from torchgen.api.python import SUPPORTED_RETURN_TYPES as theirs

    assert SUPPORTED_RETURN_TYPES == set(theirs)


def test_skipped_signatures():
    from torchgen.packaged.autograd import gen_python_functions

    theirs = gen_python_functions.SKIP_PYTHON_BINDINGS_SIGNATURES

    assert SKIP_PYTHON_BINDINGS_SIGNATURES == set(theirs)


def test_untraced_ops():
    from torchgen.packaged.autograd.gen_trace_type import DONT_RECORD_TRACE as theirs

    assert DONT_RECORD_TRACE == set(theirs)
