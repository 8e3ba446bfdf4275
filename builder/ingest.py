"""Sources → validate → normalize: every input line becomes table rows, a reject, or a blank.

Question banks are read first (their source — synthetic or llm — wins over "episode", and
their ground truth is known before any episode is checked against it). Rows are flushed to
unsplit staging Parquet files every ``batch_lines`` lines, so memory does not grow with the
input. The accounting invariant, tested: for every file, valid + rejected + blank = lines.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from pydantic import BaseModel

from builder.config import BuildConfig
from builder.normalize import Normalizer
from builder.rejects import RejectsWriter
from builder.sources import InputFile, InputStats
from builder.validate import FieldError, Reject, Valid, Validator, is_blank
from schemas.episode import Episode, Question
from schemas.tables import TABLES

CHECK_FAILED = "check_failed"


@dataclass
class FileCounts:
    valid: int = 0
    rejected: int = 0
    blank: int = 0


@dataclass
class IngestResult:
    inputs: list[InputStats] = field(default_factory=list)
    counts: dict[str, FileCounts] = field(default_factory=dict)
    kinds: dict[str, str] = field(default_factory=dict)  # path -> episodes | questions
    rows: Counter[str] = field(default_factory=Counter)

    @property
    def lines(self) -> int:
        return sum(c.valid + c.rejected + c.blank for c in self.counts.values())

    @property
    def rejected(self) -> int:
        return sum(c.rejected for c in self.counts.values())

    @property
    def records(self) -> int:
        return sum(c.valid + c.rejected for c in self.counts.values())


class TableSink:
    """Appends row batches to one staging Parquet file per normalized table."""

    def __init__(self, directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.directory = directory
        self.rows: Counter[str] = Counter()
        self._writers = {
            name: pq.ParquetWriter(directory / f"{name}.parquet", schema, compression="zstd")
            for name, schema in TABLES.items()
        }

    def write(self, tables: dict[str, pa.Table]) -> None:
        for name, table in tables.items():
            if table.num_rows:
                self._writers[name].write_table(table)
                self.rows[name] += table.num_rows

    def close(self) -> None:
        for writer in self._writers.values():
            writer.close()


ProgressCallback = Callable[[int], None]


@dataclass
class Ingest:
    config: BuildConfig
    sink: TableSink
    rejects: RejectsWriter
    on_bytes: ProgressCallback | None = None
    normalizer: Normalizer = field(init=False)
    result: IngestResult = field(default_factory=IngestResult)

    def __post_init__(self) -> None:
        self.normalizer = Normalizer(hook_value_limit=self.config.hook_value_limit)
        self._pending = 0

    def run(self) -> IngestResult:
        for kind, patterns in (
            ("synthetic", self.config.synthetic_questions),
            ("llm", self.config.llm_questions),
        ):
            for path in patterns:
                self._read(path, Validator(Question, "id"), self._question(kind), "questions")
        episodes = Validator(Episode, "episode_id")
        for path in self.config.episodes:
            self._read(path, episodes, self._episode, "episodes")
        self._flush()
        self.result.rows = self.sink.rows
        return self.result

    def _read(
        self,
        path: str,
        validator: Validator[BaseModel],
        accept: Callable[[Valid[BaseModel]], Reject | None],
        kind: str,
    ) -> None:
        source = InputFile(path, self.config.max_line_bytes)
        counts = self.result.counts.setdefault(path, FileCounts())
        self.result.kinds[path] = kind
        for line in source.lines(self.on_bytes):
            if is_blank(line):
                counts.blank += 1
                continue
            outcome = validator.validate(line)
            if isinstance(outcome, Valid):
                outcome = accept(outcome)
            if outcome is None:
                counts.valid += 1
            else:
                counts.rejected += 1
                self.rejects.add(outcome)
                if outcome.kind == "duplicate_episode_id":
                    self.normalizer.stats.checks[outcome.kind] += 1
            self._pending += 1
            if self._pending >= self.config.batch_lines:
                self._flush()
        self.result.inputs.append(source.stats)

    def _question(self, kind: str) -> Callable[[Valid[Question]], Reject | None]:
        def accept(valid: Valid[Question]) -> Reject | None:
            q, line = valid.record, valid.line
            self.normalizer.question(q, kind, line.path, line.number)
            return None

        return accept

    def _episode(self, valid: Valid[Episode]) -> Reject | None:
        mark = self.normalizer.mark()
        failed = self.normalizer.episode(valid)
        if not (self.config.strict and failed):
            return None
        self.normalizer.rollback(mark)
        line = valid.line
        errors = tuple(FieldError("$", f"integrity check failed: {name}") for name in failed)
        return Reject(line.path, line.number, CHECK_FAILED, errors, line.raw)

    def _flush(self) -> None:
        self.sink.write(self.normalizer.take_tables())
        self._pending = 0


def ingest_files(
    config: BuildConfig,
    staging: Path,
    rejects: RejectsWriter,
    on_bytes: ProgressCallback | None = None,
) -> tuple[IngestResult, Normalizer]:
    sink = TableSink(staging)
    try:
        job = Ingest(config, sink, rejects, on_bytes)
        return job.run(), job.normalizer
    finally:
        sink.close()


def validate_files(
    paths: Iterable[str], model: type[BaseModel], rejects: RejectsWriter, max_line_bytes: int
) -> dict[str, FileCounts]:
    """Validation only (``episodes validate``): no tables, same rejects."""
    key = "episode_id" if model is Episode else "id"
    validator = Validator(model, key)
    out: dict[str, FileCounts] = {}
    for path in paths:
        counts = out.setdefault(path, FileCounts())
        for line in InputFile(path, max_line_bytes).lines():
            if is_blank(line):
                counts.blank += 1
                continue
            outcome = validator.validate(line)
            if isinstance(outcome, Valid):
                counts.valid += 1
            else:
                counts.rejected += 1
                rejects.add(outcome)
    return out
