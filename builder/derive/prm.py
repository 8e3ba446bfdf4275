"""``prm``: the seed's process-reward samples, one row per hook of a gold trace.

Episodes take part verified or not: ``label`` is 1.0 when the episode is verified as captured
and recomputed from the traces, else 0.0 (the seed's ``1.0 if verified else 0.0``, verified as
every other config reads it: a flag the traces do not bear out, or a capture that did not
claim it, is no verification). An episode with any other failed integrity
check (a hook DAG that is none, a hash that is not its value's, …) or turns that share an
index takes no part: its steps are not what the capture promised.
"""

from __future__ import annotations

from collections.abc import Mapping

import polars as pl

from builder.derive.common import episode_context
from builder.derive.options import DeriveOptions
from schemas.objectives import OBJECTIVES

NAME = "prm"
SCHEMA = OBJECTIVES[NAME]


def derive(tables: Mapping[str, pl.LazyFrame], options: DeriveOptions) -> pl.LazyFrame:
    context = episode_context(tables, options, verified_only=False)
    gold = tables["traces"].filter(pl.col("role") == "gold").select("trace_id")
    return (
        tables["hooks"]
        .join(gold, on="trace_id", how="semi")
        .join(context, on="episode_id", how="inner")
        .sort("question_id", "episode_id", "hook_index")
        .select(
            step="code_line",
            value="value",
            value_hash="value_hash",
            label=pl.col("verified_holds").cast(pl.Float64),
            hook_index="hook_index",
            turn_index="turn_index",
            question_id="question_id",
            episode_id="episode_id",
            trace_id="trace_id",
            difficulty="difficulty",
            source="source",
        )
    )
