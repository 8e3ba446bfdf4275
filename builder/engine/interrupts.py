"""Ctrl-C and SIGTERM around the process pool. Ctrl-C reaches the whole process group: the
build stops its pool and says so in one line, so neither the workers' fork server nor a
worker may print a traceback of its own, and the pool must never be left with a worker it
does not know of.

Signal handlers are the main thread's to set; from another thread (a build run in a thread)
both helpers change nothing.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager


def _on_main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


@contextmanager
def interrupts_ignored() -> Iterator[None]:
    """SIGINT ignored inside: a process started here (fork and exec) inherits the ignored
    signal and keeps ignoring it (Python installs its SIGINT handler only where the signal
    is not ignored), as do the processes it forks. For a start that takes milliseconds: a
    Ctrl-C meanwhile is lost."""
    if not _on_main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


# The signals a build turns into an exception in its main thread (``builder.cli``).
STOPPING = (signal.SIGINT, signal.SIGTERM)


@contextmanager
def interrupts_deferred() -> Iterator[None]:
    """Ctrl-C or SIGTERM inside is acted on when the block ends, not in its middle: a
    pool's ``submit`` that forks a worker and is interrupted before it records the worker
    leaves one that nobody stops (a signal sent to this process alone does not reach it),
    and the fork server, waiting for its last worker, never ends."""
    if not _on_main_thread():
        yield
        return
    caught: list[int] = []
    previous = {s: signal.signal(s, lambda signum, _frame: caught.append(signum)) for s in STOPPING}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
        for s in dict.fromkeys(caught):  # delivered again, to the handlers there were before
            signal.raise_signal(s)
