"""Write one config of the dataset folder: assign each row its split, then shard per split.

A row's split comes from its ``question_id`` (or, for child tables, its episode's) joined to
the split assignment, so a question's rows share one split in every config. Joins keep the
left order, and every input frame is deterministically ordered, so two builds of the same
inputs write the same bytes.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import polars as pl
import pyarrow as pa

from builder.parquet import ShardedWriter
from builder.splits import SPLITS


@dataclass(frozen=True)
class SplitKeys:
    """The split of every question id and of every episode id: small frames, joined to
    each piece of a config as it is written."""

    by_question: pl.DataFrame  # question_id, split
    by_episode: pl.DataFrame  # episode_id, split

    @classmethod
    def of(cls, splits: pl.DataFrame, episodes: pl.LazyFrame) -> SplitKeys:
        by_question = splits.select("question_id", "split")
        by_episode = (
            episodes.select("episode_id", "question_id")
            .collect()
            .join(by_question, on="question_id", how="left")
            .select("episode_id", "split")
        )
        return cls(by_question, by_episode)

    def attach(self, frame: pl.LazyFrame) -> pl.LazyFrame:
        """Add ``split``; child tables reach their question through ``episode_id``."""
        if "question_id" in frame.collect_schema().names():
            key, keys = "question_id", self.by_question
        else:
            key, keys = "episode_id", self.by_episode
        return frame.join(keys.lazy(), on=key, how="left", maintain_order="left")


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
