"""Child Pythons import every module from where this process imports it.

A child started as ``python -c ...`` or ``python -m ...`` puts its current folder first on
its import path. Run from a folder that holds a ``builder/`` or ``schemas/`` of its own (a
user's project, another checkout), the workers' fork server would
import that code instead of the build's, or a mix of both: Python 3.11's fork server
ignores the import path the pool hands it (``forkserver.main``'s ``sys_path``), and a
worker sets it only after the server's imports are done.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator, Mapping


def child_environment(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """``environ`` (default: this process's) for a child Python whose import path is this
    process's, in order (``''``, the current folder, as its absolute path), and which puts
    neither its own folder nor its script's first (``PYTHONSAFEPATH``, Python 3.11+)."""
    path = [os.path.abspath(entry) if entry else os.getcwd() for entry in sys.path]
    base = dict(os.environ if environ is None else environ)
    return base | {"PYTHONPATH": os.pathsep.join(dict.fromkeys(path)), "PYTHONSAFEPATH": "1"}


@contextlib.contextmanager
def children_import_from_here() -> Iterator[None]:
    """While inside, children started by this process (e.g. by ``multiprocessing``, which
    takes no environment of its own) get ``child_environment``; restored on the way out."""
    wanted = child_environment()
    before = {key: os.environ.get(key) for key in ("PYTHONPATH", "PYTHONSAFEPATH")}
    os.environ.update({key: wanted[key] for key in before})
    try:
        yield
    finally:
        for key, value in before.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
