"""A worker's result handed back through a file beside the build, not through the pool's pipe.

A result of the ingest's workers is mostly Arrow buffers: a batch's table rows, about as
many bytes as its lines. Pickled in band, they were copied into the pickle, into the pipe
and out of it, and out of the pickle again, and each copy landed in freshly faulted memory.
Spooled, the worker writes the buffers once into a file and sends only the pickle's
skeleton; the calling process maps the file and unpickles the buffers in place (protocol
5's out-of-band buffers), then removes the file: its mapping keeps the bytes as long as
the rows need them. A result with little in buffers, or one whose file cannot be written
(a full disk, say), travels in band as before.
"""

from __future__ import annotations

import contextlib
import itertools
import mmap
import os
import pickle
from pathlib import Path
from typing import Any, NamedTuple

# Below this many bytes in buffers, a result's file costs more than the copies it saves.
SPOOL_FROM_BYTES = 1 << 20
# Each buffer starts at a multiple of this in the file (the mapping starts on a page), as
# Arrow aligns the buffers it allocates.
ALIGNMENT = 64

_names = itertools.count()


class Spooled(NamedTuple):
    """A result in a file: its pickle without the buffers, the file, and where each
    buffer lies in it (offset, size)."""

    pickled: bytes
    path: str
    buffers: tuple[tuple[int, int], ...]


def hand_over(value: Any, spool: Path | None) -> bytes | Spooled:
    """``value`` pickled (protocol 5), its buffers in a new file of folder ``spool`` when
    they are worth one."""
    if spool is None:
        return pickle.dumps(value, protocol=5)
    found: list[pickle.PickleBuffer] = []
    pickled = pickle.dumps(value, protocol=5, buffer_callback=found.append)
    views = [buffer.raw() for buffer in found]
    if sum(view.nbytes for view in views) < SPOOL_FROM_BYTES:
        return pickle.dumps(value, protocol=5)
    path = spool / f"{os.getpid()}-{next(_names)}.buffers"
    try:
        placed = _write(path, views)
    except OSError:
        with contextlib.suppress(OSError):
            path.unlink()
        return pickle.dumps(value, protocol=5)
    return Spooled(pickled, str(path), placed)


def _write(path: Path, views: list[memoryview]) -> tuple[tuple[int, int], ...]:
    placed = []
    at = 0
    with open(path, "wb") as file:
        for view in views:
            padding = -at % ALIGNMENT
            file.write(bytes(padding))
            at += padding
            file.write(view)
            placed.append((at, view.nbytes))
            at += view.nbytes
    return tuple(placed)


def take(item: bytes | Spooled) -> Any:
    """The value ``hand_over`` gave ``item`` for; a spooled one's file is removed (its
    buffers stay mapped while the value holds them)."""
    if not isinstance(item, Spooled):
        return pickle.loads(item)
    descriptor = os.open(item.path, os.O_RDONLY)
    try:
        mapped = mmap.mmap(descriptor, 0, prot=mmap.PROT_READ)
    finally:
        os.close(descriptor)
        os.unlink(item.path)
    whole = memoryview(mapped)
    return pickle.loads(item.pickled, buffers=[whole[at : at + n] for at, n in item.buffers])
