"""Output files are written atomically and unchanged ones are left alone."""

from __future__ import annotations

import os
import time

from gradshard.cache.store.database import blob_hash
from gradshard.service.files import outputs
from gradshard.service.files.outputs import KnownHashes, sync_outputs, write_outputs


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


# ---------------------------------------------------------------------------------------------
# A long-lived session's known hashes (sync_outputs with KnownHashes)

def synced(out, texts: dict[str, str], known, loaded: list[str]):
    """sync_outputs of these texts, noting which names it had to load (write)."""
    files = {name: blob_hash("text", text.encode()) for name, text in texts.items()}

    sync = sync_outputs(out, files, known=known)
    loaded.extend(sync.stale)
    return sync.write({n: texts[n] for n in sync.stale}, previous=list(files))


def test_known_hashes_spare_reading_files_the_session_wrote(tmp_path, monkeypatch):
    out, known, loaded = tmp_path / "out", KnownHashes(), []
    synced(out, {"a.cpp": "int a;\n", "b.cpp": "int b;\n"}, known, loaded)
    assert sorted(loaded) == ["a.cpp", "b.cpp"]
    reads = []
    real = outputs.file_hash
    monkeypatch.setattr(outputs, "file_hash", lambda path: reads.append(path.name) or real(path))
    loaded.clear()
    synced(out, {"a.cpp": "int a;\n", "b.cpp": "int c;\n"}, known, loaded)
    assert loaded == ["b.cpp"] and reads == []  # both known by their stat signature
    assert (out / "b.cpp").read_text() == "int c;\n"


def test_a_file_changed_behind_the_session_is_read_and_written_again(tmp_path):
    out, known, loaded = tmp_path / "out", KnownHashes(), []
    texts = {"a.cpp": "int a;\n"}
    synced(out, texts, known, loaded)
    time.sleep(0.02)  # past the file system's timestamp tick (see KnownHashes)
    (out / "a.cpp").write_text("int x;\n")  # same size, same inode: its change time moved
    loaded.clear()
    synced(out, texts, known, loaded)
    assert loaded == ["a.cpp"] and (out / "a.cpp").read_text() == "int a;\n"
    (out / "a.cpp").unlink()
    (out / "a.cpp").symlink_to(tmp_path / "elsewhere")  # a link where a file was
    loaded.clear()
    synced(out, texts, known, loaded)
    assert loaded == ["a.cpp"] and not (out / "a.cpp").is_symlink()
