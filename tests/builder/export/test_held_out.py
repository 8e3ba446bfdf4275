"""Rows held out of training, parted from one collected frame (``held_out.parted``): the
same kept rows, in the same order, and the same counts by reason as ``without`` and
``removed_rows`` of the lazy frame."""

from __future__ import annotations

import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

from builder.export.held_out import mark_held, parted, removed_rows, without

IDS = st.sampled_from(["e1", "e2", "e3", "e4", None])
QUESTIONS = st.sampled_from(["q1", "q2", "q3"])


@settings(max_examples=100, deadline=None)
@given(
    rows=st.lists(st.tuples(IDS, QUESTIONS, st.integers(0, 9)), max_size=20),
    held_rows=st.lists(
        st.tuples(IDS, st.one_of(QUESTIONS, st.none()), st.sampled_from(["a", "b"])),
        min_size=1,
        max_size=6,
    ),
)
def test_parted_rows_are_those_of_without_and_removed_rows(
    rows: list[tuple[str | None, str, int]], held_rows: list[tuple[str | None, str | None, str]]
) -> None:
    frame = pl.LazyFrame(
        rows,
        schema={"episode_id": pl.String, "question_id": pl.String, "x": pl.Int64},
        orient="row",
    )
    held = pl.DataFrame(
        held_rows,
        schema={"episode_id": pl.String, "question_id": pl.String, "reason": pl.String},
        orient="row",
    )
    kept, counts = parted(mark_held(frame, held).collect())
    assert_frame_equal(kept, without(frame, held).collect())
    assert counts == dict(removed_rows(frame, held).collect().iter_rows())


def test_nothing_held_out_parts_nothing() -> None:
    frame = pl.DataFrame({"question_id": ["q1", "q2"], "_held_out": [None, None]})
    kept, counts = parted(frame.cast({"_held_out": pl.String}))
    assert kept.columns == ["question_id"] and kept.height == 2 and counts == {}
