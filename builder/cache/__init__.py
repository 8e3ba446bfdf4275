"""Incremental rebuilds: a cache that wraps the ingest from outside.

Two levels, tried in this order:

1. **Stored segments** (``builder.cache.segments``): the leading segments whose chained keys
   are stored are not read at all; their dataset files are linked into the new dataset and
   their share of the ingest's build-wide state is restored (``builder.cache.ingest_delta``).
2. **File entries** (``builder.cache.entries``): from the first changed segment on (an edited
   or inserted file moves every later segment), an episode file whose normalized batches are
   cached is replayed instead of normalized (``builder.cache.cached_ingest``).

What every key covers is in ``builder.cache.keys``; how an input's digest is known without
reading it, in ``builder.cache.memo``.

Layout of ``cache_dir``::

    index.json              path -> {stat fields, sha256, recorded_ns}   (the stat memo)
    entries/<key>/          one input file's batches
        meta.json           written last: path, sha256, bytes, lines, blank, batches, files
        outcomes.arrow ...  Arrow IPC files (lz4), one record batch per input batch
    entries/.tmp-<pid>-*    an entry being written; renamed to entries/<key> when complete
    segments/               stored segments
    card.json               the card's YAML, remembered (``builder.export.card``)
    .lock                   one build uses a cache at a time (a second one builds uncached)
"""

from __future__ import annotations

import fcntl
import shutil
from pathlib import Path
from typing import Any

from builder.cache import keys
from builder.cache.cached_ingest import CachedIngest
from builder.cache.entries import CacheError, EntryStore
from builder.cache.memo import StatMemo
from builder.cache.segments import SegmentCache

__all__ = ["CacheError", "IngestCache", "open_cache"]


class IngestCache:
    """The cache folder of one build: its lock, the file entries, the stat memo and the
    stored segments."""

    def __init__(self, directory: Path, config: Any) -> None:
        self.directory = Path(directory)
        verify = config.cache_verify
        options = keys.file_options(config)
        self.entries = EntryStore(self.directory / "entries", keys.versions(), options)
        self.memo = StatMemo(self.directory / "index.json", verify)
        self.segments = SegmentCache(self.directory / "segments", verify)
        self._lock: Any = None

    @property
    def hits(self) -> int:
        """Files replayed from their cached batches."""
        return self.entries.hits

    @property
    def misses(self) -> int:
        """Files normalized (and stored)."""
        return self.entries.misses

    def acquire(self) -> bool:
        """Take the cache's lock; False when another build holds it."""
        handle = open(self.directory / ".lock", "a+")  # noqa: SIM115 - closed in close()
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
            return False
        self._lock = handle
        return True

    def close(self) -> None:
        """Release the cache. Entries and segments half written (by a build that failed, this
        one or one killed before it) go first: on a full disk they hold its last bytes, and
        with the lock held no other build is writing any."""
        if self._lock is not None:
            for folder in (self.entries.directory, self.segments.directory):
                for tmp in folder.glob(".tmp-*") if folder.is_dir() else ():
                    shutil.rmtree(tmp, ignore_errors=True)
            fcntl.flock(self._lock, fcntl.LOCK_UN)
            self._lock.close()
            self._lock = None

    def forget_new(self) -> None:
        """Remove the entries and segments this build stored: after a full disk they hold the
        space its rerun needs (its estimate counts on it), so the failed build gives it back."""
        for key in self.entries.written:
            shutil.rmtree(self.entries.directory / key, ignore_errors=True)
        for key in self.segments.stored:
            shutil.rmtree(self.segments.directory / key, ignore_errors=True)

    def ingest_job(
        self, config: Any, sink: Any, rejects: Any, on_bytes: Any, engine: Any
    ) -> CachedIngest:
        """The ingest (``builder.ingest.files.Ingest``) with this cache around it: stored segments
        are restored, files it holds are replayed, the others normalized and stored."""
        return CachedIngest(
            config,
            sink,
            rejects,
            on_bytes,
            engine,
            entries=self.entries,
            memo=self.memo,
            segments=self.segments,
        )

    def finish(self) -> None:
        """After a successful ingest: keep only this build's entries; save the memo."""
        self.entries.evict()
        self.memo.save()


def open_cache(config: Any) -> IngestCache | None:
    """The cache named by ``config.cache_dir``, locked for this build; None when no cache
    is configured or another build is using it (this build then runs uncached)."""
    directory = config.cache_dir
    if not directory:
        return None
    cache = IngestCache(Path(directory), config)
    return cache if cache.acquire() else None
