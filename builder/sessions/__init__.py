"""Interactive sessions (seed 000), a source: the sessions/actions tables of an application
database.

``source.read(url)`` reads and validates one database, ``source.redacted`` takes its secrets
out; the steps, one module each: ``urls`` (what a URL is, the timeout libpq gets,
redaction), ``db`` (connecting, ``init_database``), ``read`` (ADBC, Arrow batches),
``validate`` (Polars, rejects), ``instructions`` (the task each session asks), ``tables``
(the ``sessions``/``actions`` tables), ``pgcluster`` (a throwaway PostgreSQL server for
tests and benchmarks). The training rows are the derive step's (``builder.derive.sessions``).
The shipped sample and generated sessions are ``samples.sessions``, outside the package.
"""
