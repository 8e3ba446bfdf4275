"""prm_stepwise: per-step labels from turn success and process_reward's DAG-order matching
of the trace's hooks against the gold trace's."""

from __future__ import annotations

import polars as pl

from builder.contract.rewards import process_reward
from builder.derive import DeriveOptions, prm_stepwise
from builder.derive.common import episode_traces


def labels(derived) -> dict[str, list[bool]]:
    frame = derived["prm_stepwise"]
    return dict(zip(frame["trace_id"], frame["labels"].to_list(), strict=True))


def test_labels_per_trace(derived) -> None:
    assert labels(derived) == {
        # gold: the failed turn is false; its hooks match themselves
        "ep-a:gold": [True, False, True, True],
        # wrong DataFrame-summary hash on turn 0, failed turn 1; turn 2's hook has gold m's
        # hash, but gold m depends on df, which this trace never matched: not credited
        "ep-a:c0": [False, False, False, True],
        # flat: hooks attributed by code line; the median hook's hash is not gold's; the
        # last cell ran (the trace's success) but submitted a wrong answer
        "ep-a:c1": [True, False, False],
        # flat, run failed, no hooks: only the last cell is known to have failed
        "ep-a:c2": [True, False],
        "ep-b:gold": [True, True],
        "ep-b:c0": [True],
    }
    assert list(derived["prm_stepwise"]["trace_id"]) == list(labels(derived))  # gold first


def test_completions_are_the_rendered_steps_and_prompt_the_question(derived, make) -> None:
    (gold,) = derived["prm_stepwise"].filter(trace_id="ep-a:gold").to_dicts()
    assert gold["prompt"] == "What is the mean revenue?"
    assert gold["completions"] == [
        f"Load the data.\n```python\n{make.LOAD}\n```",
        f"```python\n{make.BAD}\n```",
        f"Fix the column.\n```python\n{make.GOOD}\n```",
        f"```python\n{make.SUBMIT}\n```",
    ]
    assert len(gold["completions"]) == len(gold["labels"])


def test_traces_without_steps_give_no_row(make) -> None:
    gold = make.trace(1, cells=["submit(1)"])
    episode = make.episode("ep-g", "One?", gold, [make.trace(1), make.trace(1, cells=["1"])])
    frame = prm_stepwise.derive(make.build_tables([episode]), DeriveOptions()).collect()
    assert list(frame["trace_id"]) == ["ep-g:gold", "ep-g:c1"]


LOAD, MEAN = "df = load()", "m = df.x.mean()"


def _load_then_mean(make):
    """A gold trace: ``df`` loaded, ``m`` (which depends on it) computed, then submitted."""
    return make.trace(
        2.0,
        turns=[
            make.turn(0, LOAD, hooks=[make.hook(LOAD, {"rows": 4}, "df")]),
            make.turn(1, MEAN, hooks=[make.hook(MEAN, 2.0, "m", depends_on=["df"])]),
            make.turn(2, "submit(m)", submitted=2.0),
        ],
    )


def test_a_hook_before_its_dependency_is_not_matched(make) -> None:
    """The student computes m (depends on df) before df: m's step is false, df's is true,
    and the ordered trace gets both."""
    gold = _load_then_mean(make)
    swapped = make.trace(
        2.0,
        turns=[
            make.turn(0, MEAN, hooks=[make.hook(MEAN, 2.0, "m", depends_on=["df"])]),
            make.turn(1, LOAD, hooks=[make.hook(LOAD, {"rows": 4}, "df")]),
            make.turn(2, "submit(m)", submitted=2.0),
        ],
    )
    episode = make.episode("ep-s", "Mean x?", gold, [swapped, gold], expected=2.0)
    frame = prm_stepwise.derive(make.build_tables([episode]), DeriveOptions()).collect()
    got = dict(zip(frame["trace_id"], frame["labels"].to_list(), strict=True))
    assert got == {
        "ep-s:gold": [True, True, True],
        "ep-s:c0": [False, True, True],
        "ep-s:c1": [True, True, True],
    }


def test_the_last_step_is_judged_by_the_trace_s_answer(make) -> None:
    """A hint-free run computes the answer in one step, without the gold's intermediate hook:
    its ``m`` is not credited (the gold's depends on ``df``), yet its answer is right, so
    its one step is true; a run whose one step submits a wrong answer without a hook is
    false."""
    gold = _load_then_mean(make)
    direct = make.trace(
        2.0,
        turns=[
            make.turn(0, f"{MEAN}\nsubmit(m)", hooks=[make.hook(MEAN, 2.0, "m")], submitted=2.0)
        ],
    )
    wrong = make.trace(3.0, turns=[make.turn(0, "submit(3.0)", submitted=3.0)])
    episode = make.episode("ep-o", "Mean x?", gold, [direct, wrong], expected=2.0)
    frame = prm_stepwise.derive(make.build_tables([episode]), DeriveOptions()).collect()
    got = dict(zip(frame["trace_id"], frame["labels"].to_list(), strict=True))
    assert got == {"ep-o:gold": [True, True, True], "ep-o:c0": [True], "ep-o:c1": [False]}


def test_hook_verdicts_are_process_reward_matches_on_the_rl_gold_hooks(derived, tables) -> None:
    """One implementation: every attributed hook's verdict equals ``process_reward``'s
    ``matched`` for the trace's hooks against the ``rl`` config's ``gold_hooks``."""
    gold = {r["episode_id"]: r["gold_hooks"] for r in derived["rl"].to_dicts()}
    traces = episode_traces(tables, DeriveOptions())
    steps = prm_stepwise.hook_steps(tables, traces).collect()
    got = {(t, i): ok for t, i, _, ok in steps.iter_rows()}
    hooks = tables["hooks"].sort("trace_id", "hook_index").collect()
    expected = {}
    for trace_id, episode_id in traces.select("trace_id", "episode_id").collect().iter_rows():
        rows = hooks.filter(pl.col("trace_id") == trace_id)
        matched = process_reward(rows["value_hash"].to_list(), gold[episode_id]).matched
        expected |= dict(zip(((trace_id, i) for i in rows["hook_index"]), matched, strict=True))
    assert got.keys() <= expected.keys()
    assert got == {k: expected[k] for k in got}
    assert False in got.values() and True in got.values()
