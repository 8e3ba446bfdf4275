"""Replay is exact: a hand-written session gives exactly the expected messages and weights."""

from __future__ import annotations

import polars as pl
import pytest
from sessions_support import INSTRUCTION, Backend, expected_messages, load

from builder.hashing import question_id
from builder.sessions.replay import SFT_COLUMNS, ReplayOptions, replay


def test_replay_is_exact(backend: Backend) -> None:
    result = replay(load(backend))
    assert result.sft.schema == pl.Schema(SFT_COLUMNS)
    row = result.sft.row(0, named=True)
    assert row["messages"] == expected_messages(fix_weight=1)
    assert row["question_id"] == question_id(INSTRUCTION, None)
    assert row["session_id"] == 1 and row["source"] == "session"
    assert (row["episode_id"], row["trace_id"], row["difficulty"]) == (None, None, None)
    assert (row["n_human_actions"], row["n_ai_actions"], row["n_dataset_actions"]) == (3, 4, 1)


def test_null_correct_is_configurable(backend: Backend) -> None:
    v = load(backend)
    strict = replay(v, ReplayOptions(null_correct_trains=False))
    assert strict.sft.row(0, named=True)["messages"] == expected_messages(fix_weight=0)
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
    assert messages.filter(pl.col("role") != "assistant")["weight"].null_count() == 7
    assert messages.filter(pl.col("role") == "assistant")["weight"].null_count() == 0
