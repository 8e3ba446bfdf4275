"""Turns and traces rendered once per bucket (``messages.render_turns``, ``render_traces``)
give every objective the same rows as rendering them where each objective uses them."""

from __future__ import annotations

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from builder.derive import DeriveOptions, derive_all
from builder.derive.messages import messages_key, render_traces, render_turns, rendered_key


@pytest.mark.parametrize("chars", [8_000, 12])  # 12: outputs truncated
def test_every_objective_is_the_same_with_turns_rendered_once(
    tables: dict[str, pl.LazyFrame], chars: int
) -> None:
    options = DeriveOptions(max_output_chars=chars)
    rendered = {**tables, rendered_key(chars): render_turns(tables, chars).collect().lazy()}
    traces = render_traces(rendered, chars).collect().lazy()
    turns_once = derive_all(rendered, options)
    both_once = derive_all({**rendered, messages_key(chars): traces}, options)
    for name, frame in derive_all(tables, options).items():
        expected = frame.collect()
        assert_frame_equal(turns_once[name].collect(), expected, check_exact=True)
        assert_frame_equal(both_once[name].collect(), expected, check_exact=True)


def test_turns_rendered_for_another_output_limit_are_not_used(
    tables: dict[str, pl.LazyFrame],
) -> None:
    options = DeriveOptions(max_output_chars=12)
    other = {**tables, rendered_key(8_000): render_turns(tables, 8_000).collect().lazy()}
    other[messages_key(8_000)] = render_traces(other, 8_000).collect().lazy()
    with_other = derive_all(other, options)
    for name, frame in derive_all(tables, options).items():
        assert_frame_equal(with_other[name].collect(), frame.collect(), check_exact=True)
