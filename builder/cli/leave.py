"""How the ``episodes`` command ends: without taking the interpreter apart.

Once a build has returned, Python's own shutdown frees every module's objects one by one
(Polars, Arrow, ``datasets``, ``huggingface_hub``: over 800 modules) and collects garbage a
last time: 0.13–0.15 s after a 5,000-episode build, which the user waits for while the
operating system would free the whole process at once. So the command does the part of the
shutdown that matters, in the interpreter's order (threads still working are joined, then
the exit handlers run: Ray's shutdown, temporary folders' finalizers), flushes what it
printed, and ends the process. ``main``, which tests and library callers run in their own
interpreter, returns as before.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import sys
import threading
from typing import NoReturn

from builder.errors import INTERRUPTED, READER_GONE, TERMINATED, UNAVAILABLE


def run() -> NoReturn:
    """The ``episodes`` console script (and ``python -m builder``): ``main``, then out."""
    from builder.cli.episodes import main

    leave(main())


def leave(code: int) -> NoReturn:
    """End the process with exit status ``code`` once its threads, exit handlers and output
    are done: the interpreter's own first two steps of its shutdown, then no more."""
    # ``threading._shutdown`` wakes idle pool workers (``concurrent.futures`` registers that
    # with it: a pool never shut down would otherwise be waited on for ever) and joins every
    # thread that is not a daemon; ``atexit._run_exitfuncs`` runs the exit handlers.
    join_threads = getattr(threading, "_shutdown", None)
    run_exit_handlers = getattr(atexit, "_run_exitfuncs", None)
    if join_threads is None or run_exit_handlers is None:  # another interpreter: its own way
        sys.exit(code)
    # Stopped by Ctrl-C or SIGTERM, the command waits for no thread: one may be blocked on
    # a server that answers a byte at a time (``builder.fs.releases``). The build's own
    # threads were shut down by its cleanups before ``main`` returned.
    if code not in (INTERRUPTED, TERMINATED):
        join_threads()
    run_exit_handlers()
    code = _flushed(code)
    os._exit(code)


def _flushed(code: int) -> int:
    """``code``, once stdout and stderr are flushed: output cut short by its reader
    (``episodes … | head``) ends the command as a pipe's writer ends (``READER_GONE``, said
    by nothing: the reader chose it); any other failure to write the output is said."""
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        code = code or READER_GONE
    except (OSError, ValueError) as exc:  # a full disk under a redirect; a closed stream
        print(f"episodes: its output could not be written: {exc}", file=sys.stderr)
        code = code or UNAVAILABLE
    with contextlib.suppress(OSError, ValueError):  # nowhere left to say anything
        sys.stderr.flush()
    return code
