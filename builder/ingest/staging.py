"""The staging tables: the ingest's output, one Parquet file per normalized table per segment.

The staging tables are cut by input: segment ``00000`` (``BANK_SEGMENT``) holds the question
banks, segment ``k`` the ``k``-th run of episode files (inputs sorted; ``plan_segments``),
each in ``{staging}/{segment}/{table}.parquet``. The export keeps the cut (every config's
files are per segment), so a segment's output depends only on its own files and what came
before it: an appended file leaves every earlier closed segment's files as they were
(``builder.cache.segments``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from builder.config import BuildConfig
from builder.fs import storage
from schemas.tables import TABLES, empty_table


class TableSink:
    """Appends row batches to one staging Parquet file per normalized table.

    Batches are written on a second thread, in order, while the next batch is normalized
    (Parquet encoding releases the GIL); at most one batch waits, so memory stays bounded.
    A segment's files are closed and the next one's opened on that thread too, so the
    ingest reads the next run of files meanwhile: with many small runs, waiting for each
    run's last write took ≈ 0.03 s a segment."""

    def __init__(self, directory: Path, compression: str = "none") -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.directory, self.compression = directory, compression
        self.rows: Counter[str] = Counter()
        self._writers: dict[str, pq.ParquetWriter] = {}
        self._thread = ThreadPoolExecutor(1, thread_name_prefix="staging-write")
        self._pending: list[Future[None]] = []

    def segment(self, name: str) -> None:
        """Rows written from now on go to segment ``name`` (``{directory}/{name}/``)."""
        self._pending.append(self._thread.submit(self._open, self.directory / name))

    def _open(self, folder: Path) -> None:
        self._close_writers()
        folder.mkdir(parents=True, exist_ok=True)
        compression = self.compression
        self._writers = {
            table: pq.ParquetWriter(folder / f"{table}.parquet", schema, compression=compression)
            for table, schema in TABLES.items()
        }

    def _close_writers(self) -> None:
        for writer in self._writers.values():
            writer.close()
        self._writers = {}

    def write(self, tables: dict[str, pa.Table]) -> None:
        self._wait()
        for name, table in tables.items():
            self.rows[name] += table.num_rows
        self._pending.append(self._thread.submit(self._write, tables))

    def _write(self, tables: dict[str, pa.Table]) -> None:
        for name, table in tables.items():
            if table.num_rows:
                self._writers[name].write_table(table)

    def _wait(self) -> None:
        pending, self._pending = self._pending, []
        for job in pending:
            job.result()  # a failed write raises here, in the ingest's thread

    def close(self) -> None:
        try:
            self._wait()
        finally:
            self._thread.shutdown()
            self._close_writers()


BANK_SEGMENT = "00000"


def segment_name(index: int) -> str:
    """The segment of the ``index``-th episode file (from 1; ``BANK_SEGMENT`` is 0)."""
    return f"{index:05d}"


def segment_names(config: BuildConfig) -> list[str]:
    """Every segment of a build but the sessions', in order."""
    count = len(episode_segments(config))
    return [BANK_SEGMENT, *(segment_name(i) for i in range(1, count + 1))]


# A segment has a fixed cost (its derive plans, a file per config and split: ≈ 0.2 s), so
# small files are read and exported together; a segment closes once it holds this many stored
# bytes. Fifty 5.8 MB files: 25 segments at 8 MiB (1.5 × the one-file build), 17 at 16 MiB
# (1.3 ×), 9 at 32 MiB (1.15 ×), but a file appended re-exports the open run, at most this
# size: at 32 MiB that rebuild took up to 0.11 of a full build, at 16 MiB 0.09.
MIN_SEGMENT_BYTES = 16 << 20
SEGMENTS_PER_INPUT = 64


def segment_threshold(total_bytes: int) -> int:
    """The automatic ``segment_bytes``: the power of two at or above 1/64 of the input, and at
    least 16 MiB. A segment stays a small share of the input, so a file appended to an open
    segment rebuilds little, and the threshold (with every segment) only moves when the
    input doubles."""
    target = max(MIN_SEGMENT_BYTES, total_bytes // SEGMENTS_PER_INPUT)
    return 1 << (target - 1).bit_length()


def plan_segments(paths: Sequence[str], segment_bytes: int = 0) -> tuple[tuple[str, ...], ...]:
    """The episode files (``paths``, in order) cut into runs: a run closes at the file that
    brings it to ``segment_bytes`` stored bytes (0: ``segment_threshold``), so a file that
    large is a segment of its own, and appending a file changes the last, open run only."""
    sizes = [_stored_bytes(p) for p in paths]
    threshold = segment_bytes or segment_threshold(sum(sizes))
    runs: list[tuple[str, ...]] = []
    run: list[str] = []
    size = 0
    for path, n in zip(paths, sizes, strict=True):
        run.append(path)
        size += n
        if size >= threshold:
            runs.append(tuple(run))
            run, size = [], 0
    if run:
        runs.append(tuple(run))
    return tuple(runs)


def episode_segments(config: BuildConfig) -> tuple[tuple[str, ...], ...]:
    """The episode files of each segment: as the build fixed them (``config.segments``), or
    planned now for an ingest run on its own."""
    return config.segments or plan_segments(config.episodes, config.segment_bytes)


def _stored_bytes(path: str) -> int:
    try:
        return storage.stat(path).st_size
    except OSError:
        return 0  # the ingest reports the missing file


def bank_paths(config: BuildConfig) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """The question banks by source, in the order they are read."""
    return (("synthetic", config.synthetic_questions), ("llm", config.llm_questions))


def read_staged(staging: Path, name: str) -> pa.Table:
    """Staging table ``name`` across every segment, in segment order."""
    files = sorted(staging.glob(f"*/{name}.parquet"))
    if not files:
        return empty_table(TABLES[name])
    return pa.concat_tables([pq.read_table(f) for f in files])
