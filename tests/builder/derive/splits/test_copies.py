"""Held-out questions in what training sessions say after their question: what is looked
at (``later_messages``) and what is found (``held_out_copies``)."""

from __future__ import annotations

import polars as pl

from builder.derive.splits.copies import MIN_WORDS, held_out_copies, later_messages

TRAIN_Q = "what is the average fare paid by passengers who embarked at southampton"
HELD_Q = "how many passengers in third class survived the sinking of the ship"


def _sessions(rows: list[tuple[int, bool | None, str]]) -> pl.DataFrame:
    return pl.DataFrame(
        rows,
        schema={"session_id": pl.Int64, "verified": pl.Boolean, "split_text": pl.String},
        orient="row",
    )


def _actions(rows: list[tuple[int, str, str | None]]) -> pl.DataFrame:
    return pl.DataFrame(
        [(s, f"q{s}", t, a) for s, t, a in rows],
        schema={
            "session_id": pl.Int64,
            "question_id": pl.String,
            "action_type": pl.String,
            "action": pl.String,
        },
        orient="row",
    )


def test_only_what_a_training_session_says_besides_its_question_is_looked_at() -> None:
    sessions = _sessions([(1, True, TRAIN_Q), (2, False, TRAIN_Q), (3, None, TRAIN_Q)])
    actions = _actions(
        [
            (1, "set_instruction", TRAIN_Q.upper() + "?"),  # its own question, restated
            (1, "input", f"thanks! now: {HELD_Q}"),
            (1, "set_code", HELD_Q),  # code is no message
            (1, "input", None),
            (2, "input", HELD_Q),  # unverified: it never trains
            (3, "input", HELD_Q),  # null verified: not verified
        ]
    )
    found = later_messages(sessions, actions)
    assert found.to_dicts() == [
        {"session_id": 1, "question_id": "q1", "text": f"thanks! now: {HELD_Q}"}
    ]


def test_a_held_out_question_is_found_inside_a_message_unless_it_is_a_few_words() -> None:
    short = "show the columns"
    assert len(short.split()) < MIN_WORDS <= len(HELD_Q.split())
    assignment = pl.DataFrame(
        {
            "question_id": ["t", "h", "s"],
            "split": ["train", "test", "validation"],
            "reason": [None, None, None],
        },
        schema={"question_id": pl.String, "split": pl.String, "reason": pl.String},
    )
    questions = pl.DataFrame({"question_id": ["t", "h", "s"], "text": [TRAIN_Q, HELD_Q, short]})
    prompts = pl.DataFrame(
        {
            "session_id": [1, 2, 3],
            "question_id": ["t", "t", "h"],
            "text": [f"great, now {short} so I can see them", f"Also: {HELD_Q.title()}?", HELD_Q],
        },
        schema={"session_id": pl.Int64, "question_id": pl.String, "text": pl.String},
    )
    pinned = pl.DataFrame(
        schema={
            "question_id": pl.String,
            "text": pl.String,
            "split": pl.String,
            "reason": pl.String,
        }
    )
    found = held_out_copies(prompts, assignment, questions, pinned, 8, 0.5)
    # session 3's own question is held out: it does not train, so nothing is looked at
    assert found.to_dicts() == [{"session_id": 2, "reason": "held_out_copy"}]
