"""Restore: a build folder's tables given back as the lines and rows they were built from.

The inverse of normalize, a reader of built folders like ``report/`` and ``publish/``: it
reads the Parquet files of a build (local, or a release downloaded from the Hub) and imports
no stage, only the rebuild rules the normalize stage shares with it (``schemas.lines``).

* ``folder``: where the tables are (a folder, or ``org/name@vX.Y.Z``) and reading them;
* ``episodes``: one JSON line per accepted episode, as it was captured (``export-jsonl``);
* ``sessions``: the ``sessions`` and ``actions`` rows, into a database (``--sessions-db``);
(the ``export-jsonl`` command is ``builder.cli.export_jsonl``).
"""
