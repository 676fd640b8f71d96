"""The host worker (service/host/): the spec's own generator run in a process of gradshard's,
its item functions memoized and its files captured. A warm worker never serves an edited spec
or template stale text; the generator's refusal is a spec error at its entry and the worker
goes on; a worker that dies or runs late is a GeneratorFailed. (Every release through the
build: tests/test_host_path.py.)"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import xxhash
from support.oracle import TreeOfTorchgen
from support.specs import TESTS, stage_packaged_spec

from gradshard.cache.errors import GeneratorFailed
from gradshard.pipeline.problems import SpecError, SpecFile
from gradshard.service.files.spec_location import locate_spec
from gradshard.service.generator.identity import identify_generator
from gradshard.service.generator.runner import generator_environment
from gradshard.service.host.client import HostWorker
from gradshard.service.host.items import ITEM_FUNCTIONS
from gradshard.service.report.rules import GENERATOR_RAISED_RULE

TIMEOUT = 600.0  # a generation takes ~10 s; the limit only guards the suite against a hang
LISTED = sum(len(names) for names in ITEM_FUNCTIONS.values())


def _digests(files: dict[str, bytes]) -> dict[str, str]:
    return {name: xxhash.xxh3_128_hexdigest(data) for name, data in files.items()}


def _flat(tree: TreeOfTorchgen) -> dict[str, str]:
    """generate_code's files by name (the worker writes them flat), the first stage of
    VariableType.cpp under templates/ as the worker names it."""
    files = dict(tree.flat_files())
    files.update({f"templates/{Path(path).name}": digest for path, digest in tree.files().items()
                  if "/templates/" in path})
    return files


def _worker(spec: Path) -> HostWorker:
    identity = identify_generator(locate_spec(str(spec)))
    return HostWorker(identity, TIMEOUT, generator_environment(identity))


@pytest.mark.slow
def test_a_warm_worker_serves_each_edit_what_torchgen_writes(tmp_path):
    """One worker, four generations of one spec copy: as copied, again, with a formula and a
    template edited, and undone. Each equals torchgen's fresh run on that spec (torchgen's
    own path-keyed parse caches and its cached template reads would serve the first text,
    and a kept load_derivatives cache the foreach nodes the last generation added to it);
    the edit recomputes only the items it reaches."""
    pythonpath, spec = stage_packaged_spec(tmp_path / "spec")
    derivatives = spec / "autograd" / "derivatives.yaml"
    template = spec / "autograd" / "templates" / "Functions.h"
    pristine = {path: path.read_text() for path in (derivatives, template)}
    edits = {derivatives: ("self: grad * self.cos().conj()", "self: grad * 2 * self.cos().conj()"),
             template: ("namespace torch", "// host worker test\nnamespace torch")}
    with _worker(spec) as worker:
        first = worker.generate(locate_spec(str(spec)))
        again = worker.generate(locate_spec(str(spec)))  # nothing changed: parse caches kept
        expected_first = _flat(TreeOfTorchgen(spec, pythonpath, tmp_path / "t0"))
        for path, (old, new) in edits.items():
            assert old in pristine[path]
            path.write_text(pristine[path].replace(old, new, 1))
        theirs = TreeOfTorchgen(spec, pythonpath, tmp_path / "t1")
        edited = worker.generate(locate_spec(str(spec)))
        expected_edited = _flat(theirs)
        for path, text in pristine.items():
            path.write_text(text)
        undone = worker.generate(locate_spec(str(spec)))
    assert _digests(first.files) == expected_first
    assert _digests(again.files) == expected_first and not again.items
    assert _digests(edited.files) == expected_edited != expected_first
    assert _digests(undone.files) == expected_first
    # sin's nodes, its kernels' items (their argument holds its derivative info): 21 of ~22,000
    assert 0 < len(edited.items) < 50
    assert not undone.items  # the pristine spec's values are all still there


@pytest.mark.slow
def test_every_item_run_twice_gives_one_output_and_leaves_its_arguments(packaged_spec):
    """What the memo assumes of every listed function, on the whole packaged spec: an item's
    output is a function of its arguments' keys, and it changes none of them."""
    done = subprocess.run([sys.executable, "-m", "support.items_twice", str(packaged_spec)],
                          cwd=TESTS, capture_output=True, text=True, timeout=TIMEOUT)
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout.splitlines()[-1])
    assert not found["differences"], found["differences"][:20]
    assert len(found["checked"]) == LISTED and sum(found["checked"].values()) > 20_000


def test_the_generators_refusal_is_a_spec_error_at_its_entry(tmp_path):
    """torchgen refuses a derivative for an op native_functions.yaml lacks; the worker
    answers it and goes on to the next generation."""
    _, spec = stage_packaged_spec(tmp_path / "spec")
    derivatives = spec / "autograd" / "derivatives.yaml"
    pristine = derivatives.read_text()
    derivatives.write_text(pristine + "\n- name: no_such_op(Tensor self) -> Tensor\n"
                                      "  self: grad\n")
    with _worker(spec) as worker:
        with pytest.raises(SpecError) as refused:
            worker.generate(locate_spec(str(spec)))
        derivatives.write_text(pristine)
        again = worker.generate(locate_spec(str(spec)))
    (problem,) = refused.value.problems
    assert problem.rule == GENERATOR_RAISED_RULE and problem.file == SpecFile.DERIVATIVES
    assert "no_such_op" in problem.message + problem.hint
    assert "Functions.h" in again.files


def test_a_worker_that_dies_is_a_generator_failure(tmp_path):
    _, spec = stage_packaged_spec(tmp_path / "spec")
    worker = _worker(spec)
    try:
        os.kill(worker._process.pid, signal.SIGKILL)
        with pytest.raises(GeneratorFailed) as failed:
            worker.generate(locate_spec(str(spec)))
    finally:
        worker.close()
    assert "host worker" in str(failed.value) and "killed by SIGKILL" in str(failed.value)


def test_a_worker_past_its_time_limit_is_killed(tmp_path):
    _, spec = stage_packaged_spec(tmp_path / "spec")
    worker = _worker(spec)
    worker.timeout = 0.5  # a generation takes seconds
    began = time.monotonic()
    try:
        with pytest.raises(GeneratorFailed) as failed:
            worker.generate(locate_spec(str(spec)))
    finally:
        worker.close()
    assert "within 0.5 s" in str(failed.value) and time.monotonic() - began < 30
    assert worker._process is None


def test_a_generator_missing_a_listed_item_runs_it_whole_and_names_it(tmp_path):
    """A copy of the generators where trace's method_registration is renamed: the files are
    still torchgen's, and the stats name the function the memo could not wrap."""
    pythonpath, spec = stage_packaged_spec(tmp_path / "spec")
    trace = spec / "autograd" / "gen_trace_type.py"  # a copy (stage_packaged_spec)
    trace.write_text(trace.read_text().replace("method_registration", "method_registration_2"))
    theirs = TreeOfTorchgen(spec, pythonpath, tmp_path)
    with _worker(spec) as worker:
        output = worker.generate(locate_spec(str(spec)))
    assert output.stats["missing"] == ["gen_trace_type.method_registration"]
    assert _digests(output.files) == _flat(theirs)


def test_a_failure_beside_the_generation_ends_the_worker(tmp_path):
    """What runs in gradshard's process while the worker generates (its own rules) raising:
    the worker's answer goes unread (Generating.abandon), so the worker ends, and a new one
    shares no delivered files with the client (a later answer leaves out only what the new
    worker delivered)."""
    from gradshard.service.host.generation import Generating

    _, spec = stage_packaged_spec(tmp_path / "spec")
    location = locate_spec(str(spec))
    with _worker(spec) as worker:
        worker.send_generate(location)
        generating = Generating(worker, "", location, {}, 0.0)
        generating.abandon()  # what generate_on_host does when its rules raise meanwhile
        assert not worker.running
    with _worker(spec) as fresh:
        assert len(fresh.generate(location).files) == len(fresh.generate(location).files) > 40
