"""Sources → validate → normalize: every input line becomes table rows, a reject, or a blank.

Question banks are read first (their source — synthetic or llm — wins over "episode", and
their ground truth is known before any episode is checked against it). Rows are flushed to
unsplit staging Parquet files every ``batch_lines`` lines, so memory does not grow with the
input. The accounting invariant, tested: for every file, valid + rejected + blank = lines.

The staging tables are cut into segments by input (``builder.ingest.staging``).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from builder.config import BuildConfig
from builder.engine import (
    POOL_FROM_BYTES,
    Engine,
    InlineEngine,
    PerRunEngine,
    batch_bytes,
    default_workers,
    for_files,
    local_engine,
    local_size,
    main_survives_reimport,
)
from builder.ingest.batch import normalize_batch
from builder.ingest.codec import BatchResult
from builder.ingest.question_banks import BankQuestions, question_check_failed, valid_records
from builder.ingest.rejects import RejectsWriter
from builder.ingest.results import FileCounts, IngestResult
from builder.ingest.staging import (
    BANK_SEGMENT,
    TableSink,
    bank_paths,
    episode_segments,
    segment_name,
)
from builder.normalize import Normalizer
from builder.normalize.episode import EpisodeInfo
from builder.normalize.explain import by_meaning, explain_line
from builder.normalize.rows import EPISODE_TABLES
from builder.sources.banks import bank_lines
from builder.sources.documents import records
from builder.sources.inputs import InputFile, SourceLine
from builder.validate.json_lines import is_blank
from builder.validate.reject import FieldError, Reject
from schemas.stages import Ingested
from schemas.tables import TABLES
from schemas.vocabulary import CHECK_FAILED, DUPLICATE_EPISODE_ID

ProgressCallback = Callable[[int], None]

# A batch is sent to a worker when it reaches ``batch_lines`` lines or this many bytes.
BATCH_BYTES = 16 << 20


@dataclass
class Ingest:
    config: BuildConfig
    sink: TableSink
    rejects: RejectsWriter
    on_bytes: ProgressCallback | None = None
    engine: Engine = field(default_factory=InlineEngine)
    normalizer: Normalizer = field(init=False)
    result: IngestResult = field(default_factory=IngestResult)

    def __post_init__(self) -> None:
        self.normalizer = Normalizer(
            hook_value_limit=self.config.hook_value_limit,
            hash_precision=self.config.hash_precision,
            answer_tolerance=self.config.answer_tolerance,
        )
        self.first_seen: dict[str, tuple[str, int, int]] = {}
        self.segment_files: dict[str, tuple[str, ...]] = {}  # episode segment -> its files
        self.ahead = 0  # bytes of the episode files in the runs after the one being read

    def run(self) -> IngestResult:
        runs = episode_segments(self.config)
        self.segment_files = {segment_name(i): run for i, run in enumerate(runs, 1)}
        self._segment(BANK_SEGMENT, self._read_banks)
        left = sum(sizes := [sum(map(local_size, run)) for run in runs])
        for (name, run), size in zip(self.segment_files.items(), sizes, strict=True):
            self.ahead = left = left - size  # the engine's choice looks ahead to the runs after
            self._segment(name, lambda run=run: self._read_run(run))
        self.result.rows = self.sink.rows
        return self.result

    def _read_run(self, paths: tuple[str, ...]) -> None:
        self._read_files(paths)

    def _segment(self, name: str, read: Callable[[], None]) -> None:
        """Read one segment's inputs into its own staging folder."""
        self.sink.segment(name)
        read()

    def _read_banks(self) -> None:
        across = BankQuestions(self.config.hash_precision)
        for kind, paths in bank_paths(self.config):
            for path in paths:
                self._read_questions(path, kind, across)
        self.sink.write(self.normalizer.take_tables())

    def _start(self, path: str, kind: str) -> tuple[InputFile, FileCounts]:
        name = self.config.input_name(path)  # what its rows and counts call it
        self.result.kinds[name] = kind
        source = InputFile(path, self.config.max_line_bytes, name)
        return source, self.result.counts.setdefault(name, FileCounts())

    def _read_questions(self, path: str, kind: str, across: BankQuestions) -> None:
        """Question banks are small: validated by pydantic, one line at a time."""
        source, counts = self._start(path, "questions")
        validator = across.validator()
        lines = bank_lines(source.lines(self.on_bytes))
        strict, precision = self.config.strict, self.config.hash_precision
        for valid in valid_records(lines, validator, counts, self.rejects):
            line = valid.line
            failed = self.normalizer.question(valid.record, kind, line.path, line.number, strict)
            if strict and failed:
                counts.valid, counts.rejected = counts.valid - 1, counts.rejected + 1
                self.rejects.add(question_check_failed(valid, failed, precision))
        self.result.inputs.append(source.stats)

    def _read_files(self, paths: Sequence[str]) -> None:
        """Episode files, in order, normalized in batches that span files: a batch closes at
        ``batch_lines`` lines or ``BATCH_BYTES``, not at a file's end, so a run of small
        files costs a few batches rather than one each. A file is done (``_file_done``) once
        the batch holding its last line is committed."""
        sent: deque[tuple[list[SourceLine], list[InputFile]]] = deque()
        engine = for_files(self.engine, paths, self.ahead)
        most = batch_bytes(paths, getattr(engine, "workers", 1), BATCH_BYTES)
        for result in engine.map(normalize_batch, self._batches(paths, sent, most)):
            lines, ended = sent.popleft()
            self._commit(lines, result)
            for source in ended:
                self._file_done(source)
        for _, ended in sent:  # files after the last batch: blank, or no lines at all
            for source in ended:
                self._file_done(source)

    def _batches(
        self,
        paths: Sequence[str],
        sent: deque[tuple[list[SourceLine], list[InputFile]]],
        most: int = BATCH_BYTES,
    ) -> Iterator[tuple[list[SourceLine], int, int | None, float | None]]:
        """``normalize_batch``'s arguments, batches of ``most`` bytes, each also queued on
        ``sent`` with the files that ended before it (files after the last line, alone)."""
        options = (
            self.config.hook_value_limit,
            self.config.hash_precision,
            self.config.answer_tolerance,
        )
        ended: list[InputFile] = []
        batch: list[SourceLine] = []
        size = 0
        for path in paths:
            source, counts = self._start(path, "episodes")
            for line in records(source.lines(self.on_bytes), self.config.max_line_bytes):
                if is_blank(line):
                    counts.blank += 1
                    continue
                batch.append(line)
                size += len(line.raw)
                if len(batch) >= self.config.batch_lines or size >= most:
                    sent.append((batch, ended))
                    yield batch, *options
                    batch, size, ended = [], 0, []
            ended.append(source)
        sent.append((batch, ended))
        if batch:
            yield batch, *options

    def _file_done(self, source: InputFile) -> None:
        self.result.inputs.append(source.stats)

    def _commit(self, lines: list[SourceLine], batch: BatchResult) -> None:
        """The build-wide, order-dependent part, in input order: duplicate ids (first wins),
        question rows (first source wins), ground truth learned from earlier lines, and
        ``--strict`` rejects. Exactly what a one-line-at-a-time ingest decides."""
        normalizer, strict, counted = self.normalizer, self.config.strict, self.result.counts
        keep_episode: list[bool] = []
        keep_question: list[bool] = []
        episode_checks: list[list[str]] = []
        for line, outcome in zip(lines, batch.outcomes, strict=True):
            counts = counted[line.path]
            if isinstance(outcome, Reject):
                counts.rejected += 1
                self.rejects.add(outcome)
                continue
            first = self.first_seen.setdefault(outcome.episode_id, line.place)
            if first != line.place:
                where = f"{first[0]}:{first[1]}"
                error = FieldError(
                    "$.episode_id", f"{outcome.episode_id!r} already seen at {where}"
                )
                reject = Reject(line.path, line.number, DUPLICATE_EPISODE_ID, (error,), line.raw)
                counts.rejected += 1
                self.rejects.add(reject)  # a reject, not also a failed check
                keep_episode.append(False)
                keep_question.append(False)
                continue
            failed, new_question = normalizer.commit(outcome)
            if strict and failed:
                if new_question:
                    normalizer.forget_question(outcome.question_id, outcome.question_gt_hash)
                counts.rejected += 1
                self.rejects.add(self._check_failed(line, failed))
                keep_episode.append(False)
                keep_question.append(False)
                continue
            counts.valid += 1
            keep_episode.append(True)
            keep_question.append(new_question)
            episode_checks.append(failed)
        self.sink.write(_kept(batch, keep_episode, keep_question, episode_checks))

    def _check_failed(self, line: SourceLine, failed: list[str]) -> Reject:
        """A ``--strict`` reject: each failed check where it is in the line, when its text is
        at hand (``builder.normalize.explain``), else by its meaning."""
        raw = self._raw_of(line)
        if raw is None:
            errors = tuple(by_meaning(kind) for kind in dict.fromkeys(failed))
        else:
            errors = explain_line(raw, failed, self.config.hash_precision)
        return Reject(line.path, line.number, CHECK_FAILED, errors, raw)

    def _raw_of(self, line: SourceLine) -> bytes | None:
        return line.raw


def _kept(
    batch: BatchResult,
    keep_episode: list[bool],
    keep_question: list[bool],
    episode_checks: list[list[str]],
) -> dict[str, pa.Table]:
    infos = [o for o in batch.outcomes if isinstance(o, EpisodeInfo)]
    tables = dict(batch.tables)
    if not all(keep_episode):
        keep = np.asarray(keep_episode, dtype=bool)
        for i, name in enumerate(EPISODE_TABLES):
            counts = np.fromiter(
                (info.counts[i] for info in infos), dtype=np.int64, count=len(infos)
            )
            tables[name] = tables[name].filter(pa.array(np.repeat(keep, counts)))
    tables["questions"] = tables["questions"].filter(pa.array(keep_question, pa.bool_()))
    checks = pa.array(episode_checks, type=TABLES["episodes"].field("checks").type)
    tables["episodes"] = tables["episodes"].append_column(
        TABLES["episodes"].field("checks"), checks
    )
    return {name: tables[name] for name in TABLES}


def ingest_files(
    config: BuildConfig,
    staging: Path,
    rejects: RejectsWriter,
    on_bytes: ProgressCallback | None = None,
    workers: int | None = None,
    cache: Any = None,
) -> Ingested:
    """Read every input into the staging tables; what was read, counted, as a value.
    ``workers``: processes for the per-batch work (default: chosen as runs of files come,
    ``_local``); the output is the same bytes for any number.
    ``cache``: an open ``builder.cache.IngestCache`` (``builder.cache.open_cache``), which
    the caller closes; it wraps this stage from outside (its ``ingest_job``), so this module
    does not import it."""
    engine = _engine(config, workers, staging.parent)  # beside the staging folder
    sink = TableSink(staging, config.staging_compression or "none")
    try:
        if cache is None:
            job = Ingest(config, sink, rejects, on_bytes, engine)
        else:
            job = cache.ingest_job(config, sink, rejects, on_bytes, engine)
        result = job.run()
        if cache is not None:
            cache.finish()
        return result.ingested(job.normalizer.stats)
    finally:
        sink.close()
        engine.close()


def _engine(config: BuildConfig, workers: int | None, spool_in: Path | None = None) -> Engine:
    """``engine = "ray"``: the per-batch work on Ray Data, at ``ray_address`` (None: a local
    Ray). Else in this process or a local pool (``workers``; results spooled in ``spool_in``)."""
    if config.engine == "ray":
        from builder.ingest.ray_engine import RayEngine

        return RayEngine(config.ray_address or None)
    return _local(config, workers, spool_in)


def _local(config: BuildConfig, workers: int | None, spool_in: Path | None = None) -> Engine:
    """Explicit ``workers`` (argument, else a ``workers`` config key): that many processes
    (1: this one). 0/None, the default: ``PerRunEngine``, one worker per available core."""
    if workers is None:
        workers = config.workers or 0
    if workers >= 1:
        return local_engine(workers, spool_in)
    cores = default_workers()
    if cores <= 1 or not main_survives_reimport():
        return InlineEngine()
    return PerRunEngine(cores, POOL_FROM_BYTES, spool_in)
