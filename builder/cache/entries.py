"""The second level of the cache: each episode file's normalized batches, by entry key.

What is cached is the pure, per-file part of the ingest: the file's share of each batch
``normalize_batch`` returns (a batch may span files; ``BatchResult.by_file``), as record
batches (``builder.ingest.codec``), plus the file's blank-line count and stats. The
build-wide, order-dependent commit (duplicate ids, first-source-wins questions, ground
truth, ``--strict``) is *not* cached: a rebuild replays it over the cached batches in input
order (``builder.cache.cached_ingest``).

**Safety.** An entry is written into a temporary folder and renamed into place only when
complete, ``meta.json`` last; before replay every file of the entry is checked against the
size and sha256 in ``meta.json``, its IPC footer and batch count. Anything that does not
fit (a killed build, a truncated or edited file) makes the entry a miss: it is deleted and
rebuilt. Replay streams one batch at a time (memory-mapped), so memory does not grow with
the input.

**Eviction.** After a successful ingest every entry the build did not use (hit or wrote) is
deleted, along with temporary folders of processes that are no longer running, and the
memo keeps only the files of this build. So the cache holds exactly the last build's inputs
(≈ the compressed size of their normalized tables); give different builds different cache
folders.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa

from builder.cache import keys
from builder.cache.ipc import IPC_OPTIONS
from builder.errors import EnvironmentProblem
from builder.fs.leftovers import process_alive
from builder.ingest.codec import (
    BATCH_SCHEMAS,
    BatchResult,
    batch_from_record_batches,
    batch_to_record_batches,
)
from builder.sources.inputs import InputStats


class CacheError(EnvironmentProblem, RuntimeError):
    """A cache entry failed in the middle of a replay (it has been deleted: build again)."""


@dataclass
class Entry:
    """A complete, verified cache entry of one input file."""

    directory: Path
    meta: dict[str, Any]

    @property
    def stats(self) -> InputStats:
        m = self.meta
        return InputStats(m["path"], m["sha256"], m["bytes"], m["lines"])

    def batches(self) -> Iterator[BatchResult]:
        readers = {}
        with contextlib.ExitStack() as stack:
            for name in BATCH_SCHEMAS:
                source = stack.enter_context(pa.memory_map(str(self.directory / f"{name}.arrow")))
                readers[name] = pa.ipc.open_file(source)
            for i in range(self.meta["batches"]):
                batches = {name: reader.get_batch(i) for name, reader in readers.items()}
                yield batch_from_record_batches(batches)  # type: ignore[misc]


class EntryWriter:
    """Writes one input file's batches into a temporary folder; ``finish`` renames it."""

    def __init__(self, store: EntryStore, path: str) -> None:
        self.store, self.path = store, path
        self.tmp = store.directory / f".tmp-{os.getpid()}-{time.time_ns()}"
        self.tmp.mkdir(parents=True)
        self.batches = 0
        self._writers = {
            name: pa.ipc.new_file(str(self.tmp / f"{name}.arrow"), schema, options=IPC_OPTIONS)
            for name, schema in BATCH_SCHEMAS.items()
        }

    def add(self, batch: BatchResult) -> None:
        for name, record_batch in batch_to_record_batches(batch).items():
            self._writers[name].write_batch(record_batch)
        self.batches += 1

    def finish(self, stats: InputStats, blank: int) -> str:
        for writer in self._writers.values():
            writer.close()
        files = {}
        for name in BATCH_SCHEMAS:
            path = self.tmp / f"{name}.arrow"
            files[name] = {"bytes": path.stat().st_size, "sha256": keys.file_sha256(str(path))}
        key = self.store.key(self.path, stats.sha256)
        meta = {
            "format": keys.ENTRY_FORMAT,
            "key": key,
            "path": self.path,
            "sha256": stats.sha256,
            "bytes": stats.bytes,
            "lines": stats.lines,
            "blank": blank,
            "batches": self.batches,
            "files": files,
            "versions": self.store.versions,
            "options": self.store.options,
        }
        (self.tmp / "meta.json").write_text(json.dumps(meta, indent=1, sort_keys=True))
        target = self.store.directory / key
        if target.exists():  # a damaged or concurrent copy: ours is complete
            shutil.rmtree(target, ignore_errors=True)
        self.tmp.rename(target)
        self.store.written.add(key)
        return key

    def abort(self) -> None:
        for writer in self._writers.values():
            with contextlib.suppress(Exception):
                writer.close()
        shutil.rmtree(self.tmp, ignore_errors=True)


class EntryStore:
    """``{cache_dir}/entries``: lookups, new entries and eviction; ``used`` holds the
    entries this build replayed or wrote, ``hits`` and ``misses`` count its files."""

    def __init__(self, directory: Path, versions: dict[str, str], options: dict[str, Any]) -> None:
        self.directory = directory
        self.directory.mkdir(parents=True, exist_ok=True)
        self.versions, self.options = versions, options
        self.used: set[str] = set()
        self.written: set[str] = set()  # entries this build stored (``IngestCache.forget_new``)
        self.hits = 0
        self.misses = 0

    def key(self, path: str, sha256: str) -> str:
        return keys.entry_key(path, sha256, self.versions, self.options)

    def entry(self, path: str, sha256: str) -> Entry | None:
        """The verified entry for this content, or None (a damaged one is deleted)."""
        key = self.key(path, sha256)
        directory = self.directory / key
        if not directory.is_dir():
            return None
        try:
            meta = json.loads((directory / "meta.json").read_text())
            if meta["format"] != keys.ENTRY_FORMAT or meta["key"] != key:
                raise ValueError("meta.json does not match")
            if meta["sha256"] != sha256 or meta["path"] != path:
                raise ValueError("meta.json does not match")
            if set(meta["files"]) != set(BATCH_SCHEMAS):
                raise ValueError("meta.json does not match")
            for name, expected in meta["files"].items():
                file = directory / f"{name}.arrow"
                if file.stat().st_size != expected["bytes"]:
                    raise ValueError(f"{file}: wrong size")
                if keys.file_sha256(str(file)) != expected["sha256"]:
                    raise ValueError(f"{file}: wrong digest")
                with pa.memory_map(str(file)) as source:
                    reader = pa.ipc.open_file(source)
                    if reader.num_record_batches != meta["batches"]:
                        raise ValueError(f"{file}: wrong number of batches")
                    if not reader.schema.equals(BATCH_SCHEMAS[name]):
                        raise ValueError(f"{file}: wrong schema")
        except (OSError, ValueError, KeyError, TypeError, pa.ArrowException):
            shutil.rmtree(directory, ignore_errors=True)
            return None
        return Entry(directory, meta)

    def writer(self, path: str) -> EntryWriter:
        return EntryWriter(self, path)

    def drop(self, entry: Entry) -> None:
        shutil.rmtree(entry.directory, ignore_errors=True)

    def evict(self) -> None:
        """Delete every entry this build did not use, and the temporary folders of
        processes that are no longer running."""
        for child in self.directory.iterdir():
            if child.name.startswith(".tmp-"):
                pid = child.name.split("-")[1]
                if pid.isdigit() and int(pid) != os.getpid() and process_alive(int(pid)):
                    continue
                shutil.rmtree(child, ignore_errors=True)
            elif child.name not in self.used:
                shutil.rmtree(child, ignore_errors=True)
