"""What test modules share, by topic: test modules import from here, never from conftest.py
(fixtures and hooks only) or from one another.

- specs: the mini spec, the packaged spec's file names, staged copies of the packaged spec
- spec_edits: hand edits of the real spec, and the tasks each must re-run
- oracle: torchgen run in a subprocess (tests/torchgen_oracle.py) and its output files
- facts: gradshard's parse and match results in the oracle's JSON shape
- compile: `gradshard build` with a compile step in this process, restored and crafted caches
- daemon: a daemon started on a spec copy
- programs: the Debian packages of the launcher programs
- graph_run: the build graph run in this process without a store (records, files, code), and
  what the build hands the native codegen's stages
- toy_records: records for the engine's toy tasks
"""
