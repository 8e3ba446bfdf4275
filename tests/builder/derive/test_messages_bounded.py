"""Bounded execution outputs in derived conversations (builder.derive.messages.bounded).

Each stdout/stderr rendered into a message keeps at most ``max_output_chars`` characters:
the first half and the last half around ``\\n…[truncated N characters]…\\n``. The tables
keep the full text.
"""

from __future__ import annotations

from types import SimpleNamespace

import polars as pl
import pytest

from builder.derive import DeriveOptions, derive_all
from builder.derive.messages import bounded, feedback_content, thousands, turn_messages
from builder.derive.options import DEFAULT_MAX_OUTPUT_CHARS


def render(texts: list[str | None], limit: int) -> list[str | None]:
    frame = pl.DataFrame({"t": texts}, schema={"t": pl.String})
    return frame.select(bounded(pl.col("t"), limit)).to_series().to_list()


def marker(cut: str) -> str:
    return f"\n…[truncated {cut} characters]…\n"


def test_default_limit_is_8000() -> None:
    assert DEFAULT_MAX_OUTPUT_CHARS == DeriveOptions().max_output_chars == 8_000


def test_short_outputs_are_unchanged() -> None:
    texts = ["", "short", "x" * 8_000, None]
    assert render(texts, 8_000) == texts


def test_long_output_keeps_head_and_tail_around_the_marker() -> None:
    text = "".join(f"{i:05d}\n" for i in range(3_000))  # 18,000 characters
    [out] = render([text], 8_000)
    assert out == text[:4_000] + marker("10,000") + text[-4_000:]


def test_one_character_over_and_odd_limits() -> None:
    assert render(["abcdef"], 5) == ["ab" + marker("1") + "def"]
    assert render(["abcdef"], 1) == ["" + marker("5") + "f"]


def test_characters_not_bytes() -> None:
    text = "é" * 10 + "🙂" * 10
    [out] = render([text], 6)
    assert out == "é" * 3 + marker("14") + "🙂" * 3


@pytest.mark.parametrize(
    ("n", "text"),
    [
        (0, "0"),
        (7, "7"),
        (999, "999"),
        (1_000, "1,000"),
        (12_345, "12,345"),
        (10**9, "1,000,000,000"),
    ],
)
def test_thousands(n: int, text: str) -> None:
    assert pl.select(thousands(pl.lit(n))).item() == text


def test_stdout_and_stderr_are_bounded_each() -> None:
    frame = pl.DataFrame({"stdout": ["o" * 30], "stderr": ["e" * 25]})
    [content] = frame.select(feedback_content(10)).to_series().to_list()
    assert content == (
        "[stdout]:\n"
        + "o" * 5
        + marker("20")
        + "o" * 5
        + "\n[stderr]:\n"
        + "e" * 5
        + marker("15")
        + "e" * 5
    )


def test_options_reject_a_limit_below_one() -> None:
    with pytest.raises(ValueError, match="max_output_chars"):
        DeriveOptions(max_output_chars=0)


LONG_OUT = "".join(f"row {i:06d}\n" for i in range(2_000))  # 22,000 characters
LONG_ERR = "Traceback (most recent call last):\n" + "  frame\n" * 1_500 + "KeyError: 'revenu'"


def long_output_tables(make: SimpleNamespace) -> dict[str, pl.LazyFrame]:
    """A verified episode whose gold and consistency traces print far more than any limit,
    with a corrected failure (self_correction) and a wrong consistency run (dpo)."""
    t, h = make.turn, make.hook
    turns = [
        t(0, make.LOAD, stdout=LONG_OUT, hooks=[h(make.LOAD, {"shape": [3, 2]}, "df")]),
        t(1, make.BAD, success=False, stderr=LONG_ERR),
        t(
            2,
            make.GOOD,
            stdout="42.5",
            hooks=[h(make.GOOD, 42.5, "m", depends_on=["df"])],
            correction=make.correction(1, "KeyError", [make.BAD], [make.GOOD]),
        ),
        t(3, make.SUBMIT, submitted=42.5),
    ]
    gold = make.trace(42.5, turns=turns)
    agree = make.trace(42.5, turns=[dict(turn) for turn in turns])
    wrong = make.trace(41.0, cells=[make.LOAD, "submit(41.0)"])
    ep = make.episode("ep-long", "What is the mean revenue?", gold, [agree, wrong], expected=42.5)
    return make.build_tables([ep])


def feedback_messages(frames: dict[str, pl.DataFrame]) -> dict[str, list[str]]:
    """Rendered feedback messages (``[stdout]:`` …) of every objective, by objective."""
    out: dict[str, list[str]] = {}
    for name, frame in frames.items():
        for column, dtype in frame.schema.items():
            inner = dtype.inner if isinstance(dtype, pl.List) else None
            if not isinstance(inner, pl.Struct) or "content" not in [f.name for f in inner.fields]:
                continue
            contents = frame[column].explode().struct.field("content").drop_nulls()
            feedback = [c for c in contents if c.startswith("[stdout]:")]
            if feedback:
                out.setdefault(name, []).extend(feedback)
    return out


def test_tables_keep_the_full_text(make: SimpleNamespace) -> None:
    tables = long_output_tables(make)
    turns = tables["turns"].collect()
    assert LONG_OUT in turns["stdout"].to_list()
    assert LONG_ERR in turns["stderr"].to_list()


def test_turn_messages_bound_with_the_given_limit(make: SimpleNamespace) -> None:
    tables = long_output_tables(make)
    messages = turn_messages(tables, max_output_chars=100).collect()
    feedback = messages.filter(pl.col("role") == "user")["content"].to_list()
    assert "[stdout]:\n" + LONG_OUT[:50] + marker("21,900") + LONG_OUT[-50:] in feedback
    assert all(len(c) < 400 for c in feedback)


def check_objectives_bound_outputs(make: SimpleNamespace, options: DeriveOptions) -> None:
    """sft (rendered from the gold trace), self_correction, orm and dpo carry outputs."""
    frames = {n: f.collect() for n, f in derive_all(long_output_tables(make), options).items()}
    found = feedback_messages(frames)
    assert {"sft", "self_correction", "orm", "dpo"} <= set(found)
    cap = options.max_output_chars
    for name, contents in found.items():
        assert not any(LONG_OUT in c or LONG_ERR in c for c in contents), name
        longest = max(len(c) for c in contents)
        # prefix + two bounded outputs + two markers
        assert longest <= len("[stdout]:\n\n[stderr]:\n") + 2 * (cap + len(marker("99,999"))), name
        assert any(f"…[truncated {len(LONG_OUT) - cap:,} characters]…" in c for c in contents), name


def test_every_rendering_objective_bounds_outputs_by_default(make: SimpleNamespace) -> None:
    check_objectives_bound_outputs(make, DeriveOptions())


def test_configured_limit_reaches_every_rendering_objective(make: SimpleNamespace) -> None:
    """Needs sft, self_correction, orm and dpo to pass ``options.max_output_chars`` on to
    ``turn_messages`` / ``trace_messages``."""
    check_objectives_bound_outputs(make, DeriveOptions(max_output_chars=300))


def test_feedback_in_a_captured_conversation_is_bounded_and_the_question_is_not(make) -> None:
    """The capture writes execution feedback into the conversation's later user messages
    (``Output:\\n{stdout}``) and tool results into ``tool`` messages: bounded as a rendered
    turn's output is. The first user message (the question) and assistant messages are not."""
    long = "Q" * 30
    conversation = {
        "system_prompt": "sys",
        "messages": [
            {"role": "user", "content": long},
            {"role": "assistant", "content": "A" * 30},
            {"role": "user", "content": "Output:\n" + "o" * 30},
            {"role": "tool", "content": "t" * 30, "tool_call_id": "c1"},
        ],
    }
    base = make.analysis_episode()
    episode = {**base, "conversation_for_sft": conversation}
    derived = derive_all(make.build_tables([episode]), DeriveOptions(max_output_chars=10))
    messages = derived["sft"].collect().row(0, named=True)["messages"]
    contents = [(m["role"], m["content"]) for m in messages]
    assert contents[1:3] == [("user", long), ("assistant", "A" * 30)]
    assert contents[3] == ("user", "Outpu" + marker("28") + "o" * 5)
    assert contents[4] == ("tool", "t" * 5 + marker("20") + "t" * 5)
