"""``orm``: outcome-reward rows, one per trace (gold and consistency) of each
training-eligible episode. This is also TRL's unpaired-preference (KTO) layout.

``completion`` is the whole trace as messages (each turn's code, then its execution feedback;
flat traces: code cells only; empty when the trace has no turns), up to its last assistant
message: the feedback to that one is the environment's, not the model's, to write.
``label`` is true when the trace's answer is one the ``rl`` reward accepts: its hash is an
accepted one or, built with an answer tolerance, it matches the expected answer by value (a
trace that never submitted is false).
"""

from __future__ import annotations

from collections.abc import Mapping

import polars as pl

from builder.derive.common import TRACE_ORDER, episode_traces
from builder.derive.messages import header, trace_messages
from builder.derive.options import DeriveOptions
from schemas.objectives import OBJECTIVES

NAME = "orm"
SCHEMA = OBJECTIVES[NAME]


def derive(tables: Mapping[str, pl.LazyFrame], options: DeriveOptions) -> pl.LazyFrame:
    traces = episode_traces(tables, options)
    return (
        traces.join(
            trace_messages(tables, traces, options.max_output_chars), on="trace_id", how="inner"
        )
        .sort(*TRACE_ORDER)
        .select(
            prompt=header(),
            completion="messages",
            label="correct",
            execution_success="execution_success",
            trace_role="trace_role",
            question_id="question_id",
            episode_id="episode_id",
            trace_id="trace_id",
            difficulty="difficulty",
            source="source",
        )
    )
