"""self_correction: one row per correction, the loss on the fix only."""

from __future__ import annotations

from builder.derive import DEFAULT_SYSTEM_PROMPT, DeriveOptions, self_correction


def test_one_row_per_correction_in_gold_and_consistency_traces(derived, make) -> None:
    frame = derived["self_correction"]
    assert frame.select("trace_id", "trace_role", "turn_index", "corrects_turn").rows() == [
        ("ep-a:gold", "gold", 2, 1),
        ("ep-a:c0", "consistency", 2, 1),
    ]
    (gold,) = frame.head(1).to_dicts()
    assert gold["failed_code"] == make.BAD
    assert gold["fixed_code"] == make.GOOD
    assert gold["error_feedback"] == "KeyError: 'revenu'"
    assert gold["code_diff"] == {"removed_lines": [make.BAD], "added_lines": [make.GOOD]}
    assert (gold["error_type"], gold["error_message"]) == ("KeyError", "KeyError: boom")
    assert (gold["session_id"], gold["source"]) == (None, "episode")


def test_prompt_completion_and_weighted_messages(derived, make) -> None:
    (gold,) = derived["self_correction"].head(1).to_dicts()
    prompt = [
        ("system", DEFAULT_SYSTEM_PROMPT),
        ("user", "What is the mean revenue?"),
        ("assistant", f"Load the data.\n```python\n{make.LOAD}\n```"),
        ("user", "[stdout]:\nok"),
        ("assistant", f"```python\n{make.BAD}\n```"),
        ("user", "[stdout]:\n\n[stderr]:\nKeyError: 'revenu'"),
    ]
    fix = ("assistant", f"Fix the column.\n```python\n{make.GOOD}\n```")
    assert [(m["role"], m["content"]) for m in gold["prompt"]] == prompt
    assert [(m["role"], m["content"]) for m in gold["completion"]] == [fix]
    assert [(m["role"], m["content"], m["weight"]) for m in gold["messages"]] == [
        (role, content, 0 if role == "assistant" else None) for role, content in prompt
    ] + [(*fix, 1)]


def test_several_failed_attempts_are_all_in_the_prompt(make) -> None:
    t = make.turn
    gold = make.trace(
        2,
        turns=[
            t(0, "b = x", success=False, stderr="NameError: x"),
            t(1, "b = y", success=False, stderr="NameError: y"),
            t(2, "b = 2", correction=make.correction(0, "NameError", ["b = x"], ["b = 2"])),
            t(3, "submit(b)", submitted=2),
        ],
    )
    episode = make.episode("ep-i", "Two.", gold, [make.trace(2, cells=["submit(2)"])])
    frame = self_correction.derive(make.build_tables([episode]), DeriveOptions()).collect()
    (row,) = frame.to_dicts()
    assert (row["failed_code"], row["error_feedback"]) == ("b = x", "NameError: x")
    assert [m["content"] for m in row["prompt"][2:]] == [
        "```python\nb = x\n```",
        "[stdout]:\n\n[stderr]:\nNameError: x",
        "```python\nb = y\n```",
        "[stdout]:\n\n[stderr]:\nNameError: y",
    ]
    assert [m["weight"] for m in row["messages"]] == [None, None, 0, None, 0, None, 1]
