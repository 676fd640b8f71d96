"""Every item of a generation run twice: equal outputs, and arguments whose keys did not change
(what the memo assumes: an item is a function of its arguments, which it leaves as they were).

    python -m support.items_twice SPEC_ROOT    (cwd: tests/; the installed torchgen)

Run in a process of its own: the worker patches torchgen's FileManager for the process's life.
Prints one JSON object: calls checked per function, and every difference found.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any, Callable

from gradshard.service.generator.generate_code import name_generate_code
from gradshard.service.host.items import ItemMemo, encode_value
from gradshard.service.host.keys import ArgumentKeys
from gradshard.service.host.worker import Worker


class TwiceMemo(ItemMemo):
    """Runs every call twice, remembering nothing."""

    def __init__(self) -> None:
        super().__init__()
        self.checked: Counter = Counter()
        self.differences: list[str] = []

    def call(self, qualified: str, function: Callable, args: tuple, kwargs: dict,
             templates: dict[int, str] | None = None) -> Any:
        before = ArgumentKeys().key(qualified, args, kwargs)
        first = function(*args, **kwargs)
        second = function(*args, **kwargs)
        after = ArgumentKeys().key(qualified, args, kwargs)
        self.checked[qualified] += 1
        if encode_value(first) != encode_value(second) or encode_value(first) is None:
            self.differences.append(f"{qualified}: two outputs (or one JSON cannot keep)")
        if before != after:
            self.differences.append(f"{qualified}: its arguments changed")
        return first


def main(spec: str) -> None:
    name_generate_code()
    root = Path(spec)
    memo = TwiceMemo()
    Worker(root / "autograd", memo).generate(root, "packaged")
    print(json.dumps({"checked": dict(memo.checked), "differences": memo.differences}))


if __name__ == "__main__":
    main(sys.argv[1])
