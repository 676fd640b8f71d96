"""Compiling the generated C++: the driver (compile directory, build.ninja, the run), the
toolchain, compiler errors placed at their derivatives.yaml line, and the compile's
report."""
