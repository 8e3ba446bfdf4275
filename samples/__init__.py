"""Sample and benchmark data generators: used by the tests, the benchmarks and to write the
committed sample under ``data/``, never by a build (not part of the installed package)."""
