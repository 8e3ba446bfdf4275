"""Write one config of the dataset folder: assign each row its split, then shard per split.

A row's split comes from its ``question_id`` (or, for child tables, its episode's) joined to
the split assignment, so a question's rows share one split in every config. Joins keep the
left order, and every input frame is deterministically ordered, so two builds of the same
inputs write the same bytes.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import polars as pl
import pyarrow as pa

from builder.parquet import ShardedWriter
from builder.splits import SPLITS


def with_split(frame: pl.LazyFrame, splits: pl.LazyFrame, episodes: pl.LazyFrame) -> pl.LazyFrame:
    """Add a ``split`` column; child tables reach their question through ``episode_id``."""
    assignment = splits.select("question_id", "split")
    if "question_id" not in frame.collect_schema().names():
        keys = episodes.select("episode_id", "question_id")
        frame = frame.join(keys, on="episode_id", how="left", maintain_order="left")
    return frame.join(assignment, on="question_id", how="left", maintain_order="left")


def write_config(
    out: Path,
    name: str,
    frames: Iterable[pl.LazyFrame],
    schema: pa.Schema,
    max_rows_per_file: int,
) -> dict[str, int]:
    """Write ``{out}/{name}/{split}-NNNNN-of-NNNNN.parquet``; returns rows per split.

    ``frames`` are consecutive pieces of the config (one at a time in memory); the files are
    the same whatever the pieces. An empty split gets no file: ``datasets`` cannot load a
    split without data, so the card declares only the splits that have rows.
    """
    writers: dict[str, ShardedWriter] = {}
    for frame in frames:
        collected = frame.collect()
        unassigned = collected.get_column("split").null_count()
        if unassigned:
            raise RuntimeError(f"{name}: {unassigned} rows have no split (missing question_id?)")
        for split in SPLITS:
            part = collected.filter(pl.col("split") == split)
            if part.height:
                if split not in writers:
                    writers[split] = ShardedWriter(out / name, split, schema, max_rows_per_file)
                writers[split].write(part.to_arrow())
    for writer in writers.values():
        writer.close()
    return {split: writers[split].rows if split in writers else 0 for split in SPLITS}
