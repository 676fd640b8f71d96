"""Output files are written atomically and unchanged ones are left alone."""

from __future__ import annotations

import os

from gradshard.service.outputs import write_outputs


def test_unchanged_files_keep_their_mtime(tmp_path):
    first = write_outputs(tmp_path, {"a.h": "x\n", "b.cpp": "y\n"})
    assert first.written == ["a.h", "b.cpp"] and first.unchanged == []
    os.utime(tmp_path / "a.h", (1_000_000, 1_000_000))
    second = write_outputs(tmp_path, {"a.h": "x\n", "b.cpp": "z\n"})
    assert second.written == ["b.cpp"] and second.unchanged == ["a.h"]
    assert (tmp_path / "a.h").stat().st_mtime == 1_000_000
    assert (tmp_path / "b.cpp").read_text() == "z\n"


def test_no_temporary_files_are_left(tmp_path):
    write_outputs(tmp_path / "out", {"a.h": "x\n"})
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["a.h"]


def test_replacement_is_a_new_inode(tmp_path):
    write_outputs(tmp_path, {"a.h": "x\n"})
    before = (tmp_path / "a.h").stat().st_ino
    write_outputs(tmp_path, {"a.h": "changed\n"})
    assert (tmp_path / "a.h").stat().st_ino != before  # renamed into place, never rewritten in place
