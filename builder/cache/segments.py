"""The first level of the cache: stored segments, so an unchanged prefix of inputs is not rebuilt.

The ingest cuts the inputs into segments (``builder.ingest``: the question banks, then one
per episode file) and the export writes every config's files per segment
(``builder.export.segment``). What a segment writes depends only on its own input and on
the build-wide state left by the segments before it (episode ids seen, questions seen and
their ground truth, the secret values to redact). So each segment gets a *chained* key,

    key(k) = sha256(key(k - 1), segment k's name, its input's cache key)

with ``key(0)`` also covering the project's source, the library versions and every option
that changes a segment's output (not the list of episode files: appending one must not
change the keys before it; ``builder.cache.keys``). A build walks its segments in order;
while their keys are in the cache it neither reads nor rebuilds them: their files are
hard-linked into the new dataset, their rejects written again, and their share of the build-wide
state restored from what was stored with them (``builder.cache.ingest_delta``). From the
first segment that is not stored on, the build runs as usual (each file's normalized batches
may still come from ``builder.cache.entries``) and stores the segments it builds. Appending
a day's file therefore rebuilds that file only, and the result is byte-identical to a clean
build (``tests/builder/test_incremental.py``).

Layout of ``{cache_dir}/segments``::

    <key>/meta.json          written last: the segment's SegmentOutput, file sizes and
                             mtimes, counts
    <key>/data/<config>/...  its dataset files (hard links where the file system allows)
    <key>/first_seen.arrow   episode ids it added (path, line, item), for the duplicate check
    <key>/questions.arrow    question ids it added, with their ground truth hash
    <key>/rejects.jsonl      its rejects, as the rejects file holds them
    <key>/flushed            made once a build's flush of these files returned: they
                             are on disk, and a rebuild linking them need not flush them
    .tmp-<pid>-<name>/       an entry being written

A stored file is trusted by its size and mtime (``cache_verify``: by its sha256 too); the
manifest's digests are the stored ones, which ``episodes publish`` checks against the files.
Dataset files are hard links to the stored ones where the file system allows (both
read-only).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa

from builder.cache.ingest_delta import IngestDelta
from builder.cache.ipc import read_ipc, write_ipc
from builder.cache.keys import SEGMENT_FORMAT
from builder.export.segment import SegmentOutput
from builder.fs.durable import sync_file
from builder.normalize.rows import to_table

READ_ONLY = 0o444
FLUSHED = "flushed"
_FIRST_SEEN = pa.schema(
    [("episode_id", pa.string()), ("path", pa.string()), ("line", pa.int64()), ("item", pa.int64())]
)
_QUESTIONS = pa.schema([("question_id", pa.string()), ("ground_truth_hash", pa.string())])


@dataclass
class StoredSegment:
    directory: Path
    meta: dict[str, Any]

    @property
    def output(self) -> SegmentOutput:
        return SegmentOutput.from_json(self.meta["output"])

    def delta(self) -> IngestDelta:
        counts = self.meta["ingest"]
        first_seen = read_ipc(self.directory / "first_seen.arrow").to_pydict()
        questions = read_ipc(self.directory / "questions.arrow").to_pydict()
        lines = (self.directory / "rejects.jsonl").read_bytes().splitlines(keepends=True)
        return IngestDelta(
            files=counts["files"],
            rows=counts["rows"],
            checks=counts["checks"],
            question_checks=counts["question_checks"],
            extra_fields=counts["extra_fields"],
            bounded_hook_values=counts["bounded_hook_values"],
            duplicate_keys=counts.get("duplicate_keys", {}),
            first_seen=list(zip(*first_seen.values(), strict=True)),
            questions=list(zip(*questions.values(), strict=True)),
            rejects=[(orjson.loads(line)["kind"], line) for line in lines],
        )

    @property
    def flushed(self) -> bool:
        """Its files are on disk: a build flushed them (``SegmentCache.mark_flushed``)."""
        return (self.directory / FLUSHED).exists()

    def link_into(self, dataset: Path) -> list[Path]:
        """Hard link (else copy) the segment's files into ``dataset``; the paths linked, not
        copied. They were made read-only when stored (``_link``), so a rebuild linking
        thousands of them makes one directory per config and one link per file, nothing
        more."""
        files = self.meta["output"]["files"]
        for folder in {str(dataset / relative).rpartition("/")[0] for relative in files}:
            os.makedirs(folder, exist_ok=True)
        data = self.directory / "data"
        linked = []
        for relative in files:
            try:
                os.link(data / relative, dataset / relative)
                linked.append(dataset / relative)
            except OSError:
                _link(data / relative, dataset / relative)
        return linked


def _link(source: Path, target: Path) -> bool:
    """Hard link, else copy; whether it linked. Stored files are made read-only first: a
    dataset file is the same file as its cache entry's, and no step of the project writes a
    file in place."""
    target.parent.mkdir(parents=True, exist_ok=True)
    source.chmod(READ_ONLY)
    try:
        os.link(source, target)
        return True
    except OSError:
        shutil.copyfile(source, target)
        target.chmod(READ_ONLY)
        return False


def _stat(path: Path) -> list[int]:
    """Size and mtime: a stored file is a dataset file too (a hard link), and an edit made
    to that one in place (after a ``chmod``) changes the mtime even where it keeps the size.
    Not the ctime: every link made to the file changes it."""
    st = path.stat()
    return [st.st_size, st.st_mtime_ns]


class SegmentCache:
    """``{cache_dir}/segments``: stored segments by chained key; lookups, stores, eviction."""

    def __init__(self, directory: Path, verify: bool = False) -> None:
        self.directory = directory
        self.directory.mkdir(parents=True, exist_ok=True)
        self.verify = verify
        self.used: set[str] = set()
        self.stored: set[str] = set()  # segments this build stored (``IngestCache.forget_new``)
        self.reused: dict[str, StoredSegment] = {}  # segment name -> stored, this build
        self.pending: dict[str, tuple[str, dict[str, Any]]] = {}  # name -> key, counts
        self.on_disk: set[Path] = set()  # dataset files linked from flushed segments

    def lookup(self, key: str) -> StoredSegment | None:
        """The complete, intact stored segment of ``key``, or None (a damaged one is
        deleted)."""
        directory = self.directory / key
        if not directory.is_dir():
            return None
        try:
            meta = json.loads((directory / "meta.json").read_text())
            if meta["format"] != SEGMENT_FORMAT or meta["key"] != key:
                raise ValueError("meta.json does not match")
            for relative, recorded in meta["stats"].items():
                path = directory / relative
                if _stat(path) != recorded:
                    raise ValueError(f"{path}: changed since it was stored")
            if self.verify:
                for relative, digest in meta["output"]["files"].items():
                    data = (directory / "data" / relative).read_bytes()
                    if hashlib.sha256(data).hexdigest() != digest:
                        raise ValueError(f"{relative}: wrong digest")
        except (OSError, ValueError, KeyError, TypeError):
            shutil.rmtree(directory, ignore_errors=True)
            return None
        self.used.add(key)
        return StoredSegment(directory, meta)

    def restorable(self, key: str) -> tuple[StoredSegment, IngestDelta] | None:
        """The stored segment of ``key`` and its share of the ingest, read; None when there
        is none or it cannot be read (then it is deleted)."""
        stored = self.lookup(key)
        if stored is None:
            return None
        try:
            return stored, stored.delta()
        except (OSError, ValueError, KeyError, TypeError, pa.ArrowException):
            self.used.discard(key)
            shutil.rmtree(stored.directory, ignore_errors=True)
            return None

    def begin(self, name: str, key: str, ingest: IngestDelta) -> None:
        """Set aside segment ``name``'s share of the ingest as soon as it is read (so the
        build does not hold it), to be stored with its files by ``store``."""
        tmp = self.directory / f".tmp-{os.getpid()}-{name}"
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        write_ipc(to_table(ingest.first_seen, _FIRST_SEEN), tmp / "first_seen.arrow")
        write_ipc(to_table(ingest.questions, _QUESTIONS), tmp / "questions.arrow")
        (tmp / "rejects.jsonl").write_bytes(b"".join(line for _, line in ingest.rejects))
        self.pending[name] = (key, ingest.counts_json())

    def store(self, output: SegmentOutput, dataset: Path) -> None:
        """Keep a segment the build has just written into ``dataset`` (after ``begin``)."""
        key, counts = self.pending[output.name]
        tmp = self.directory / f".tmp-{os.getpid()}-{output.name}"
        try:
            for relative in output.files:
                if not _link(dataset / relative, tmp / "data" / relative):
                    # a copy is not the file the build's flush reaches (``mark_flushed``)
                    sync_file(tmp / "data" / relative)
            stats = {str(p.relative_to(tmp)): _stat(p) for p in tmp.rglob("*") if p.is_file()}
            meta = {
                "format": SEGMENT_FORMAT,
                "key": key,
                "output": output.to_json(),
                "ingest": counts,
                "stats": stats,
            }
            (tmp / "meta.json").write_text(json.dumps(meta, sort_keys=True))
            target = self.directory / key
            shutil.rmtree(target, ignore_errors=True)
            tmp.rename(target)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        self.used.add(key)
        self.stored.add(key)

    def link(self, stored: StoredSegment, dataset: Path) -> None:
        """``stored``'s files linked into ``dataset``; those on disk already are kept in
        ``on_disk``, for the build's flush to pass over."""
        linked = stored.link_into(dataset)
        if stored.flushed:
            self.on_disk.update(linked)

    def mark_flushed(self) -> None:
        """After the build's flush returned: every segment it used or stored is on disk.
        (One stored by a build that failed before its flush is not marked: its files are
        flushed by the next build that links them.)"""
        for key in self.used:
            with contextlib.suppress(OSError):  # gone, or read-only: flushed again next time
                (self.directory / key / FLUSHED).touch()

    def finish(self) -> None:
        """After a successful build: keep only the segments it used or stored (temporary
        folders of a failed build go too: one build uses the cache at a time)."""
        for child in self.directory.iterdir():
            if child.name not in self.used:
                shutil.rmtree(child, ignore_errors=True)
