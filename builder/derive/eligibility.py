"""Which episodes train: verified as captured, verified when recomputed, and no failed check.

Every other episode stays in the tables and is counted once, under the first reason that
applies: ``not_verified`` (captured flag false), ``verified_mismatch`` (claimed verified but
the recomputation fails), ``failed_checks`` (any integrity check failed),
``duplicate_turn_index`` (two turns of one trace share a ``turn_index``: the turns table
keys turns by it, so their order and the corrections pointing at them are ambiguous, and a
build would not be reproducible). ``prm`` trains on unverified episodes too, its label
encoding verification, but never on one with another failed check or ambiguous turns
(``sound_episodes``): a ``verified_mismatch`` is the one disagreement its recomputed label
settles.
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


_FAILED_CHECKS = pl.col("checks").list.len().fill_null(0) > 0
_DUPLICATE_TURNS = pl.col("duplicate_turn_index").fill_null(False)
_FAILED_OTHER_CHECKS = (
    pl.col("checks").list.eval(pl.element() != VERIFIED_MISMATCH).list.any().fill_null(False)
)


def _with_duplicate_turns(tables: Mapping[str, pl.LazyFrame]) -> pl.LazyFrame:
    """The episodes, with ``duplicate_turn_index`` true where two turns of a trace share an
    index (null elsewhere)."""
    duplicates = (
        tables["turns"]
        .group_by("trace_id", "turn_index")
        .agg(pl.col("episode_id").first(), n=pl.len())
        .filter(pl.col("n") > 1)
        .select("episode_id", duplicate_turn_index=pl.lit(True))
        .unique()
    )
    return tables["episodes"].join(duplicates, on="episode_id", how="left")


def exclusion_reasons(tables: Mapping[str, pl.LazyFrame]) -> pl.LazyFrame:
    """``episode_id``, ``reason``: one row per episode, reason null when it trains."""
    reason = (
        pl.when(~pl.col("verified").fill_null(False))
        .then(pl.lit(NOT_VERIFIED))
        .when(~pl.col("verified_recomputed").fill_null(False))
        .then(pl.lit(VERIFIED_MISMATCH))
        .when(_FAILED_CHECKS)
        .then(pl.lit(FAILED_CHECKS))
        .when(_DUPLICATE_TURNS)
        .then(pl.lit(DUPLICATE_TURN_INDEX))
        .otherwise(pl.lit(None, dtype=pl.String))
    )
    return _with_duplicate_turns(tables).select("episode_id", reason.alias("reason"))


def eligible_episodes(tables: Mapping[str, pl.LazyFrame]) -> pl.LazyFrame:
    """``episode_id`` of every episode that trains (lazy)."""
    return exclusion_reasons(tables).filter(pl.col("reason").is_null()).select("episode_id")


def sound_episodes(tables: Mapping[str, pl.LazyFrame]) -> pl.LazyFrame:
    """``episode_id`` of every episode with unambiguous turns and no failed check but
    ``verified_mismatch``, verified or not (lazy): what ``prm`` labels."""
    sound = ~_FAILED_OTHER_CHECKS & ~_DUPLICATE_TURNS
    return _with_duplicate_turns(tables).filter(sound).select("episode_id")


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
