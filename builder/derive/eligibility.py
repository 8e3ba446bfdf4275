"""Which episodes train: verified as captured, verified when recomputed, and no failed check.

Every other episode stays in the tables and is counted once, under the first reason that
applies: ``not_verified`` (captured flag false), ``verified_mismatch`` (claimed verified but
the recomputation fails), ``failed_checks`` (any integrity check failed),
``duplicate_turn_index`` (two turns of one trace share a ``turn_index``: the turns table
keys turns by it, so their order and the corrections pointing at them are ambiguous, and a
build would not be reproducible). ``prm`` is exempt: its label encodes verification.
"""

from __future__ import annotations

from collections.abc import Mapping

import polars as pl

from builder.derive.options import PLAN_ENGINE

NOT_VERIFIED = "not_verified"
VERIFIED_MISMATCH = "verified_mismatch"
FAILED_CHECKS = "failed_checks"
DUPLICATE_TURN_INDEX = "duplicate_turn_index"
REASONS = (NOT_VERIFIED, VERIFIED_MISMATCH, FAILED_CHECKS, DUPLICATE_TURN_INDEX)


def exclusion_reasons(tables: Mapping[str, pl.LazyFrame]) -> pl.LazyFrame:
    """``episode_id``, ``reason``: one row per episode, reason null when it trains."""
    reason = (
        pl.when(~pl.col("verified").fill_null(False))
        .then(pl.lit(NOT_VERIFIED))
        .when(~pl.col("verified_recomputed").fill_null(False))
        .then(pl.lit(VERIFIED_MISMATCH))
        .when(pl.col("checks").list.len().fill_null(0) > 0)
        .then(pl.lit(FAILED_CHECKS))
        .when(pl.col("duplicate_turn_index").fill_null(False))
        .then(pl.lit(DUPLICATE_TURN_INDEX))
        .otherwise(pl.lit(None, dtype=pl.String))
    )
    duplicates = (
        tables["turns"]
        .group_by("trace_id", "turn_index")
        .agg(pl.col("episode_id").first(), n=pl.len())
        .filter(pl.col("n") > 1)
        .select("episode_id", duplicate_turn_index=pl.lit(True))
        .unique()
    )
    return (
        tables["episodes"]
        .join(duplicates, on="episode_id", how="left")
        .select("episode_id", reason.alias("reason"))
    )


def eligible_episodes(tables: Mapping[str, pl.LazyFrame]) -> pl.LazyFrame:
    """``episode_id`` of every episode that trains (lazy)."""
    return exclusion_reasons(tables).filter(pl.col("reason").is_null()).select("episode_id")


def exclusion_counts(tables: Mapping[str, pl.LazyFrame]) -> dict[str, int]:
    """Excluded episodes by reason, every reason present (zero when none), in fixed order."""
    counts = (
        exclusion_reasons(tables)
        .filter(pl.col("reason").is_not_null())
        .group_by("reason")
        .len()
        .collect(engine=PLAN_ENGINE)
    )
    found = dict(zip(counts["reason"].to_list(), counts["len"].to_list(), strict=True))
    return {reason: int(found.get(reason, 0)) for reason in REASONS}
