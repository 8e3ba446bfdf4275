"""How long a remote may take, and how often a failed call is tried again: one setting for
every network call (the object store, PostgreSQL, the Hub).

``EPISODES_TIMEOUT`` (seconds; ``--timeout`` of ``build`` and ``publish`` sets it, so the
processes a build starts see it too) bounds each connection attempt and each request that
waits on the remote. ``EPISODES_RETRIES`` is how many times a call that failed for want of
the remote (refused, reset, timed out) is tried again, after 0.5 s, 1 s, 2 s, ... (at most
``MAX_BACKOFF_S``): a remote that blinks costs a pause, one that is gone costs a few seconds,
not an hour.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable
from typing import TypeVar

from builder.errors import UsageError

TIMEOUT_ENV = "EPISODES_TIMEOUT"
RETRIES_ENV = "EPISODES_RETRIES"
DEFAULT_TIMEOUT_S = 30.0
DEFAULT_RETRIES = 2
# A stream (a database table read batch by batch) may wait longer than a request for its
# next batch, a large table's first one most: this many timeouts without one is a hang.
STALL_TIMEOUTS = 4
FIRST_BACKOFF_S = 0.5
MAX_BACKOFF_S = 8.0
# A remote that asks for a pause (``Retry-After``) is given it up to this long; one that asks
# for more is given up at once, the pause it asked for said.
MAX_RETRY_AFTER_S = 60.0
T = TypeVar("T")


class BadSetting(UsageError, ValueError):
    """A timeout or a retry count that is not a number in range."""

    hint = f"set {TIMEOUT_ENV} to seconds above 0 and {RETRIES_ENV} to a count of 0 or more"


def timeout(default: float = DEFAULT_TIMEOUT_S) -> float:
    """Seconds a remote may take to connect or to answer a request."""
    text = os.environ.get(TIMEOUT_ENV, "").strip()
    if not text:
        return default
    try:
        seconds = float(text)
    except ValueError:
        raise BadSetting(f"{TIMEOUT_ENV}={text!r}: not a number of seconds") from None
    if not 0 < seconds < math.inf:  # NaN and infinity too: every remote call needs a bound
        raise BadSetting(f"{TIMEOUT_ENV}={text!r}: must be a number of seconds above 0")
    return seconds


def stall_timeout() -> float:
    """Seconds a stream may go without its next batch before it is given up as hung."""
    return STALL_TIMEOUTS * timeout()


def retries() -> int:
    """How many times a failed call is tried again."""
    text = os.environ.get(RETRIES_ENV, "").strip()
    if not text:
        return DEFAULT_RETRIES
    if not text.isdigit():
        raise BadSetting(f"{RETRIES_ENV}={text!r}: must be a count of 0 or more")
    return int(text)


def check() -> None:
    """Both settings read, so a bad one is said before any work."""
    timeout()
    retries()


def set_timeout(seconds: float | None) -> None:
    """``--timeout``: for this process and every process it starts."""
    if seconds is None:
        return
    if not 0 < seconds < math.inf:
        raise BadSetting(f"--timeout {seconds:g}: must be a number of seconds above 0")
    os.environ[TIMEOUT_ENV] = f"{seconds:g}"


def backoff(attempt: int) -> float:
    """The pause before try ``attempt + 1`` (``attempt`` from 0)."""
    return min(MAX_BACKOFF_S, FIRST_BACKOFF_S * 2**attempt)


def retrying(
    action: Callable[[], T],
    transient: Callable[[BaseException], bool],
    sleep: Callable[[float], None] = time.sleep,
    asked: Callable[[BaseException], float | None] | None = None,
) -> T:
    """``action()``, tried again after a pause while it fails with an error ``transient``
    accepts, ``retries()`` times at most; the last error is raised. ``asked``: the pause the
    remote asked for with the error (``Retry-After``), if any, which stands instead of the
    backoff (more than ``MAX_RETRY_AFTER_S``: given up at once)."""
    tries = retries()
    for attempt in range(tries + 1):
        try:
            return action()
        except Exception as exc:
            if attempt == tries or not transient(exc):
                raise
            pause = backoff(attempt)
            wanted = asked(exc) if asked is not None else None
            if wanted is not None:
                if wanted > MAX_RETRY_AFTER_S:
                    raise
                pause = wanted
        sleep(pause)
    raise AssertionError("unreachable")  # the loop returns or raises
