"""rl: prompt-only rows with the expected answer and the gold hooks."""

from __future__ import annotations

from builder.contract.hashing import value_hash
from builder.derive import DEFAULT_SYSTEM_PROMPT


def test_prompt_expected_answer_and_gold_hooks(derived) -> None:
    assert sorted(derived["rl"]["episode_id"]) == ["ep-a", "ep-b"]
    (a,) = derived["rl"].filter(episode_id="ep-a").to_dicts()
    assert a["prompt"] == [
        {"role": "system", "content": DEFAULT_SYSTEM_PROMPT},
        {"role": "user", "content": "What is the mean revenue?"},
    ]
    assert a["question"] == "What is the mean revenue?"
    assert (a["expected_final_answer"], a["expected_final_answer_hash"]) == (
        "42.5",
        value_hash(42.5),
    )
    assert a["gold_hooks"] == [
        {"name": "df", "value_hash": value_hash({"shape": [3, 2]}), "depends_on": []},
        {"name": "m", "value_hash": value_hash(42.5), "depends_on": ["df"]},
    ]


def test_without_rl_verification_data_the_gold_answer_is_expected(derived) -> None:
    (b,) = derived["rl"].filter(episode_id="ep-b").to_dicts()
    assert (b["expected_final_answer"], b["expected_final_answer_hash"]) == ("3", value_hash(3))
    assert b["prompt"][0] == {"role": "system", "content": "Be brief."}
    assert b["gold_hooks"] == [{"name": "n", "value_hash": value_hash(3), "depends_on": []}]
