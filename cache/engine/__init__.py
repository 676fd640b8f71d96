"""The task engine: pure stage functions run as cached tasks keyed by the hashes of their
inputs, and forked children that give a build a second processor.

    jobs       what runs: Task, Group, and the key of one run (task_key)
    values     what flows between tasks: Value, the Recipe that made it, group scopes
    codec      how a record is stored and hashed (encode, decode, Refs)
    memory     what one process's engines remember between builds (Memory)
    stats      what an engine ran, reused and spent per stage (EngineStats, StageClock)
    core       the Engine: running, looking up, computing, loading and recovering values
    scheduler  which groups and runs go to forked children, and when (ForkScheduler)
    fork       a forked child itself: its work, its exit, what it hands back (Child), and
               the processors a process may run on (processors: -j's default too)

Each module's `__all__` names what others may use; this package re-exports nothing.
"""

__all__ = ["codec", "core", "fork", "jobs", "memory", "stats", "values"]
