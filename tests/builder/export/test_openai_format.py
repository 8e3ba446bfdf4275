"""Every ``sft`` row, with null fields dropped, is a valid OpenAI chat fine-tuning example:
the checks of OpenAI's published format checker (roles, keys, content, at least one assistant
message) plus the weight and tool-call rules of the format."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import pyarrow.parquet as pq
import pytest

from builder.config import BuildConfig
from builder.pipeline import BuildReport, build
from samples.episodes import generate_episodes

ROLES = {"system", "user", "assistant", "tool", "function"}
KEYS = {"role", "content", "name", "function_call", "weight", "tool_calls", "tool_call_id"}


def openai_example(row: dict[str, Any]) -> dict[str, Any]:
    """The row as an OpenAI fine-tuning line: null fields left out."""
    return {"messages": [{k: v for k, v in m.items() if v is not None} for m in row["messages"]]}


def format_errors(example: dict[str, Any]) -> list[str]:
    errors = []
    messages = example.get("messages")
    if not isinstance(messages, list) or not messages:
        return ["missing_messages_list"]
    for m in messages:
        if "role" not in m or not ("content" in m or "tool_calls" in m):
            errors.append("message_missing_key")
        if set(m) - KEYS:
            errors.append(f"message_unrecognized_key {sorted(set(m) - KEYS)}")
        if m.get("role") not in ROLES:
            errors.append("unrecognized_role")
        content = m.get("content")
        if content is not None and not isinstance(content, str):
            errors.append("invalid_content_type")
        if "weight" in m and (m["role"] != "assistant" or m["weight"] not in (0, 1)):
            errors.append("invalid_weight")
        for call in m.get("tool_calls") or []:
            function = call.get("function") or {}
            if m["role"] != "assistant" or call.get("type") != "function" or not call.get("id"):
                errors.append("invalid_tool_call")
            if not isinstance(function.get("name"), str):
                errors.append("invalid_tool_call_name")
            try:
                json.loads(function.get("arguments"))
            except (TypeError, ValueError):
                errors.append("tool_call_arguments_not_json")
        if m.get("role") == "tool" and not m.get("tool_call_id"):
            errors.append("tool_message_without_call_id")
    if not any(m.get("role") == "assistant" for m in messages):
        errors.append("example_missing_assistant_message")
    if not any(m.get("role") == "assistant" and m.get("weight", 1) == 1 for m in messages):
        errors.append("nothing_to_train")
    calls = {c["id"] for m in messages for c in m.get("tool_calls") or []}
    if any(m.get("role") == "tool" and m.get("tool_call_id") not in calls for m in messages):
        errors.append("tool_result_without_its_call")
    return errors


def check_folder(folder: Path) -> int:
    rows = pq.read_table(folder / "sft").to_pylist()
    for row in rows:
        example = openai_example(row)
        assert format_errors(example) == [], (row["episode_id"], row["session_id"])
        json.dumps(example)  # one JSONL line
    return len(rows)


def test_the_sample_build_is_valid_openai_fine_tuning_data(sample_build: BuildReport) -> None:
    assert check_folder(sample_build.out) > 100


def test_a_generated_build_is_valid_openai_fine_tuning_data(tmp_path: Path) -> None:
    source = tmp_path / "episodes.jsonl"
    source.write_bytes(b"".join(orjson.dumps(e) + b"\n" for e in generate_episodes(120, 9)))
    build(BuildConfig(episodes=(str(source),), out=tmp_path / "ds", rejects=tmp_path / "r.jsonl"))
    assert check_folder(tmp_path / "ds") > 20


@pytest.mark.parametrize(
    ("broken", "error"),
    [
        ({"role": "robot", "content": "x"}, "unrecognized_role"),
        ({"role": "user", "content": "x", "weight": 1}, "invalid_weight"),
        ({"role": "assistant", "content": "x", "weight": 2}, "invalid_weight"),
        ({"role": "tool", "content": "3"}, "tool_message_without_call_id"),
    ],
)
def test_the_checker_catches_what_it_checks(broken: dict[str, Any], error: str) -> None:
    example = {"messages": [{"role": "assistant", "content": "ok", "weight": 1}, broken]}
    assert error in format_errors(example)
