"""Rejects that teach: a malformed id or hash says what it should be.

A line whose question id or answer hash is not 16 lowercase hex characters (capture test
fixtures write ``"q001"`` or ``"hash0"``) is a schema reject: the patterns are the contract,
and such a line cannot be checked against its capture. It is kept in the rejects file with
the raw line, and its message names the value the field should hold, computed from the line
itself with ``builder.contract.hashing``, so fixing the producer is one copy.
"""

from __future__ import annotations

import re
from typing import Any

from builder.contract.hashing import question_id, value_hash

_STEP = re.compile(r"\.(\w+)|\[(\d+)\]")
HEX16 = "16 lowercase hex characters"


def _at(value: Any, path: str) -> Any:
    """The value at a ``$.a.b[2]`` path, or None."""
    for key, index in _STEP.findall(path[1:]):
        try:
            value = value[key] if key else value[int(index)]
        except (KeyError, IndexError, TypeError):
            return None
    return value


def expected_value(
    line: Any, path: str, precision: int | None = None
) -> tuple[str, str | None] | None:
    """(what the field is defined as, its value computed from the line under the hash
    scheme ``precision``: None for null) for an id or hash field at ``path``; None for any
    other field."""
    parent, _, name = path.rpartition(".")
    holder = _at(line, parent)
    if not isinstance(holder, dict):
        return None
    scheme = "" if precision is None else f", rounded to {precision}"
    try:
        if name == "id" and parent in ("$.question", "$"):
            text, hint = holder.get("question_text"), holder.get("hint")
            if isinstance(text, str) and (hint is None or isinstance(hint, str)):
                return "sha256(question_text|hint)[:16]", question_id(text, hint)
        for answer in ("final_answer", "expected_final_answer"):
            if name == f"{answer}_hash" and holder.get(answer) is not None:
                return f"value_hash({answer}{scheme})", value_hash(holder[answer], precision)
            if name == f"{answer}_hash":  # nothing submitted: no hash
                return f"with no {answer} it", None
        if name == "ground_truth_hash" and "ground_truth" in holder:
            truth = value_hash(holder["ground_truth"], precision)
            return f"value_hash(ground_truth{scheme})", truth
    except (TypeError, ValueError, RecursionError):
        return None
    return None


def teach(line: Any, path: str, message: str, precision: int | None = None) -> str:
    """``message``, or for a malformed id or hash what the value should be (under the hash
    scheme ``precision``)."""
    if path.endswith(".question_text") and isinstance(_at(line, path), str):
        return (
            "empty or only spaces or invisible characters: a question needs its text (the "
            "prompt it trains on)"
        )
    found = expected_value(line, path, precision)
    if found is None:
        if _underivable_id(line, path):
            return f"{message}; it is computed from question_text and hint, not valid here"
        return message
    formula, expected = found
    value = _at(line, path)
    should = f"{formula} is {'null' if expected is None else repr(expected)}"
    if isinstance(value, str):  # the reject's path names the field, as the line spells it
        return f"{value!r} is not {HEX16}; {should}"
    return f"{message}; {should}"  # missing, or not a string


def _underivable_id(line: Any, path: str) -> bool:
    """A question id left out (null or absent) that could not be computed, because the
    question's text or hint is itself not valid."""
    parent, _, name = path.rpartition(".")
    holder = _at(line, parent)
    return (
        name == "id"
        and parent in ("$.question", "$")
        and isinstance(holder, dict)
        and (holder.get("id") is None)
    )
