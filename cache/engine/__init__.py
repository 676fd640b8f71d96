"""The task engine: pure stage functions run as cached tasks keyed by the hashes of their
inputs (`core`), and the forked children that give a build a second processor (`fork`)."""
