"""Which episodes train: verified as captured, verified when recomputed, and no failed check.

Every other episode stays in the tables and is counted once, under the first reason that
applies: ``not_verified`` (captured flag false), ``verified_mismatch`` (claimed verified but
the recomputation fails), ``failed_checks`` (an integrity check failed, other than the
hook checks below: ``code_listing_mismatch`` among them, a trace whose ``code_cells`` and
``turns`` disagree, so which code it ran is unknown to every config),
``duplicate_turn_index`` (two turns of one trace share a ``turn_index``: the turns table
keys turns by it, so their order and the corrections pointing at them are ambiguous, and a
build would not be reproducible). ``prm`` trains on unverified episodes too, its label
encoding verification, but never on one with another failed check or ambiguous turns
(``sound_episodes``): a ``verified_mismatch`` is the one disagreement its recomputed label
settles.

The hook checks (``HOOK_CHECKS``: a ``depends_on`` naming no hook, a cycle, turn and trace
listings that disagree) are about the hooks alone, which only the configs that read them use:
``prm``, ``prm_stepwise`` and ``rl`` (its ``gold_hooks`` drive the dense reward) leave such an
episode out (``eligible_episodes(hooks=True)``), and the others train on it. It is counted
apart, as ``failed_hook_checks`` (``HOOK_ONLY``): not excluded from training as a whole.
"""

from __future__ import annotations

from collections.abc import Mapping

import polars as pl

from builder.derive.options import PLAN_ENGINE
from schemas.vocabulary import (
    DUPLICATE_TURN_INDEX,
    FAILED_CHECKS,
    FAILED_HOOK_CHECKS,
    HOOK_CYCLE,
    HOOK_LISTING_MISMATCH,
    HOOK_ONLY,
    HOOK_UNKNOWN_DEPENDENCY,
    NOT_VERIFIED,
    REASONS,
    VERIFIED_MISMATCH,
)

HOOK_CHECKS = (HOOK_UNKNOWN_DEPENDENCY, HOOK_CYCLE, HOOK_LISTING_MISMATCH)

_HOOK_CHECK = pl.element().is_in(list(HOOK_CHECKS))
_FAILED_CHECKS = pl.col("checks").list.eval(~_HOOK_CHECK).list.any().fill_null(False)
_FAILED_HOOK_CHECKS = pl.col("checks").list.eval(_HOOK_CHECK).list.any().fill_null(False)
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


def exclusion_reasons(tables: Mapping[str, pl.LazyFrame], hooks: bool = False) -> pl.LazyFrame:
    """``episode_id``, ``reason``: one row per episode, reason null when it trains (in the
    configs that read hooks, with ``hooks``)."""
    reason = (
        pl.when(~pl.col("verified").fill_null(False))
        .then(pl.lit(NOT_VERIFIED))
        .when(~pl.col("verified_recomputed").fill_null(False))
        .then(pl.lit(VERIFIED_MISMATCH))
        .when(_FAILED_CHECKS)
        .then(pl.lit(FAILED_CHECKS))
        .when(_DUPLICATE_TURNS)
        .then(pl.lit(DUPLICATE_TURN_INDEX))
        .when(pl.lit(hooks) & _FAILED_HOOK_CHECKS)
        .then(pl.lit(FAILED_HOOK_CHECKS))
        .otherwise(pl.lit(None, dtype=pl.String))
    )
    return _with_duplicate_turns(tables).select("episode_id", reason.alias("reason"))


def eligible_episodes(tables: Mapping[str, pl.LazyFrame], hooks: bool = False) -> pl.LazyFrame:
    """``episode_id`` of every episode that trains (lazy); with ``hooks``, in the configs
    that read hooks."""
    trains = exclusion_reasons(tables, hooks).filter(pl.col("reason").is_null())
    return trains.select("episode_id")


def sound_episodes(tables: Mapping[str, pl.LazyFrame]) -> pl.LazyFrame:
    """``episode_id`` of every episode with unambiguous turns and no failed check but
    ``verified_mismatch``, verified or not (lazy): what ``prm`` labels."""
    sound = ~_FAILED_OTHER_CHECKS & ~_DUPLICATE_TURNS
    return _with_duplicate_turns(tables).filter(sound).select("episode_id")


def exclusion_counts(tables: Mapping[str, pl.LazyFrame]) -> dict[str, int]:
    """Excluded episodes by reason, every reason present (zero when none), in fixed order;
    then ``failed_hook_checks``: episodes left out of the hook configs only."""
    counts = (
        exclusion_reasons(tables, hooks=True)
        .filter(pl.col("reason").is_not_null())
        .group_by("reason")
        .len()
        .collect(engine=PLAN_ENGINE)
    )
    found = dict(zip(counts["reason"].to_list(), counts["len"].to_list(), strict=True))
    return {reason: int(found.get(reason, 0)) for reason in (*REASONS, *HOOK_ONLY)}
