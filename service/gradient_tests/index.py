"""Which backward nodes and autograd kernels each OpInfo's gradient tests reach, observed: the
index `affected --tests` selects PyTorch's gradient tests by (query.py), read from the cache
directory or built once per installed torch (pool.py, running observer.py in worker
processes) and kept there.

The index is kept in the cache directory (`CACHE/gradient-tests/<key>.json`, KEPT of them)
as data: a header line (the format, the key, the hash of the body's bytes) and the body, JSON
only, never executed. The key covers the installed torch (its version, its directory, the
size and mtime of libtorch_cpu and of op_db's module), the Python version, the OpInfos
indexed and the observer's own source (observer_digest), so another torch, or another
observer, builds anew. A cache directory travels (CI restores it), so a file is read only as
a regular file under a size limit whose path stays inside the cache directory, its body
checked against its hash and its every value against the body's layout (reach.py) before
use; one that fails is named in a warning and built again. Its names are only looked up:
the test ids are made from the live OpInfos, never from the file.
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path
from typing import Mapping, Sequence

import xxhash

from gradshard.cache.store.database import blob_hash, path_inside
from gradshard.cache.store.regular_files import read_regular
from gradshard.service.files.outputs import write_atomic
from gradshard.service.gradient_tests.observer import observer_digest
from gradshard.service.gradient_tests.pool import OPINFO_TIMEOUT, WORKERS, build_index
from gradshard.service.gradient_tests.reach import GradientIndex, body_json, body_read

__all__ = ["CODEC", "FORMAT", "INDEX_DIRECTORY", "KEPT", "gradient_index", "index_key",
           "index_path", "read_index", "torch_identity"]

INDEX_DIRECTORY = "gradient-tests"
FORMAT = "gradshard-gradient-index-1"
CODEC = "json:GradientIndex"  # the body's hash: blob_hash(CODEC, body bytes)
KEPT = 4  # index files kept in the directory (one per torch installed lately)
INDEX_BYTES = 64 << 20  # the most of a file read (the full index is about 1 MiB)
_INDEX_FILE = re.compile(r"[0-9a-f]{32}\.json")


def torch_identity() -> dict:
    """What the index is a function of: the installed torch (version, directory, its C++
    library's and op_db's module's size and mtime), Python's version and this observer."""
    import torch

    root = Path(torch.__file__).resolve().parent
    library = next(iter(sorted((root / "lib").glob("libtorch_cpu.*"))), None) \
        or next(iter(sorted(root.glob("_C.*"))), root / "__init__.py")
    samples = root / "testing" / "_internal" / "common_methods_invocations.py"
    return {"version": str(torch.__version__), "path": str(root),
            "library": _stamp(library, root), "op_db": _stamp(samples, root),
            "python": "%d.%d" % sys.version_info[:2],
            "observer": observer_digest()}


def _stamp(path: Path, root: Path) -> list:
    try:
        info = path.stat()
    except OSError:
        return [str(path.relative_to(root)), -1, -1]
    return [str(path.relative_to(root)), info.st_size, info.st_mtime_ns]


def index_key(identity: Mapping, subset: Sequence[str] | None) -> str:
    text = json.dumps([FORMAT, identity, sorted(subset) if subset is not None else None],
                      sort_keys=True)
    return xxhash.xxh3_128_hexdigest(text.encode())


def index_path(cache: Path, key: str) -> Path | None:
    """The index file's path, when it stays inside the cache directory (no link among its
    directories leads out)."""
    return path_inside(cache, f"{INDEX_DIRECTORY}/{key}.json")


def gradient_index(cache: Path | None, names: Sequence[str], warnings: list[str],
                   subset: bool = False, workers: int = WORKERS,
                   timeout: float = OPINFO_TIMEOUT, progress: bool = True,
                   command: Sequence[str] | None = None) -> GradientIndex:
    """The index of these OpInfos for the installed torch: read from the cache directory, or
    built (and kept there). `subset`: the names are some of op_db's (kept apart from the
    whole index)."""
    identity = torch_identity()
    key = index_key(identity, names if subset else None)
    path = index_path(cache, key) if cache is not None else None
    if cache is not None and path is None:
        warnings.append(f"{cache / INDEX_DIRECTORY} leads outside the cache directory: the "
                        "gradient test index was built and not kept")
    if path is not None:
        found = read_index(path, identity, key, warnings)
        if found is not None:  # of these OpInfos only, whatever else the file names
            found.opinfos = {n: found.opinfos[n] for n in names if n in found.opinfos}
            found.lost = {n: found.lost[n] for n in names if n in found.lost}
            return found
    index = build_index(names, workers, timeout, progress, command)
    index.torch, index.subset = identity, tuple(names) if subset else None
    if path is not None:
        _keep(path, key, index, warnings)
    return index


def read_index(path: Path, identity: Mapping, key: str,
               warnings: list[str]) -> GradientIndex | None:
    """The index kept at path, or None: none there, or one that is damaged or foreign (named
    in `warnings`: it is built again)."""
    try:
        if os.path.islink(path):
            raise ValueError("it is a symbolic link")
        data = read_regular(path, INDEX_BYTES)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as error:
        warnings.append(f"the gradient test index {path} cannot be read ({error}): it was "
                        "built again")
        return None
    try:
        index = _decoded(data, identity, key)
    except (ValueError, TypeError, KeyError, AttributeError, RecursionError) as error:
        warnings.append(f"the gradient test index {path} is damaged or not this torch's "
                        f"({error}): it was built again")
        return None
    index.path = path
    return index


def _keep(path: Path, key: str, index: GradientIndex, warnings: list[str]) -> None:
    body = json.dumps(body_json(index, key), sort_keys=True, separators=(",", ":")).encode()
    header = json.dumps({"format": FORMAT, "key": key, "hash": blob_hash(CODEC, body),
                         "bytes": len(body)}).encode()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, header + b"\n" + body)
    except OSError as error:
        warnings.append(f"the gradient test index could not be kept in {path.parent} "
                        f"({error.strerror or error}): it is built again next time")
        return
    index.path = path
    _prune(path.parent, path.name)


def _prune(directory: Path, kept: str) -> None:
    """The directory's index files past the KEPT newest (only files of an index's name:
    anything else there is left alone)."""
    try:
        entries = [(e.stat(follow_symlinks=False).st_mtime, e.name) for e in os.scandir(directory)
                   if _INDEX_FILE.fullmatch(e.name) and e.name != kept]
    except OSError:
        return
    for _, name in sorted(entries, reverse=True)[KEPT - 1:]:
        try:
            os.unlink(directory / name)
        except OSError:
            pass


def _decoded(data: bytes, identity: Mapping, key: str) -> GradientIndex:
    """The index file's bytes checked and read (ValueError, TypeError, KeyError: it is not an
    index of this key, or damaged)."""
    head, newline, body = data.partition(b"\n")
    header = json.loads(head)
    if not newline or not isinstance(header, dict) or header.get("format") != FORMAT:
        raise ValueError("not an index of this format")
    if header.get("key") != key:
        raise ValueError("the index of another torch or other OpInfos")
    if header.get("hash") != blob_hash(CODEC, body):
        raise ValueError("its body does not match its hash")
    return body_read(json.loads(body), identity, key)
