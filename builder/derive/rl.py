"""``rl``: prompt-only rows for online RL, one per training-eligible episode.

``prompt`` is [system, user question]; reward functions receive as keyword columns
``expected_final_answer_hash``, ``expected_final_answer`` (canonical JSON; the gold trace's
answer where the episode has no ``rl_verification_data``), ``accepted_answer_hashes`` (the
expected hash and every other hash the question's ground truth accepts), ``gold_hooks`` (the
gold trace's hooks in order, empty when it has none), ``hash_precision`` (the build's
hash scheme: null exact, else the rounding), ``answer_tolerance`` (the build's: a reward
may also accept an answer that matches the expected one by value within it, as the capture
code's does; null: by hash only) and ``csv_source`` (the data file the question is about, as
captured: what the completion's code runs against).
"""

from __future__ import annotations

from collections.abc import Mapping

import polars as pl

from builder.derive.common import episode_context
from builder.derive.messages import gather, header, or_empty
from builder.derive.options import DeriveOptions
from schemas.objectives import OBJECTIVES

NAME = "rl"
SCHEMA = OBJECTIVES[NAME]
GOLD_HOOK = pl.Struct(
    {"name": pl.String, "value_hash": pl.String, "depends_on": pl.List(pl.String)}
)


def derive(tables: Mapping[str, pl.LazyFrame], options: DeriveOptions) -> pl.LazyFrame:
    context = episode_context(tables, options, hooks=True)  # gold_hooks drive a reward
    gold = tables["traces"].filter(pl.col("role") == "gold").select("trace_id")
    hooks = (
        tables["hooks"]
        .join(gold, on="trace_id", how="semi")
        .join(context, on="episode_id", how="semi")
        .with_columns(pos=pl.col("hook_index"))
    )
    lists = gather(hooks, "episode_id", gold_hooks=pl.struct("name", "value_hash", "depends_on"))
    sources = tables["episodes"].select("episode_id", "csv_source")
    return (
        context.join(lists, on="episode_id", how="left")
        .join(sources, on="episode_id", how="left")
        .sort("question_id", "episode_id")
        .select(
            prompt=header(),
            question="question",
            expected_final_answer_hash="expected_hash",
            expected_final_answer="expected_answer",
            accepted_answer_hashes="accepted_hashes",
            gold_hooks=or_empty("gold_hooks", GOLD_HOOK),
            hash_precision=pl.lit(options.hash_precision, dtype=pl.Int32),
            answer_tolerance=pl.lit(options.answer_tolerance, dtype=pl.Float64),
            csv_source="csv_source",
            question_id="question_id",
            episode_id="episode_id",
            difficulty="difficulty",
            source="source",
        )
    )
