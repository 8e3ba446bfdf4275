"""Replay is exact: a hand-written session gives exactly the expected messages and weights."""

from __future__ import annotations

import itertools

import polars as pl
import pytest
from sessions_support import INSTRUCTION, Backend, action, expected_messages, load, session

from builder.contract.hashing import question_id
from builder.derive.sessions.replay import SFT_COLUMNS, ReplayOptions, replay
from builder.sessions.read import read_source
from builder.sessions.validate import validate_source


def test_replay_is_exact(backend: Backend) -> None:
    result = replay(load(backend))
    assert result.sft.schema == pl.Schema(SFT_COLUMNS)
    row = result.sft.row(0, named=True)
    assert row["messages"] == expected_messages(fix_weight=1, merged=True)
    roles = [m["role"] for m in row["messages"][1:]]
    assert all(a != b for a, b in itertools.pairwise(roles))  # user and assistant alternate
    assert row["question_id"] == question_id(INSTRUCTION, None)
    assert row["session_id"] == 1 and row["source"] == "session"
    assert (row["episode_id"], row["trace_id"], row["difficulty"]) == (None, None, None)
    assert (row["n_human_actions"], row["n_ai_actions"], row["n_dataset_actions"]) == (3, 4, 1)


def test_null_correct_is_configurable(backend: Backend) -> None:
    v = load(backend)
    strict = replay(v, ReplayOptions(null_correct_trains=False))
    assert strict.sft.row(0, named=True)["messages"] == expected_messages(0, merged=True)
    prompt = replay(v, ReplayOptions(system_prompt="Be brief."))
    assert prompt.sft.row(0, named=True)["messages"][0]["content"] == "Be brief."


def test_only_verified_sessions_train(backend: Backend) -> None:
    result = replay(load(backend))
    assert result.sft["session_id"].to_list() == [1]
    assert result.excluded == {
        "unverified": 2,
        "rejected_actions": 0,
        "no_instruction": 0,
        "no_trainable_turns": 1,
    }


@pytest.mark.parametrize("null_correct_trains", [True, False])
def test_weights_follow_correct(backend: Backend, null_correct_trains: bool) -> None:
    v = load(backend)
    sft = replay(v, ReplayOptions(null_correct_trains=null_correct_trains)).sft
    messages = sft.select(pl.col("messages").explode()).unnest("messages")
    assert messages.filter(pl.col("role") != "assistant")["weight"].null_count() == 5
    assert messages.filter(pl.col("role") == "assistant")["weight"].null_count() == 0


def test_exec_output_uses_the_episode_feedback_format_and_is_bounded() -> None:
    import polars as pl

    from builder.derive.sessions.replay import action_message

    actions = pl.DataFrame(
        {
            "action_type": ["set_exec_output", "set_exec_output"],
            "action": ["42", "x" * 50],
            "correct": [None, None],
        },
        schema={"action_type": pl.String, "action": pl.String, "correct": pl.Boolean},
    )
    out = actions.select(action_message(True, max_output_chars=20))
    short, long = out["content"].to_list()
    assert short == "[stdout]:\n42"
    assert long.startswith("[stdout]:\n" + "x" * 10) and "truncated 30 characters" in long
    assert out["role"].to_list() == ["user", "user"]


def test_the_opening_output_is_bounded_like_every_other() -> None:
    from builder.derive.sessions.replay import initial_message

    sessions = pl.DataFrame(
        {
            "initial_instruction": ["Look.", "Look again."],
            "initial_code": ["df.head()", None],
            "initial_exec_output": ["   a\n0  1", "y" * 50],
        }
    )
    short, long = sessions.select(initial_message(max_output_chars=20)).to_series().to_list()
    assert "   a\n0  1" in short and "truncated" not in short  # unchanged
    assert "y" * 10 + "\n…[truncated 30 characters]…\n" + "y" * 10 in long
    assert "y" * 11 not in long


def _sft(backend: Backend, sessions: list, actions: list, **options: object) -> pl.DataFrame:
    backend.create("strict")
    backend.insert("sessions", sessions)
    backend.insert("actions", actions)
    return replay(validate_source(read_source(backend.url)), ReplayOptions(**options)).sft


def _turns(row: dict) -> list[tuple[str, str, int | None]]:
    return [(m["role"], m["content"], m["weight"]) for m in row["messages"][1:]]


def test_code_replaced_before_it_ran_is_not_replayed(backend: Backend) -> None:
    # set_code replaces the code: an edit followed by another edit never ran. Shown, it made
    # two assistant turns in a row (templates that require alternation raise) and, when both
    # were marked correct, trained code that was thrown away.
    sft = _sft(
        backend,
        [session(3, "t")],
        [
            action("a", 3, 1, "set_code", "a=1", False, "ai"),
            action("b", 3, 2, "set_code", "a=2", True, "ai"),
            action("c", 3, 3, "set_exec_output", "ok", None, "ai"),
            action("d", 3, 4, "set_code", "b=1", True, "ai"),
            action("e", 3, 5, "set_code", "b=2", True, "ai"),
        ],
    )
    assert _turns(sft.row(0, named=True)) == [
        ("user", "t", None),
        ("assistant", "```python\na=2\n```", 1),
        ("user", "[stdout]:\nok", None),
        ("assistant", "```python\nb=2\n```", 1),
    ]


def test_code_replaced_before_it_ran_after_a_reply_is_context(backend: Backend) -> None:
    # The human answers an edit before it runs ("a typo") and the next edit replaces it:
    # the reply refers to it, so it stays, but it never ran: weight 0, never a target.
    sft = _sft(
        backend,
        [session(4, "Sum column a")],
        [
            action("a", 4, 1, "set_code", "df['a'].summ()", None, "ai"),
            action("b", 4, 2, "input", "no, summ is a typo", None, "human"),
            action("c", 4, 3, "set_code", "df['a'].sum()", None, "ai"),
            action("d", 4, 4, "set_exec_output", "42", None, "dataset"),
        ],
    )
    assert _turns(sft.row(0, named=True)) == [
        ("user", "Sum column a", None),
        ("assistant", "```python\ndf['a'].summ()\n```", 0),
        ("user", "no, summ is a typo", None),
        ("assistant", "```python\ndf['a'].sum()\n```", 1),
        ("user", "[stdout]:\n42", None),
    ]


def test_an_output_a_rerun_replaced_is_not_shown(backend: Backend) -> None:
    """The same code run again (no set_code between) replaces its output: the conversation
    shows the last one, the output the code's weight is judged by, not every run."""
    sft = _sft(
        backend,
        [session(4, "t")],
        [
            action("a", 4, 1, "set_code", "x = f()", None, "ai"),
            action("b", 4, 2, "set_exec_output", "STALE 0.4", None, "ai"),
            action("c", 4, 3, "input", "run it again", None, "human"),
            action("d", 4, 4, "set_exec_output", "0.5", None, "ai"),
            action("e", 4, 5, "set_code", "y = 1", None, "ai"),
            action("f", 4, 6, "set_exec_output", "1", None, "ai"),
        ],
    )
    assert _turns(sft.row(0, named=True)) == [
        ("user", "t", None),
        ("assistant", "```python\nx = f()\n```", 1),
        ("user", "run it again\n\n[stdout]:\n0.5", None),
        ("assistant", "```python\ny = 1\n```", 1),
        ("user", "[stdout]:\n1", None),
    ]


def test_a_session_that_asks_nothing_is_not_replayed(backend: Backend) -> None:
    """No instruction, set_instruction or input: the conversation would open with an empty
    user message, and every such session would share one question. A request typed in the
    chat is the question when nothing else is."""
    backend.create("asks-nothing")
    sessions = [session(1, None), session(2, "  "), session(3, None), session(4, None)]
    sessions.append(session(5, None, "df = load()", "loaded 10 rows"))  # context alone
    backend.insert("sessions", sessions)
    backend.insert(
        "actions",
        [
            action("a", 1, 1, "set_code", "x = 1", True, "ai"),
            action("b", 2, 1, "set_code", "y = 2", True, "ai"),
            action("c", 3, 1, "input", "Load sales.csv", None, "human"),
            action("d", 3, 2, "set_code", "df = load()", True, "ai"),
            action("e", 4, 1, "set_code", "z = 3", True, "ai"),  # asked only afterwards
            action("f", 4, 2, "input", "Now the mean.", None, "human"),
            action("g", 4, 3, "set_code", "z.mean()", True, "ai"),
            action("h", 5, 1, "set_code", "df.head()", True, "ai"),
            action("i", 5, 2, "input", "Now the mean.", None, "human"),
        ],
    )
    validated = validate_source(read_source(backend.url))
    result = replay(validated)
    assert result.sft["session_id"].to_list() == [3]
    assert result.excluded["no_instruction"] == 4
    (asked,) = validated.sessions.filter(pl.col("session_id") == 3)["question_id"].to_list()
    assert asked == question_id("Load sales.csv", None)


def test_an_opening_without_an_instruction_starts_with_its_context(backend: Backend) -> None:
    sft = _sft(
        backend,
        [session(6, "  ", "df = load()", None)],
        [
            action("a", 6, 1, "input", "Now the mean.", None, "human"),
            action("b", 6, 2, "set_code", "df.x.mean()", True, "ai"),
        ],
    )
    (first, *_) = _turns(sft.row(0, named=True))
    assert first == ("user", "Current code:\n```python\ndf = load()\n```\n\nNow the mean.", None)


def test_unmarked_code_that_failed_and_blank_code_do_not_train(backend: Backend) -> None:
    error = "Traceback (most recent call last):\nZeroDivisionError: division by zero"
    sft = _sft(
        backend,
        [session(1, "t")],
        [
            action("a", 1, 1, "set_code", "1 / 0", None, "ai"),
            action("b", 1, 2, "set_exec_output", error, None, "ai"),
            action("c", 1, 3, "set_code", None, None, "human"),  # the editor cleared
            action("d", 1, 4, "input", "again", None, "human"),
            action("e", 1, 5, "set_code", "1 / 1", None, "ai"),
            action("f", 1, 6, "set_exec_output", "1.0", None, "ai"),
            action("g", 1, 7, "set_code", "1 / 0", True, "ai"),  # marked correct: trusted
            action("h", 1, 8, "set_exec_output", error, None, "ai"),
        ],
    )
    weights = [w for role, _, w in _turns(sft.row(0, named=True)) if role == "assistant"]
    assert weights == [0, 0, 1, 1]


def test_a_session_that_starts_without_an_instruction_takes_its_first_one(
    backend: Backend,
) -> None:
    # Its task (question id, split) is the first instruction it was given, and the opening
    # message is that instruction alone; a null initial instruction is no reject.
    sft = _sft(
        backend,
        [session(1, ""), session(2, None), session(3, "")],
        [
            action("a", 1, 1, "set_instruction", "Count the rows.", None, "human"),
            action("b", 1, 2, "set_code", "len(df)", True, "ai"),
            action("c", 2, 1, "set_instruction", "Mean price.", None, "human"),
            action("d", 2, 2, "set_code", "df.price.mean()", True, "ai"),
            action("e", 3, 1, "set_instruction", "Mean price.", None, "human"),
            action("f", 3, 2, "set_code", "df['price'].mean()", True, "ai"),
        ],
    )
    rows = {r["session_id"]: r for r in sft.iter_rows(named=True)}
    assert sorted(rows) == [1, 2, 3]
    assert rows[1]["question_id"] == question_id("Count the rows.", None)
    assert rows[2]["question_id"] == rows[3]["question_id"] == question_id("Mean price.", None)
    assert _turns(rows[1])[0] == ("user", "New instruction:\nCount the rows.", None)
