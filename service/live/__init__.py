"""`gradshard try`: an edited formula's kernels and nodes compiled into a library, loaded
into the installed torch through the dispatcher, and gradchecked on OpInfo samples: the
plan, the patch's sources and build, the worker and its process, the samples and their
checks, the Python API and the pytest plugin. The gradient tests of PyTorch's an edit needs
(`affected --tests`, from the same OpInfos) are service/gradient_tests/, which calls the
samples as the worker does (checks, samples). (Not `try/`: `try` is a Python keyword.)"""

__all__ = ["api", "checks", "command", "compiler", "plan", "process", "samples", "try_directory"]
