"""The texts a build's training configs show as prompts, read from the staging tables as the
configs render them (the derive code's own expressions): what the held-out checks and the
eval sets are matched against."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from builder.derive.decontamination.overlap import EPISODE, PROMPTS, QUESTION, SESSION
from builder.derive.messages import turn_messages
from builder.derive.sft import captured_content, one_system_message
from builder.derive.splits.copies import EPISODE_PROMPTS


def read_tables(files: list[Path], columns: list[str]) -> pl.DataFrame:
    present = [f for f in files if f.is_file()]
    if not present:
        return pl.DataFrame()
    return pl.read_parquet(present, columns=columns)


MESSAGE_SOURCE = ["episode_id", "message_index", "role", "content", "content_parts"]
MESSAGE_SCHEMA = {c: pl.Int32 if c == "message_index" else pl.String for c in MESSAGE_SOURCE}
TURN_SOURCE = ["trace_id", "turn_index", "reasoning", "code", "success", "stdout", "stderr"]


def prompts_of(
    tables: Path, questions: pl.DataFrame, sessions: pl.DataFrame, chars: int
) -> pl.DataFrame:
    """``PROMPTS``: every text a training config shows as a prompt where a question can be
    asked, read as the configs render it (their own expressions): the questions, each
    episode's one system message (``one_system_message``: its captured system prompt and
    system messages), the other non-assistant messages of its captured conversation
    (``captured_content``: content parts as text, feedback bounded), and what a session says
    after its question. ``chars``: ``max_output_chars``."""
    folders = sorted(p for p in tables.glob("*") if p.is_dir())
    parts = [questions.select(kind=pl.lit(QUESTION), key="question_id", text="text")]
    messages = read_tables([f / "messages.parquet" for f in folders], MESSAGE_SOURCE)
    episodes = read_tables(
        [f / "episodes.parquet" for f in folders], ["episode_id", "system_prompt"]
    )
    if not messages.height:
        messages = pl.DataFrame(schema=MESSAGE_SCHEMA)
    if episodes.height:  # a captured system prompt is a prompt too (the default is ours)
        others, system = one_system_message(
            {"episodes": episodes.lazy()},
            episodes.select("episode_id", system=pl.lit(None, pl.String)).lazy(),
            messages.lazy(),
        )
        parts.append(system.select(kind=pl.lit(EPISODE), key="episode_id", text="system").collect())
        parts.append(
            others.filter(pl.col("role") != "assistant")
            .select(kind=pl.lit(EPISODE), key="episode_id", text=captured_content(chars))
            .collect()
        )
    if sessions.height:  # what a session says after its question
        parts.append(
            sessions.select(
                kind=pl.lit(SESSION), key=pl.col("session_id").cast(pl.String), text="text"
            )
        )
    return pl.concat([p.cast(PROMPTS) for p in parts]).filter(pl.col("text").is_not_null())


def execution_output(tables: Path, chars: int) -> pl.DataFrame:
    """``PROMPTS``: the execution output of every trace's turns, as ``turn_messages``
    renders it (its user messages: an episode without a captured conversation trains on its
    gold turns, and ``self_correction`` prompts hold any trace's). Most of the prompt text,
    and no place a question is asked: read for the eval sets only."""
    folders = sorted(p for p in tables.glob("*") if p.is_dir())
    traces = read_tables(
        [f / "traces.parquet" for f in folders], ["trace_id", "episode_id", "form"]
    )
    turns = read_tables([f / "turns.parquet" for f in folders], TURN_SOURCE)
    if not (traces.height and turns.height):
        return pl.DataFrame(schema=PROMPTS)
    rendered = turn_messages({"turns": turns.lazy(), "traces": traces.lazy()}, chars)
    return (
        rendered.filter(pl.col("role") == "user")
        .join(traces.lazy().select("trace_id", "episode_id"), on="trace_id")
        .select(kind=pl.lit(EPISODE), key="episode_id", text="content")
        .collect()
        .cast(PROMPTS)
        .filter(pl.col("text").is_not_null())
    )


def episode_prompts(tables: Path, prompts: pl.DataFrame, questions: pl.DataFrame) -> pl.DataFrame:
    """``EPISODE_PROMPTS``: each episode's prompts of ``prompts`` (``prompts_of``) and its
    question's text (``questions``), with its ``question_id``."""
    folders = sorted(p for p in tables.glob("*") if p.is_dir())
    episodes = read_tables([f / "episodes.parquet" for f in folders], ["episode_id", "question_id"])
    if not episodes.height:
        return pl.DataFrame(schema=EPISODE_PROMPTS)
    said = prompts.filter(pl.col("kind") == EPISODE).select(episode_id="key", text="text")
    asked = episodes.join(questions.select("question_id", "text"), on="question_id")
    said = said.join(episodes, on="episode_id")
    return pl.concat([said.select(list(EPISODE_PROMPTS)), asked.select(list(EPISODE_PROMPTS))])
