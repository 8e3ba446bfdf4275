"""Interactive sessions (seed 000): the sessions/actions tables of an application database.

``run(url)`` (``builder.sessions.pipeline``) does it all; the steps, one module each:
``urls`` (what a URL is, the timeout libpq gets, redaction), ``db`` (connecting,
``init_database``), ``read`` (ADBC, Arrow batches),
``validate`` (Polars, rejects), ``tables`` (the ``sessions``/``actions`` tables), ``replay``
(``sft`` rows), ``corrections`` (``self_correction`` rows), ``stats`` (``summary``),
``pgcluster`` (a throwaway PostgreSQL server for tests and benchmarks). The shipped sample and
generated sessions are ``samples.sessions``, outside the package.
"""
