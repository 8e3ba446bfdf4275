"""orm: every trace of an eligible episode, labelled by its answer hash (and, with an answer
tolerance, by value)."""

from __future__ import annotations

import polars as pl

from builder.derive import DeriveOptions, orm


def test_one_row_per_trace_with_label_and_success(derived) -> None:
    rows = derived["orm"].select("trace_id", "trace_role", "label", "execution_success").rows()
    assert rows == [
        ("ep-a:gold", "gold", True, True),
        ("ep-a:c0", "consistency", True, True),
        ("ep-a:c1", "consistency", False, True),  # ran, wrong answer
        ("ep-a:c2", "consistency", False, False),  # failed, never submitted
        ("ep-b:gold", "gold", True, True),
        ("ep-b:c0", "consistency", True, True),
    ]


def test_completion_is_the_trace_as_messages(derived, make) -> None:
    (flat,) = derived["orm"].filter(trace_id="ep-a:c2").to_dicts()
    assert flat["completion"] == [  # its cells in one message: no two assistant turns in a row
        {
            "role": "assistant",
            "content": f"```python\n{make.LOAD}\n```\n\n```python\n{make.BAD}\n```",
        },
    ]
    (gold,) = derived["orm"].filter(trace_id="ep-a:gold").to_dicts()
    # up to the last assistant message: the output of the submit is not the model's to write
    assert [m["role"] for m in gold["completion"]] == ["assistant", "user"] * 3 + ["assistant"]
    assert gold["completion"][-1]["content"] == f"```python\n{make.SUBMIT}\n```"
    assert gold["completion"][3] == {
        "role": "user",
        "content": "[stdout]:\n\n[stderr]:\nKeyError: 'revenu'",
    }
    assert [m["role"] for m in gold["prompt"]] == ["system", "user"]


def test_a_trace_without_turns_has_an_empty_completion(make) -> None:
    episode = make.episode("ep-h", "Two?", make.trace(2, cells=["submit(2)"]), [make.trace(2)])
    frame = orm.derive(make.build_tables([episode]), DeriveOptions()).collect()
    assert frame.select("trace_id", "completion").rows() == [
        ("ep-h:gold", [{"role": "assistant", "content": "```python\nsubmit(2)\n```"}]),
        ("ep-h:c0", []),
    ]


def test_with_an_answer_tolerance_an_answer_within_it_is_labelled_correct(make) -> None:
    """The capture code verified this gold answer by the two consistency answers within
    ±0.1 of it: they are correct, as the ``rl`` reward (``outcome_reward``) scores them; a
    string that differs in its dash only is the same answer there too."""
    consistency = [make.trace(54.33), make.trace(54.29), make.trace(3.0)]
    numbers = make.episode("ep-n", "Mean?", make.trace(54.36), consistency)
    dashes = [make.trace("a \u2014 b"), make.trace("a \u2013 b"), make.trace("c")]
    text = make.episode("ep-s", "Which?", make.trace("a - b"), dashes)
    tables = make.build_tables([numbers, text], answer_tolerance=0.1)
    labels = orm.derive(tables, DeriveOptions(answer_tolerance=0.1)).collect()
    assert dict(labels.select("trace_id", "label").rows()) == {
        "ep-n:gold": True,
        "ep-n:c0": True,
        "ep-n:c1": True,
        "ep-n:c2": False,
        "ep-s:gold": True,
        "ep-s:c0": True,
        "ep-s:c1": True,
        "ep-s:c2": False,
    }
    by_hash = orm.derive(tables, DeriveOptions()).collect().filter(pl.col("label"))
    assert sorted(by_hash.get_column("trace_id")) == ["ep-n:gold", "ep-s:gold"]
