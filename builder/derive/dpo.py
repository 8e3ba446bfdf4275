"""``dpo``: preference pairs from the traces of each training-eligible episode.

A trace *succeeded* when its execution succeeded and its answer is one the ``rl`` reward
accepts (``common.episode_traces``: by hash, or by value within the build's answer
tolerance); it *failed* when its answer is not (no answer counts as different), whatever
its execution. Chosen: the gold trace (``gold_vs_failed_consistency``) or a successful
consistency trace (``consistency_vs_failed_consistency``); rejected: a failed consistency
trace. A trace that reached the expected answer is never rejected (its ``orm`` label is
true), even when its run failed after submitting: such a trace is in no pair. Pairs are
ranked gold pairs first, then by chosen and rejected trace index, and the first
``dpo_max_pairs_per_episode`` of each episode kept.
"""

from __future__ import annotations

from collections.abc import Mapping

import polars as pl

from builder.derive.common import episode_traces
from builder.derive.messages import header, trace_messages
from builder.derive.options import DeriveOptions
from schemas.objectives import OBJECTIVES

NAME = "dpo"
SCHEMA = OBJECTIVES[NAME]
GOLD_PAIR = "gold_vs_failed_consistency"
CONSISTENCY_PAIR = "consistency_vs_failed_consistency"


def derive(tables: Mapping[str, pl.LazyFrame], options: DeriveOptions) -> pl.LazyFrame:
    traces = episode_traces(tables, options)
    good = pl.col("execution_success").fill_null(False) & pl.col("correct")
    chosen = traces.filter(good)
    wrong = ~pl.col("correct").fill_null(False)
    rejected = traces.filter(pl.col("consistency") & wrong).select(
        "episode_id", rejected_trace_id="trace_id", rejected_index="trace_index"
    )
    rank = ["consistency", "trace_index", "rejected_index"]
    pairs = chosen.join(rejected, on="episode_id", how="inner").filter(
        pl.int_range(pl.len()).over("episode_id", order_by=rank) < options.dpo_max_pairs_per_episode
    )
    used = pl.concat([pairs.select("trace_id"), pairs.select(trace_id="rejected_trace_id")])
    rendered = trace_messages(tables, used, options.max_output_chars)
    chosen_messages = rendered.rename({"trace_id": "chosen_trace_id", "messages": "chosen"})
    rejected_messages = rendered.rename({"trace_id": "rejected_trace_id", "messages": "rejected"})
    return (
        pairs.rename({"trace_id": "chosen_trace_id"})
        .join(chosen_messages, on="chosen_trace_id", how="inner")
        .join(rejected_messages, on="rejected_trace_id", how="inner")
        .sort("question_id", "episode_id", *rank)
        .select(
            prompt=header(),
            chosen="chosen",
            rejected="rejected",
            chosen_trace_id="chosen_trace_id",
            rejected_trace_id="rejected_trace_id",
            pair_kind=pl.when("consistency")
            .then(pl.lit(CONSISTENCY_PAIR))
            .otherwise(pl.lit(GOLD_PAIR)),
            question_id="question_id",
            episode_id="episode_id",
            difficulty="difficulty",
            source="source",
        )
    )
