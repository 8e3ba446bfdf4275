"""Derive the objectives a range of question ids at a time, so memory follows the range.

Every objective's rows are sorted by ``question_id`` first and each bucket is a contiguous
range of ids, so the buckets' rows, written one after the other, are exactly the rows of one
whole derivation. With fixed-size row groups (``builder.parquet``) the files are the same
bytes whatever the number of buckets, which may therefore follow the input's size.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping

import polars as pl

EPISODES_PER_BUCKET = 500
CHILD_TABLES = ("traces", "turns", "hooks", "corrections", "messages")

Bounds = tuple[str | None, str | None]


def bucket_bounds(episodes: int) -> list[Bounds]:
    """Ranges ``[lo, hi)`` of question ids (hex), split on their first two digits."""
    k = max(1, min(256, math.ceil(episodes / EPISODES_PER_BUCKET)))
    cuts: list[str | None] = [f"{round(i * 256 / k):02x}" for i in range(1, k)]
    return list(zip([None, *cuts], [*cuts, None], strict=True))


def _in_range(lo: str | None, hi: str | None) -> pl.Expr:
    q = pl.col("question_id")
    condition = pl.lit(True)
    if lo is not None:
        condition = condition & (q >= lo)
    if hi is not None:
        condition = condition & (q < hi)
    return condition


def restrict(tables: Mapping[str, pl.LazyFrame], bounds: Bounds) -> dict[str, pl.LazyFrame]:
    """The tables of the episodes (and questions) whose question id is in ``bounds``."""
    if bounds == (None, None):
        return dict(tables)
    keep = _in_range(*bounds)
    out = dict(tables)
    out["questions"] = tables["questions"].filter(keep)
    out["episodes"] = tables["episodes"].filter(keep)
    ids = out["episodes"].select("episode_id")
    for name in CHILD_TABLES:
        out[name] = tables[name].join(ids, on="episode_id", how="semi")
    return out


def bucketed(
    tables: Mapping[str, pl.LazyFrame], bounds: list[Bounds]
) -> Iterator[dict[str, pl.LazyFrame]]:
    for b in bounds:
        yield restrict(tables, b)
