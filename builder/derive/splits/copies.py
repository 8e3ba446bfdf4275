"""Held-out questions copied into what a training session says after its question.

A session's split is its question's (its initial instruction's), but it trains on everything
it says: a later ``set_instruction`` or chat ``input`` holding a validation or test question
would put that question into training. Such a session is kept out of every training config
(``held_out_copy``), by the rule decontamination uses: more than ``threshold`` of the held-out
question's word ``n``-grams occur in one of the session's user messages as the replay shows
them (consecutive ``input`` actions, and the output before them, are one). A held-out question of
fewer than ``MIN_WORDS`` words is not looked for: "show the columns" is everyday chat.
"""

from __future__ import annotations

import polars as pl

from builder.derive.decontamination.evals import EvalSet
from builder.derive.decontamination.overlap import SESSION, matched_items
from builder.derive.sessions.replay import DEFAULT_OPTIONS, ReplayOptions, adjacent_merged, rows_of
from builder.derive.splits.shingles import WORD, comparable
from schemas.vocabulary import HELD_OUT_COPY

SESSION_PROMPTS = {"session_id": pl.Int64, "question_id": pl.String, "text": pl.String}
EXCLUDED_SESSIONS = {"session_id": pl.Int64, "reason": pl.String}
MIN_WORDS = 6
SAID = ("set_instruction", "input")  # the actions that may restate the question


def later_messages(
    sessions: pl.DataFrame, actions: pl.DataFrame, options: ReplayOptions = DEFAULT_OPTIONS
) -> pl.DataFrame:
    """``SESSION_PROMPTS``: what each verified session (the ones that train) says besides
    its question, as the replay shows it: its user messages (``rows_of``), consecutive ones
    joined into one (``adjacent_merged``: two ``input`` actions in a row, or an output and
    the ``input`` after it, are one message, so a question split between them is whole
    there), less what restates the question: the opening's instruction, and the
    ``set_instruction`` and ``input`` actions that say it again (the action a session
    without an initial instruction took it from, among them; compared word for word, as the
    split key is normalized). The opening's code and output, and every output, are kept."""
    verified = sessions.filter(pl.col("verified").fill_null(False))
    acts = actions.join(verified.select("session_id"), on="session_id", how="semi")
    if not acts.height:
        return pl.DataFrame(schema=SESSION_PROMPTS)

    def words(texts: pl.Series) -> pl.Series:
        return comparable(texts.fill_null("")).str.extract_all(WORD).list.join(" ")

    opening = verified.with_columns(initial_instruction=pl.lit(None, pl.String))
    rows = rows_of(acts, opening, options).join(
        verified.select("session_id", "question_id", "split_text"),
        on="session_id",
        maintain_order="left",
    )
    restates = words(rows.get_column("action")) == words(rows.get_column("split_text"))
    restated = pl.col("action_type").is_in(SAID) & pl.lit(restates)
    rows = rows.with_columns(content=pl.when(restated).then(pl.lit("")).otherwise("content"))
    said = adjacent_merged(rows.drop("split_text")).filter(
        (pl.col("role") == "user") & (pl.col("content").str.strip_chars() != "")
    )
    return said.select("session_id", "question_id", text="content").cast(SESSION_PROMPTS)


def held_out_copies(
    prompts: pl.DataFrame,
    assignment: pl.DataFrame,
    questions: pl.DataFrame,
    pinned: pl.DataFrame,
    n: int,
    threshold: float,
) -> pl.DataFrame:
    """``EXCLUDED_SESSIONS``: the training sessions whose ``prompts`` (``SESSION_PROMPTS``)
    hold a held-out question. ``assignment``: this build's (``question_id``, ``split``,
    ``reason``); ``questions``: its key texts (``question_id``, ``text``); ``pinned``: the
    earlier builds' (``question_id``, ``text``, ``split``, ``reason``), whose held-out
    questions this build lacks stay held out."""
    empty = pl.DataFrame(schema=EXCLUDED_SESSIONS)
    if not prompts.height:
        return empty
    held = assignment.filter((pl.col("split") != "train") & pl.col("reason").is_null())
    ours = questions.join(held.select("question_id"), on="question_id").get_column("text")
    earlier = pinned.filter(
        (pl.col("split") != "train") & pl.col("reason").is_null() & pl.col("text").is_not_null()
    ).join(questions, on="question_id", how="anti")
    items = pl.concat([ours, earlier.get_column("text")]).drop_nulls().unique().sort()
    items = items.filter(comparable(items).str.count_matches(WORD) >= MIN_WORDS)
    training = assignment.filter((pl.col("split") == "train") & pl.col("reason").is_null())
    checked = prompts.join(training.select("question_id"), on="question_id").filter(
        pl.col("text").is_not_null()
    )
    if not items.len() or not checked.height:
        return empty
    found = matched_items(
        checked.select(kind=pl.lit(SESSION), key=pl.col("session_id").cast(pl.String), text="text"),
        [EvalSet("held-out questions", "", "", tuple(items.to_list()))],
        n,
        threshold,
    )
    sessions = checked.with_row_index("prompt").join(found.select("prompt"), on="prompt")
    return (
        sessions.select("session_id", reason=pl.lit(HELD_OUT_COPY))
        .unique("session_id")
        .sort("session_id")
        .cast(EXCLUDED_SESSIONS)
    )
