"""What ninja runs for every compile and splice: the content-addressed object cache in
front of the compiler.

    python -m gradshard.service.object_cache STORE KEY OUTPUT -- COMMAND...

The key (computed by gradshard: the unit's text, its generated headers, the toolchain and
the header fingerprint; for a splice, its base object and parts) names the object in STORE.
A stored object is copied to OUTPUT with its depfile (a splice has none) and nothing runs;
otherwise COMMAND runs (the launcher, if any, leads a compile) and its object and depfile are
stored. The compiler's messages go to OUTPUT.log for
gradshard to place at their source; a failed unit leaves no object. OUTPUT.how says which
happened ("cached" or "compiled").

Imports nothing beyond the standard library: it starts once per unit.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path


def stored(store: Path, key: str) -> Path:
    return store / key[:2] / key


def stored_object(store: Path, key: str) -> Path:
    return stored(store, key).with_suffix(".o")


def _copy_atomic(source: Path, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.")
    os.close(handle)
    try:
        shutil.copyfile(source, temporary)
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def serve(store: Path, key: str, output: Path) -> bool:
    """Copy a stored object (and its depfile, if it has one: a splice has none) to output;
    False when there is none."""
    entry = stored(store, key)
    if not entry.with_suffix(".o").is_file():
        return False
    if entry.with_suffix(".d").is_file():
        _copy_atomic(entry.with_suffix(".d"), Path(f"{output}.d"))
    _copy_atomic(entry.with_suffix(".o"), output)
    return True


def keep(store: Path, key: str, output: Path) -> None:
    entry = stored(store, key)
    if Path(f"{output}.d").is_file():
        _copy_atomic(Path(f"{output}.d"), entry.with_suffix(".d"))
    _copy_atomic(output, entry.with_suffix(".o"))  # last: its presence marks the entry whole


def main(argv: list[str]) -> int:
    if len(argv) < 5 or argv[3] != "--":
        print("usage: object_cache STORE KEY OUTPUT -- COMMAND...", file=sys.stderr)
        return 2
    store, key, output, command = Path(argv[0]), argv[1], Path(argv[2]), argv[4:]
    log, how = Path(f"{output}.log"), Path(f"{output}.how")
    log.unlink(missing_ok=True)
    if serve(store, key, output):
        how.write_text("cached")
        return 0
    how.write_text("compiled")
    output.unlink(missing_ok=True)
    done = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    if done.returncode != 0:
        output.unlink(missing_ok=True)
        log.write_bytes(done.stdout)
        return done.returncode
    if done.stdout:
        log.write_bytes(done.stdout)  # warnings: kept for --raw, not an error
    keep(store, key, output)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
