"""`gradshard affected --tests`: PyTorch's gradient tests whose samples reach what an edit
changes (query.py), found through an index of what every OpInfo's gradient samples reach
(reach.py), observed once per installed torch in worker processes (observer.py, run by
pool.py) and kept in the cache directory (index.py). Its samples are called as `try`'s worker
calls them (service/live/checks.py, service/live/samples.py)."""

__all__ = ["query"]
