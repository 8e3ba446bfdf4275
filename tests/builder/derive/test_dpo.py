"""dpo: good traces over failed consistency traces, gold pairs first, capped per episode."""

from __future__ import annotations

import pytest

from builder.derive import DeriveOptions, dpo

ALL_PAIRS = [
    ("ep-a:gold", "ep-a:c1", "gold_vs_failed_consistency"),
    ("ep-a:gold", "ep-a:c2", "gold_vs_failed_consistency"),
    ("ep-a:c0", "ep-a:c1", "consistency_vs_failed_consistency"),
    ("ep-a:c0", "ep-a:c2", "consistency_vs_failed_consistency"),
]


def pairs(frame) -> list[tuple[str, str, str]]:
    return frame.select("chosen_trace_id", "rejected_trace_id", "pair_kind").rows()


def test_pairs_and_kinds(derived) -> None:
    assert pairs(derived["dpo"]) == ALL_PAIRS


@pytest.mark.parametrize("cap", [0, 1, 2, 3, 4, 9])
def test_cap_keeps_the_first_pairs_in_rank_order(tables, cap: int) -> None:
    frame = dpo.derive(tables, DeriveOptions(dpo_max_pairs_per_episode=cap)).collect()
    assert pairs(frame) == ALL_PAIRS[:cap]


def test_chosen_and_rejected_are_rendered_traces(derived, make) -> None:
    (first,) = derived["dpo"].head(1).to_dicts()
    cells = [make.LOAD, "m = df['revenue'].median()", make.SUBMIT]
    assert first["rejected"] == [  # a flat trace: its cells are one assistant message
        {"role": "assistant", "content": "\n\n".join(f"```python\n{c}\n```" for c in cells)},
    ]
    assert first["chosen"][0] == {
        "role": "assistant",
        "content": f"Load the data.\n```python\n{make.LOAD}\n```",
    }
    assert first["prompt"][1] == {"role": "user", "content": "What is the mean revenue?"}
    # a completion is the model's: it ends with its last message, not the environment's reply
    assert first["chosen"][-1] == {
        "role": "assistant",
        "content": f"```python\n{make.SUBMIT}\n```",
    }
    for side in ("chosen", "rejected"):
        last = derived["dpo"][side].list.last().struct.field("role")
        assert last.unique().to_list() == ["assistant"], side
    assert (first["question_id"], first["difficulty"]) == (
        derived["orm"]["question_id"][0],
        "HARD",
    )


def test_negative_cap_is_rejected() -> None:
    with pytest.raises(ValueError, match="dpo_max_pairs_per_episode"):
        DeriveOptions(dpo_max_pairs_per_episode=-1)


def test_a_trace_that_reached_the_expected_answer_is_never_rejected(make) -> None:
    # c1 submitted the expected answer, then its run failed: its orm label is true, so it is
    # no rejected completion (nor a chosen one: its run failed). c2 ran, with a wrong answer.
    gold = make.trace(7, cells=["submit(7)"])
    runs = [
        make.trace(7, cells=["submit(7)"]),
        make.trace(7, success=False, cells=["submit(7)", "1 / 0"]),
        make.trace(8, cells=["submit(8)"]),
    ]
    episode = make.episode("ep-r", "Seven?", gold, runs, expected=7)
    frame = dpo.derive(make.build_tables([episode]), DeriveOptions()).collect()
    assert pairs(frame) == [
        ("ep-r:gold", "ep-r:c2", "gold_vs_failed_consistency"),
        ("ep-r:c0", "ep-r:c2", "consistency_vs_failed_consistency"),
    ]


def test_with_an_answer_tolerance_an_answer_within_it_is_never_rejected(make) -> None:
    """Consistency answers within the tolerance of the gold one verified it: they are
    chosen against the wrong answer, never rejected themselves."""
    consistency = [make.trace(54.33), make.trace(54.29), make.trace(3.0)]
    episode = make.episode("ep-n", "Mean?", make.trace(54.36), consistency)
    tables = make.build_tables([episode], answer_tolerance=0.1)
    pairs = dpo.derive(tables, DeriveOptions(answer_tolerance=0.1)).collect()
    assert pairs.select("chosen_trace_id", "rejected_trace_id").rows() == [
        ("ep-n:gold", "ep-n:c2"),
        ("ep-n:c0", "ep-n:c2"),
        ("ep-n:c1", "ep-n:c2"),
    ]
