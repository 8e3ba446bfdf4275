"""Incremental rebuilds a segment at a time: an unchanged prefix of inputs is not rebuilt.

The ingest cuts the inputs into segments (``builder.ingest``: the question banks, then one
per episode file) and the export writes every config's files per segment
(``builder.export.segment``). What a segment writes depends only on its own input and on
the build-wide state left by the segments before it (episode ids seen, questions seen and
their ground truth, the secret values to redact). So each segment gets a *chained* key,

    key(k) = sha256(key(k - 1), segment k's name, its input's cache key)

with ``key(0)`` also covering the project's source, the library versions and every option
that changes a segment's output (not the list of episode files: appending one must not
change the keys before it). A build walks its segments in order; while their keys are in
the cache it neither reads nor rebuilds them: their files are hard-linked into the new
dataset, their rejects written again, and their share of the build-wide state restored
from what was stored with them. From the first segment that is not stored on, the build
runs as usual (each file's normalized batches may still come from ``builder.cache``) and
stores the segments it builds. Appending a day's file therefore rebuilds that file only,
and the result is byte-identical to a clean build (``tests/builder/test_incremental.py``).

Layout of ``{cache_dir}/segments``::

    <key>/meta.json          written last: the segment's SegmentOutput, file sizes, counts
    <key>/data/<config>/...  its dataset files (hard links where the file system allows)
    <key>/first_seen.arrow   episode ids it added (path, line), for the duplicate check
    <key>/questions.arrow    question ids it added, with their ground truth hash
    <key>/rejects.jsonl      its rejects, as the rejects file holds them
    .tmp-<pid>-<name>/       an entry being written

A stored file is trusted by its size (``cache_verify``: by its sha256 too); the manifest's
digests are the stored ones, which ``episodes publish`` checks against the files. Dataset
files are hard links to the stored ones where the file system allows (both read-only).
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import importlib.metadata
import json
import os
import shutil
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa

from builder.config import RUN_OPTIONS
from builder.export.segment import SegmentOutput

FORMAT = 1
# Options that do not change any segment's files (inputs are keyed one by one).
SEGMENT_INDEPENDENT = RUN_OPTIONS | {
    "episodes",
    "synthetic_questions",
    "llm_questions",
    "sessions",
    "null_correct_trains",  # sessions only: their segment is always built
    "out",
    "upload_to",
    "rejects",
    "max_reject_ratio",
    "publish_repo",
    "publish_private",
    "card",
    "config_path",
}
IPC_OPTIONS = pa.ipc.IpcWriteOptions(compression="lz4")
READ_ONLY = 0o444
_FIRST_SEEN = pa.schema([("episode_id", pa.string()), ("path", pa.string()), ("line", pa.int64())])
_QUESTIONS = pa.schema([("question_id", pa.string()), ("ground_truth_hash", pa.string())])


@functools.cache
def project_digest() -> str:
    """sha256 over the source of every module of ``builder`` and ``schemas``: what a
    segment's files are made by."""
    root = Path(__file__).resolve().parent.parent
    digest = hashlib.sha256()
    for package in ("builder", "schemas"):
        for path in sorted((root / package).rglob("*.py")):
            digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def base_key(config: Any, versions: dict[str, str]) -> str:
    """What every segment's key starts from."""
    fields = dataclasses.fields(config) if dataclasses.is_dataclass(config) else ()
    options = {f.name: getattr(config, f.name) for f in fields if f.name not in SEGMENT_INDEPENDENT}
    # polars derives every config; the ingest's libraries are in ``versions`` already
    libraries = {**versions, "polars": importlib.metadata.version("polars")}
    material = {
        "format": FORMAT,
        "code": project_digest(),
        "versions": libraries,
        "options": options,
    }
    return _sha256(material)


def chain(previous: str, name: str, material: Any) -> str:
    return _sha256({"previous": previous, "segment": name, "input": material})


def _sha256(material: Any) -> str:
    text = json.dumps(material, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass
class IngestDelta:
    """One segment's share of the ingest's build-wide state and counts."""

    files: list[dict[str, Any]] = field(default_factory=list)  # per input: kind, counts, stats
    rows: dict[str, int] = field(default_factory=dict)  # staging rows by table
    checks: dict[str, int] = field(default_factory=dict)
    question_checks: dict[str, int] = field(default_factory=dict)
    extra_fields: dict[str, int] = field(default_factory=dict)
    bounded_hook_values: int = 0
    duplicate_keys: dict[str, int] = field(default_factory=dict)
    first_seen: list[tuple[str, str, int]] = field(default_factory=list)
    questions: list[tuple[str, str | None]] = field(default_factory=list)
    rejects: list[tuple[str, bytes]] = field(default_factory=list)

    def counts_json(self) -> dict[str, Any]:
        fields = ("files", "rows", "checks", "question_checks", "extra_fields", "duplicate_keys")
        out: dict[str, Any] = {name: getattr(self, name) for name in fields}
        out["bounded_hook_values"] = self.bounded_hook_values
        return out


def _after(before: Counter[str], after: Counter[str]) -> dict[str, int]:
    return {k: n - before.get(k, 0) for k, n in after.items() if n != before.get(k, 0)}


@dataclass
class Mark:
    """The ingest's state just before a segment (``mark``), to take its delta from."""

    inputs: int
    first_seen: int
    questions: int
    rows: Counter[str]
    checks: Counter[str]
    question_checks: Counter[str]
    extra_fields: Counter[str]
    bounded_hook_values: int
    duplicate_keys: Counter[str]


def mark(job: Any) -> Mark:
    """``job``: a ``builder.ingest.Ingest`` between two segments. Its rejects are captured
    from here on, for ``delta``."""
    stats = job.normalizer.stats
    job.rejects.capture()
    return Mark(
        len(job.result.inputs),
        len(job.first_seen),
        len(job.normalizer.seen_questions),
        Counter(job.sink.rows),
        Counter(stats.checks),
        Counter(stats.question_checks),
        Counter(stats.extra_fields),
        stats.bounded_hook_values,
        Counter(stats.duplicate_keys),
    )


def delta(job: Any, since: Mark) -> IngestDelta:
    """What ``job`` added since ``since``. Ids and questions are only ever added (a
    ``--strict`` reject forgets the question it added last), so the new ones are the
    dicts' last entries, in insertion order."""
    stats, result = job.normalizer.stats, job.result
    files = []
    for source in result.inputs[since.inputs :]:
        counts = result.counts[source.path]
        files.append(
            {
                "path": source.path,
                "kind": result.kinds[source.path],
                "valid": counts.valid,
                "rejected": counts.rejected,
                "blank": counts.blank,
                "sha256": source.sha256,
                "bytes": source.bytes,
                "lines": source.lines,
            }
        )
    seen = _last(job.normalizer.seen_questions, since.questions)
    truth = job.normalizer.ground_truth
    first_seen = _last(job.first_seen, since.first_seen)
    return IngestDelta(
        files=files,
        rows=_after(since.rows, Counter(job.sink.rows)),
        checks=_after(since.checks, stats.checks),
        question_checks=_after(since.question_checks, stats.question_checks),
        extra_fields=_after(since.extra_fields, stats.extra_fields),
        bounded_hook_values=stats.bounded_hook_values - since.bounded_hook_values,
        duplicate_keys=_after(since.duplicate_keys, stats.duplicate_keys),
        first_seen=[(episode, path, line) for episode, (path, line) in first_seen],
        questions=[(qid, truth.get(qid)) for qid, _ in seen],
        rejects=job.rejects.captured(),
    )


def _last(entries: dict[Any, Any], before: int) -> list[tuple[Any, Any]]:
    """The entries added after the first ``before``, oldest first, without walking the
    older ones."""
    new = reversed(entries.items())
    return list(reversed([next(new) for _ in range(len(entries) - before)]))


def restore(job: Any, name: str, stored: IngestDelta) -> None:
    """Apply a stored segment's delta to ``job``, as if it had read the segment."""
    from builder.ingest import FileCounts
    from builder.sources import InputStats

    result, normalizer = job.result, job.normalizer
    for f in stored.files:
        result.kinds[f["path"]] = f["kind"]
        counts = result.counts.setdefault(f["path"], FileCounts())
        counts.valid += f["valid"]
        counts.rejected += f["rejected"]
        counts.blank += f["blank"]
        result.inputs.append(InputStats(f["path"], f["sha256"], f["bytes"], f["lines"]))
        if job.on_bytes is not None:
            job.on_bytes(f["bytes"])
    job.sink.rows.update(stored.rows)
    stats = normalizer.stats
    stats.checks.update(stored.checks)
    stats.question_checks.update(stored.question_checks)
    stats.extra_fields.update(stored.extra_fields)
    stats.bounded_hook_values += stored.bounded_hook_values
    stats.duplicate_keys.update(stored.duplicate_keys)
    for episode, path, line in stored.first_seen:
        job.first_seen.setdefault(episode, (path, line))
    for qid, truth in stored.questions:
        normalizer.seen_questions[qid] = None
        if truth is not None:
            normalizer.ground_truth.setdefault(qid, truth)
    job.rejects.add_lines(stored.rejects)


@dataclass
class StoredSegment:
    directory: Path
    meta: dict[str, Any]

    @property
    def output(self) -> SegmentOutput:
        return SegmentOutput.from_json(self.meta["output"])

    def delta(self) -> IngestDelta:
        counts = self.meta["ingest"]
        first_seen = _read(self.directory / "first_seen.arrow").to_pydict()
        questions = _read(self.directory / "questions.arrow").to_pydict()
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

    def link_into(self, dataset: Path) -> None:
        """Hard link (else copy) the segment's files into ``dataset``. They were made
        read-only when stored (``_link``), so a rebuild linking thousands of them makes one
        directory per config and one link per file, nothing more."""
        files = self.meta["output"]["files"]
        for folder in {str(dataset / relative).rpartition("/")[0] for relative in files}:
            os.makedirs(folder, exist_ok=True)
        data = self.directory / "data"
        for relative in files:
            try:
                os.link(data / relative, dataset / relative)
            except OSError:
                _link(data / relative, dataset / relative)


def _link(source: Path, target: Path) -> None:
    """Hard link, else copy. Stored files are made read-only first: a dataset file is the
    same file as its cache entry's, and no step of the project writes a file in place."""
    target.parent.mkdir(parents=True, exist_ok=True)
    source.chmod(READ_ONLY)
    try:
        os.link(source, target)
    except OSError:
        shutil.copyfile(source, target)
        target.chmod(READ_ONLY)


class SegmentCache:
    """``{cache_dir}/segments``: stored segments by chained key; lookups, stores, eviction."""

    def __init__(self, directory: Path, verify: bool = False) -> None:
        self.directory = directory
        self.directory.mkdir(parents=True, exist_ok=True)
        self.verify = verify
        self.used: set[str] = set()
        self.reused: dict[str, StoredSegment] = {}  # segment name -> stored, this build
        self.pending: dict[str, tuple[str, dict[str, Any]]] = {}  # name -> key, counts

    def lookup(self, key: str) -> StoredSegment | None:
        """The complete, intact stored segment of ``key``, or None (a damaged one is
        deleted)."""
        directory = self.directory / key
        if not directory.is_dir():
            return None
        try:
            meta = json.loads((directory / "meta.json").read_text())
            if meta["format"] != FORMAT or meta["key"] != key:
                raise ValueError("meta.json does not match")
            for relative, size in meta["sizes"].items():
                path = directory / relative
                if path.stat().st_size != size:
                    raise ValueError(f"{path}: wrong size")
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
        _write(_table(ingest.first_seen, _FIRST_SEEN), tmp / "first_seen.arrow")
        _write(_table(ingest.questions, _QUESTIONS), tmp / "questions.arrow")
        (tmp / "rejects.jsonl").write_bytes(b"".join(line for _, line in ingest.rejects))
        self.pending[name] = (key, ingest.counts_json())

    def store(self, output: SegmentOutput, dataset: Path) -> None:
        """Keep a segment the build has just written into ``dataset`` (after ``begin``)."""
        key, counts = self.pending[output.name]
        tmp = self.directory / f".tmp-{os.getpid()}-{output.name}"
        try:
            for relative in output.files:
                _link(dataset / relative, tmp / "data" / relative)
            sizes = {
                str(p.relative_to(tmp)): p.stat().st_size for p in tmp.rglob("*") if p.is_file()
            }
            meta = {
                "format": FORMAT,
                "key": key,
                "output": output.to_json(),
                "ingest": counts,
                "sizes": sizes,
            }
            (tmp / "meta.json").write_text(json.dumps(meta, sort_keys=True))
            target = self.directory / key
            shutil.rmtree(target, ignore_errors=True)
            tmp.rename(target)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        self.used.add(key)

    def finish(self) -> None:
        """After a successful build: keep only the segments it used or stored (temporary
        folders of a failed build go too: one build uses the cache at a time)."""
        for child in self.directory.iterdir():
            if child.name not in self.used:
                shutil.rmtree(child, ignore_errors=True)


def _write(table: pa.Table, path: Path) -> None:
    with pa.ipc.new_file(path, table.schema, options=IPC_OPTIONS) as writer:
        writer.write_table(table)


def _read(path: Path) -> pa.Table:
    with pa.memory_map(str(path)) as source:
        return pa.ipc.open_file(source).read_all()


def _table(rows: Iterable[tuple[Any, ...]], schema: pa.Schema) -> pa.Table:
    columns = list(zip(*rows, strict=True)) or [() for _ in schema]
    arrays = [pa.array(c, type=f.type) for c, f in zip(columns, schema, strict=True)]
    return pa.Table.from_arrays(arrays, schema=schema)
