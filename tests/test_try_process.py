"""The try worker's process as the CLI and the daemon ask it (service/live/process.py): answers
among other output, a worker that dies, one that overruns its time, and the warm ping."""

from __future__ import annotations

import sys
import time

import pytest

from gradshard.service.exit_codes import EXIT_TRY_WORKER, ending_of
from gradshard.service.live.process import TryProcess, TryWorkerFailure

# A stand-in worker: answers each line with {"ok": true, "echo": …}, after printing a line of
# its own; "die" exits with 3 after a message on stderr, "hang" sleeps, "fail" answers not ok.
FAKE_WORKER = r'''
import json, sys, time
for line in sys.stdin:
    request = json.loads(line)
    print("torch says hello", flush=True)
    if request.get("do") == "die":
        print("segmentation fault in the patch", file=sys.stderr, flush=True)
        sys.exit(3)
    if request.get("do") == "hang":
        time.sleep(60)
    if request.get("do") == "fail":
        print(json.dumps({"ok": False, "error": "ValueError: no such op"}), flush=True)
        continue
    print(json.dumps({"ok": True, "echo": request}), flush=True)
'''


# A worker that reads nothing for a while, as one still importing torch: it leaves only when
# killed or after its sleep
SLOW_WORKER = "import time; time.sleep(30)"


def fake(timeout: float = 30.0) -> TryProcess:
    return TryProcess(timeout, (sys.executable, "-c", FAKE_WORKER))


def test_answers_are_read_among_other_output():
    with fake() as worker:
        worker.warm()  # the ping's answer is read before the next request's
        assert worker.ask({"n": 1})["echo"] == {"n": 1}
        assert worker.ask({"n": 2})["echo"] == {"n": 2}


def test_a_worker_that_dies_is_reported_and_replaced():
    with fake() as worker:
        with pytest.raises(TryWorkerFailure, match="exited with 3") as failure:
            worker.ask({"do": "die"})
        assert "segmentation fault in the patch" in str(failure.value)
        assert ending_of(failure.value).code == EXIT_TRY_WORKER  # not usage's 2
        assert worker.ask({"n": 3})["echo"] == {"n": 3}  # a new worker


def test_a_worker_that_overruns_is_stopped():
    with fake(timeout=1.0) as worker:
        started = time.monotonic()
        with pytest.raises(TryWorkerFailure, match="no answer within 1 s"):
            worker.ask({"do": "hang"})
        assert time.monotonic() - started < 10
        assert worker.ask({"n": 4})["echo"] == {"n": 4}


def test_a_failure_of_the_worker_itself_is_an_error():
    with fake() as worker:
        with pytest.raises(TryWorkerFailure, match="no such op"):
            worker.ask({"do": "fail"})


def test_a_worker_that_leaves_has_its_pipes_closed():
    with fake() as worker:
        worker.warm()
        process = worker._process
    assert process.returncode == 0 and process.stdin.closed and process.stdout.closed


def test_an_exception_kills_the_worker_at_once():
    """An exception passing through `with`: the worker is killed, not given seconds to leave
    (5 s here: it reads nothing), and its pipes are closed."""
    started = time.monotonic()
    with pytest.raises(KeyError), TryProcess(30.0, (sys.executable, "-c", SLOW_WORKER)) as worker:
        worker.warm()
        process = worker._process
        raise KeyError("the asker's own failure")
    assert time.monotonic() - started < 1.0
    assert process.returncode is not None and process.stdin.closed and process.stdout.closed


def test_a_worker_that_cannot_start_is_reported():
    worker = TryProcess(5.0, (sys.executable, "-c", "import sys; sys.exit('no torch here')"))
    with worker, pytest.raises(TryWorkerFailure, match="no torch here"):
        worker.ask({"n": 5})


def test_a_try_directory_keeps_the_most_recently_used(tmp_path):
    """PCH sets beyond two and patches beyond fifty go, the least recently used first; what
    the build just used stays, however old its files are."""
    import os

    from gradshard.service.live.try_directory import prune_try_directory

    old = time.time() - 3600
    for kind, count in (("pch", 4), ("lib", 53)):
        for n in range(count):
            entry = tmp_path / kind / f"{n:02d}"
            entry.mkdir(parents=True)
            (entry / "file").write_text("x")
            os.utime(entry, (old + n, old + n))  # 00 is the oldest
    used = [tmp_path / "pch" / "00", tmp_path / "lib" / "01"]  # old, but this build's
    prune_try_directory(tmp_path, used)
    assert sorted(p.name for p in (tmp_path / "pch").iterdir()) == ["00", "03"]
    kept = sorted(p.name for p in (tmp_path / "lib").iterdir())
    assert len(kept) == 50 and "01" in kept and "00" not in kept and "02" not in kept
