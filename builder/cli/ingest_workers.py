"""The ingest's worker processes as the ``episodes build`` command starts them: ahead of the
build's own imports, and stopped however the build ends."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from builder.config import BuildConfig
from builder.fs.uris import is_uri


@contextmanager
def ingest_workers(config: BuildConfig) -> Iterator[None]:
    """``start_ingest_workers``, and their server stopped on the way out: a build refused
    before any work (or failed) does not leave it to end on its own a moment later, its
    working folder on the output's disk (``umount`` right after the command found it
    busy)."""
    from builder.engine import stop_fork_server

    start_ingest_workers(config)
    try:
        yield
    finally:
        stop_fork_server()


def start_ingest_workers(config: BuildConfig) -> None:
    """When the ingest will fork workers (``builder.engine.pool_expected``), their server
    starts before this process imports the build: it imports the ingest on the other core
    meanwhile, and the pool's workers are forked at once when the ingest reaches them."""
    from builder.engine import pool_expected, start_fork_server
    from builder.sources.inputs import InputError, expand_inputs

    if config.engine != "local":
        return
    if config.cache_dir is not None and config.cache_dir.is_dir():
        return  # a rebuild, mostly served by the cache: a pool starts if a run needs one
    try:
        files = expand_inputs([p for p in config.episodes if not is_uri(p)])
    except InputError:
        return  # the build reports it
    if pool_expected(files, config.workers):
        start_fork_server()
