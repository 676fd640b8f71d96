"""Property: after any sequence of edits to a small spec, the build on a cache that has seen
every earlier step equals a build without cache (or both reject the spec, alike)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.specs import DERIVATIVES, MINI_SPEC, NATIVE, TAGS

from gradshard.cache.store.database import Store
from gradshard.pipeline.problems import SpecError
from gradshard.service.files.inputs import read_inputs
from gradshard.service.files.spec_location import locate_spec
from gradshard.service.graph_run import DecodedInputs, run_graph

FORMULA = re.compile(r"^( +(?:self|other|result): )(.+)$", re.M)


def entries(text: str) -> tuple[str, list[str]]:
    head, *rest = re.split(r"\n(?=- )", text)
    return head, rest


def join(head: str, items: list[str]) -> str:
    return "\n".join([head, *items])


def edit_formula(texts: dict[str, str], data: st.DataObject) -> None:
    matches = list(FORMULA.finditer(texts[DERIVATIVES]))
    m = data.draw(st.sampled_from(matches))
    factor = data.draw(st.sampled_from(["2", "3", "self.sym_numel()"]))
    text = texts[DERIVATIVES]
    texts[DERIVATIVES] = text[:m.start(2)] + f"({m.group(2)}) * {factor}" + text[m.end(2):]


def swap_entries(texts: dict[str, str], data: st.DataObject) -> None:
    head, items = entries(texts[DERIVATIVES])
    if len(items) < 2:
        return
    i, j = data.draw(st.lists(st.integers(0, len(items) - 1), min_size=2, max_size=2, unique=True))
    items[i], items[j] = items[j], items[i]
    texts[DERIVATIVES] = join(head, [t.rstrip("\n") + "\n" for t in items])


def remove_entry(texts: dict[str, str], data: st.DataObject) -> None:
    head, items = entries(texts[DERIVATIVES])
    if items:
        del items[data.draw(st.integers(0, len(items) - 1))]
        texts[DERIVATIVES] = join(head, items)


def duplicate_entry(texts: dict[str, str], data: st.DataObject) -> None:
    head, items = entries(texts[DERIVATIVES])
    if items:
        items.append(items[data.draw(st.integers(0, len(items) - 1))].rstrip("\n") + "\n")
        texts[DERIVATIVES] = join(head, items)


def add_comment(texts: dict[str, str], data: st.DataObject) -> None:
    file = data.draw(st.sampled_from([DERIVATIVES, NATIVE, TAGS]))
    head, items = entries(texts[file])
    at = data.draw(st.integers(0, len(items)))
    items.insert(at, "# a comment\n") if at < len(items) else items.append("# a comment\n")
    texts[file] = join(head, items)


def add_function(texts: dict[str, str], data: st.DataObject) -> None:
    n = data.draw(st.integers(0, 5))
    signature = f"my_op{n}(Tensor self, float k=1.5) -> Tensor"
    texts[NATIVE] += (f"\n- func: {signature}\n  variants: function, method\n"
                      f"  dispatch:\n    CompositeExplicitAutograd: my_op{n}\n")
    if data.draw(st.booleans()):
        texts[DERIVATIVES] += f"\n- name: {signature}\n  self: grad * k\n  result: auto_linear\n"


def change_default(texts: dict[str, str], data: st.DataObject) -> None:
    value = data.draw(st.sampled_from(["2", "0.5", "-1"]))
    texts[NATIVE] = texts[NATIVE].replace("Scalar alpha=1", f"Scalar alpha={value}", 1)


OPERATIONS = [edit_formula, swap_entries, remove_entry, duplicate_entry, add_comment,
              add_function, change_default]


def outcome(spec: Path, cache: Path | None) -> dict[str, str] | list[tuple]:
    """The files, or the problems (rule, file, line) when the spec is rejected."""
    store = Store.open(cache, print) if cache is not None else None
    try:
        result = run_graph(DecodedInputs.decode(read_inputs(locate_spec(str(spec)))), store,
                           build_id=1)
        return result.load(sorted(result.files))
    except SpecError as error:
        return [(p.rule, p.file, p.line) for p in error.problems]
    finally:
        if store is not None:
            store.close()


@settings(max_examples=25, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=st.data(), steps=st.lists(st.sampled_from(OPERATIONS), min_size=1, max_size=4))
def test_incremental_equals_clean_after_every_step(tmp_path_factory, data, steps):
    root = tmp_path_factory.mktemp("property")
    spec, cache = root / "spec", root / "cache"
    shutil.copytree(MINI_SPEC, spec)
    texts = {f: (spec / f).read_text() for f in (DERIVATIVES, NATIVE, TAGS)}
    outcome(spec, cache)
    for step in steps:
        step(texts, data)
        for file, text in texts.items():
            (spec / file).write_text(text)
        assert outcome(spec, cache) == outcome(spec, None), f"after {step.__name__}"
