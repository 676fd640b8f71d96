"""`try`'s verdicts as they come: the worker tells each op's verdict (an event line) as soon as
its first failing sample is found, or all pass, and locates the failures after all verdicts;
the CLI prints each verdict line as its event arrives, the located details after them; the
daemon announces and shows them the same way. Each op's final answer, and --json's, is that of
a worker checking that op alone, whatever the other ops and the two phases.

The worker is the real one (service/live/worker.py) with a patch made in Python (sin's
autograd kernel replaced by one whose backward is twice too large), so that its protocol is
checked without compiling; the CLI's end to end test compiles a real patch in the session's
try directory (conftest.py's try_workspace).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from support.specs import edited_derivatives as edited

from gradshard.cache.errors import EnvironmentFailure
from gradshard.service.cli import main
from gradshard.service.daemon import try_checks
from gradshard.service.daemon.runtime import status_text
from gradshard.service.daemon.try_checks import TryChecks
from gradshard.service.live.command import TryOptions
from gradshard.service.live.plan import PatchOp
from gradshard.service.live.process import TryProcess

SIN = "- name: sin(Tensor self) -> Tensor\n  self: grad * self.cos().conj()\n"
WRONG_SIN = SIN.replace("conj()\n", "conj() * 2\n")

# The real worker, with load_library and install replaced: the "patch" is sin's autograd
# kernel made in Python, its backward twice too large (its forward-mode formula right). cos
# fails too (its double backward calls sin), at its first sample, with more samples after.
PYTHON_PATCHED_WORKER = r'''
import torch
from gradshard.service.live import worker


class WrongSin(torch.autograd.Function):
    @staticmethod
    def forward(x):
        with torch._C._AutoDispatchBelowAutograd():
            return torch.sin(x)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])
        ctx.save_for_forward(inputs[0])

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * x.cos() * 2

    @staticmethod
    def jvp(ctx, tangent):
        (x,) = ctx.saved_tensors
        return tangent * x.cos()


class PythonPatch:
    def gradshard_patch_uninstall(self, handle):
        handle._destroy()


def install(library):
    handle = torch.library.Library("aten", "IMPL")
    handle.impl("sin", WrongSin.apply, "Autograd")
    return handle


worker.load_library = lambda path, slots, expected_sum: PythonPatch()
worker.install = install
worker.main()
'''
# The same worker, the ops' OpInfos hidden (every op's samples are the --samples file's), each
# verdict's message followed by what its sample drew: a digest of its inputs, and of the
# random streams after its checks (which covers fast mode's random vectors)
RECORDING_WORKER = PYTHON_PATCHED_WORKER.replace("worker.main()", r'''
import random
import zlib

checked = worker.check_sample


def check_sample(sample):
    verdict = checked(sample)
    inputs = repr([t.detach().tolist() for t in sample.inputs]).encode()
    streams = torch.get_rng_state().numpy().tobytes() + repr(random.getstate()).encode()
    verdict.message += f" | drew {zlib.crc32(inputs)} {zlib.crc32(streams)}"
    return verdict


worker.opinfos_of = lambda op: []
worker.check_sample = check_sample
worker.main()
''')
# Samples made from torch's global generator as they are checked (the OpInfos' are seeded by
# torch itself before each one: TrackedInputIter), each op's after the ops checked before it
RANDOM_SAMPLES = """
import torch


def random_samples(dtype):
    for _ in range(3):
        yield (torch.rand(4, dtype=dtype, requires_grad=True),)


SAMPLES = {"sin": random_samples, "cos": random_samples, "exp": random_samples}
"""
# failing at its first sample with samples after it; passing; no OpInfo; failing
OPS = ("cos", "exp", "_euclidean_dist", "sin")
VERDICT_FIELDS = {"op", "opinfo", "variant", "dtype", "sample", "verdict", "check", "error",
                  "where", "message", "seconds"}


def request(*ops: str, samples: str | None = None) -> dict:
    return {"library": "python", "slots": {}, "sum": "", "ops": [{"name": op} for op in ops],
            "dtypes": ["float64"], "samples": samples}


def started(script: str, stderr) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", script], text=True, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=stderr)


def ask(worker: subprocess.Popen, message: dict) -> list[dict]:
    """The request's raw lines: its events, then its answer."""
    worker.stdin.write(json.dumps(message) + "\n")
    worker.stdin.flush()
    lines = []
    while not lines or "event" in lines[-1]:
        lines.append(json.loads(worker.stdout.readline()))
    return lines


def ended(worker: subprocess.Popen) -> None:
    worker.stdin.close()
    worker.wait(timeout=30)


def untimed(answer: dict) -> list:
    """The answer's ops, all but their samples' seconds."""
    return [(op["op"], op["reason"],
             [{k: v for k, v in sample.items() if k != "seconds"} for sample in op["verdicts"]])
            for op in answer["ops"]]


# ---------------------------------------------------------------------------------------------
# The worker


def test_the_worker_tells_each_verdict_before_its_answer(tmp_path):
    """Raw lines of one request: an event per op, in order, as soon as its verdict is known,
    then the answer; each op's is the one it gets asked alone (checked from its first sample
    to its last, every failure located as found), to the located errors' sizes; the events
    agree with it."""
    with (tmp_path / "stderr").open("w") as stderr:
        worker = started(PYTHON_PATCHED_WORKER, stderr)
        try:
            *events, answer = ask(worker, request(*OPS))
            alone = [ask(worker, request(op))[-1] for op in OPS]
        finally:
            ended(worker)
    assert answer["ok"], answer
    assert [(e["event"], e["op"], e["verdict"]) for e in events] == [
        ("verdict", "cos", "FAIL"), ("verdict", "exp", "PASS"),
        ("verdict", "_euclidean_dist", "SKIP"), ("verdict", "sin", "FAIL")]
    assert untimed(answer) == [op for one in alone for op in untimed(one)]

    ops = {op["op"]: op for op in answer["ops"]}
    cos, exp, none, sin = events
    # a failure's event: its first failing sample as checked, its error not located yet
    first = ops["cos"]["verdicts"][cos["samples"] - 1]
    assert cos["samples"] == 1 and len(ops["cos"]["verdicts"]) > 1  # phase 2 checked the rest
    assert set(cos["sample"]) == VERDICT_FIELDS
    assert {**cos["sample"], "seconds": 0} == {**first, "seconds": 0}
    located = ops["sin"]["verdicts"][0]
    assert sin["sample"]["error"] is None and sin["sample"]["where"] is None
    assert located["error"] > 0.1
    assert set(located["where"]) == {"input", "input_name", "element", "output"}
    assert sin["seconds"] < located["seconds"]  # the locating counts in the sample's seconds
    assert exp["samples"] == len(ops["exp"]["verdicts"]) > 0 and exp["sample"] is None
    assert none["samples"] == 0 and "no OpInfo" in none["reason"]
    assert none["reason"] == ops["_euclidean_dist"]["reason"]


def test_each_op_draws_what_it_would_alone(tmp_path):
    """An op's samples and checks draw the random numbers they would in a worker checking it
    alone, whatever the ops before it and the phases: sin fails first (its first phase draws
    before cos's and exp's, its second after them), and each op is then asked alone, after
    other requests. Each sample's inputs and the streams after its checks are compared, with
    the located errors' sizes (which the random samples decide)."""
    samples = tmp_path / "samples.py"
    samples.write_text(RANDOM_SAMPLES)
    with (tmp_path / "stderr").open("w") as stderr:
        worker = started(RECORDING_WORKER, stderr)
        try:
            together = ask(worker, request("sin", "cos", "exp", samples=str(samples)))[-1]
            alone = [ask(worker, request(op, samples=str(samples)))[-1]
                     for op in ("exp", "cos", "sin")]
        finally:
            ended(worker)
    found = {op: verdicts for op, _, verdicts in untimed(together)}
    assert found == {op: verdicts for one in alone for op, _, verdicts in untimed(one)}
    assert [len(verdicts) for verdicts in found.values()] == [3, 3, 3]
    assert all(" | drew " in verdict["message"] for verdicts in found.values()
               for verdict in verdicts)
    assert all(verdict["error"] > 0.1 for verdict in found["sin"])  # each one located
    assert {verdict["verdict"] for verdict in found["cos"] + found["exp"]} == {"PASS"}


# A stand-in worker for the asking side: per request, `events` event lines among printed
# lines that are not JSON objects, then the answer.
EVENTS_WORKER = r'''
import json, sys
for line in sys.stdin:
    request = json.loads(line)
    events = request.get("events", 0)  # a ping has none
    for n in range(events):
        print("{ printed by the checked code", flush=True)
        print("[1, 2]", flush=True)
        print(json.dumps({"event": "verdict", "n": n}), flush=True)
    print(json.dumps({"ok": True, "events": events}), flush=True)
'''


def test_the_asker_passes_events_to_its_callback():
    with TryProcess(30.0, (sys.executable, "-c", EVENTS_WORKER)) as worker:
        worker.warm()
        heard: list[dict] = []
        assert worker.ask({"events": 3}, heard.append) == {"ok": True, "events": 3}
        assert heard == [{"event": "verdict", "n": n} for n in range(3)]
        assert worker.ask({"events": 2}) == {"ok": True, "events": 2}  # no callback: skipped


def test_a_callback_that_fails_ends_the_worker():
    """The answer is half read: the worker is killed, the failure goes up, the next request
    gets a new worker."""
    def refuse(event: dict) -> None:
        raise EnvironmentFailure("the terminal went away")

    with TryProcess(30.0, (sys.executable, "-c", EVENTS_WORKER)) as worker:
        with pytest.raises(EnvironmentFailure, match="went away"):
            worker.ask({"events": 2}, refuse)
        assert worker.ask({"events": 1}, lambda event: None) == {"ok": True, "events": 1}


# ---------------------------------------------------------------------------------------------
# The CLI, end to end

# a failing op's verdict line (as soon as known), and its located details' first line (at
# the end)
VERDICT = re.compile(r"  (FAIL) (\S+)  \(.*\): first failing sample: ")
COUNTS = re.compile(r"  FAIL (\S+)  (\d+)/(\d+) samples pass")


def streamed(command: list[str], errors: Path) -> tuple[int, list[tuple[float, str]], float]:
    """The command's exit code, its stdout lines each with the time it arrived, and the time
    it ended."""
    with errors.open("w") as stderr:
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=stderr, text=True)
        arrived = [(time.monotonic(), line.rstrip("\n")) for line in process.stdout]
        code = process.wait(timeout=600)
    return code, arrived, time.monotonic()


@pytest.mark.compiler
@pytest.mark.slow
def test_the_cli_prints_each_verdict_as_it_comes(try_workspace, tmp_path, capsys):
    """sin's formula wrong: sin and _foreach_sin (reached through sin's entry) fail. The first
    line comes before the checks, each op's verdict line while the others are still checked,
    and the located details after all verdicts; --json is one document, as before, whose
    counts are the details'."""
    spec, cache = try_workspace
    where = ["--spec", str(spec), "--cache", str(cache), "--dtype", "float64"]
    with edited(spec, SIN, WRONG_SIN):  # test_try.py's edit: the same patch, built once
        code, arrived, ended = streamed(
            [sys.executable, "-m", "gradshard.service.entry", "try", *where], tmp_path / "err")
        json_code = main(["try", *where, "--json"])
    assert code == 5, (tmp_path / "err").read_text() + "\n".join(l for _, l in arrived)
    lines = [line for _, line in arrived]
    assert lines[0].startswith("gradshard try: compared with ") and "compiled with" in lines[0]

    verdicts = [(n, VERDICT.match(line)) for n, line in enumerate(lines)]
    verdicts = [(n, m.group(1), m.group(2)) for n, m in verdicts if m]
    details = [n for n, line in enumerate(lines) if COUNTS.match(line)]
    assert [(verdict, op) for _, verdict, op in verdicts] in (
        [("FAIL", "sin"), ("FAIL", "_foreach_sin")], [("FAIL", "_foreach_sin"), ("FAIL", "sin")])
    assert all("first failing sample: " in lines[n] for n, _, _ in verdicts)
    assert "largest error" not in "\n".join(lines[n] for n, _, _ in verdicts)  # not located yet
    # every verdict before every detail, and each failing op's details there
    assert [n for n, _, _ in verdicts] == [1, 2] and details and min(details) == 3
    assert {COUNTS.match(lines[n]).group(1) for n in details} == {"sin", "_foreach_sin"}
    assert any("largest error" in line for line in lines[3:])
    # streamed: the first line before the checks, the first verdict before the other op's
    # checks, the details after the locating. Each gap is at least that work (~0.1 s each at
    # float64 on 2 cores); text printed at the end comes in one write, its lines microseconds
    # apart
    head, first, second, located = (arrived[n][0] for n in (0, 1, 2, min(details)))
    gaps = [first - head, second - first, located - second]
    assert min(gaps) > 0.01 and located <= ended, gaps

    report = json.loads(capsys.readouterr().out)  # one document: nothing printed before it
    assert json_code == 5
    assert set(report) == {"ok", "against", "generator_path", "compiler", "warnings", "ops",
                           "seconds"} and report["generator_path"] == "ported"
    assert {op["op"] for op in report["ops"]} == {"sin", "_foreach_sin"}
    for op in report["ops"]:
        assert set(op) == {"op", "functions", "nodes", "entry", "file", "line", "reason",
                           "samples"}
        assert op["samples"] and all(set(s) == VERDICT_FIELDS for s in op["samples"])
    counts = {m.group(1): (int(m.group(2)), int(m.group(3)))
              for m in (COUNTS.match(lines[n]) for n in details)}
    assert counts == {op["op"]: (sum(s["verdict"] == "PASS" for s in op["samples"]),
                                 len(op["samples"])) for op in report["ops"]}


# ---------------------------------------------------------------------------------------------
# The daemon's checks, with a stand-in plan, library and worker

# Per request: each op's event (sin fails, exp passes), a pause (the locating), the answer.
DAEMON_WORKER = r'''
import json, sys, time
FAILING = {"op": "sin", "opinfo": "sin", "variant": "function", "dtype": "float64",
           "sample": 0, "verdict": "FAIL", "check": "gradcheck", "error": None, "where": None,
           "message": "Jacobian mismatch for output 0 with respect to input 0", "seconds": 0.1}
PASSING = {**FAILING, "op": "exp", "opinfo": "exp", "verdict": "PASS", "check": "",
           "message": ""}
for line in sys.stdin:
    request = json.loads(line)
    if request.get("ping"):
        print(json.dumps({"ok": True}), flush=True)
        continue
    names = [op["name"] for op in request["ops"]]
    for name in names:
        failing = name == "sin"
        print(json.dumps({"event": "verdict", "op": name,
                          "verdict": "FAIL" if failing else "PASS",
                          "samples": 1 if failing else 2,
                          "sample": FAILING if failing else None, "reason": "",
                          "seconds": 0.2}), flush=True)
    time.sleep(0.3)
    located = {**FAILING, "error": 1.0, "where": {"input": 0, "element": [3], "output": 0}}
    verdicts = {"sin": [located, {**located, "sample": 1}], "exp": [PASSING, PASSING]}
    print(json.dumps({"ok": True, "ops": [{"op": n, "reason": "", "verdicts": verdicts[n]}
                                          for n in names]}), flush=True)
'''


def stand_in_plan(sin_code: str) -> SimpleNamespace:
    ops = (PatchOp("dropout", ("dropout",), (), "dropout", 5,
                   reason="no autograd kernel of its own", code="d"),
           PatchOp("exp", ("exp",), ("ExpBackward0",), "exp", 7, code="e"),
           PatchOp("sin", ("sin",), ("SinBackward0",), "sin", 9, code=sin_code))
    return SimpleNamespace(ops=ops, derivatives=Path("derivatives.yaml"))


SKIP_DROPOUT = "SKIP dropout  (derivatives.yaml:5): no autograd kernel of its own"
PASS_EXP = "PASS exp  2/2 samples pass, 0.2 s  (derivatives.yaml:7, exp)"
FAIL_SIN = ("FAIL sin  (derivatives.yaml:9, sin): first failing sample: sin function float64 "
            "sample 0: gradcheck: Jacobian mismatch for output 0 with respect to input 0")
SIN_DETAILS = ["FAIL sin  0/2 samples pass, 0.2 s  (derivatives.yaml:9, sin)",
               *(f"  FAIL sin function float64 sample {n}: gradcheck: Jacobian mismatch for "
                 "output 0 with respect to input 0; largest error 1 for output 0 with respect to "
                 "input 0 at element [3]" for n in (0, 1))]


def test_the_daemon_announces_each_verdict_at_once(monkeypatch):
    """The ops not checked first, then each verdict line as its event arrives, `daemon
    status` showing it at that moment, then the located details; the times to the first and
    to all verdicts in the last check's phases. A second save that changes sin's code only:
    its verdict shown beside exp's last lines."""
    plans = [stand_in_plan("s1"), stand_in_plan("s2")]
    monkeypatch.setattr(try_checks, "plan_patch",
                        lambda location, session, names, run: plans[checks_made[0]])
    library = SimpleNamespace(path=Path("patch.so"), slots={}, sum="", note="")
    monkeypatch.setattr(try_checks, "build_library", lambda plan, compiler, jobs: library)
    checks_made = [0]
    heard: list[tuple[str, dict]] = []
    checks = TryChecks(None, TryOptions(()), lambda text: heard.append((text, checks.status())),
                       None)
    checks.worker = TryProcess(30.0, (sys.executable, "-c", DAEMON_WORKER))
    checks.compiler = SimpleNamespace(json=lambda: {"name": "stand-in"})
    try:
        checks.after_graph(session=None, run=None)
        first = checks.status()
        first_heard, heard[:] = list(heard), []
        checks_made[0] = 1
        checks.after_graph(session=None, run=None)
    finally:
        checks.close()

    assert [text for text, _ in first_heard] == [
        f"try: {SKIP_DROPOUT}", f"try: {PASS_EXP}", f"try: {FAIL_SIN}",
        "\n".join(f"try: {line}" for line in SIN_DETAILS)]
    # `daemon status` as each verdict was announced: the verdicts found so far
    _, during = first_heard[2]
    assert during["checking"] and list(during["verdicts"]) == ["exp", "sin"]
    assert during["lines"] == [PASS_EXP, FAIL_SIN]  # dropout's SKIP is not checked yet
    shown = status_text({"state": "building", "pid": 1, "builds": 1, "spec": "s", "out": "o",
                         "log": "l", "checks": during})
    assert "  try:  checking the last save: 2 verdict(s) so far" in shown
    assert f"    {FAIL_SIN}" in shown
    assert not first["checking"] and not first["error"]
    assert first["lines"] == [SKIP_DROPOUT, PASS_EXP, *SIN_DETAILS]
    phases = first["phases"]
    assert 0 < phases["first_verdict"] <= phases["all_verdicts"]
    # all verdicts came before the worker's pause (the locating) and its answer
    assert phases["all_verdicts"] + 0.25 < phases["plan"] + phases["build"] + phases["check"]
    assert first["started"] <= first["finished"] <= time.time()

    # sin's code changed, exp's not: sin alone checked again, shown beside exp's last lines
    assert [text for text, _ in heard] == [
        f"try: {FAIL_SIN}", "\n".join(f"try: {line}" for line in SIN_DETAILS)]
    _, during = heard[0]
    assert during["lines"] == [SKIP_DROPOUT, PASS_EXP, FAIL_SIN]
