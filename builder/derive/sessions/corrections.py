"""Self-correction rows from sessions: failed code, the error it produced, and the fix.

A pair is a ``set_code`` with ``correct = false`` whose output (of its last run:
``builder.derive.sessions.outputs``) is an error — a Python traceback, or a last line like
``KeyError: 'region'`` — and the *next* ``set_code`` of the session, when that one trains in
``sft`` (weight 1: not marked incorrect, or unmarked when ``null_correct_trains``, and not
blank) and its output is not an error (with no output at all, it must be marked
``correct = true``). Code replaced before it ran is not the next: it is context before the
fix, with weight 0 (``replay``). Only trainable sessions (verified, complete: ``replay``)
count.

The prompt is every message of the replayed conversation before the fix: up to and including
the error feedback, plus any user turns between the error and the fix (a hint typed by the
human belongs to the fix's context). The completion is the fix. In ``messages`` the fix has
weight 1 and every earlier assistant turn (the failed one included) weight 0; other roles
null. Adjacent user messages are one message (an error, then a hint typed before the fix),
so user and assistant alternate. ``code_diff`` lists the distinct lines of the failed code
absent from the fix (``removed_lines``) and of the fix absent from the failed code
(``added_lines``), in order.

All of it is window expressions over the replayed message rows (code "epochs" by cumulative
count of ``set_code``, the next code by ``shift(-1)`` per session), no Python per row.
"""

from __future__ import annotations

import polars as pl

from builder.derive.failures import is_error
from builder.derive.sessions.outputs import error_parts
from builder.derive.sessions.replay import (
    DEFAULT_OPTIONS,
    SOURCE,
    ReplayOptions,
    adjacent_merged,
    conversation_rows,
    polars_schema,
    trainable_sessions,
)
from builder.sessions.validate import Validated
from schemas.objectives import OBJECTIVES

# Exactly the columns of the self_correction config, as schemas.objectives declares them.
SELF_CORRECTION_COLUMNS = polars_schema(OBJECTIVES["self_correction"])


def _code_rows(rows: pl.DataFrame) -> pl.DataFrame:
    """One row per set_code that ran (or is the session's last) with its output and the
    next such set_code (and its output): code replaced before it ran is context between a
    failure and its fix, not the fix."""
    following = ["action_id", "action", "correct", "weight", "output", "position"]
    last = pl.int_range(pl.len()).over("session_id") == pl.len().over("session_id") - 1
    return (
        rows.filter(pl.col("action_type") == "set_code")
        .sort("session_id", "position")
        .filter(pl.col("output").is_not_null() | last)
        .with_columns(pl.col(following).shift(-1).over("session_id").name.prefix("next_"))
    )


def _pairs(codes: pl.DataFrame) -> pl.DataFrame:
    failed = pl.col("correct").eq_missing(False) & is_error(pl.col("output")).fill_null(False)
    ran_clean = pl.col("next_output").is_not_null() & ~is_error(pl.col("next_output"))
    unrun_but_marked = pl.col("next_output").is_null() & pl.col("next_correct").eq_missing(True)
    fixed = (
        pl.col("next_action_id").is_not_null()
        & pl.col("next_weight").eq_missing(1)
        & (ran_clean.fill_null(False) | unrun_but_marked)
    )
    return codes.filter(failed & fixed).select(
        "session_id",
        pl.col("next_action_id").alias("turn_index"),
        pl.col("action_id").alias("corrects_turn"),
        pl.col("next_position").alias("_fix_position"),
        pl.col("action").fill_null("").alias("failed_code"),
        pl.col("output").alias("error_feedback"),
        pl.col("next_action").fill_null("").alias("fixed_code"),
    )


def _conversations(pairs: pl.DataFrame, rows: pl.DataFrame) -> pl.DataFrame:
    """prompt, completion and weighted messages per pair."""
    fix = pl.col("_fix_position")
    weight = (
        pl.when(pl.col("position") == fix)
        .then(pl.lit(1, pl.Int64))
        .when(pl.col("role") == "assistant")
        .then(pl.lit(0, pl.Int64))
    )
    return (
        pairs.select("session_id", "turn_index", "_fix_position")
        .join(rows, on="session_id")
        .filter(pl.col("position") <= fix)
        .sort("session_id", "turn_index", "position")
        .with_columns(weight.alias("weight"))
        # one message per run of a role and weight: the user turns between the error and the
        # fix are one turn
        .pipe(adjacent_merged, by=("session_id", "turn_index"))
        .group_by("session_id", "turn_index", maintain_order=True)
        .agg(
            pl.struct("role", "content").filter(pl.col("position") < fix).alias("prompt"),
            pl.struct("role", "content").filter(pl.col("position") == fix).alias("completion"),
            pl.struct("role", "content", "weight").alias("messages"),
        )
    )


def self_corrections(v: Validated, options: ReplayOptions = DEFAULT_OPTIONS) -> pl.DataFrame:
    """The ``self_correction`` rows of all trainable sessions (exactly those columns)."""
    sessions, _ = trainable_sessions(v)
    rows = conversation_rows(v, sessions, options)
    pairs = _pairs(_code_rows(rows))
    failed_lines = pl.col("failed_code").str.split("\n")
    fixed_lines = pl.col("fixed_code").str.split("\n")
    return (
        pairs.join(
            _conversations(pairs, rows),
            on=["session_id", "turn_index"],
        )
        .join(sessions.select("session_id", "question_id"), on="session_id")
        .sort("session_id", "turn_index")
        .with_columns(
            *error_parts(pl.col("error_feedback")),
            pl.struct(
                failed_lines.list.set_difference(fixed_lines).alias("removed_lines"),
                fixed_lines.list.set_difference(failed_lines).alias("added_lines"),
            ).alias("code_diff"),
            pl.lit(None, pl.String).alias("episode_id"),
            pl.lit(None, pl.String).alias("trace_id"),
            pl.lit(None, pl.String).alias("difficulty"),
            pl.lit(None, pl.String).alias("trace_role"),
            pl.lit(SOURCE).alias("source"),
        )
        .select([pl.col(n).cast(t) for n, t in SELF_CORRECTION_COLUMNS.items()])
    )
