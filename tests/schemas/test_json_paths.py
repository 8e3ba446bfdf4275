"""How a JSON path spells a key (``schemas.lines.path_key``) and reads it back
(``path_steps``): every key, of any text, is one step; plain names keep the dotted spelling;
the rebuild puts an unknown field with such a key back where the line had it."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from schemas.lines import EpisodeRows, path_key, path_steps, rebuild

KEYS = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)


def test_plain_names_keep_the_dotted_spelling() -> None:
    for key in ("x_note", "latency_ms", "_private", "K2", "café", "ünï"):
        assert path_key(key) == f".{key}"
    for key, spelled in [
        ("a.b[0]", '["a.b[0]"]'),
        ("tag-set", '["tag-set"]'),
        ("1st", '["1st"]'),
        ("", '[""]'),
        ('say "hi"\\', '["say \\"hi\\"\\\\"]'),
        ("run id", '["run id"]'),
    ]:
        assert path_key(key) == spelled


@given(st.lists(KEYS | st.integers(0, 99), max_size=5))
def test_every_path_reads_back_as_its_steps(steps: list[Any]) -> None:
    path = "$" + "".join(f"[{s}]" if isinstance(s, int) else path_key(s) for s in steps)
    assert path_steps(path) == steps


def test_nested_keys_and_a_dotted_key_are_different_paths() -> None:
    assert path_steps('$["a.b[0]"]') == ["a.b[0]"]
    assert path_steps("$.a.b[0]") == ["a", "b", 0]


def _episode_rows(extra: dict[str, Any]) -> EpisodeRows:
    episode = {
        "episode_id": "ep-1",
        "question_id": "0123456789abcdef",
        "timestamp": None,
        "verified": False,
        "system_prompt": None,
        "n_messages": None,
        "expected_final_answer": None,
        "expected_final_answer_hash": None,
        "gold_matches_majority": None,
        "csv_source": None,
        "extra_fields": json.dumps(extra),
        "layout": "seeds",
    }
    trace = {
        "trace_id": "ep-1:gold",
        "role": "gold",
        "trace_index": 0,
        "form": "flat",
        "execution_success": True,
        "final_answer": None,
        "final_answer_hash": None,
        "submission_metadata": "{}",
        "total_turns": None,
        "archived_turn_count": None,
    }
    return EpisodeRows(episode, {"question_text": "Q?", "hint": None}, [trace], [], [], [], [])


def test_the_rebuild_puts_a_bracketed_key_back_where_it_was() -> None:
    line = rebuild(
        _episode_rows(
            {
                '$["a.b[0]"]': 1,
                "$.a": {"b": [2]},
                '$.teacher_gold_trace["x.y"]': 3,
                '$.question["say \\"hi\\""]': 4,
            }
        )
    )
    assert line["a.b[0]"] == 1
    assert line["a"] == {"b": [2]}
    assert line["teacher_gold_trace"]["x.y"] == 3
    assert line["question"]['say "hi"'] == 4
