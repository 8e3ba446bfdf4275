"""What a bucket computes once for several objectives (``builder.derive.shared``: turns and
traces rendered as messages, ``prm_stepwise``'s matched hooks) gives every objective the
rows it gives when each computes them itself."""

from __future__ import annotations

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from builder.derive import DeriveOptions, derive_all, prm_stepwise, shared
from builder.derive.messages import messages_key, render_traces, render_turns, rendered_key


@pytest.mark.parametrize("chars", [8_000, 12])  # 12: outputs truncated
def test_every_objective_is_the_same_with_the_shared_frames(
    tables: dict[str, pl.LazyFrame], chars: int
) -> None:
    options = DeriveOptions(max_output_chars=chars)
    frames = shared(tables, options)
    assert set(frames) == {rendered_key(chars), messages_key(chars), prm_stepwise.MATCHED_HOOKS}
    turns_once = derive_all({**tables, rendered_key(chars): frames[rendered_key(chars)]}, options)
    all_once = derive_all({**tables, **frames}, options)
    for name, frame in derive_all(tables, options).items():
        expected = frame.collect()
        assert_frame_equal(turns_once[name].collect(), expected, check_exact=True)
        assert_frame_equal(all_once[name].collect(), expected, check_exact=True)


def test_the_matched_hooks_are_those_the_plan_finds(tables: dict[str, pl.LazyFrame]) -> None:
    options = DeriveOptions()
    traces = prm_stepwise.episode_traces(tables, options, hooks=True)
    known = prm_stepwise.matched(tables, options)
    assert known.height  # the sample has matched hooks
    in_plan = prm_stepwise.hook_steps(tables, traces).collect()
    given = prm_stepwise.hook_steps(tables, traces, known.lazy()).collect()
    key = ["trace_id", "hook_index"]
    assert_frame_equal(given.sort(key), in_plan.sort(key), check_exact=True)


def test_turns_rendered_for_another_output_limit_are_not_used(
    tables: dict[str, pl.LazyFrame],
) -> None:
    options = DeriveOptions(max_output_chars=12)
    other = {**tables, rendered_key(8_000): render_turns(tables, 8_000).collect().lazy()}
    other[messages_key(8_000)] = render_traces(other, 8_000).collect().lazy()
    with_other = derive_all(other, options)
    for name, frame in derive_all(tables, options).items():
        assert_frame_equal(with_other[name].collect(), frame.collect(), check_exact=True)
