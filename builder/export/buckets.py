"""Export a range of question ids at a time, so memory follows the range, not the input.

Every config's rows are sorted by ``question_id`` first (objectives by their keys, tables
stably, input order within a question) and each bucket is a contiguous range of ids, so the
buckets' rows, written one after the other, are exactly the rows of one whole export. With
fixed-size row groups (``builder.fs.parquet``) the files are the same bytes whatever the number
of buckets, which therefore follows the input's size: about ``BUCKET_BYTES`` of staged rows
and at most ``EPISODES_PER_BUCKET`` episodes a bucket, at any scale (up to 65,536 buckets).

The staging tables are cut into buckets once, in one streaming pass per table, so each
bucket reads only its own rows: the work stays linear in the input. A bucket's rows are
redacted when it is read (``load``), on the thread that derives it.
Rows are gathered by bucket and written every ``SCRATCH_FILE_BYTES`` as one scratch file
(Arrow IPC, uncompressed) holding one record batch per bucket, so one file is open at a
time however many buckets there are, and a bucket is read back from a few large pieces.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from builder.engine import ThreadEngine, default_workers
from builder.fs.parquet import ARROW_VIEWS
from schemas.tables import TABLES, empty_table

# A bucket's memory follows its bytes; its derive's fixed cost (plans, collects, a piece of
# every config to cast and write: about 0.1 CPU-s) is paid per bucket. At 5,000 episodes of
# the bench profile (≈ 50 KB staged each), buckets of 250 episodes spent ≈ 1.3 CPU-s (7 %)
# more than buckets of 24 MiB (≈ 450 of them), and 32 MiB ≈ 0.6 CPU-s less than 24 MiB for
# ≈ 110 MiB more at the peak (48 MiB: 0.7 CPU-s less, 230 MiB more); see
# docs/performance-log.md.
BUCKET_BYTES = 32 << 20  # staged rows (uncompressed, as Parquet's metadata counts them)
EPISODES_PER_BUCKET = 2_000  # small episodes: rows, not bytes, make a derive's work
PARTITION_BATCH_ROWS = 10_000
CHILD_TABLES = ("traces", "turns", "hooks", "corrections", "messages")
BUCKETED = ("questions", "episodes", *CHILD_TABLES)
LOOKUP = "lookup_questions"  # question rows of earlier segments (``partition``)
LOOKUP_COLUMNS = ("question_id", "question_text", "normalized_text", "difficulty")
# ... and the split the earlier segment gave each (their texts as published are redacted)
LOOKUP_SCHEMA = pa.schema(
    [*(TABLES["questions"].field(name) for name in LOOKUP_COLUMNS), pa.field("split", pa.string())]
)
PREFIX_RANGE = 16**4  # buckets are ranges of the ids' first four hex digits
SCRATCH_FILE_BYTES = 128 << 20  # rows gathered (in memory) before a scratch file is written

# Uncompressed: a scratch file is written once and read once, memory-mapped, within the
# build. LZ4 spent Arrow's thread pool compressing every staged byte and decompressing it
# again (≈ 0.5 CPU-s and 0.4 s of a 5,000-episode build's 10.8 s); uncompressed, a bucket's
# batches are read in place. The price is disk: a segment's staged rows at full size
# (about 1 GB per 20,000 episodes of the bench profile) until its export ends.
SCRATCH = pa.ipc.IpcWriteOptions(compression=None)

Redact = Callable[[str, pl.DataFrame], pl.DataFrame]


def bucket_count(episodes: int, staged_bytes: int = 0) -> int:
    """Buckets for a segment of ``episodes`` whose staged rows take ``staged_bytes``."""
    wanted = max(math.ceil(episodes / EPISODES_PER_BUCKET), math.ceil(staged_bytes / BUCKET_BYTES))
    return max(1, min(PREFIX_RANGE, wanted))


def bucket_index(buckets: int) -> pl.Expr:
    """The bucket of a ``question_id``: ``prefix × buckets // 65536``, where ``prefix`` is
    its first four hex digits, so bucket ``j`` holds one contiguous range of ids. (Ids are
    hex by the schema; anything else would land in bucket 0.)"""
    prefix = pl.col("question_id").str.slice(0, 4).str.to_integer(base=16, strict=False)
    return (prefix.fill_null(0).cast(pl.Int64) * buckets // PREFIX_RANGE).cast(pl.Int32)


def open_streaming(path: Path) -> pq.ParquetFile:
    """A Parquet file to read a batch at a time. Without ``pre_buffer`` (on by default):
    pre-buffered column chunks stay cached until the reader closes, so reading a file
    batch by batch held its compressed bytes read so far (the bucket cut of 20,000
    episodes: a third of a GB more)."""
    return pq.ParquetFile(path, pre_buffer=False)


def reads(path: Path, rows: int) -> Iterator[Callable[[], pa.Table]]:
    """A staging table as reads of whole row groups, about ``rows`` rows each, to be made
    on the threads that cut them: Parquet decoding runs there, not on the thread handing
    the reads out. Memory follows a read, not the file."""
    meta = pq.read_metadata(path)
    run: list[int] = []
    count = 0
    for group in range(meta.num_row_groups):
        run.append(group)
        count += meta.row_group(group).num_rows
        if count >= rows:
            yield functools.partial(_read_groups, path, tuple(run))
            run, count = [], 0
    if run:
        yield functools.partial(_read_groups, path, tuple(run))


def _given(frame: pl.DataFrame) -> pa.Table:
    return frame.to_arrow(compat_level=ARROW_VIEWS)


def _read_groups(path: Path, groups: tuple[int, ...]) -> pa.Table:
    source = open_streaming(path)
    try:
        return source.read_row_groups(list(groups))
    finally:
        source.close()


@dataclass
class Bucket:
    """Where one bucket's rows are: for each table, (scratch file, record batch) pairs."""

    schemas: Mapping[str, pa.Schema]
    pieces: dict[str, list[tuple[Path, int]]] = field(default_factory=dict)
    held: dict[str, list[pa.Table]] = field(default_factory=dict)  # a lone bucket's rows

    def read(self, name: str) -> pl.DataFrame:
        """Table ``name``'s rows of this bucket, in input order."""
        schema = self.schemas[name]
        if name in self.held:
            held = [t.cast(schema) for t in self.held[name]]
            table = pa.concat_tables(held) if held else empty_table(schema)
        else:
            batches = []
            for path, index in self.pieces.get(name, []):
                with pa.memory_map(str(path)) as source:
                    batches.append(pa.ipc.open_file(source).get_batch(index))
            table = pa.Table.from_batches(batches, schema)
        frame = pl.from_arrow(table)
        assert isinstance(frame, pl.DataFrame)
        return frame


def partition(tables_dir: Path, buckets: int, directory: Path) -> list[Bucket]:
    """Cut the staging tables into ``buckets`` buckets, in one streaming pass over each
    (rows keep their order within a bucket): the staging tables are read once and never
    rewritten. Rows are redacted when a bucket is read (``load``), so the cut needs no
    redaction pre-pass, and it depends on nothing of earlier segments: it can run while
    the segment before is derived. ``add_lookup`` adds what does."""
    scan = pl.scan_parquet(tables_dir / "episodes.parquet")
    episode_bucket = scan.select("episode_id", _bucket=bucket_index(buckets)).collect()
    schemas = {name: pq.read_schema(tables_dir / f"{name}.parquet") for name in BUCKETED}
    schemas[LOOKUP] = LOOKUP_SCHEMA
    out = [Bucket(schemas) for _ in range(buckets)]
    for name in BUCKETED:
        loaders = reads(tables_dir / f"{name}.parquet", PARTITION_BATCH_ROWS)
        _cut_table(out, name, loaders, directory, episode_bucket)
    return out


def add_lookup(parts: list[Bucket], directory: Path, lookup: pl.DataFrame) -> None:
    """Cut ``lookup`` (question rows of earlier segments that this one's episodes refer
    to, as those segments published them: redacted) into ``parts`` the way ``partition``
    cut the staging tables (table ``LOOKUP``), so a bucket can join every question its
    episodes need."""
    if lookup.height:
        slices = lookup.iter_slices(PARTITION_BATCH_ROWS)
        loaders = (functools.partial(_given, frame) for frame in slices)
        _cut_table(parts, LOOKUP, loaders, directory)


def _cut_table(
    out: list[Bucket],
    name: str,
    loaders: Iterable[Callable[[], pa.Table]],
    directory: Path,
    episode_bucket: pl.DataFrame | None = None,
) -> None:
    """Table ``name``'s batches (each read by one of ``loaders``) cut into the buckets of
    ``out``, on a few threads; ``episode_bucket`` places rows keyed by episode only."""
    schema, buckets = out[0].schemas[name], len(out)
    engine = ThreadEngine(max(2, default_workers()), name="partition")
    scratch = None
    try:
        cut = functools.partial(_cut, schema, buckets, episode_bucket)
        jobs = ((load,) for load in loaders)
        if buckets == 1:  # a small input: its one bucket is the staging tables, as read
            out[0].held[name] = [t for ((_, t),) in engine.map(cut, jobs)]
            return
        (directory / name).mkdir(parents=True, exist_ok=True)
        scratch = _Scratch(directory / name, name, schema, out)
        for pieces in engine.map(cut, jobs):
            for k, table in pieces:
                scratch.add(k, table)
        scratch.flush()
    finally:
        engine.close()
        if scratch is not None:
            scratch.close()


def _cut(
    schema: pa.Schema,
    buckets: int,
    episode_bucket: pl.DataFrame | None,
    load: Callable[[], pa.Table],
) -> list[tuple[int, pa.Table]]:
    """One batch of a table (``load`` reads it) as (bucket, rows) pieces in bucket order
    (rows in input order within each): batches are read and cut on a few threads at once
    (Parquet, Polars and Arrow release the GIL) and their pieces gathered in batch order."""
    table = load().cast(schema)
    if buckets == 1:
        return [(0, table)]
    # Only the key goes through Polars: the rows stay in Arrow, so the cut copies them once
    # (the gather into bucket order) rather than also into Polars' string views and back.
    if "question_id" in table.column_names:
        keys = pl.DataFrame([pl.Series("question_id", table.column("question_id"))])
        keyed = keys.select(_bucket=bucket_index(buckets))
    else:
        assert episode_bucket is not None, "a table keyed by episode needs the episodes' buckets"
        keys = pl.DataFrame([pl.Series("episode_id", table.column("episode_id"))])
        keyed = keys.join(episode_bucket, on="episode_id", how="left", maintain_order="left")
    # One stable sort of the bucket numbers and one gather per batch, then a zero-copy
    # slice per bucket: the cost per bucket stays a slice however many buckets there are.
    ordered = keyed.select("_bucket").with_row_index("_row").sort("_bucket", maintain_order=True)
    sizes = ordered.group_by("_bucket", maintain_order=True).len()
    order = ordered.get_column("_row").to_arrow()
    gathered = table if _in_order(ordered) else table.take(order)
    pieces, offset = [], 0
    for k, n in sizes.iter_rows():
        pieces.append((k, gathered.slice(offset, n)))
        offset += n
    return pieces


def _in_order(ordered: pl.DataFrame) -> bool:
    """Whether the sort left every row where it was (a batch of one bucket, or of ids in
    order): then no gather is needed."""
    return bool(ordered.get_column("_row").is_sorted())


class _Scratch:
    """Rows of one table gathered by bucket, flushed every ``SCRATCH_FILE_BYTES`` into one
    file with one record batch per bucket: few files, so a bucket is read from a few large
    pieces rather than one small piece per staging batch. A file is written on a thread of
    its own while the next one's rows are cut (its copy into one batch per bucket and its
    write took a third of the cut's time, with the cutting threads idle); at most one is
    written at a time, in order, so memory holds at most two files' rows."""

    def __init__(self, directory: Path, name: str, schema: pa.Schema, out: list[Bucket]):
        self.directory, self.name, self.schema, self.out = directory, name, schema, out
        self.parts: dict[int, list[pa.Table]] = {}
        self.bytes = 0
        self.files = 0
        self._writer = ThreadPoolExecutor(1, thread_name_prefix="scratch-write")
        self._writing: Future[None] | None = None

    def add(self, bucket: int, table: pa.Table) -> None:
        self.parts.setdefault(bucket, []).append(table)
        self.bytes += table.nbytes
        if self.bytes >= SCRATCH_FILE_BYTES:
            self._hand_over()

    def flush(self) -> None:
        """Write what is gathered and wait until every file is written (raising a failed
        write's error)."""
        self._hand_over()
        self._wait()

    def close(self) -> None:
        self._writer.shutdown(wait=True, cancel_futures=True)

    def _hand_over(self) -> None:
        if not self.parts:
            return
        self._wait()  # one file at a time: the files, and a bucket's pieces, stay in order
        parts, target = self.parts, self.directory / f"{self.files:06d}.arrow"
        self.parts, self.bytes, self.files = {}, 0, self.files + 1
        self._writing = self._writer.submit(self._write, target, parts)

    def _wait(self) -> None:
        if self._writing is not None:
            writing, self._writing = self._writing, None
            writing.result()

    def _write(self, target: Path, parts: dict[int, list[pa.Table]]) -> None:
        with pa.ipc.new_file(target, self.schema, options=SCRATCH) as writer:
            for index, k in enumerate(sorted(parts)):
                table = pa.concat_tables(parts[k]).combine_chunks()
                (batch,) = table.to_batches()  # one chunk: a part has rows
                writer.write_batch(batch)
                self.out[k].pieces.setdefault(self.name, []).append((target, index))


def load(bucket: Bucket, redact: Redact | None = None) -> dict[str, pl.LazyFrame]:
    """A bucket's tables, read into memory, redacted (``redact``: a row's redaction depends
    on that row alone, and each row is read once) and sorted by question id (stable: input
    order within a question; child rows follow their episode's question). The buckets'
    rows, one after the other, are then the whole tables in that order, whatever the bucket
    count. ``LOOKUP`` holds the earlier segments' questions the bucket's episodes refer to
    (published rows, with their split; redacted again with what is known now)."""

    def read(name: str) -> pl.DataFrame:
        frame = bucket.read(name)
        return frame if redact is None else redact(name, frame)

    episodes = read("episodes").sort("question_id", maintain_order=True)
    captured = bucket.read("questions").sort("question_id", maintain_order=True)
    questions = captured if redact is None else redact("questions", captured)
    keys = episodes.select("episode_id", "question_id")
    loaded = {"questions": questions.lazy(), "episodes": episodes.lazy()}
    # Published by an earlier segment, redacted with what was known then: a secret value
    # assigned since is redacted in this segment's rows that show these texts as well.
    looked_up = bucket.read(LOOKUP).sort("question_id", maintain_order=True)
    loaded[LOOKUP] = (looked_up if redact is None else redact("questions", looked_up)).lazy()
    for name in CHILD_TABLES:
        child = read(name)
        order = child.join(keys, on="episode_id", how="left", maintain_order="left")
        loaded[name] = order.sort("question_id", maintain_order=True).drop("question_id").lazy()
    return loaded
