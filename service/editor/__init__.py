"""`gradshard lsp`: the spec files in the editor (the Language Server Protocol, pygls over
stdio): every problem `check` finds, as you type; hover with the schema, nodes, saved values
and generated C++ of an entry; definitions between the two YAML files and into
FunctionsManual.h; completion in formulas; each entry's footprint and `try` as code lenses.

    server     the protocol's features, the debounce, what each spec's state holds
    backend    where questions go: the spec's daemon, else the server's own session
    queries    the questions that need the build (analyse, hover, lenses), as JSON: the
               daemon's requests answer with the same table
    analysis   the buffers checked as `check` checks a spec; severities
    hover, lenses, navigation, places, positions   what each feature reads
    try_run    `try` on an overlay of the spec; tests_count: the lenses' tests part
    settings, command   the server's settings and its process
"""

__all__ = ["analysis", "backend", "buffers", "command", "hover", "lenses", "navigation",
           "places", "positions", "queries", "server", "settings", "tests_count", "try_run"]
