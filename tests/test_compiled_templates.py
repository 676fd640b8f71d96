"""gradshard's templates compiled ahead (service/files/template_code.py): the committed code is
what the running Jinja2 makes of each template today, it is what a process loads, and what it
renders is what the templates compiled in the process render."""

from __future__ import annotations

from dataclasses import replace

import jinja2
from support.specs import MINI_SPEC

from gradshard.pipeline.render.templating import TemplateSet, _Loader
from gradshard.service.files.inputs import (compiled_template_bytes, gradshard_template_bytes,
                                            read_inputs)
from gradshard.service.files.spec_location import locate_spec
from gradshard.service.files.template_code import PACKAGES, compiled_texts
from gradshard.service.graph_run import DecodedInputs, run_graph

REWRITE = "python -m gradshard.service.files.template_code"


def test_the_committed_code_is_the_templates_today():
    for package in PACKAGES:
        committed = {f"{name}.compiled": data.decode()
                     for name, data in compiled_template_bytes(package).items()}
        made = compiled_texts(package)
        if all(text.startswith(f"# jinja2 {jinja2.__version__} ") for text in committed.values()):
            assert committed == made, f"a template changed since its code was written: {REWRITE}"
        else:  # another Jinja2: the code is not used, the templates compile as before
            sources = tuple((name, data.decode())
                            for name, data in gradshard_template_bytes(package).items())
            codes = tuple((name, data.decode())
                          for name, data in compiled_template_bytes(package).items())
            assert _Loader(TemplateSet(sources, codes)).codes == {}


def test_a_process_loads_the_code_and_renders_the_same():
    decoded = DecodedInputs.decode(read_inputs(locate_spec(str(MINI_SPEC))))
    templates = decoded.inputs.templates
    assert len(_Loader(templates).codes) == len(templates.sources)  # every one compiled ahead
    compiled = run_graph(decoded, None).index.files
    plain = replace(decoded.inputs, templates=TemplateSet(templates.sources))
    assert run_graph(replace(decoded, inputs=plain), None).index.files == compiled


def test_code_for_another_text_is_ignored():
    templates = TemplateSet((("t.j2", "{{ 1 + 1 }}"),),
                            (("t.j2", "# jinja2 0 template 0\nraise SystemExit"),))
    assert _Loader(templates).codes == {}
