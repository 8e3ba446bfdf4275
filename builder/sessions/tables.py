"""The ``sessions`` and ``actions`` output tables (``schemas.sessions``) from validated rows.

Both carry ``question_id``, the split key, so the exporter splits them with the same
mechanism and salt as questions; actions carry it denormalized so no join is needed. The
sessions table adds what a reader of the dataset wants without replaying: action counts by
source, the state after the last action, and whether actions were rejected.
"""

from __future__ import annotations

import polars as pl
import pyarrow as pa

from builder.fs.parquet import conform
from builder.sessions.validate import Validated
from schemas.sessions import ACTION_SOURCES, ACTIONS, SESSIONS
from schemas.vocabulary import REJECTED_ACTIONS


def session_tables(v: Validated) -> dict[str, pa.Table]:
    """``{"sessions": ..., "actions": ...}`` as Arrow tables of the declared schemas."""
    counts = source_counts(v.actions)
    count_names = [c for c in counts.columns if c != "session_id"]
    initial = {
        "final_instruction": "initial_instruction",
        "final_code": "initial_code",
        "final_exec_output": "initial_exec_output",
    }
    sessions = (
        v.sessions.join(counts, on="session_id", how="left", maintain_order="left")
        .join(final_state(v.actions), on="session_id", how="left", maintain_order="left")
        .with_columns(
            pl.col(count_names).fill_null(0),
            *[pl.coalesce(final, start).alias(final) for final, start in initial.items()],
            pl.lit(v.source).alias("source_url"),
            pl.when(pl.col("incomplete"))
            .then(pl.lit([REJECTED_ACTIONS]))
            .otherwise(pl.lit([], pl.List(pl.String)))
            .alias("checks"),
        )
    )
    return {
        "sessions": conform(sessions.to_arrow(), SESSIONS),
        "actions": conform(v.actions.to_arrow(), ACTIONS),
    }


def source_counts(actions: pl.DataFrame) -> pl.DataFrame:
    """session_id -> n_actions and n_<source>_actions (int32), over the clean actions."""
    return actions.group_by("session_id").agg(
        pl.len().cast(pl.Int32).alias("n_actions"),
        *[
            (pl.col("source") == s).sum().cast(pl.Int32).alias(f"n_{s}_actions")
            for s in ACTION_SOURCES
        ],
    )


def final_state(actions: pl.DataFrame) -> pl.DataFrame:
    """session_id -> the last set_instruction/set_code/set_exec_output (null: never set)."""
    last = {
        "set_instruction": "final_instruction",
        "set_code": "final_code",
        "set_exec_output": "final_exec_output",
    }
    text = pl.col("action").fill_null("")
    return actions.group_by("session_id").agg(
        text.filter(pl.col("action_type") == kind).last().alias(name) for kind, name in last.items()
    )
