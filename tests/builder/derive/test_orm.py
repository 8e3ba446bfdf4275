"""orm: every trace of an eligible episode, labelled by its answer hash."""

from __future__ import annotations

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
