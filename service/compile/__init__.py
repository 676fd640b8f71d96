"""Compiling the generated C++. Import from the room's modules (nothing is re-exported here):

- driver: the compile step of a build (`compile_generated`) and its options (`CompileOptions`)
- plan: the compile plan, the compile directory's files, each unit's key and PCH
- splice: merged units' baselines, and splicing edited parts over a stored object
- build_files: build.ninja and compile_commands.json
- ninja: running ninja, and what each edge did (compiled, served, spliced, failed)
- layout_check: refusing a compile layout from the cache that names what no layout can
- ledger: the compile cache's entries a build uses, recorded in the store
- toolchain: the compiler, flags, include directories, launcher and header fingerprint
- diagnostics: compiler errors placed at their derivatives.yaml line
- report: the compile's report, progress bar and error output
"""

__all__ = ["diagnostics", "driver", "report", "toolchain"]
