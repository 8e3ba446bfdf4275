"""``sft_turns``: one prompt-completion row per trained assistant message of ``sft``."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import pyarrow.parquet as pq

from builder.pipeline import BuildReport


def rows(build: BuildReport, config: str) -> list[dict[str, Any]]:
    return pq.read_table(build.out / config).to_pylist()


def conversation_key(row: dict[str, Any]) -> tuple[Any, Any]:
    return row["episode_id"], row["session_id"]


def test_every_trained_message_is_one_row_with_everything_before_it(
    sample_build: BuildReport,
) -> None:
    conversations = {conversation_key(r): r for r in rows(sample_build, "sft")}
    by_conversation: dict[tuple[Any, Any], list[dict[str, Any]]] = defaultdict(list)
    for row in rows(sample_build, "sft_turns"):
        by_conversation[conversation_key(row)].append(row)
    assert set(by_conversation) == set(conversations)  # every sft conversation trains
    for key, turns in by_conversation.items():
        messages = conversations[key]["messages"]
        trained = [
            i for i, m in enumerate(messages) if m["role"] == "assistant" and m["weight"] == 1
        ]
        assert sorted(t["message_index"] for t in turns) == trained
        for turn in turns:
            i = turn["message_index"]
            assert turn["completion"] == [messages[i]]
            assert turn["prompt"] == messages[:i]
            assert turn["question_id"] == conversations[key]["question_id"]


def test_weight_zero_messages_and_outputs_are_only_ever_prompt(sample_build: BuildReport) -> None:
    turns = rows(sample_build, "sft_turns")
    completions = [m for t in turns for m in t["completion"]]
    assert {(m["role"], m["weight"]) for m in completions} == {("assistant", 1)}
    prompts = [m for t in turns for m in t["prompt"]]
    assert any(m["role"] == "assistant" and m["weight"] == 0 for m in prompts)  # sessions
    assert any(m["role"] == "tool" for m in prompts)  # tool-calling conversations


def test_rows_share_their_sft_conversation_split(sample_build: BuildReport) -> None:
    split_of = {}
    for path in (sample_build.out / "sft").iterdir():
        for row in pq.read_table(path, columns=["episode_id", "session_id"]).to_pylist():
            split_of[conversation_key(row)] = path.name.split("-")[0]
    for path in (sample_build.out / "sft_turns").iterdir():
        for row in pq.read_table(path, columns=["episode_id", "session_id"]).to_pylist():
            assert split_of[conversation_key(row)] == path.name.split("-")[0]
