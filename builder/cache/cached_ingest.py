"""The ingest with the cache around it: stored segments are restored instead of read, and
episode files whose normalized batches are cached are replayed instead of normalized.

A replay runs the build-wide, order-dependent commit (duplicate ids, first-source-wins
questions, ground truth, ``--strict``) over the cached batches in input order, exactly as a
clean build runs it over fresh ones, so the staging tables, rejects, manifest and dataset
are byte-identical to a clean build (``tests/builder/test_incremental.py``). Lines a replay
rejects late (a duplicate id, a ``--strict`` check) need their raw text, which the cache
does not hold: it is read from the input in one forward pass, only when such a reject
occurs, and the file's digest is checked again at its end.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any

import pyarrow as pa

from builder.cache import ingest_delta, keys
from builder.cache.entries import CacheError, Entry, EntryStore, EntryWriter
from builder.cache.memo import StatMemo
from builder.cache.segments import SegmentCache
from builder.fs import storage
from builder.ingest.codec import BatchResult
from builder.ingest.files import Ingest
from builder.ingest.staging import BANK_SEGMENT
from builder.normalize.episode import EpisodeInfo
from builder.sources.documents import records
from builder.sources.inputs import InputError, InputFile, SourceLine
from builder.validate.reject import Reject


class _RawLines:
    """The raw text of given line numbers of an input, read forward, only when asked."""

    def __init__(self, path: str, max_line_bytes: int, sha256: str) -> None:
        self.path, self.max_line_bytes, self.sha256 = path, max_line_bytes, sha256
        self._source: InputFile | None = None
        self._lines: Iterator[SourceLine] | None = None

    def get(self, number: int) -> bytes:
        if self._lines is None:
            self._source = InputFile(self.path, self.max_line_bytes)
            self._lines = records(self._source.lines(), self.max_line_bytes)
        for line in self._lines:
            if line.number == number:
                return line.raw
            if line.number > number:
                break
        raise InputError(f"{self.path}: line {number} not found; did the file change?")

    def close(self) -> None:
        """Read to the end and check the digest is still the one the cache was keyed by."""
        if self._lines is None or self._source is None:
            return
        for _ in self._lines:
            pass
        if self._source.stats.sha256 != self.sha256:
            raise InputError(f"{self.path}: changed during the build; build again")


@dataclass
class _FillRaw:
    """Forwards rejects, filling in the raw text of lines the cache did not keep."""

    target: Any
    raws: _RawLines

    def add(self, reject: Reject) -> None:
        if reject.raw is None:
            reject = replace(reject, raw=self.raws.get(reject.line))  # type: ignore[arg-type]
        self.target.add(reject)


@dataclass
class CachedIngest(Ingest):
    """``Ingest`` whose episode files come from ``entries`` when their digest is known, and
    whose leading segments are not read at all while ``segments`` holds them."""

    entries: EntryStore = field(kw_only=True)
    memo: StatMemo = field(kw_only=True)
    segments: SegmentCache = field(kw_only=True)
    # The files being normalized: their stat before the read, and their entries' writers.
    _stats: dict[str, tuple[Any, int]] = field(default_factory=dict, init=False, repr=False)
    _writers: dict[str, EntryWriter] = field(default_factory=dict, init=False, repr=False)
    _previous: str = field(default="", init=False, repr=False)
    _reusing: bool = field(default=True, init=False, repr=False)
    _raws: _RawLines | None = field(default=None, init=False, repr=False)  # of a replayed file

    def _raw_of(self, line: SourceLine) -> bytes | None:
        """A replayed line's text, read again from its file (the cache keeps outcomes only)."""
        if line.raw is None and self._raws is not None:
            return self._raws.get(line.number)
        return line.raw

    def _segment(self, name: str, read: Callable[[], None]) -> None:
        if not self._previous:
            self._previous = keys.base_key(self.config, self.entries.versions)
        if self._reusing:
            key = self._stored_key(name)
            found = self.segments.restorable(key) if key else None
            if found is not None:
                stored, delta = found
                ingest_delta.restore(self, name, delta)
                self.segments.reused[name] = stored
                self._previous = key  # type: ignore[assignment]
                return
            self._reusing = False
        since = ingest_delta.mark(self)
        super()._segment(name, read)
        key = keys.chain(self._previous, name, self._material(name))
        self.segments.begin(name, key, ingest_delta.delta(self, since))
        self._previous = key

    def _material(self, name: str) -> Any:
        """What identifies a segment's input, once read: the question banks' paths and
        digests, or the cache keys of the segment's episode files."""
        digests = {s.path: s.sha256 for s in self.result.inputs}
        if name == BANK_SEGMENT:
            return keys.bank_material(self.config, digests.__getitem__)
        return [self.entries.key(path, digests[path]) for path in self.segment_files[name]]

    def _stored_key(self, name: str) -> str | None:
        """The segment's key before reading it, when its inputs' digests can be known
        without a parse (banks: hashed; episode files: ``known_digest``); else None."""
        if name == BANK_SEGMENT:
            try:
                hashed = keys.bank_material(self.config, keys.input_sha256)
            except OSError:
                return None
            return keys.chain(self._previous, name, hashed)
        known = []
        for path in self.segment_files[name]:
            try:
                before = storage.stat(path)
            except OSError:
                return None
            recorded_ns = time.time_ns()
            digest, trusted = self.memo.known_digest(path, before)
            if digest is None:
                return None
            known.append((path, before, digest, trusted, recorded_ns))
        entries = [self.entries.key(path, digest) for path, _, digest, _, _ in known]
        key = keys.chain(self._previous, name, entries)
        if (self.segments.directory / key).is_dir():
            # The memo and the files' normalized batches stay for the next build.
            for (path, before, digest, trusted, recorded_ns), entry in zip(
                known, entries, strict=True
            ):
                if trusted:
                    self.memo.keep(path)
                else:
                    self.memo.remember(path, before, digest, recorded_ns)
                if (self.entries.directory / entry).is_dir():
                    self.entries.used.add(entry)
        return key

    def _read_run(self, paths: tuple[str, ...]) -> None:
        """Each file of the run whose digest is known is replayed from its cached batches;
        the files between those are normalized together (``Ingest._read_files``), each
        file's share of a batch stored as its own entry."""
        fresh: list[str] = []
        for path in paths:
            try:
                before = storage.stat(path)
            except OSError:
                fresh.append(path)  # reading it reports the missing file as usual
                continue
            recorded_ns = time.time_ns()
            digest, trusted = self.memo.known_digest(path, before)
            entry = self.entries.entry(path, digest) if digest is not None else None
            if entry is None:
                self._stats[path] = (before, recorded_ns)
                fresh.append(path)
                continue
            self._read_fresh(fresh)
            fresh = []
            self.entries.hits += 1
            self._replay(path, entry)
            self.entries.used.add(entry.directory.name)
            if trusted:
                self.memo.keep(path)
            else:
                self.memo.remember(path, before, entry.meta["sha256"], recorded_ns)
        self._read_fresh(fresh)

    def _read_fresh(self, paths: list[str]) -> None:
        if not paths:
            return
        self.entries.misses += sum(path in self._stats for path in paths)
        try:
            self._read_files(paths)
        except BaseException:
            for writer in self._writers.values():
                writer.abort()
            raise
        finally:
            self._writers.clear()
            self._stats.clear()

    def _writer(self, path: str) -> EntryWriter | None:
        """The entry being written for ``path``, opened at its first share of a batch; None
        for a file that is not cached (it could not be stat'ed, or is being replayed)."""
        if path not in self._stats:
            return None
        if path not in self._writers:
            self._writers[path] = self.entries.writer(path)
        return self._writers[path]

    def _commit(self, lines: list[SourceLine], batch: BatchResult) -> None:
        if self._stats:
            for path, share in batch.by_file([line.path for line in lines]):
                writer = self._writer(path)
                if writer is not None:
                    writer.add(share)
        super()._commit(lines, batch)

    def _file_done(self, source: InputFile) -> None:
        super()._file_done(source)
        path, stats = source.path, source.stats
        writer = self._writer(path)
        if writer is None:
            return
        key = writer.finish(stats, self.result.counts[path].blank)
        del self._writers[path]
        before, recorded_ns = self._stats.pop(path)
        self.entries.used.add(key)
        self.memo.remember(path, before, stats.sha256, recorded_ns)

    def _replay(self, path: str, entry: Entry) -> None:
        """The commit over the cached batches, in input order: what a clean build does."""
        stats = entry.stats
        _, counts = self._start(path, "episodes")
        counts.blank += entry.meta["blank"]
        raws = _RawLines(path, self.config.max_line_bytes, stats.sha256)
        rejects = self.rejects
        self.rejects = _FillRaw(rejects, raws)  # type: ignore[assignment]
        self._raws = raws
        try:
            for batch in entry.batches():
                lines = [
                    SourceLine(path, o.number if isinstance(o, EpisodeInfo) else o.line, None)  # type: ignore[arg-type]
                    for o in batch.outcomes
                ]
                self._commit(lines, batch)
        except (InputError, storage.StorageError):
            raise  # the input changed under the build, or its store failed: not the cache
        except (OSError, ValueError, pa.ArrowException) as exc:
            self.entries.drop(entry)
            raise CacheError(f"cache entry for {path} is damaged ({exc}); build again") from exc
        finally:
            self.rejects, self._raws = rejects, None
        raws.close()
        if self.on_bytes is not None:
            self.on_bytes(stats.bytes)
        self.result.inputs.append(stats)
