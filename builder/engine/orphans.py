"""A pool worker ends with the build that started it.

Workers are forked from the fork server, not from the build, so the system tells them
nothing when the build is killed outright (``kill -9``): each holds both ends of the pool's
queues and the fork server's liveness pipe, so a worker waiting for work, or for room to
hand a result back, would wait forever, keeping the fork server (and the build's stdout
and stderr: a pipe into ``cat`` never closes) alive with it. A thread of each worker looks
for the build now and then, and ends the worker once it is gone.
"""

from __future__ import annotations

import os
import threading
import time

EVERY_SECONDS = 0.5


def exit_with(pid: int, every: float = EVERY_SECONDS) -> threading.Thread:
    """End this process (at once, without clean-up: its work is the build's) once process
    ``pid`` is gone."""

    def watch() -> None:
        while alive(pid):
            time.sleep(every)
        os._exit(1)

    thread = threading.Thread(target=watch, name="build-watch", daemon=True)
    thread.start()
    return thread


def alive(pid: int) -> bool:
    """Whether ``pid`` runs: a zombie (killed, not yet reaped by its parent) does not."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's: it runs
        return True
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return stat.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except (OSError, IndexError):  # no /proc here: kill's answer stands
        return True
