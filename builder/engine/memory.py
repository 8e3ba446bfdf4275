"""How much memory this machine has free for the build: the bound on what it may hold whole.

Linux says it in ``/proc/meminfo`` (``MemAvailable``: free memory plus what the page cache
would give back); elsewhere the free physical pages are asked of ``sysconf``. None where
neither answers: no bound.
"""

from __future__ import annotations

import os


def available_bytes() -> int | None:
    try:
        with open("/proc/meminfo", "rb") as meminfo:
            for line in meminfo:
                if line.startswith(b"MemAvailable:"):
                    return int(line.split()[1]) * 1024  # kB
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None
