"""Held-out questions in what training sessions say after their question: what is looked
at (``later_messages``) and what is found (``held_out_copies``)."""

from __future__ import annotations

import polars as pl

from builder.derive.splits.assign import PINNED_COLUMNS
from builder.derive.splits.copies import (
    MIN_WORDS,
    held_out_copies,
    held_out_episodes,
    later_messages,
)

TRAIN_Q = "what is the average fare paid by passengers who embarked at southampton"
HELD_Q = "how many passengers in third class survived the sinking of the ship"
OTHER_HELD_Q = "which port of embarkation had the highest median age among the women"


def _sessions(rows: list[tuple[int, bool | None, str]], instruction: bool = False) -> pl.DataFrame:
    """Sessions without an initial instruction (their question taken from an action), or
    with their question as it (``instruction``)."""
    return pl.DataFrame(
        [(s, f"q{s}", v, t, t if instruction else None, None, None) for s, v, t in rows],
        schema={
            "session_id": pl.Int64,
            "question_id": pl.String,
            "verified": pl.Boolean,
            "split_text": pl.String,
            "initial_instruction": pl.String,
            "initial_code": pl.String,
            "initial_exec_output": pl.String,
        },
        orient="row",
    )


def _actions(rows: list[tuple[int, str, str | None]]) -> pl.DataFrame:
    return pl.DataFrame(
        [(s, i, f"q{s}", t, a, None) for i, (s, t, a) in enumerate(rows, 1)],
        schema={
            "session_id": pl.Int64,
            "action_id": pl.Int32,
            "question_id": pl.String,
            "action_type": pl.String,
            "action": pl.String,
            "correct": pl.Boolean,
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
    pinned = pl.DataFrame(schema=PINNED_COLUMNS)
    found = held_out_copies(prompts, assignment, questions, pinned, 8, 0.5)
    # session 3's own question is held out: it does not train, so nothing is looked at
    assert found.to_dicts() == [{"session_id": 2, "reason": "held_out_copy"}]


def _found(prompts: pl.DataFrame) -> list[int]:
    """The sessions of ``prompts`` (all on training question ``q1`` … ) holding ``HELD_Q``."""
    ids = prompts.get_column("question_id").unique().to_list()
    assignment = pl.DataFrame(
        {"question_id": [*ids, "h"], "split": ["train"] * len(ids) + ["test"]},
        schema={"question_id": pl.String, "split": pl.String},
    ).with_columns(reason=pl.lit(None, pl.String))
    questions = pl.DataFrame({"question_id": [*ids, "h"], "text": [TRAIN_Q] * len(ids) + [HELD_Q]})
    pinned = pl.DataFrame(schema=PINNED_COLUMNS)
    found = held_out_copies(prompts, assignment, questions, pinned, 8, 0.5)
    return found.get_column("session_id").to_list()


def test_a_held_out_question_split_between_inputs_is_found_where_the_replay_joins_them() -> None:
    """The replay shows consecutive ``input`` actions, and the output before them, as one
    user message: a held-out question typed in two halves trains whole."""
    words = HELD_Q.split()
    first, second = " ".join(words[:6]), " ".join(words[6:])
    sessions = _sessions([(1, True, TRAIN_Q), (2, True, TRAIN_Q), (3, True, TRAIN_Q)], True)
    actions = _actions(
        [
            (1, "set_code", "x = 1"),
            (1, "input", first),
            (1, "input", second),
            (1, "set_code", "y = 2"),
            (2, "set_code", "x = 1"),
            (2, "set_exec_output", first),  # the output and the input after it: one message
            (2, "input", second),
            (2, "set_code", "y = 2"),
            (3, "set_code", "x = 1"),
            (3, "input", first),
            (3, "set_code", "print(1)"),  # code between: two messages, neither holds it
            (3, "input", second),
            (3, "set_code", "y = 2"),
        ]
    )
    prompts = later_messages(sessions, actions)
    assert prompts.filter(pl.col("session_id") == 1).get_column("text").to_list() == [
        f"{first}\n\n{second}"
    ]
    assert _found(prompts) == [1, 2]


def test_the_opening_instruction_is_not_looked_at_but_what_joins_it_is() -> None:
    """An ``input`` right after the opening joins its message: the input is looked at, the
    session's own question (the instruction, restated or not) is not."""
    sessions = _sessions([(1, True, TRAIN_Q), (2, True, TRAIN_Q)], instruction=True)
    actions = _actions(
        [
            (1, "input", f"and also {HELD_Q}"),
            (1, "set_code", "x = 1"),
            (2, "input", TRAIN_Q),  # the question again
            (2, "set_code", "x = 1"),
        ]
    )
    prompts = later_messages(sessions, actions)
    assert prompts.to_dicts() == [
        {"session_id": 1, "question_id": "q1", "text": f"and also {HELD_Q}"}
    ]
    assert _found(prompts) == [1]


def test_an_episode_is_found_by_any_prompt_but_never_by_its_own_question() -> None:
    """Episodes: ``e1`` (train) asks a held-out question in a later message and is found;
    ``e2`` (train) says only its own question; ``e3`` is held out, so it is not looked at."""
    prompts = pl.DataFrame(
        {
            "episode_id": ["e1", "e1", "e2", "e2", "e3"],
            "question_id": ["t", "t", "t", "t", "h"],
            "text": [
                f"Dataset: titanic.csv\n\n{TRAIN_Q}",
                f"[stdout]:\n891\nNext: {HELD_Q.upper()}?",
                f"Dataset: titanic.csv\n\n{TRAIN_Q}",
                TRAIN_Q,
                f"{HELD_Q} and then {TRAIN_Q}",
            ],
        }
    )
    assignment = pl.DataFrame(
        {"question_id": ["t", "h"], "split": ["train", "test"], "reason": [None, None]},
        schema={"question_id": pl.String, "split": pl.String, "reason": pl.String},
    )
    questions = pl.DataFrame({"question_id": ["t", "h"], "text": [TRAIN_Q, HELD_Q]})
    pinned = pl.DataFrame(schema=PINNED_COLUMNS)
    found = held_out_episodes(prompts, assignment, questions, pinned, 8, 0.5)
    assert found.to_dicts() == [{"episode_id": "e1", "reason": "held_out_copy"}]


def test_under_a_policy_that_lets_paraphrases_train_an_episode_s_own_question_is_excused() -> None:
    """A training question that paraphrases a held-out one (``question``, ``dataset`` and
    ``template`` policies allow it, and the audit reports it): its episodes, which say it in
    their conversation, are excused under those policies, not under ``near_duplicate``
    (where such a question quotes the held-out one: it cannot be a mere paraphrase); an
    episode that asks another held-out question is found under both."""
    near = "how many passengers in third class survived the sinking of that ship"
    prompts = pl.DataFrame(
        {
            "episode_id": ["e1", "e2", "e2"],
            "question_id": ["t", "t", "t"],
            "text": [
                f"Dataset: titanic.csv\n\n{near}",
                f"Dataset: titanic.csv\n\n{near}",
                f"Also: {OTHER_HELD_Q}?",
            ],
        }
    )
    assignment = pl.DataFrame(
        {"question_id": ["t", "h", "o"], "split": ["train", "test", "validation"]},
        schema={"question_id": pl.String, "split": pl.String},
    ).with_columns(reason=pl.lit(None, pl.String))
    questions = pl.DataFrame({"question_id": ["t", "h", "o"], "text": [near, HELD_Q, OTHER_HELD_Q]})
    pinned = pl.DataFrame(schema=PINNED_COLUMNS)
    strict = held_out_episodes(prompts, assignment, questions, pinned, 8, 0.5)
    assert strict.get_column("episode_id").to_list() == ["e1", "e2"]
    excused = held_out_episodes(prompts, assignment, questions, pinned, 8, 0.5, True)
    assert excused.get_column("episode_id").to_list() == ["e2"]
