"""`gradshard affected` after a host-path build: the spec's own generator run on the spec as it
is now (service/host/generation.py: its worker primed from the last host build's item values,
so only the items an edit reaches run), and what it makes compared with that build's HostIndex.

Files are compared by their text hashes: exactly the files the next host build changes.
Nodes, bindings and kernels are the items' subjects (service/host/items.py: `subject`): a
backward node (gen_autograd_functions.process_function's DifferentiabilityInfo), an op's
binding (gen_python_functions.method_impl) or an op's VariableType kernels
(gen_variable_type.gen_variable_type_func), each changed when the text its items return
changed. Entries are not compared on this path (the generator parses the spec, not gradshard).
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import TYPE_CHECKING

from gradshard.cache.errors import UsageError
from gradshard.cache.graph.manifest import HostIndex
from gradshard.service.files.inputs import read_inputs
from gradshard.service.files.placement import Placement
from gradshard.service.files.spec_location import SpecLocation
from gradshard.service.generator.check import HOST, GeneratorCheck
from gradshard.service.generator.identity import identify_generator
from gradshard.service.host.generation import generate_on_host, host_records
from gradshard.service.outcome import BuildRequest

if TYPE_CHECKING:
    from gradshard.cache.store.database import Store
    from gradshard.service.open_cache import OpenCache

__all__ = ["HOST_SUBJECTS", "host_index_of", "host_side"]

# what `affected` reports of the items: its heading → the item function whose subjects it lists
HOST_SUBJECTS = {"nodes": "gen_autograd_functions.process_function",
                 "bindings": "gen_python_functions.method_impl",
                 "kernels": "gen_variable_type.gen_variable_type_func"}

Side = dict[str, tuple[tuple[str, str], ...]]  # "files" and each HOST_SUBJECTS heading


def host_index_of(store: Store, manifest: str) -> HostIndex | None:
    """The HostIndex of a recorded build's manifest, or None: not a host build's (a ported
    build's Manifest). A host build's whose index is gone or damaged is a UsageError: the
    ported path must not read its manifest (it would set it aside as damage)."""
    host, index = host_records(store, manifest)
    if host is None:
        return None
    if index is None:
        raise UsageError("the cache's record of the spec's last build (on the host path) is "
                         "incomplete: its index is gone or damaged",
                         "build again, then ask `affected` (or compare with --against DIR "
                         "or --since REV)")
    return index


def host_side(location: SpecLocation, session: OpenCache, out: str,
              index: HostIndex) -> tuple[Side, Side]:
    """(a host build's side, from its index; the spec's side now, its generator run into
    `out`'s worker): files and subjects by name."""
    request = BuildRequest.of(location, Path(out), Placement(), False, GeneratorCheck(path=HOST),
                              identify_generator(location))
    run = generate_on_host(request, session, read_inputs(location))
    now = _subjects(run.output.used.items(), run.output.subjects.items())
    before = _subjects(index.items, ((key, (function, subject, part))
                                     for key, function, subject, part in index.subjects))
    return ({"files": index.files, **before},
            {"files": tuple(sorted(run.files.items())), **now})


def _subjects(items, subjects) -> Side:
    """Per HOST_SUBJECTS heading, each subject and the hash of its items' values."""
    hashes = dict(items)
    grouped: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    heading_of = {function: heading for heading, function in HOST_SUBJECTS.items()}
    for key, (function, subject, _) in subjects:
        heading = heading_of.get(function)
        if heading is not None and subject and key in hashes:
            grouped[heading][subject].append(hashes[key])
    return {heading: tuple(sorted((subject, "+".join(sorted(values)))
                                  for subject, values in grouped[heading].items()))
            for heading in HOST_SUBJECTS}
