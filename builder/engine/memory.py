"""How much memory this machine has free for the build: the bound on what it may hold whole.

Linux says it in ``/proc/meminfo`` (``MemAvailable``: free memory plus what the page cache
would give back), and a container's memory cgroup may allow less than that: its limit less
its use (cgroup v2 ``memory.max``, v1 ``memory.limit_in_bytes``). Elsewhere the free physical
pages are asked of ``sysconf``. None where nothing answers: no bound.
"""

from __future__ import annotations

import os
from pathlib import Path

# Limits this large mean none (cgroup v1 writes 2**63 rounded down to a page).
_UNLIMITED = 1 << 60
# (controller file of the limit, of the use) by cgroup version
_V2 = ("memory.max", "memory.current")
_V1 = ("memory.limit_in_bytes", "memory.usage_in_bytes")


def available_bytes(
    proc: Path = Path("/proc"), cgroups: Path = Path("/sys/fs/cgroup")
) -> int | None:
    free = _mem_available(proc)
    if free is None:
        try:
            free = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        except (ValueError, OSError, AttributeError):
            free = None
    room = _cgroup_room(proc, cgroups)
    if room is None:
        return free
    return room if free is None else min(free, room)


def _mem_available(proc: Path) -> int | None:
    try:
        with open(proc / "meminfo", "rb") as meminfo:
            for line in meminfo:
                if line.startswith(b"MemAvailable:"):
                    return int(line.split()[1]) * 1024  # kB
    except (OSError, ValueError, IndexError):
        pass
    return None


def _cgroup_room(proc: Path, cgroups: Path) -> int | None:
    """What this process's memory cgroup still allows; None: no limit, or none found."""
    try:
        lines = (proc / "self" / "cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        _, controllers, path = parts
        if controllers == "":
            base, files = cgroups, _V2
        elif "memory" in controllers.split(","):
            base, files = cgroups / "memory", _V1
        else:
            continue
        # the process's own group where it is mounted; else the mount's root, as a
        # container sees its own group
        for folder in (base / path.lstrip("/"), base):
            found, room = _room(folder, *files)
            if found:
                return room
    return None


def _room(folder: Path, limit_file: str, used_file: str) -> tuple[bool, int | None]:
    """(whether ``folder`` holds the files, its limit less its use: None when unlimited)."""
    try:
        text = (folder / limit_file).read_text().strip()
        limit = None if text == "max" else int(text)
        used = int((folder / used_file).read_text().strip())
    except (OSError, ValueError):
        return False, None
    if limit is None or limit >= _UNLIMITED:
        return True, None
    return True, max(0, limit - used)
