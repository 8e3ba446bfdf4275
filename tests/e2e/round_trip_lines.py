"""Hypothesis strategies for episode lines the builder accepts, in both layouts, with unknown
fields at every level, both trace forms, corrections, hook values of every stored kind,
NaN/Infinity answers and unicode (``test_round_trip.py``)."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from builder.contract.hashing import question_id
from schemas.layouts import CAPTURE_V2

CHARS = st.characters(blacklist_categories=("Cs",))  # a lone surrogate is no UTF-8 text
TEXT = st.text(CHARS, max_size=12)
HEX = st.text("0123456789abcdef", min_size=16, max_size=16)
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    # past 64 bits yet a float holds them exactly: a parser that reads them as floats finds
    # them equal, so only the exact integer coming back shows they were kept
    | st.sampled_from([2**64, 10**20, -(2**64) - 2**12, 2**70, 10**22])
    | st.floats(allow_nan=True, allow_infinity=True)
    | TEXT
)
JSON = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
    max_leaves=6,
)
# Unknown keys: any text, dots and brackets included, never a field of the model
EXTRA = st.dictionaries(TEXT.map(lambda s: "x_" + s), JSON, max_size=2)
TIMESTAMPS = st.sampled_from(
    [
        "2025-12-21T16:00:00.000000",
        "2025-12-21T16:00:00",
        "2025-12-21 16:00:00.123456",
        "2025-12-21T18:00:00+02:00",
        "2025-12-21T16:00:00Z",
    ]
)
# What a capture stores of a hook value: a scalar, the summaries of a DataFrame and of a
# Series, the metadata of a large container, a nested value, a long string (bounded here)
HOOK_VALUES = st.one_of(
    SCALARS,
    st.builds(
        lambda rows, cols: {
            "type": "DataFrame",
            "shape": [rows, len(cols)],
            "columns": cols,
            "dtypes": {c: "int64" for c in cols},
            "head": [{c: i for c in cols} for i in range(min(rows, 3))],
            "numeric_summary": {c: {"mean": 1.5, "min": 0, "max": rows} for c in cols},
        },
        st.integers(0, 500),
        st.lists(TEXT, max_size=3, unique=True),
    ),
    st.builds(
        lambda n: {
            "type": "Series",
            "name": "price",
            "dtype": "float64",
            "size": n,
            "head": [0.5, float("nan")][: min(n, 2)],
        },
        st.integers(0, 1000),
    ),
    st.builds(lambda n: {"type": "list", "size": n, "size_bytes": 50 * n}, st.integers(0, 10**6)),
    JSON,
    st.text(CHARS, min_size=200, max_size=400),
)


def _some(draw: Any, record: dict[str, Any], optional: tuple[str, ...]) -> dict[str, Any]:
    """``record`` with some of its optional keys left out, plus unknown fields."""
    gone = draw(st.sets(st.sampled_from(optional))) if optional else set()
    return {k: v for k, v in record.items() if k not in gone} | draw(EXTRA)


@st.composite
def hooks(draw: Any) -> dict[str, Any]:
    record = {
        "code_line": draw(TEXT),
        "variable_name": draw(st.none() | TEXT),
        "value_hash": draw(HEX),
        "description": draw(st.none() | TEXT),
        "depends_on": draw(st.lists(TEXT, max_size=2)),
        "value": draw(HOOK_VALUES),
    }
    return _some(draw, record, ("variable_name", "description", "depends_on", "value"))


@st.composite
def turns(draw: Any, index: int) -> dict[str, Any]:
    execution = {
        "success": draw(st.booleans()),
        "stdout": draw(TEXT),
        "stderr": draw(TEXT),
        "hooks": draw(st.lists(hooks(), max_size=2)),
        "submitted_answer": draw(JSON),
    }
    record: dict[str, Any] = {
        "turn_index": index,
        "reasoning": draw(st.none() | TEXT),
        "code": draw(TEXT),
        "execution": _some(draw, execution, ("stdout", "stderr", "hooks", "submitted_answer")),
    }
    if index and draw(st.booleans()):
        diff = {"removed_lines": draw(st.lists(TEXT, max_size=2)), "added_lines": [draw(TEXT)]}
        fix = {
            "corrects_turn": index - 1,
            "error_type": "KeyError",
            "error_message": draw(TEXT),
            "attempts_since_error": 1,
            "code_diff": _some(draw, diff, ("removed_lines",)),
        }
        record["correction"] = _some(draw, fix, ("attempts_since_error", "code_diff"))
    elif draw(st.booleans()):
        record["correction"] = None
    return _some(draw, record, ("reasoning",))


ANSWERS = JSON | st.sampled_from([float("nan"), float("inf"), float("-inf")])


@st.composite
def traces(draw: Any) -> dict[str, Any]:
    record: dict[str, Any] = {
        "final_answer": draw(ANSWERS),
        "final_answer_hash": draw(st.none() | HEX),
        "execution_success": draw(st.booleans()),
        "submission_metadata": draw(st.dictionaries(TEXT, JSON, max_size=2)),
        "total_turns": draw(st.integers(0, 5)),
        "archived_turn_count": 0,
    }
    if draw(st.booleans()):  # flat: code cells and trace-level hooks
        record["code_cells"] = draw(st.lists(TEXT, max_size=3))
        record["hooks"] = draw(st.lists(hooks(), max_size=3))
    else:
        record["turns"] = [draw(turns(i)) for i in range(draw(st.integers(0, 3)))]
        listed = [h for t in record["turns"] for h in t["execution"].get("hooks", [])]
        if listed and draw(st.booleans()):  # the same checkpoints listed at trace level too
            record["hooks"] = [dict(h) for h in listed]
    optional = ("final_answer", "submission_metadata", "total_turns", "archived_turn_count")
    return _some(draw, record, optional)


@st.composite
def messages(draw: Any) -> dict[str, Any]:
    content = draw(
        TEXT
        | st.none()
        | st.lists(st.fixed_dictionaries({"type": st.just("text"), "text": TEXT}), max_size=2)
    )
    record: dict[str, Any] = {
        "role": draw(st.sampled_from(["user", "assistant", "tool"])),
        "content": content,
    }
    if draw(st.booleans()):
        record["tool_calls"] = [
            {
                "id": draw(TEXT),
                "type": "function",
                "function": {"name": draw(TEXT), "arguments": draw(TEXT)},
            }
        ]
    if draw(st.booleans()):
        record["name"] = draw(TEXT)
    return record | draw(EXTRA)


@st.composite
def episode_lines(draw: Any, number: int) -> dict[str, Any]:
    # a question's text holds something besides spaces (blank text is a reject)
    text = draw(st.text(CHARS, min_size=1, max_size=20).filter(lambda t: not t.isspace()))
    hint = draw(st.none() | TEXT)
    question: dict[str, Any] = {
        "id": draw(st.sampled_from([question_id(text, hint), None])),
        "question_text": text,
        "hint": hint,
        "difficulty": draw(st.sampled_from([None, "EASY", "medium", "Very hard", "odd"])),
        "n_steps": draw(st.none() | st.integers(0, 9)),
        "created_at": draw(st.none() | TIMESTAMPS),
        "ground_truth": draw(JSON),
        "template_params": draw(JSON),
    }
    optional = (
        "id",
        "hint",
        "difficulty",
        "n_steps",
        "created_at",
        "ground_truth",
        "template_params",
    )
    line: dict[str, Any] = {
        "episode_id": f"ep-{number}-{draw(TEXT)}",
        "timestamp": draw(TIMESTAMPS),
        "verified": draw(st.booleans()),
        "question": _some(draw, question, optional),
        "teacher_gold_trace": draw(traces()),
        "consistency_traces": draw(st.lists(traces(), max_size=2)),
        "conversation_for_sft": {
            "system_prompt": draw(st.none() | TEXT),
            "messages": draw(st.lists(messages(), max_size=2)),
        }
        | draw(EXTRA),
        "rl_verification_data": {
            "expected_final_answer_hash": draw(st.none() | HEX),
            "expected_final_answer": draw(ANSWERS),
        }
        | draw(EXTRA),
        "triangulation_metadata": {
            "n_consistency_runs": 2,
            "n_consistency_succeeded": 1,
            "majority_answer_hash": draw(st.none() | HEX),
            "majority_count": 1,
            "gold_matches_majority": draw(st.booleans()),
        }
        | draw(EXTRA),
        "csv_source": draw(TEXT),
    }
    optional = (
        "timestamp",
        "consistency_traces",
        "conversation_for_sft",
        "rl_verification_data",
        "triangulation_metadata",
        "csv_source",
    )
    line = _some(draw, line, optional)
    if draw(st.booleans()):
        return line
    # The later layout: its own key names, its producer's question ids, its own extras
    later = CAPTURE_V2.to_line(line)
    later.pop("conversation_for_sft", None)
    later.pop("rl_verification_data", None)
    if draw(st.booleans()):
        later["question"] = {**later["question"], "id": f"llm_ds_{number:04d}"}
    later["timing"] = {"gold_elapsed": draw(st.floats(0, 100)), "total_elapsed": 1.5}
    later["source"] = draw(st.sampled_from(["llm", "synthetic"]))
    return later
