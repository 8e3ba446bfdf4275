"""Replay is exact: a hand-written session gives exactly the expected messages and weights."""

from __future__ import annotations

import itertools

import polars as pl
import pytest
from sessions_support import INSTRUCTION, Backend, expected_messages, load

from builder.hashing import question_id
from builder.sessions.replay import SFT_COLUMNS, ReplayOptions, replay


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
    assert result.excluded == {"unverified": 2, "rejected_actions": 0, "no_trainable_turns": 1}


@pytest.mark.parametrize("null_correct_trains", [True, False])
def test_weights_follow_correct(backend: Backend, null_correct_trains: bool) -> None:
    v = load(backend)
    sft = replay(v, ReplayOptions(null_correct_trains=null_correct_trains)).sft
    messages = sft.select(pl.col("messages").explode()).unnest("messages")
    assert messages.filter(pl.col("role") != "assistant")["weight"].null_count() == 5
    assert messages.filter(pl.col("role") == "assistant")["weight"].null_count() == 0


def test_exec_output_uses_the_episode_feedback_format_and_is_bounded() -> None:
    import polars as pl

    from builder.sessions.replay import action_message

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
    from builder.sessions.replay import initial_message

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
