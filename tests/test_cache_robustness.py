"""The cache under abuse: builds killed with SIGKILL at random points, two builds at once on
one cache, and damaged bytes in blobs and in the database file. After each, a build must
produce exactly what a build without any cache produces."""

from __future__ import annotations

import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support.graph_run import generated_files
from support.spec_edits import ALL_EDITS, apply_edits
from support.specs import mini_spec_pair, stage_packaged_spec

from gradshard.cache.store.database import DB_FILE


def gradshard(*args: str) -> list[str]:
    return [sys.executable, "-m", "gradshard.service.cli", *args]


def build_args(spec: Path, out: Path, cache: Path) -> list[str]:
    return gradshard("build", "--codegen-only", "--spec", str(spec), "--out", str(out),
                     "--cache", str(cache))


def clean_files(spec: Path) -> dict[str, str]:
    return generated_files(spec)


def assert_outputs(out: Path, expected: dict[str, str]) -> None:
    assert sorted(p.name for p in out.iterdir() if not p.name.startswith(".")) == sorted(expected)
    different = [n for n, text in expected.items() if (out / n).read_text() != text]
    assert not different, f"differ from a build without cache: {different}"


def run_build(spec: Path, out: Path, cache: Path) -> subprocess.CompletedProcess:
    done = subprocess.run(build_args(spec, out, cache), capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done


@pytest.fixture(scope="module")
def variants(tmp_path_factory) -> list[Path]:
    """The real spec and two edits of it."""
    root = tmp_path_factory.mktemp("variants")
    specs = []
    for name in ("base", "saved-variable-changed", "function-and-entry-added"):
        _, spec = stage_packaged_spec(root / name)
        if name != "base":
            apply_edits(spec, ALL_EDITS[name])
        specs.append(spec)
    return specs


def test_builds_killed_at_random_points_leave_a_correct_cache(tmp_path, variants):
    rng = random.Random(1234)
    cache, out = tmp_path / "cache", tmp_path / "out"
    kills, attempts = 0, 0
    while kills < 12 and attempts < 40:
        attempts += 1
        spec = variants[attempts % len(variants)]
        process = subprocess.Popen(build_args(spec, out, cache), stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(0.05, 2.0 if kills < 3 else 0.8))
        if process.poll() is None:
            process.send_signal(signal.SIGKILL)
            kills += 1
        process.wait()
    assert kills >= 10
    for spec in variants[1:]:
        run_build(spec, out, cache)
        assert_outputs(out, clean_files(spec))


@pytest.mark.slow
def test_two_builds_at_once_on_one_cache(tmp_path, variants):
    cache = tmp_path / "cache"
    outs = [tmp_path / "out-a", tmp_path / "out-b"]
    processes = [subprocess.Popen(build_args(spec, out, cache), stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True)
                 for spec, out in zip(variants[:2], outs)]
    for process in processes:
        _, err = process.communicate(timeout=600)
        assert process.returncode == 0, err
    for spec, out in zip(variants[:2], outs):
        assert_outputs(out, clean_files(spec))
    # and both again, now into the same directory with the same spec
    same = tmp_path / "same"
    processes = [subprocess.Popen(build_args(variants[2], same, cache), stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True) for _ in range(2)]
    for process in processes:
        _, err = process.communicate(timeout=600)
        assert process.returncode == 0, err
    assert_outputs(same, clean_files(variants[2]))


# ---------------------------------------------------------------------------------------------
# Damage, on the mini spec (fast to rebuild many times)


@pytest.fixture
def mini(tmp_path) -> tuple[Path, Path]:
    """A copy of the mini spec and an edited copy."""
    old = "  self: mul_tensor_backward(grad, other, self.scalar_type())\n"
    return mini_spec_pair(tmp_path, old, old.replace("())", "()) * 2"))


def test_flipped_bytes_in_blobs_are_detected_and_recomputed(tmp_path, mini):
    base, edited = mini
    cache, out = tmp_path / "cache", tmp_path / "out"
    run_build(base, out, cache)
    with sqlite3.connect(cache / DB_FILE) as db:
        rows = db.execute("SELECT hash, data FROM blobs WHERE size > 16").fetchall()
        for name, data in random.Random(7).sample(rows, len(rows) // 2):
            flipped = bytearray(data)
            flipped[len(flipped) // 2] ^= 0x20
            db.execute("UPDATE blobs SET data = ? WHERE hash = ?", (bytes(flipped), name))
    shutil.rmtree(out)
    done = run_build(edited, out, cache)
    assert "damaged" in done.stdout
    assert_outputs(out, clean_files(edited))
    shutil.rmtree(out)
    run_build(base, out, cache)
    assert_outputs(out, clean_files(base))


@pytest.mark.parametrize("seed", range(8))
def test_flipped_bytes_in_the_database_file_never_give_wrong_outputs(tmp_path, mini, seed):
    base, edited = mini
    cache, out = tmp_path / "cache", tmp_path / "out"
    run_build(base, out, cache)
    database = cache / DB_FILE
    data = bytearray(database.read_bytes())
    rng = random.Random(seed)
    for _ in range(8):
        offset = rng.randrange(100, len(data))  # past the header: pages, not the magic
        data[offset] ^= 1 << rng.randrange(8)
    database.write_bytes(bytes(data))
    shutil.rmtree(out)
    run_build(edited, out, cache)
    assert_outputs(out, clean_files(edited))


def test_a_truncated_database_is_set_aside(tmp_path, mini):
    base, _ = mini
    cache, out = tmp_path / "cache", tmp_path / "out"
    run_build(base, out, cache)
    database = cache / DB_FILE
    database.write_bytes(database.read_bytes()[: database.stat().st_size // 2])
    shutil.rmtree(out)
    done = run_build(base, out, cache)
    assert "moved aside" in done.stdout or "set aside" in done.stdout
    assert_outputs(out, clean_files(base))
