"""The rebuild rule shared by normalize and the restore reader, and its patches."""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from typing import Any

import pytest

from schemas.lines import REBUILD_RULE, Bounded, EpisodeRows, apply_patch, line_patch, rebuild, same


def rows() -> EpisodeRows:
    episode = {
        "episode_id": "ep-1",
        "question_id": "0123456789abcdef",
        "timestamp": datetime(2025, 12, 21, 16, 0, tzinfo=UTC),
        "verified": True,
        "system_prompt": "Be brief.",
        "n_messages": 1,
        "expected_final_answer": "42",
        "expected_final_answer_hash": "73475cb40a568e8d",
        "n_consistency_runs": 1,
        "n_consistency_succeeded": 1,
        "majority_answer_hash": "73475cb40a568e8d",
        "majority_count": 1,
        "gold_matches_majority": True,
        "csv_source": "sales.csv",
        "extra_fields": json.dumps({"$.gold_trace.x_note": [1, "two"]}),
        "layout": "capture_v2",
    }
    trace = {
        "trace_id": "ep-1:gold",
        "role": "gold",
        "trace_index": 0,
        "form": "turns",
        "execution_success": True,
        "final_answer": "42",
        "final_answer_hash": "73475cb40a568e8d",
        "submission_metadata": "{}",
        "total_turns": None,
        "archived_turn_count": None,
    }
    consistency = {**trace, "trace_id": "ep-1:c0", "role": "consistency", "form": "flat"}
    turn = {
        "trace_id": "ep-1:gold",
        "turn_index": 0,
        "reasoning": "Count.",
        "code": "submit(42)",
        "success": True,
        "stdout": "",
        "stderr": "",
        "submitted_answer": "42",
        "has_correction": False,
    }
    hook = {
        "trace_id": "ep-1:gold",
        "turn_index": 0,
        "code_line": "n = 42",
        "variable_name": "n",
        "value_hash": "73475cb40a568e8d",
        "value": '{"size_bytes": 9, "truncated": true, "type": "list"}',
        "value_bounded": True,
        "description": None,
        "depends_on": [],
        "listed_in": "turn",
    }
    message = {
        "message_index": 0,
        "role": "user",
        "content": "How many?",
        "content_parts": None,
        "tool_calls": None,
        "tool_call_id": None,
        "name": None,
        "extra_fields": None,
    }
    question = {"question_text": "How many?", "hint": ""}
    return EpisodeRows(episode, question, [consistency, trace], [turn], [hook], [], [message])


def digest(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, default=lambda b: ["bounded", b.summary])
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def test_the_rebuild_rule_is_pinned() -> None:
    """A change to what ``rebuild`` makes of the rows breaks every patch already published:
    it must come with a new ``REBUILD_RULE`` (and this digest)."""
    assert (REBUILD_RULE, digest(rebuild(rows(), mark_bounded=True))) == (1, "438b5cc073c0e467")


def test_rebuild_speaks_the_line_s_layout() -> None:
    line = rebuild(rows())
    assert "gold_trace" in line and "teacher_gold_trace" not in line
    assert line["gold_trace"]["success"] is True and line["gold_trace"]["x_note"] == [1, "two"]
    assert line["triangulation"]["majority_count"] == 1
    assert line["question"] == {
        "id": "0123456789abcdef",
        "question_text": "How many?",
        "hint": None,
    }
    assert line["timestamp"] == "2025-12-21T16:00:00"


def test_a_patch_gives_back_the_line() -> None:
    built = rebuild(rows())
    line = json.loads(json.dumps(built))
    line["question"]["difficulty"] = "medium"
    del line["consistency_traces"][0]["hooks"]
    line["gold_trace"]["final_answer"] = float("nan")
    ops, _ = line_patch(rebuild(rows(), mark_bounded=True), line)
    assert sorted(len(op) for op in ops) == [1, 2, 2]
    assert same(apply_patch(rebuild(rows()), json.loads(json.dumps(ops))), line)


def test_a_bounded_value_is_counted_not_kept_unless_it_is_another_value() -> None:
    line = rebuild(rows())
    line["gold_trace"]["turns"][0]["execution"]["hooks"][0]["value"] = list(range(3))
    path = "$.gold_trace.turns[*].execution.hooks[*].value"
    ops, lost = line_patch(rebuild(rows(), mark_bounded=True), line)
    assert (ops, lost) == ([], {path: 1})
    ops, lost = line_patch(rebuild(rows(), mark_bounded=True), line, lambda v, s: False)
    assert lost == {} and ops == [
        [["gold_trace", "turns", 0, "execution", "hooks", 0, "value"], [0, 1, 2]]
    ]
    assert isinstance(
        rebuild(rows(), mark_bounded=True)["gold_trace"]["turns"][0]["execution"]["hooks"][0][
            "value"
        ],
        Bounded,
    )


@pytest.mark.parametrize(
    ("a", "b", "equal"),
    [
        (1, 1.0, True),
        (True, 1, False),
        (float("nan"), float("nan"), True),
        ({"a": [1, None]}, {"a": [1, None]}, True),
        ({"a": None}, {}, False),
        ("1", 1, False),
    ],
)
def test_same_is_json_value_equality(a: Any, b: Any, equal: bool) -> None:
    assert same(a, b) is equal
