"""``sft``: one weighted conversation per training-eligible episode.

One system message comes first (``one_system_message``: ``system_prompt`` and every system
message the capture holds in ``messages``). Then the episode's
``conversation_for_sft`` messages as captured:

* weight 1 on every assistant message but a failed attempt (weight 0: its code is a gold
  turn that failed, found by position, or its feedback shows an error where no turn vouches
  for it; ``failed_attempts``);
* list-of-parts content reduced to its text parts joined by newlines;
* a ``tool`` message, and a ``user`` message after the first (the capture's execution
  feedback, ``Output:\n{stdout}``), ``bounded`` to ``max_output_chars`` as a rendered
  turn's output is;
* OpenAI ``tool_calls``, ``tool_call_id`` and ``name`` kept, null where a message has none
  (``arguments`` stay the JSON text OpenAI sends).

An episode without a captured assistant message is rendered from its gold trace instead (the
question, then each turn as ``builder.derive.messages`` renders it); there, an assistant turn
whose execution failed gets weight 0, context only (a later turn recovered from it: the
trace succeeded; ``failed_turns``), and every other assistant turn weight 1. Other roles have a
null weight. ``trace_id`` names the gold trace when the messages were rendered from it.

A conversation with no weight-1 message (a gold trace without turns, or whose every turn
failed) is no row: it would be an example without a label.
"""

from __future__ import annotations

from collections.abc import Mapping

import polars as pl

from builder.derive.common import episode_context
from builder.derive.failures import is_error
from builder.derive.messages import (
    NO_WEIGHT,
    TOOL_CALLS,
    bounded,
    failed_turns,
    gather,
    parts_text,
    turn_messages,
)
from builder.derive.options import DeriveOptions
from schemas.objectives import OBJECTIVES

SFT_MESSAGE_FIELDS = ("role", "content", "weight", "tool_calls", "tool_call_id", "name")
NAME = "sft"
SCHEMA = OBJECTIVES[NAME]


_FENCED = r"```[^\n]*\n(?s:.*?)\n```"


def failed_attempts(tables: Mapping[str, pl.LazyFrame], captured: pl.LazyFrame) -> pl.LazyFrame:
    """``episode_id``, ``message_index``, ``failed_attempt`` (true) of the captured assistant
    messages that hold a failed attempt: the capture's conversation holds the attempts as
    they were made, and they train at weight 0, as in a conversation rendered from the turns.

    A message's codes (its fenced blocks and its tool calls' ``code`` arguments, each code
    once however often the message quotes it) are matched to the gold turns by position:
    the k-th message holding a code is the k-th turn with that code, so code that failed
    once and ran again as is (a transient error) trains where it ran. A message matched to a
    failed turn is context; one matched to a turn that ran trains, whatever its output
    prints; one matched to no turn of known success (a flat trace's cells have none; code
    written otherwise than the turn's) is context when its feedback shows an error
    (``answered_by_error``)."""
    gold = tables["traces"].filter(pl.col("role") == "gold").select("trace_id", "episode_id")
    by_feedback = answered_by_error(captured).cache()  # read by both branches below
    failing = failed_turns(tables).join(gold, on="trace_id").select("episode_id")
    # only the conversations with a failed gold turn or a failed-looking run to look at
    candidates = pl.concat([failing, by_feedback.select("episode_id")]).unique()
    turns = (
        tables["turns"]
        .join(gold, on="trace_id")
        .join(candidates, on="episode_id", how="semi")
        .select("episode_id", "turn_index", "success", code=pl.col("code").str.strip_chars())
        .with_columns(nth=pl.int_range(pl.len()).over("episode_id", "code", order_by="turn_index"))
    )
    text = pl.coalesce(pl.col("content"), parts_text(pl.col("content_parts")))
    answers = captured.filter(pl.col("role") == "assistant").join(
        candidates, on="episode_id", how="semi"
    )
    blocks = (
        answers.select("episode_id", "message_index", code=text.str.extract_all(_FENCED))
        .explode("code")
        .with_columns(pl.col("code").str.replace(r"^```[^\n]*\n", "").str.replace(r"\n```$", ""))
    )
    # A tool-calling conversation runs its code as a call's ``{"code": ...}`` arguments.
    calls = (
        answers.filter(pl.col("tool_calls").is_not_null())
        .select(
            "episode_id", "message_index", call=pl.col("tool_calls").str.json_decode(TOOL_CALLS)
        )
        .explode("call")
        .select(
            "episode_id",
            "message_index",
            code=pl.col("call")
            .struct.field("function")
            .struct.field("arguments")
            .str.json_path_match("$.code"),
        )
    )
    codes = (
        pl.concat([blocks, calls])
        .with_columns(pl.col("code").str.strip_chars())
        .drop_nulls("code")
        .unique(["episode_id", "message_index", "code"], keep="first", maintain_order=True)
        .with_row_index("_order")  # blocks, then calls, of each message: as written
        .with_columns(
            nth=pl.int_range(pl.len()).over(
                "episode_id", "code", order_by=["message_index", "_order"]
            )
        )
    )
    matched = codes.join(turns, on=["episode_id", "code", "nth"]).select(
        "episode_id", "message_index", "success"
    )
    ran = matched.filter(pl.col("success").fill_null(False))
    failed = matched.filter(pl.col("success").not_().fill_null(False))
    return (
        pl.concat(
            [
                failed.select("episode_id", "message_index"),
                by_feedback.join(ran, on=["episode_id", "message_index"], how="anti"),
            ]
        )
        .select("episode_id", "message_index", failed_attempt=pl.lit(True))
        .unique()
    )


def answered_by_error(captured: pl.LazyFrame) -> pl.LazyFrame:
    """``episode_id``, ``message_index`` of the captured assistant messages whose feedback
    (the next message, a ``tool`` or ``user`` one) shows an error (``failures.is_error``)."""
    text = pl.coalesce(pl.col("content"), parts_text(pl.col("content_parts")))
    ordered = captured.sort("episode_id", "message_index").with_columns(
        next_role=pl.col("role").shift(-1).over("episode_id"),
        next_text=text.shift(-1).over("episode_id"),
    )
    feedback = pl.col("next_role").is_in(["tool", "user"])
    shows_error = is_error(pl.col("next_text").fill_null(""))
    return ordered.filter((pl.col("role") == "assistant") & feedback & shows_error).select(
        "episode_id", "message_index"
    )


def one_system_message(
    tables: Mapping[str, pl.LazyFrame], context: pl.LazyFrame, captured: pl.LazyFrame
) -> tuple[pl.LazyFrame, pl.LazyFrame]:
    """(``captured`` without its system messages, ``episode_id``, ``system``: the one system
    message of each conversation). A capture may hold system messages in ``messages`` too:
    chat templates take one system message, first, so they join ``system_prompt`` in order
    (each text once; blank ones add nothing), and the default system prompt stands in only
    when the capture has none."""
    system_role = pl.col("role") == "system"
    text = pl.coalesce(pl.col("content"), parts_text(pl.col("content_parts")))
    own = tables["episodes"].select(
        "episode_id", pl.lit(-1, pl.Int64).alias("message_index"), text=pl.col("system_prompt")
    )
    captured_system = captured.filter(system_role).select(
        "episode_id", pl.col("message_index").cast(pl.Int64), text=text
    )
    key = pl.col("text").str.strip_chars()  # the same text up to blank edges is said once
    said = (
        pl.concat([own, captured_system])
        .with_columns(key=key)
        .filter(pl.col("key").is_not_null() & (pl.col("key") != ""))
        .sort("episode_id", "message_index")
        .unique(["episode_id", "key"], keep="first", maintain_order=True)
        .group_by("episode_id")
        .agg(said=pl.col("text").sort_by("message_index").str.join("\n\n"))
    )
    system = (
        context.select("episode_id", "system")
        .join(said, on="episode_id", how="left")
        .select("episode_id", system=pl.coalesce("said", "system"))
    )
    return captured.filter(~system_role), system


def captured_content(max_output_chars: int) -> pl.Expr:
    """A captured message's content as ``sft`` shows it (evaluated on ``messages`` rows of
    whole conversations: ``episode_id``, ``message_index``, ``role``, ``content``,
    ``content_parts``): list-of-parts content as its text, and the execution feedback (a
    ``tool`` message, a ``user`` one after the first) ``bounded`` to ``max_output_chars``.
    Decontamination reads the conversations' prompts with it."""
    content = pl.coalesce(pl.col("content"), parts_text(pl.col("content_parts")))
    first_user = pl.col("message_index").filter(pl.col("role") == "user").min().over("episode_id")
    feedback = (pl.col("role") == "tool") | (
        (pl.col("role") == "user") & (pl.col("message_index") > first_user)
    )
    return pl.when(feedback).then(bounded(content, max_output_chars)).otherwise(content)


def derive(tables: Mapping[str, pl.LazyFrame], options: DeriveOptions) -> pl.LazyFrame:
    context = episode_context(tables, options)
    # A captured conversation without an assistant message has nothing to train: the gold
    # trace is rendered instead, as for an episode that captured none.
    answered = tables["messages"].filter(pl.col("role") == "assistant").select("episode_id")
    captured = (
        tables["messages"]
        .join(context, on="episode_id", how="semi")
        .join(answered.unique(), on="episode_id", how="semi")
    )
    rendered = context.join(captured, on="episode_id", how="anti")
    gold = tables["traces"].filter(pl.col("role") == "gold").select("trace_id", "episode_id")
    gold = gold.join(rendered, on="episode_id", how="semi")
    zero = failed_turns(tables).with_columns(zero=pl.lit(True))
    turns = (
        turn_messages(tables, options.max_output_chars, gold)
        .join(gold, on="trace_id", how="inner")
        .join(zero, on=["trace_id", "turn_index"], how="left")
    )
    assistant = pl.col("role") == "assistant"
    weight = pl.when(assistant).then(pl.when(pl.col("zero")).then(0).otherwise(1)).cast(pl.Int64)
    flagged = failed_attempts(tables, captured)
    # The system messages are taken out before the failed attempts join the rest: joined
    # first, the two branches (filtered by role) each ran the matching once.
    captured, system = one_system_message(tables, context, captured)
    captured = captured.join(flagged, on=["episode_id", "message_index"], how="left")
    content = captured_content(options.max_output_chars)
    rows = pl.concat(
        [
            system.select(
                "episode_id",
                pos=pl.lit(-2, pl.Int64),
                role=pl.lit("system"),
                content="system",
                weight=NO_WEIGHT,
            ),
            rendered.select(
                "episode_id",
                pos=pl.lit(-1, pl.Int64),
                role=pl.lit("user"),
                content="question",
                weight=NO_WEIGHT,
            ),
            captured.select(
                "episode_id",
                pl.col("message_index").cast(pl.Int64).alias("pos"),
                "role",
                content=content,
                weight=pl.when(assistant).then(
                    pl.when(pl.col("failed_attempt")).then(0).otherwise(1).cast(pl.Int64)
                ),
                tool_calls=pl.col("tool_calls").str.json_decode(TOOL_CALLS),
                tool_call_id="tool_call_id",
                name="name",
            ),
            turns.select("episode_id", "pos", "role", "content", weight=weight),
        ],
        how="diagonal_relaxed",  # only captured messages carry the tool fields
    )
    lists = gather(rows, "episode_id", messages=pl.struct(*SFT_MESSAGE_FIELDS))
    trains = pl.col("messages").list.eval(pl.element().struct.field("weight") == 1).list.any()
    return (
        context.join(lists.filter(trains), on="episode_id", how="inner")
        .join(gold, on="episode_id", how="left")
        .sort("question_id", "episode_id")
        .select(
            "messages",
            "question_id",
            "episode_id",
            "trace_id",
            pl.lit(None, pl.Int64).alias("session_id"),
            "difficulty",
            "source",
            *(
                pl.lit(None, pl.Int32).alias(f"n_{who}_actions")
                for who in ("human", "ai", "dataset")
            ),
        )
    )
