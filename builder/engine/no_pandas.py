"""Keep pyarrow from importing pandas in the build's own processes.

The first time ``pa.array`` is given a Python sequence (the ingest's rows), pyarrow imports
pandas only to ask whether the sequence is a pandas object: ≈ 0.4 s of one core, in the
command and in every ingest worker, for a library the build never uses. Told once that
pandas is absent, pyarrow stops asking. It imports pandas again by itself when asked for
something that needs it (``to_pandas``, ``Table.from_pandas``).

Only for processes that hand pyarrow no pandas objects: until pyarrow has imported pandas
again, ``pa.array`` reads a pandas Series as a plain sequence (a categorical one as its
values). ``episodes build`` and its workers call it; a library caller of ``build`` does not.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from importlib.machinery import ModuleSpec
from types import ModuleType

_told = False  # whether this process told pyarrow that pandas is absent


class _PandasAbsent:
    """A finder that answers "no such module" for pandas (pyarrow's import of it)."""

    @staticmethod
    def find_spec(
        name: str, path: object = None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if name == "pandas":
            raise ModuleNotFoundError("not imported for pyarrow", name=name)
        return None


def arrow_without_pandas() -> None:
    """Let pyarrow settle, now, that pandas is absent (nothing is imported; a no-op when
    pandas is imported already, or pyarrow has looked before)."""
    if "pandas" in sys.modules:
        return
    import pyarrow as pa

    global _told
    sys.meta_path.insert(0, _PandasAbsent)
    try:
        pa.array((), type=pa.null())  # pyarrow's one look for pandas
        _told = True
    finally:
        sys.meta_path.remove(_PandasAbsent)


@contextmanager
def imports_without_pandas() -> Iterator[None]:
    """Imports made inside find no pandas, in a process that told pyarrow it is absent
    (``arrow_without_pandas``); elsewhere nothing changes. For a module that imports it on
    the way although the build hands it no pandas objects: ADBC's DB-API imports
    ``pyarrow.dataset``, which imports pandas (≈ 0.15 s of the ≈ 0.22 s of reading a
    sessions database's first rows)."""
    if not _told or "pandas" in sys.modules:
        yield
        return
    sys.meta_path.insert(0, _PandasAbsent)
    try:
        yield
    finally:
        sys.meta_path.remove(_PandasAbsent)
