"""Export a range of question ids at a time, so memory follows the range, not the input.

Every config's rows are sorted by ``question_id`` first (objectives by their keys, tables
stably, input order within a question) and each bucket is a contiguous range of ids, so the
buckets' rows, written one after the other, are exactly the rows of one whole export. With
fixed-size row groups (``builder.parquet``) the files are the same bytes whatever the number
of buckets, which may therefore follow the input's size.

The staging tables are split into buckets once, in one streaming pass per table that also
redacts them, so each bucket reads only its own rows: the work stays linear in the input.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

EPISODES_PER_BUCKET = 500
PARTITION_BATCH_ROWS = 10_000
CHILD_TABLES = ("traces", "turns", "hooks", "corrections", "messages")

SCRATCH = pa.ipc.IpcWriteOptions(compression="lz4")

Bounds = tuple[str | None, str | None]
Redact = Callable[[str, pl.DataFrame], pl.DataFrame]


def bucket_bounds(episodes: int) -> list[Bounds]:
    """Ranges ``[lo, hi)`` of question ids (hex), split on their first two digits."""
    k = max(1, min(256, math.ceil(episodes / EPISODES_PER_BUCKET)))
    cuts: list[str | None] = [f"{round(i * 256 / k):02x}" for i in range(1, k)]
    return list(zip([None, *cuts], [*cuts, None], strict=True))


def bucket_index(bounds: list[Bounds]) -> pl.Expr:
    """The index of the bucket a ``question_id`` falls in."""
    cuts = [lo for lo, _ in bounds[1:] if lo is not None]
    index = pl.lit(0, pl.Int32)
    for cut in cuts:
        index = index + (pl.col("question_id") >= cut).cast(pl.Int32)
    return index


def batches(path: Path, rows: int) -> Iterator[pl.DataFrame]:
    """A staging table, ``rows`` rows at a time: memory follows the batch, not the file."""
    source = pq.ParquetFile(path)
    try:
        for batch in source.iter_batches(batch_size=rows):
            frame = pl.from_arrow(batch)
            assert isinstance(frame, pl.DataFrame)
            yield frame
    finally:
        source.close()


def partition(
    tables_dir: Path, bounds: list[Bounds], directory: Path, redact: Redact | None = None
) -> list[dict[str, pl.LazyFrame]]:
    """The tables of each bucket, as lazy scans of ``directory/{table}/{k}.arrow``, made in
    one streaming pass over each staging table (rows keep their order within a bucket), each
    batch redacted on the way (``redact``), so the staging tables are read once and never
    rewritten. Scratch files are Arrow IPC: a writer holds no buffers between batches, so the
    open writers (one per bucket) cost nothing however many buckets there are."""
    scan = pl.scan_parquet(tables_dir / "episodes.parquet")
    episode_bucket = scan.select("episode_id", _bucket=bucket_index(bounds)).collect()
    for name in ("questions", "episodes", *CHILD_TABLES):
        path = tables_dir / f"{name}.parquet"
        schema = pq.read_schema(path)
        writers: dict[int, pa.ipc.RecordBatchFileWriter] = {}
        try:
            for frame in batches(path, PARTITION_BATCH_ROWS):
                if redact is not None:
                    frame = redact(name, frame)
                if "question_id" in frame.columns:
                    keyed = frame.with_columns(_bucket=bucket_index(bounds))
                else:
                    keyed = frame.join(
                        episode_bucket, on="episode_id", how="left", maintain_order="left"
                    )
                for (k,), part in keyed.partition_by(
                    "_bucket", as_dict=True, include_key=False, maintain_order=True
                ).items():
                    if k not in writers:
                        (directory / name).mkdir(parents=True, exist_ok=True)
                        target = directory / name / f"{k}.arrow"
                        writers[k] = pa.ipc.new_file(target, schema, options=SCRATCH)
                    writers[k].write_table(part.to_arrow().cast(schema))
        finally:
            for writer in writers.values():
                writer.close()
    parts = []
    for k in range(len(bounds)):
        part = {}
        for name in ("questions", "episodes", *CHILD_TABLES):
            path = directory / name / f"{k}.arrow"
            empty = pl.LazyFrame(schema=pl.Schema(pq.read_schema(tables_dir / f"{name}.parquet")))
            part[name] = pl.scan_ipc(path) if path.exists() else empty
        parts.append(part)
    return parts


def load(part: Mapping[str, pl.LazyFrame]) -> dict[str, pl.LazyFrame]:
    """A bucket's tables, read into memory and sorted by question id (stable: input order
    within a question; child rows follow their episode's question). The buckets' rows, one
    after the other, are then the whole tables in that order, whatever the bucket count."""
    episodes = part["episodes"].collect().sort("question_id", maintain_order=True)
    questions = part["questions"].collect().sort("question_id", maintain_order=True)
    keys = episodes.select("episode_id", "question_id")
    loaded = {"questions": questions.lazy(), "episodes": episodes.lazy()}
    for name in CHILD_TABLES:
        child = part[name].collect()
        order = child.join(keys, on="episode_id", how="left", maintain_order="left")
        loaded[name] = order.sort("question_id", maintain_order=True).drop("question_id").lazy()
    return loaded
