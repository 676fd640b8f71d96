"""A cache directory is input (CI restores it from earlier jobs): nothing read from it is
unpickled, unmarshalled, compiled, executed or loaded as a library.

Every Python process of a build (the CLI, and the object-cache wrapper ninja runs for each
unit) runs under an audit hook installed by a `sitecustomize` module on PYTHONPATH. The hook
ends the process with AUDIT_EXIT when it sees:

- `pickle.find_class` or `marshal.load` at all (gradshard stores nothing as either);
- `marshal.loads` except from the import system reading a `.pyc` outside the cache;
- `compile` or `exec` of code whose file name lies inside the cache;
- `ctypes.dlopen` of a path inside the cache.

The build runs cold, again after an edit (each in a fresh process, as a user runs them), and
then from a copy of the cache in another directory (a restored cache) into a new output.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from support.compile import FORMULAS, MERGED
from support.specs import DERIVATIVES, MINI_SPEC

AUDIT_EXIT = 97

SITECUSTOMIZE = textwrap.dedent('''
    import os, sys

    _CACHES = tuple(p for p in os.environ["GRADSHARD_AUDIT_CACHES"].split(os.pathsep) if p)
    _IMPORTERS = ("importlib._bootstrap_external", "_frozen_importlib_external")


    def _inside_cache(path):
        try:
            real = os.path.realpath(os.fsdecode(path))
        except (TypeError, ValueError):
            return False
        return any(real == c or real.startswith(c + os.sep) for c in _CACHES)


    def _caught(event, detail):
        sys.stderr.write(f"AUDIT: {event} {detail}\\n")
        sys.stderr.flush()
        os._exit(%d)


    def _import_reading_pyc():
        caller = sys._getframe(2)
        if caller.f_globals.get("__name__") not in _IMPORTERS:
            return False
        return not _inside_cache(caller.f_locals.get("bytecode_path") or "")


    def _hook(event, args):
        if event in ("pickle.find_class", "marshal.load"):
            _caught(event, args)
        elif event == "marshal.loads" and not _import_reading_pyc():
            _caught(event, "outside the import system")
        elif event == "compile" and len(args) > 1 and _inside_cache(args[1] or ""):
            _caught(event, args[1])
        elif event == "exec" and _inside_cache(getattr(args[0], "co_filename", "")):
            _caught(event, args[0].co_filename)
        elif event == "ctypes.dlopen" and args[0] and _inside_cache(args[0]):
            _caught(event, args[0])


    sys.addaudithook(_hook)
''' % AUDIT_EXIT)

# Compile the mini spec's merged formula unit (support/compile.py): what a compile reads
# from the cache (its layout, objects and their records, the PCH's sums) is the same for
# every unit, and one unit's compile is all the object-cache wrapper needs to run under the
# hook; its PCH is the session's (seeded_pchs), linked in as a restored cache shares one.
COMPILE = [*MERGED, "--units", FORMULAS]


def audited_build(hooks: Path, caches: list[Path], spec: Path, out: Path, cache: Path
                  ) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
                   [str(hooks), *filter(None, [os.environ.get("PYTHONPATH")])]),
               GRADSHARD_AUDIT_CACHES=os.pathsep.join(str(c.resolve()) for c in caches))
    return subprocess.run([sys.executable, "-m", "gradshard.service.entry", "build",
                           "--spec", str(spec), "--out", str(out), "--cache", str(cache),
                           *COMPILE], capture_output=True, text=True, env=env, timeout=900)


def assert_clean(done: subprocess.CompletedProcess) -> None:
    assert done.returncode != AUDIT_EXIT, done.stderr[-3000:]
    assert done.returncode == 0, done.stderr[-3000:]


def test_the_hook_catches_what_it_is_for(tmp_path):
    """The hook itself: a pickle and a compile of a file inside the cache are caught."""
    hooks, cache = tmp_path / "hooks", tmp_path / "cache"
    hooks.mkdir()
    cache.mkdir()
    (hooks / "sitecustomize.py").write_text(SITECUSTOMIZE)
    env = dict(os.environ, PYTHONPATH=str(hooks), GRADSHARD_AUDIT_CACHES=str(cache.resolve()))
    for program in ("import pickle, collections; pickle.loads(pickle.dumps(collections.OrderedDict()))",
                    f"compile('1', {str(cache / 'x.py')!r}, 'eval')",
                    "import marshal; marshal.loads(marshal.dumps(1))"):
        done = subprocess.run([sys.executable, "-c", program], env=env, capture_output=True,
                              text=True, timeout=60)
        assert done.returncode == AUDIT_EXIT, (program, done.stderr)


@pytest.mark.compiler
@pytest.mark.slow
def test_builds_never_run_code_from_the_cache(tmp_path, seeded_pchs):
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    (hooks / "sitecustomize.py").write_text(SITECUSTOMIZE)
    spec, restored = tmp_path / "spec", tmp_path / "restored-cache"
    cache = seeded_pchs(tmp_path / "cache")
    shutil.copytree(MINI_SPEC, spec)
    caches = [cache, restored]

    assert_clean(audited_build(hooks, caches, spec, tmp_path / "out", cache))
    formulas = spec / DERIVATIVES
    text = formulas.read_text()
    edited = text.replace("mul_tensor_backward(grad, other, self.scalar_type())",
                          "mul_tensor_backward(grad * 2, other, self.scalar_type())", 1)
    assert edited != text
    formulas.write_text(edited)
    assert_clean(audited_build(hooks, caches, spec, tmp_path / "out", cache))

    shutil.copytree(cache, restored)
    done = audited_build(hooks, caches, spec, tmp_path / "restored-out", restored)
    assert_clean(done)
    assert "from the object cache" in done.stdout or "cached" in done.stdout, done.stdout


def test_no_jinja_bytecode_cache_is_configured():
    """Compiled templates are code: none may be stored, so no Jinja bytecode cache is set up
    anywhere in gradshard (the audit hook above catches one only when a build reads it)."""
    import gradshard.cache
    import gradshard.pipeline
    import gradshard.service

    packages = [Path(p.__path__[0]) for p in (gradshard.pipeline, gradshard.cache,
                                               gradshard.service)]
    sources = [f for package in packages for f in package.rglob("*.py")]
    assert len(sources) > 40
    for source in sources:
        text = source.read_text()
        assert "bytecode_cache" not in text and "BytecodeCache" not in text, source
