"""Derive the objectives a range of question ids at a time, so memory follows the range.

Every objective's rows are sorted by ``question_id`` first and each bucket is a contiguous
range of ids, so the buckets' rows, written one after the other, are exactly the rows of one
whole derivation. With fixed-size row groups (``builder.parquet``) the files are the same
bytes whatever the number of buckets, which may therefore follow the input's size.

The staging tables are split into buckets once, in one streaming pass per table, so each
bucket's derivations read only their own rows: the work stays linear in the input.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path

import polars as pl

EPISODES_PER_BUCKET = 500
CHILD_TABLES = ("traces", "turns", "hooks", "corrections", "messages")

Bounds = tuple[str | None, str | None]


def bucket_bounds(episodes: int) -> list[Bounds]:
    """Ranges ``[lo, hi)`` of question ids (hex), split on their first two digits."""
    k = max(1, min(256, math.ceil(episodes / EPISODES_PER_BUCKET)))
    cuts: list[str | None] = [f"{round(i * 256 / k):02x}" for i in range(1, k)]
    return list(zip([None, *cuts], [*cuts, None], strict=True))


def _bucket_of(bounds: list[Bounds]) -> pl.Expr:
    """The index of the bucket a ``question_id`` falls in."""
    cuts = [lo for lo, _ in bounds[1:] if lo is not None]
    index = pl.lit(0, pl.Int32)
    for cut in cuts:
        index = index + (pl.col("question_id") >= cut).cast(pl.Int32)
    return index


def partition(
    tables: Mapping[str, pl.LazyFrame], bounds: list[Bounds], directory: Path
) -> list[dict[str, pl.LazyFrame]]:
    """The tables of each bucket, as lazy scans of ``directory/{table}/_bucket={k}``."""
    if len(bounds) == 1:
        return [dict(tables)]
    keys = tables["episodes"].select("episode_id", "question_id")
    for name in ("questions", "episodes", *CHILD_TABLES):
        frame = tables[name]
        has_key = "question_id" in frame.collect_schema().names()
        if not has_key:
            frame = frame.join(keys, on="episode_id", how="left", maintain_order="left")
        frame = frame.with_columns(_bucket=_bucket_of(bounds))
        if not has_key:
            frame = frame.drop("question_id")
        target = pl.PartitionBy(directory / name, key="_bucket", include_key=False)
        frame.sink_parquet(target, mkdir=True, compression="lz4")
    parts = []
    for k in range(len(bounds)):
        part = dict(tables)
        for name in ("questions", "episodes", *CHILD_TABLES):
            folder = directory / name / f"_bucket={k}"
            files = sorted(str(p) for p in folder.glob("*.parquet"))
            if files:
                part[name] = pl.scan_parquet(files, hive_partitioning=False)
            else:
                part[name] = pl.LazyFrame(schema=tables[name].collect_schema())
        parts.append(part)
    return parts
