"""``self_correction``: one row per correction in any trace (gold or consistency) of each
training-eligible episode.

``prompt`` is the system prompt, the question, then every turn before the fixing turn as
rendered by ``builder.derive.messages`` (code, then execution feedback), so it ends with the
error feedback of the last failed attempt; ``completion`` is the fixing assistant message.
``messages`` is the two together, weight 0 on the prompt's assistant turns (the failed
attempts and any earlier turns: context only), 1 on the fix, null on other roles.
"""

from __future__ import annotations

from collections.abc import Mapping

import polars as pl

from builder.derive.common import TRACE_ORDER, episode_traces
from builder.derive.messages import (
    MESSAGE,
    WEIGHTED_MESSAGE,
    gather,
    header,
    message,
    or_empty,
    rendered,
    turn_messages,
)
from builder.derive.options import DeriveOptions
from schemas.objectives import OBJECTIVES

NAME = "self_correction"
SCHEMA = OBJECTIVES[NAME]


def derive(tables: Mapping[str, pl.LazyFrame], options: DeriveOptions) -> pl.LazyFrame:
    traces = episode_traces(tables, options)
    fixes = tables["corrections"].join(traces, on="trace_id", how="semi")
    keys = ["trace_id", "turn_index"]
    turns, assistant, _ = rendered(tables, options.max_output_chars)
    failed = turns.select(
        "trace_id", corrects_turn="turn_index", failed_code="code", error_feedback="stderr"
    )
    fixed = turns.select(*keys, fixed_code="code", fix=assistant)
    earlier = (
        fixes.select("trace_id", fix_turn="turn_index")
        .join(
            turn_messages(tables, options.max_output_chars, fixes).drop("success"),
            on="trace_id",
            how="inner",
        )
        .filter(pl.col("turn_index") < pl.col("fix_turn"))
        .with_columns(weight=pl.when(pl.col("role") == "assistant").then(pl.lit(0, pl.Int64)))
    )
    prefixes = gather(
        earlier,
        ["trace_id", "fix_turn"],
        before=message(pl.col("role"), pl.col("content")),
        weighted=message(pl.col("role"), pl.col("content"), pl.col("weight")),
    ).rename({"fix_turn": "turn_index"})
    fix = message("assistant", pl.col("fix"))
    return (
        fixes.join(traces.drop("episode_id"), on="trace_id", how="inner")
        .join(failed, on=["trace_id", "corrects_turn"], how="left")
        .join(fixed, on=keys, how="left")
        .join(prefixes, on=keys, how="left")
        .sort(*TRACE_ORDER, "turn_index")
        .select(
            failed_code="failed_code",
            error_feedback="error_feedback",
            fixed_code="fixed_code",
            code_diff=pl.struct("removed_lines", "added_lines"),
            error_type="error_type",
            error_message="error_message",
            trace_role="trace_role",
            turn_index="turn_index",
            corrects_turn="corrects_turn",
            prompt=pl.concat_list(header(), or_empty("before", MESSAGE)),
            completion=pl.concat_list(fix),
            messages=pl.concat_list(
                header(weighted=True),
                or_empty("weighted", WEIGHTED_MESSAGE),
                message("assistant", pl.col("fix"), pl.lit(1, pl.Int64)),
            ),
            question_id="question_id",
            episode_id="episode_id",
            trace_id="trace_id",
            session_id=pl.lit(None, pl.Int64),
            difficulty="difficulty",
            source="source",
        )
    )
