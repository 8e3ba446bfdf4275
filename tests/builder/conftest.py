"""Episode factory for the core tests: hand-written dicts with ids and hashes from builder.contract.hashing.

Everything derived (question id, answer hashes, hook hashes, triangulation metadata, the
verified flag, rl_verification_data) is computed from the parts a test passes, so a factory
episode is clean; a test breaks exactly one thing on purpose and expects exactly one check.
"""

from __future__ import annotations

import copy
import json
from collections import Counter
from collections.abc import Iterable
from types import SimpleNamespace
from typing import Any

import pytest

from builder.contract.hashing import question_id, value_hash
from builder.sources.inputs import SourceLine
from builder.validate.validator import Valid
from schemas.episode import Episode

MISSING = object()


def question(
    text: str = "How many rows of sales.csv have price > 100?",
    hint: str | None = "Filter on price, then count the rows.",
    **extra: Any,
) -> dict[str, Any]:
    out = {
        "id": question_id(text, hint),
        "question_text": text,
        "hint": hint,
        "difficulty": "EASY",
        "n_steps": 2,
        "created_at": "2025-12-20T10:00:00",
    }
    return out | extra


def hook(
    name: str | None,
    value: Any,
    depends_on: Iterable[str] = (),
    code_line: str | None = None,
    stored: bool = True,
) -> dict[str, Any]:
    out = {
        "code_line": code_line if code_line is not None else f"{name} = step()",
        "variable_name": name,
        "value_hash": value_hash(value),
        "description": f"checkpoint {name}",
        "depends_on": list(depends_on),
    }
    return out | ({"value": value} if stored else {})


def turn(
    index: int,
    code: str,
    success: bool = True,
    hooks: Iterable[dict[str, Any]] = (),
    submitted: Any = MISSING,
    correction: dict[str, Any] | None = None,
    stderr: str = "",
) -> dict[str, Any]:
    execution: dict[str, Any] = {
        "success": success,
        "stdout": "ok\n" if success else "",
        "stderr": stderr,
        "hooks": list(hooks),
    }
    if submitted is not MISSING:
        execution["submitted_answer"] = submitted
    out = {"turn_index": index, "reasoning": f"Step {index}.", "code": code, "execution": execution}
    return out | ({"correction": correction} if correction is not None else {})


def correction(corrects_turn: int, error_type: str = "KeyError") -> dict[str, Any]:
    return {
        "corrects_turn": corrects_turn,
        "error_type": error_type,
        "error_message": f"{error_type}: 'prices'",
        "attempts_since_error": 1,
        "code_diff": {"removed_lines": ["df['prices']"], "added_lines": ["df['price']"]},
    }


def default_turns(answer: Any) -> list[dict[str, Any]]:
    return [
        turn(0, "df = pd.read_csv('sales.csv')", hooks=[hook("df", {"shape": [300, 4]})]),
        turn(1, "n = int((df.price > 100).sum())", hooks=[hook("n", answer, ["df"])]),
        turn(2, "submit(n)", submitted=answer),
    ]


def turns_trace(
    answer: Any = 42,
    turns: list[dict[str, Any]] | None = None,
    success: bool = True,
    submitted: bool = True,
    hooks: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """A trace with ``turns`` (hooks per turn; trace-level ``hooks`` only when given)."""
    turns = default_turns(answer) if turns is None else turns
    out = {
        "turns": turns,
        "final_answer": answer if submitted else None,
        "final_answer_hash": value_hash(answer) if submitted else None,
        "execution_success": success,
        "submission_metadata": {"tool": "submit", "answer_type": type(answer).__name__},
        "total_turns": len(turns),
        "archived_turn_count": 0,
    }
    return out | ({"hooks": hooks} if hooks is not None else {})


def flat_trace(
    answer: Any = 42,
    cells: Iterable[str] = ("x = 40 + 2", "submit(x)"),
    hooks: list[dict[str, Any]] | None = None,
    success: bool = True,
    submitted: bool = True,
) -> dict[str, Any]:
    """A flat trace: ``code_cells`` + trace-level ``hooks``."""
    cells = list(cells)
    return {
        "code_cells": cells,
        "final_answer": answer if submitted else None,
        "final_answer_hash": value_hash(answer) if submitted else None,
        "execution_success": success,
        "hooks": [hook("x", answer, stored=False)] if hooks is None else hooks,
        "submission_metadata": {},
        "total_turns": len(cells),
        "archived_turn_count": 0,
    }


def default_consistency() -> list[dict[str, Any]]:
    return [flat_trace(42), flat_trace(42), flat_trace(7, success=False, submitted=False)]


def episode(
    episode_id: str = "ep-0001",
    q: dict[str, Any] | None = None,
    gold: dict[str, Any] | None = None,
    consistency: list[dict[str, Any]] | None = None,
    verified: bool | None = None,
) -> dict[str, Any]:
    """A clean episode; ``verified`` defaults to what the traces show."""
    q = question() if q is None else q
    gold = turns_trace() if gold is None else gold
    consistency = default_consistency() if consistency is None else consistency
    votes = Counter(t["final_answer_hash"] for t in consistency if t.get("final_answer_hash"))
    majority, count = votes.most_common(1)[0] if votes else (None, 0)
    gold_hash = gold.get("final_answer_hash")
    holds = bool(gold["execution_success"] and gold_hash is not None and gold_hash == majority)
    return {
        "episode_id": episode_id,
        "timestamp": "2025-12-21T16:00:00.000000",
        "verified": holds if verified is None else verified,
        "question": q,
        "teacher_gold_trace": gold,
        "consistency_traces": consistency,
        "conversation_for_sft": {
            "system_prompt": "You are a data analyst. Use submit() for the answer.",
            "messages": [
                {"role": "user", "content": q["question_text"]},
                {"role": "assistant", "content": "```python\nsubmit(n)\n```"},
            ],
        },
        "rl_verification_data": {
            "expected_final_answer": gold.get("final_answer"),
            "expected_final_answer_hash": value_hash(gold.get("final_answer")),
        },
        "triangulation_metadata": {
            "n_consistency_runs": len(consistency),
            "n_consistency_succeeded": sum(t["execution_success"] for t in consistency),
            "majority_answer_hash": majority,
            "majority_count": count,
            "gold_matches_majority": gold_hash is not None and gold_hash == majority,
        },
    }


def line(record: Any) -> bytes:
    """One JSONL line (no terminator), as capture code would write it."""
    return json.dumps(record).encode()


def valid(record: dict[str, Any], path: str = "episodes.jsonl", number: int = 1) -> Valid:
    """A record through the real model, as the validate stage hands it to normalize."""
    return Valid(SourceLine(path, number, line(record)), Episode.model_validate(record))


@pytest.fixture
def make() -> SimpleNamespace:
    """The factory functions; ``make.copy`` deep-copies so tests can tamper freely."""
    return SimpleNamespace(
        question=question,
        hook=hook,
        turn=turn,
        correction=correction,
        turns_trace=turns_trace,
        flat_trace=flat_trace,
        episode=episode,
        line=line,
        valid=valid,
        copy=copy.deepcopy,
        MISSING=MISSING,
    )
