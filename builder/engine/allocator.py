"""Keep glibc's allocator from handing freed memory back to the system at once.

The build frees and allocates again, all the time, blocks of a few hundred KB to tens of MB
(a batch's lines, its pickled results, rows on their way into Arrow). By default glibc maps
such a block anew and unmaps it when freed, or trims its heap as soon as 2 × the last such
block is free at its top: the next block is then faulted in page by page again. At 5,000
episodes of the bench profile that was ≈ 650,000 page faults and ≈ 2.4 s of kernel time in
a 10.5 s build. With blocks under 32 MiB taken from the heap and up to 128 MiB of free heap
kept, half the faults and ≈ 0.5 s of kernel time go, for ≈ 25 MiB more at the peak
(docs/performance-log.md).

A process-wide setting: ``episodes build`` and its ingest workers make it; a library caller
of ``build`` does not. Settings the user gave glibc (``GLIBC_TUNABLES``) are left as they are.
"""

from __future__ import annotations

import ctypes
import os
import sys

# mallopt's parameters (glibc's malloc.h)
M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD = 32 << 20  # glibc's largest: a larger block is mapped on its own still
TRIM_THRESHOLD = 128 << 20


def keep_freed_memory() -> bool:
    """Set this process's thresholds; whether they were set (only with glibc, and only
    when the user's environment sets none of glibc's malloc tunables)."""
    if not sys.platform.startswith("linux"):
        return False
    if "glibc.malloc." in os.environ.get("GLIBC_TUNABLES", ""):
        return False  # the user's own settings
    try:
        libc = ctypes.CDLL(None)
        # glibc's own symbol: another C library's mallopt (musl's) does nothing
        libc.gnu_get_libc_version  # noqa: B018
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return bool(
        mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD) and mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD)
    )
