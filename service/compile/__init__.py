"""Compiling the generated C++. Import from the room's modules (nothing is re-exported here):

- driver: the compile step of a build (`compile_generated`) and its options (`CompileOptions`)
- plan: the compile plan: the layout from the cache checked (refused when it names what no
  layout can), the compile directory's files, each unit's key and PCH, and merged units
  (their baselines; compiled whole, or their edited parts spliced over a stored object)
- ninja: build.ninja and compile_commands.json, running ninja and what each edge did
  (compiled, served, spliced, failed), and the compile cache's entries a build uses,
  recorded in the store
- toolchain: the compiler, flags, include directories, launcher and header fingerprint
- diagnostics: compiler errors placed at their derivatives.yaml line
- report: the compile's report, progress bar and error output
"""

__all__ = ["diagnostics", "driver", "report", "toolchain"]
