"""Engines run the per-batch work (``builder.ingest.files.normalize_batch``) somewhere: inline, on a
local process pool, or (``builder.ingest.ray_engine``) on Ray. Every engine yields results in
submission order, so the build-wide commit sees lines in input order and the output does
not depend on the engine or on the number of workers.
"""

from __future__ import annotations

import multiprocessing
import os
import re
import shutil
import signal
import sys
import tempfile
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor, ThreadPoolExecutor
from pathlib import Path
from typing import Any, Protocol, TypeVar

from builder.engine import spool
from builder.engine.allocator import keep_freed_memory
from builder.engine.import_path import children_import_from_here
from builder.engine.interrupts import interrupts_deferred, interrupts_ignored
from builder.engine.no_pandas import arrow_without_pandas
from builder.engine.orphans import exit_with
from builder.fs.uris import is_uri

T = TypeVar("T")
R = TypeVar("R")


class Engine(Protocol):
    def map(self, fn: Callable[..., R], items: Iterable[tuple[Any, ...]]) -> Iterator[R]:
        """``fn(*item)`` for every item, results in item order."""
        ...

    def close(self) -> None: ...


class InlineEngine:
    """Everything in this process (small inputs, tests, one core)."""

    workers = 1

    def map(self, fn: Callable[..., R], items: Iterable[tuple[Any, ...]]) -> Iterator[R]:
        for item in items:
            yield fn(*item)

    def close(self) -> None:
        pass


# Imported once by the fork server, before any worker is forked from it.
WORKER_MODULES = ["builder.ingest.files"]


class LocalEngine:
    """A process pool; at most ``2 × workers`` batches in flight, so memory stays bounded
    however large the input. Workers are forked from a fork server (not from this process:
    it runs Polars and Arrow thread pools, which a fork would copy mid-flight). The server
    is a fresh process that imports the ingest once; every worker forked from it starts
    with those imports done, instead of repeating about a second of them each.

    Results come back through files (``builder.engine.spool``) in a folder of their own
    made in ``spool_in`` (default: the system's temporary folder; the build gives its work
    folder, which the next build clears should this one be killed), removed on ``close``."""

    def __init__(self, workers: int, spool_in: Path | None = None) -> None:
        self.workers = workers
        try:
            self._spool: Path | None = Path(tempfile.mkdtemp(prefix=".results-", dir=spool_in))
        except OSError:  # nowhere to write: results travel through the pipe
            self._spool = None
        start_fork_server()  # before the pool would: deaf to Ctrl-C from its first moment
        self._pool = ProcessPoolExecutor(
            workers,
            mp_context=multiprocessing.get_context("forkserver"),
            initializer=_worker_started,
            initargs=(os.getpid(),),
        )

    def map(self, fn: Callable[..., R], items: Iterable[tuple[Any, ...]]) -> Iterator[R]:
        pending: deque[Future[bytes | spool.Spooled]] = deque()
        for item in items:
            with interrupts_deferred():
                job = self._pool.submit(LocalEngine._handed_over, self._spool, fn, *item)
                pending.append(job)
            if len(pending) >= 2 * self.workers:
                yield spool.take(pending.popleft().result())
        while pending:
            yield spool.take(pending.popleft().result())

    @staticmethod
    def _handed_over(folder: Path | None, fn: Callable[..., Any], *args: Any) -> Any:
        """``fn(*args)`` pickled with protocol 5, its buffers spooled into ``folder``: the
        pool's own pickling (protocol 4) copies every Arrow buffer of a result into bytes of
        its own and back, which protocol 5 writes and reads in place."""
        return spool.hand_over(fn(*args), folder)

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)
        stop_fork_server()
        if self._spool is not None:  # results handed over but never taken: an error
            shutil.rmtree(self._spool, ignore_errors=True)


def build_process() -> None:
    """The settings of a process the build owns, and no one else's: the ``episodes build``
    command and its ingest workers. It hands pyarrow no pandas objects
    (``builder.engine.no_pandas``) and keeps the memory it frees for its next batch
    (``builder.engine.allocator``); a library caller of ``build`` keeps its own."""
    arrow_without_pandas()
    keep_freed_memory()


def _worker_started(build: int) -> None:
    """Ctrl-C reaches the whole process group: the build stops its pool and says so in one
    line, so a worker must not print a traceback of its own. A worker is the build's own
    process (``build_process``), and ends with it (``builder.engine.orphans``)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    build_process()
    exit_with(build)


def stop_fork_server() -> None:
    """Stop and reap the fork server (if it runs), so its CPU time and its workers' count as
    this process's children (``getrusage``, ``time``) and no server outlives the build (a
    server left running a moment keeps the output's disk busy for ``umount``). A later pool
    starts a new one. (``_stop`` is not public; without it the server ends with this
    process, as it always does.)"""
    from multiprocessing import forkserver

    stop = getattr(forkserver._forkserver, "_stop", None)
    if stop is not None:
        stop()


class ThreadEngine:
    """A pool of threads, for work that spends its time in Polars or Arrow (which release
    the GIL): at most ``ahead + 1`` items in flight, results in item order, so the output is
    the same as one thread's and memory stays that of a few items."""

    def __init__(self, workers: int, ahead: int | None = None, name: str = "engine") -> None:
        self.workers, self.ahead = workers, workers if ahead is None else ahead
        self._pool = ThreadPoolExecutor(workers, thread_name_prefix=name)

    def map(self, fn: Callable[..., R], items: Iterable[tuple[Any, ...]]) -> Iterator[R]:
        pending: deque[Future[R]] = deque()
        try:
            for item in items:
                pending.append(self._pool.submit(fn, *item))
                if len(pending) > self.ahead:
                    yield pending.popleft().result()
            while pending:
                yield pending.popleft().result()
        finally:
            for job in pending:  # a failure or an early stop: nothing more is started
                job.cancel()

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)


class PerRunEngine:
    """The automatic choice, run by run of input files: this process while what is left to
    read (the run and the runs after it) is under ``from_bytes`` (a pool's start, a fork
    server importing the ingest, costs about a second of one core), a pool of ``workers``
    once it is that much; once started, the pool serves every later run. A run's results
    are all committed before the next run's are read, so a small run is cut into smaller
    batches to keep every worker busy (``batch_bytes``). An incremental rebuild that
    normalizes one small new file starts no pool."""

    def __init__(self, workers: int, from_bytes: int, spool_in: Path | None = None) -> None:
        self.workers, self.from_bytes, self.spool_in = workers, from_bytes, spool_in
        self._inline = InlineEngine()
        self._pool: LocalEngine | None = None

    def for_files(self, paths: Iterable[str], ahead: int = 0) -> Engine:
        """The engine for the run ``paths``; ``ahead``: bytes of the runs to read after it."""
        if self._pool is None and sum(map(local_size, paths)) + ahead >= self.from_bytes:
            self._pool = LocalEngine(self.workers, self.spool_in)
        return self._pool or self._inline

    def map(self, fn: Callable[..., R], items: Iterable[tuple[Any, ...]]) -> Iterator[R]:
        return (self._pool or self._inline).map(fn, items)

    def close(self) -> None:
        if self._pool is not None:
            self._pool.close()
        else:  # a server started ahead (``start_fork_server``) that no file needed
            stop_fork_server()


def for_files(engine: Engine, paths: Iterable[str], ahead: int = 0) -> Engine:
    """The engine to run the batches of ``paths`` (a run of input files) on; ``ahead``:
    bytes of the runs to read after it."""
    choose = getattr(engine, "for_files", None)
    return engine if choose is None else choose(paths, ahead)


def batch_bytes(paths: Iterable[str], workers: int, most: int) -> int:
    """Bytes of a batch of the run ``paths`` on ``workers``: ``most``, or for a run too small
    to give each worker two batches of that size (a few small files of an input of many),
    the run shared into ``2 × workers`` batches (not under ``MIN_BATCH_BYTES``). Batches
    of the same lines cut otherwise give the same rows."""
    total = sum(map(local_size, paths)) if workers > 1 else 0
    if not total:
        return most
    return max(MIN_BATCH_BYTES, min(most, -(-total // (2 * workers))))


def local_size(path: str) -> int:
    """Bytes of a local file; 0 for an object-store URI or a file that cannot be read
    (reading it reports the problem, with its file and line)."""
    if is_uri(path):
        return 0
    try:
        return os.stat(path).st_size
    except OSError:
        return 0


# Below this much of a run of files, a pool's start (a fork server importing the ingest, about a
# second of one core) costs more than the second core gives back: four of the ingest's
# 16 MB batches (``builder.ingest.files.BATCH_BYTES``).
POOL_FROM_BYTES = 64 << 20
# The smallest batch a small run is cut into: a batch's fixed cost (its tables, shipping it
# to a worker and back) stays small beside its lines'.
MIN_BATCH_BYTES = 1 << 20


def main_survives_reimport() -> bool:
    """Whether worker processes may start here by default. A worker imports the program's
    main script again (``__mp_main__``): harmless for ``episodes``, ``python -m ...``, a
    notebook or a script that guards its entry point with ``if __name__ == "__main__"``,
    but a script that calls ``build`` at its top level would run it again in every
    worker. Such a script gets the in-process ingest unless it sets ``workers``."""
    main = sys.modules.get("__main__")
    spec = getattr(main, "__spec__", None)
    if spec is not None:  # ``python -m``: only a ``__main__`` module is left out
        return bool(spec.name == "__main__" or spec.name.endswith(".__main__"))
    path = getattr(main, "__file__", None)
    if path is None:  # interactive: nothing to import again
        return True
    try:
        source = Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    return bool(_ENTRY_GUARD.search(source))


_ENTRY_GUARD = re.compile(r"""^if\s+__name__\s*==\s*["']__main__["']\s*:""", re.MULTILINE)


def pool_expected(episode_files: Iterable[str], workers: int) -> bool:
    """Whether the ingest's automatic choice (``workers`` 0) will start a pool: more than
    one core, workers allowed here, and ``POOL_FROM_BYTES`` or more of episode files."""
    if workers != 0 or default_workers() <= 1 or not main_survives_reimport():
        return False
    return sum(map(local_size, episode_files)) >= POOL_FROM_BYTES


def start_fork_server() -> None:
    """Start the workers' fork server, unless it runs: it imports the ingest (about a
    second) on another core while this process goes on, e.g. with its own imports, so
    that the pool to come forks its workers at once. A server no pool used is stopped with
    the ingest's engine (``PerRunEngine.close``), else it ends with this process.

    The server is started with SIGINT ignored, for good: Ctrl-C reaches the whole process
    group, and a server still importing the ingest would print a ``KeyboardInterrupt``
    traceback beside the build's one line (``builder.engine.interrupts``)."""
    from multiprocessing import forkserver

    multiprocessing.get_context("forkserver").set_forkserver_preload(WORKER_MODULES)
    # the few milliseconds of the server's fork and exec; it imports from where we do
    with interrupts_ignored(), children_import_from_here():
        forkserver.ensure_running()


def default_workers() -> int:
    """The cores this process may run on (its affinity mask, as ``os.process_cpu_count``
    gives from Python 3.13 on)."""
    return max(1, min(os.cpu_count() or 1, len(os.sched_getaffinity(0))))


def local_engine(workers: int, spool_in: Path | None = None) -> Engine:
    return InlineEngine() if workers <= 1 else LocalEngine(workers, spool_in)
