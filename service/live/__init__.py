"""`gradshard try`: an edited formula's kernels and nodes compiled into a library, loaded
into the installed torch through the dispatcher, and gradchecked on OpInfo samples: the
plan, the patch's sources and build, the worker and its process, the Python API and the
pytest plugin; and the gradient tests of PyTorch's an edit needs (`affected --tests`, from
the same OpInfos). (Not `try/`: `try` is a Python keyword.)"""

__all__ = ["api", "command", "compiler", "gradient_tests", "plan", "process", "try_directory"]
