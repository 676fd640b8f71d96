"""Which generator a spec belongs to, and whether gradshard's files are what it writes:
the generator's identity (`identity`, with the table of known ones in `known`), running the
real generator in a subprocess (`runner`, running the script `generate_code`), comparing its
files with gradshard's (`compare`) and the build step that decides which files are served
(`check`)."""

__all__ = ["check", "compare", "generate_code", "identity", "known", "runner"]
