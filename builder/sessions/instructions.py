"""A session's task: its initial instruction (else the first one set, else the first input),
normalized and content-addressed like an episode's question."""

from __future__ import annotations

import polars as pl

from builder.contract.hashing import normalize_question_text, question_id


def _task(sessions: pl.DataFrame, actions: pl.DataFrame) -> pl.DataFrame:
    """session_id -> ``_task``: the initial instruction, else (blank or null) the first
    non-blank ``set_instruction`` of the session, else its first non-blank ``input`` (a
    request typed in the chat), else the empty text."""
    given = pl.col("action").is_not_null() & (pl.col("action").str.strip_chars() != "")
    ordered = actions.filter(given).sort("session_id", "action_id").group_by("session_id")
    first = ordered.agg(
        pl.col("action").filter(pl.col("action_type") == "set_instruction").first().alias("_set"),
        pl.col("action").filter(pl.col("action_type") == "input").first().alias("_input"),
    )
    initial = pl.col("initial_instruction")
    blank = initial.is_null() | (initial.str.strip_chars() == "")
    task = pl.when(blank).then(pl.coalesce("_set", "_input")).otherwise(initial)
    return (
        sessions.select("session_id", "initial_instruction")
        .join(first, on="session_id", how="left")
        .select("session_id", pl.coalesce(task, initial, pl.lit("")).alias("_task"))
    )


def normalized_instructions(sessions: pl.DataFrame, actions: pl.DataFrame) -> pl.DataFrame:
    """session_id -> ``normalized_instruction`` of each session's task (after redaction, the
    published form is computed again from the redacted texts)."""
    tasks = _task(sessions, actions)
    normalized = _question_ids(tasks["_task"]).select("_task", "normalized_instruction")
    return tasks.join(normalized, on="_task", how="left").drop("_task")


def _question_ids(instructions: pl.Series) -> pl.DataFrame:
    """question_id and normalized text per distinct instruction. sha256 and NFKC have no
    vectorized kernel, so this is the one Python loop: once per distinct instruction."""
    texts = instructions.unique().drop_nulls().sort().to_list()
    names = ["_task", "question_id", "normalized_instruction"]
    ids = pl.DataFrame(
        {
            "_task": texts,
            "question_id": [question_id(t, None) for t in texts],
            "normalized_instruction": [normalize_question_text(t) for t in texts],
        },
        schema=dict.fromkeys(names, pl.String),
    )
    return ids.with_columns(split_text=pl.col("normalized_instruction"))
