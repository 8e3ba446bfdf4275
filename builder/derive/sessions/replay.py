"""Replay sessions into chat conversations: ``sft`` rows with per-message training weights.

A session's state is (instruction, code, exec output). Actions, applied in ``action_id``
order, each change one part of it and are shown to the model as one message:

==================  ==========  ======================================================
action_type         role        content
==================  ==========  ======================================================
(session start)     system      ``system_prompt``
(session start)     user        initial instruction, plus the initial code and output
                                as context when present (``initial_message``)
input               user        the text as typed
set_instruction     user        ``New instruction:`` + the text
set_code            assistant   the code in a fenced ``python`` block (as for episodes)
set_exec_output     user        ``[stdout]:`` + the output, as for episode turns, bounded to
                                ``max_output_chars`` (head and tail kept)
==================  ==========  ======================================================

A ``set_code`` replaced by the next action, another ``set_code``, never ran: the
conversation shows the code that did (it stays in the ``actions`` table). So no two
assistant messages follow each other, and superseded code is never trained. One replaced
before it ran with messages between (the human's reply to it: "no, that is a typo") stays in
the conversation, which those messages refer to, with weight 0: no run says it worked. Likewise a
``set_exec_output`` followed by another before the next ``set_code`` (the same code run
again) is not shown: the conversation holds the last output, which the code's weight is
judged by.

A session that asks nothing before its first code (no instruction, ``set_instruction`` or
``input`` before it) is not replayed (``no_instruction``): its conversation would open with
an empty user message.

Weights (the seed: incorrect actions "can be used for setup but should not be trained on
directly"): an assistant message has weight 1 unless its action has ``correct = false``
(weight 0, the message stays in the conversation as context); ``correct`` null trains by
default (``null_correct_trains``), unless running the code gave an error
(``builder.derive.sessions.outputs``): unmarked code that failed is context, not a target. An empty
edit (blank code) has weight 0. Non-assistant messages have a null weight. Only sessions
marked ``verified`` and not ``incomplete`` (see ``validate``) are replayed; a session with
no assistant message of weight 1 has nothing to train and is excluded too. Each exclusion is
counted by reason.

Everything is whole-column Polars: one long frame of messages (two opening rows per
session, one row per action), sorted, then aggregated into one list per session.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl
import pyarrow as pa

from builder.derive.failures import is_error
from builder.derive.messages import TOOL_CALLS, bounded, fenced
from builder.derive.options import DEFAULT_MAX_OUTPUT_CHARS
from builder.derive.sessions.outputs import with_code_outputs
from builder.sessions.tables import source_counts
from builder.sessions.validate import Validated
from schemas.objectives import OBJECTIVES
from schemas.tables import empty_table
from schemas.vocabulary import NO_INSTRUCTION, NO_TRAINABLE_TURNS, REJECTED_ACTIONS, UNVERIFIED

SYSTEM_PROMPT = (
    "You are a data analysis assistant in an interactive Python environment with pandas. "
    "Write Python code that carries out the user's instruction; the user runs it and shows "
    "you the output."
)
# The same feedback convention as episode turns, so a model sees one format.
OUTPUT_OPEN, OUTPUT_CLOSE = "[stdout]:\n", ""
INSTRUCTION_PREFIX = "New instruction:\n"
CONTEXT_CODE = "\n\nCurrent code:\n"  # the initial state, after the instruction
CONTEXT_OUTPUT = "\n\n" + OUTPUT_OPEN


def polars_schema(schema: pa.Schema) -> dict[str, pl.DataType]:
    """Column name -> Polars type of a declared Arrow schema (its column order kept)."""
    return dict(pl.from_arrow(empty_table(schema)).schema)  # type: ignore[union-attr]


# Exactly the columns of the sft config, as schemas.objectives declares them.
SFT_COLUMNS = polars_schema(OBJECTIVES["sft"])
SOURCE = "session"  # the value of the training configs' source column


@dataclass(frozen=True)
class ReplayOptions:
    null_correct_trains: bool = True
    system_prompt: str = SYSTEM_PROMPT
    max_output_chars: int = DEFAULT_MAX_OUTPUT_CHARS


DEFAULT_OPTIONS = ReplayOptions()


@dataclass(frozen=True)
class Replay:
    sft: pl.DataFrame  # exactly SFT_COLUMNS, one row per replayed session
    excluded: dict[str, int]  # reason -> sessions not replayed


def _present(name: str) -> pl.Expr:
    return pl.col(name).is_not_null() & (pl.col(name).str.strip_chars() != "")


def initial_message(max_output_chars: int = DEFAULT_MAX_OUTPUT_CHARS) -> pl.Expr:
    """The opening user message of a session (evaluated on the sessions frame); its output,
    like every action's, ``bounded`` to ``max_output_chars``."""
    code = pl.when(_present("initial_code")).then(
        pl.concat_str(pl.lit(CONTEXT_CODE), fenced(pl.col("initial_code")))
    )
    output = pl.when(_present("initial_exec_output")).then(
        pl.concat_str(
            pl.lit(CONTEXT_OUTPUT),
            bounded(pl.col("initial_exec_output"), max_output_chars),
            pl.lit(OUTPUT_CLOSE),
        )
    )
    instruction = pl.col("initial_instruction").fill_null("").str.strip_chars()
    opening = pl.concat_str(instruction, code.fill_null(""), output.fill_null(""))
    return opening.str.strip_chars_start().alias("content")  # no instruction: context first


def action_message(
    null_correct_trains: bool, max_output_chars: int = DEFAULT_MAX_OUTPUT_CHARS
) -> list[pl.Expr]:
    """role, content and weight of each action's message (evaluated on the actions frame)."""
    kind, text = pl.col("action_type"), pl.col("action").fill_null("")
    role = pl.when(kind == "set_code").then(pl.lit("assistant")).otherwise(pl.lit("user"))
    content = (
        pl.when(kind == "set_code")
        .then(fenced(text))
        .when(kind == "set_exec_output")
        .then(
            pl.concat_str(
                pl.lit(OUTPUT_OPEN), bounded(text, max_output_chars), pl.lit(OUTPUT_CLOSE)
            )
        )
        .when(kind == "set_instruction")
        .then(pl.concat_str(pl.lit(INSTRUCTION_PREFIX), text))
        .otherwise(text)
    )
    trains = pl.col("correct").fill_null(null_correct_trains) & _present("action")
    weight = pl.when(kind == "set_code").then(trains.cast(pl.Int64))
    return [role.alias("role"), content.alias("content"), weight.alias("weight")]


def conversation_rows(
    v: Validated, sessions: pl.DataFrame, options: ReplayOptions = DEFAULT_OPTIONS
) -> pl.DataFrame:
    """One row per message of each session in ``sessions``, in conversation order.

    Columns: session_id, position (0-based), action_id (null on the two opening messages),
    action_type, action, correct, role, content, weight, output (of a ``set_code``'s run).
    """
    return rows_of(v.actions, sessions, options)


def rows_of(
    actions: pl.DataFrame, sessions: pl.DataFrame, options: ReplayOptions = DEFAULT_OPTIONS
) -> pl.DataFrame:
    """``conversation_rows`` of ``sessions`` (``session_id`` and the ``initial_*`` columns)
    from their ``actions`` (``session_id``, ``action_id``, ``action_type``, ``action``,
    ``correct``): what else reads a session as the replay shows it starts here."""
    head = sessions.select(
        "session_id", "initial_instruction", "initial_code", "initial_exec_output"
    )
    system = head.select(
        "session_id",
        pl.lit(0).alias("_part"),
        pl.lit("system").alias("role"),
        pl.lit(options.system_prompt).alias("content"),
    )
    opening = head.select(
        "session_id",
        pl.lit(1).alias("_part"),
        pl.lit("user").alias("role"),
        initial_message(options.max_output_chars),
    )
    acts = actions.join(sessions.select("session_id"), on="session_id", how="semi").select(
        "session_id",
        pl.lit(2).alias("_part"),
        "action_id",
        "action_type",
        "action",
        "correct",
        *action_message(options.null_correct_trains, options.max_output_chars),
    )
    code = pl.col("action_type") == "set_code"
    superseded = code & (pl.col("action_type").shift(-1).over("session_id") == "set_code")
    failed_unmarked = code & pl.col("correct").is_null() & is_error(pl.col("output"))
    # A run's output replaced by a later run of the same code (no set_code between) is not
    # shown: the conversation holds the output the code's weight is judged by.
    output = pl.col("action_type") == "set_exec_output"
    rerun = output & (output.cum_sum(reverse=True).over("session_id", "_segment") > 1)
    rows = (
        pl.concat([system, opening, acts], how="diagonal_relaxed")
        .sort("session_id", "_part", "action_id")
        .filter(~superseded.fill_null(False))
        .with_columns(_segment=code.fill_null(False).cum_sum().over("session_id"))
        .filter(~rerun.fill_null(False))
        .drop("_segment")
        .pipe(with_code_outputs)
    )
    # Code replaced before it ran, with messages between (a reply to it): context, never a
    # target (no run says whether it worked)
    later_code = code.cast(pl.Int32).cum_sum(reverse=True).over("session_id") > 1
    unrun = code & pl.col("output").is_null() & later_code
    context_only = failed_unmarked.fill_null(False) | unrun.fill_null(False)
    return rows.with_columns(
        pl.when(context_only).then(0).otherwise("weight").alias("weight"),
        pl.int_range(pl.len(), dtype=pl.Int32).over("session_id").alias("position"),
    ).select(
        "session_id",
        "position",
        "action_id",
        "action_type",
        "action",
        "correct",
        "role",
        "content",
        pl.col("weight").cast(pl.Int64),
        "output",
    )


def trainable_sessions(v: Validated) -> tuple[pl.DataFrame, dict[str, int]]:
    """Sessions eligible for training (verified, complete) and counts of the others."""
    verified = pl.col("verified").fill_null(False)
    complete = verified & ~pl.col("incomplete")
    asked = pl.col("split_text").fill_null("").str.strip_chars() != ""
    excluded = {
        UNVERIFIED: v.sessions.filter(~verified).height,
        REJECTED_ACTIONS: v.sessions.filter(verified & pl.col("incomplete")).height,
        NO_INSTRUCTION: v.sessions.filter(complete & ~asked).height,
    }
    return v.sessions.filter(complete & asked), excluded


def _with_counts(frame: pl.DataFrame, actions: pl.DataFrame) -> pl.DataFrame:
    counts = source_counts(actions).drop("n_actions")
    names = [c for c in counts.columns if c != "session_id"]
    joined = frame.join(counts, on="session_id", how="left", maintain_order="left")
    return joined.with_columns(pl.col(names).fill_null(0))


def adjacent_merged(
    rows: pl.DataFrame,
    roles: tuple[str, ...] = ("user", "assistant"),
    by: tuple[str, ...] = ("session_id",),
) -> pl.DataFrame:
    """Adjacent messages of one conversation (``by``) with the same role and weight as one
    message, their contents joined by a blank line: an ``input`` after the opening message, or
    after an output, is not a second user turn in a row, which the chat templates that require
    user and assistant to alternate (Llama 2, Mistral, Gemma) refuse. (Code edits never
    follow each other: ``conversation_rows`` keeps the edit that ran.) Only messages of
    ``roles`` merge; an empty one adds nothing. Every other column keeps the first message's
    value (its ``position`` among them)."""
    same = [pl.col(k) == pl.col(k).shift() for k in by]
    continues = pl.all_horizontal(
        *same,
        pl.col("role") == pl.col("role").shift(),
        pl.col("weight").eq_missing(pl.col("weight").shift()),
        pl.col("role").is_in(roles),
    ).fill_null(False)
    run = (~continues).cum_sum().alias("_run")
    return (
        rows.with_columns(run)
        .group_by("_run", maintain_order=True)
        .agg(
            pl.all().exclude("content").first(),
            # an empty opening (the instruction set by a later action) adds no blank lines
            pl.col("content").filter(pl.col("content") != "").str.join("\n\n"),
        )
        .select(rows.columns)
    )


def _unasked(rows: pl.DataFrame, sessions: pl.DataFrame) -> pl.DataFrame:
    """``session_id`` of the sessions whose first code comes before any request: a
    non-blank initial instruction, ``set_instruction`` or ``input``."""
    given = pl.col("action").str.strip_chars().fill_null("") != ""
    request = pl.col("action_type").is_in(["input", "set_instruction"]) & given
    opening = pl.col("action_id").is_null() & (pl.col("role") == "user")
    instructed = sessions.select(
        "session_id",
        _instructed=pl.col("initial_instruction").str.strip_chars().fill_null("") != "",
    )
    code = pl.col("role") == "assistant"
    first_code = pl.col("position").filter(code).min()
    return (
        rows.join(instructed, on="session_id", how="left")
        .with_columns(_asks=request | (opening & pl.col("_instructed")))
        .group_by("session_id")
        .agg(asked=(pl.col("_asks") & (pl.col("position") < first_code)).any(), codes=code.any())
        .filter(pl.col("codes") & ~pl.col("asked"))
        .select("session_id")
    )


def replay(v: Validated, options: ReplayOptions = DEFAULT_OPTIONS) -> Replay:
    """The ``sft`` rows of every trainable session, and the excluded counts by reason."""
    sessions, excluded = trainable_sessions(v)
    rows = conversation_rows(v, sessions, options)
    # Code written before anything was asked (the request typed only later) would train a
    # reply to a message of context alone (the initial code or output) or to none.
    unasked = _unasked(rows, sessions)
    excluded[NO_INSTRUCTION] += unasked.height
    rows = adjacent_merged(rows.join(unasked, on="session_id", how="anti", maintain_order="left"))
    conversations = rows.group_by("session_id", maintain_order=True).agg(
        pl.struct(
            "role",
            "content",
            "weight",
            pl.lit(None, dtype=TOOL_CALLS).alias("tool_calls"),
            pl.lit(None, dtype=pl.String).alias("tool_call_id"),
            pl.lit(None, dtype=pl.String).alias("name"),
        ).alias("messages"),
        (pl.col("weight") == 1).any().alias("_trains"),
    )
    excluded[NO_TRAINABLE_TURNS] = conversations.filter(~pl.col("_trains")).height
    sft = (
        conversations.filter(pl.col("_trains"))
        .join(sessions.select("session_id", "question_id"), on="session_id", maintain_order="left")
        .pipe(_with_counts, v.actions)
        .with_columns(
            pl.lit(None, pl.String).alias("episode_id"),
            pl.lit(None, pl.String).alias("trace_id"),
            pl.lit(None, pl.String).alias("difficulty"),
            pl.lit(SOURCE).alias("source"),
        )
        .select([pl.col(name).cast(dtype) for name, dtype in SFT_COLUMNS.items()])
    )
    return Replay(sft, excluded)
