"""``prm_stepwise``: TRL's stepwise-supervision layout, one row per trace (gold and
consistency) of each training-eligible episode that has at least one step.

A step is a turn (a code cell for flat traces), rendered as the assistant message of
``builder.derive.messages`` (reasoning + fenced code). Its label is true when

* it ran successfully, where known: a turn's ``success``; for a flat trace the success of a
  cell is unknown, except that the last cell takes the trace's ``execution_success`` (a run
  that failed is taken to have failed where it stopped), and
* every hook attributed to it is *matched* by ``builder.contract.rewards.process_reward`` with the
  trace's hooks (in ``hook_index`` order) as the student and the gold trace's hooks as gold:
  its value hash is a gold hook's whose ``depends_on`` hooks were all credited at earlier
  hooks of this trace (the DAG order; the exact rule is in ``builder.contract.rewards``). A gold
  trace listed in dependency order matches itself throughout. A hook listed with its turn
  belongs to that turn; one without (flat traces, trace-level listings) to the first step
  whose code contains the hook's code line, and to no step when none does (it still counts
  in the trace's order for the credit of later hooks).

The last step is judged by where the trace ends instead: true when it ran and the trace's
answer is one the ``rl`` reward accepts (``orm``'s label). A hint-free run names its hooks as
it likes, so a right answer reached without the gold's intermediate hooks would otherwise end
on a false step, and a wrong answer submitted by a step without hooks on a true one.

The DAG-order credit is a fixpoint over each trace's hook order; it is computed for all the
traces together by ``builder.derive.dag_credit`` (joins over the hooks table, one round per
level of the gold DAG), which equals ``builder.contract.rewards.process_reward``'s ``matched`` — the
function RL reward code calls — trace for trace (``tests/builder/derive/test_dag_credit.py``
holds both to it on generated hooks).
"""

from __future__ import annotations

from collections.abc import Mapping

import polars as pl

from builder.derive.common import TRACE_ORDER, episode_traces
from builder.derive.dag_credit import MATCHED, matched_hooks
from builder.derive.messages import rendered
from builder.derive.options import PLAN_ENGINE, DeriveOptions
from schemas.objectives import OBJECTIVES

NAME = "prm_stepwise"
SCHEMA = OBJECTIVES[NAME]


MATCHED_HOOKS = "matched_hooks"  # ``tables`` may hold ``matched``'s frame under this name


def _labelled(tables: Mapping[str, pl.LazyFrame], traces: pl.LazyFrame) -> pl.LazyFrame:
    """The hooks of ``traces`` as ``matched_hooks`` takes them."""
    gold = traces.select("trace_id", is_gold=~pl.col("consistency"))
    return (
        tables["hooks"]
        .join(traces, on="trace_id", how="semi")
        .join(gold, on="trace_id", how="inner")
        .select(
            "trace_id", "episode_id", "hook_index", "value_hash", "name", "depends_on", "is_gold"
        )
    )


def matched(tables: Mapping[str, pl.LazyFrame], options: DeriveOptions) -> pl.DataFrame:
    """``trace_id``, ``hook_index`` of the matched hooks of the traces ``derive`` labels,
    computed on the calling thread. The export computes them so, before the bucket's plans
    run (``MATCHED_HOOKS``): as a ``map_batches`` step inside a plan, the credit's own
    plans ran from a thread of Polars' pool and held it while they waited for the other."""
    traces = episode_traces(tables, options, hooks=True)
    return matched_hooks(_labelled(tables, traces).collect(engine=PLAN_ENGINE))


def hook_steps(
    tables: Mapping[str, pl.LazyFrame],
    traces: pl.LazyFrame,
    known: pl.LazyFrame | None = None,
) -> pl.LazyFrame:
    """``trace_id``, ``hook_index``, ``turn_index`` (the step), ``ok``: one row per attributed
    hook of ``traces``; ``ok`` when ``process_reward`` matches it against its episode's gold
    hooks (``known``: the matched hooks of ``traces``, when computed already)."""
    hooks = tables["hooks"].join(traces, on="trace_id", how="semi")
    if known is None:
        known = _labelled(tables, traces).map_batches(matched_hooks, schema=MATCHED)
    matched = known.with_columns(ok=pl.lit(True))
    cells = tables["turns"].select("trace_id", cell="turn_index", code="code")
    located = (
        hooks.filter(pl.col("turn_index").is_null())
        .join(cells.join(traces, on="trace_id", how="semi"), on="trace_id", how="inner")
        .filter(pl.col("code").str.contains(pl.col("code_line"), literal=True))
        .group_by("trace_id", "hook_index")
        .agg(pl.col("cell").min())
    )
    return (
        hooks.join(located, on=["trace_id", "hook_index"], how="left")
        .join(matched, on=["trace_id", "hook_index"], how="left")
        .select(
            "trace_id",
            "hook_index",
            pl.coalesce("turn_index", "cell").alias("turn_index"),
            ok=pl.col("ok").fill_null(False),
        )
        .filter(pl.col("turn_index").is_not_null())
    )


def derive(tables: Mapping[str, pl.LazyFrame], options: DeriveOptions) -> pl.LazyFrame:
    traces = episode_traces(tables, options, hooks=True)
    steps_of_hooks = hook_steps(tables, traces, tables.get(MATCHED_HOOKS))
    hooks_ok = steps_of_hooks.group_by("trace_id", "turn_index").agg(pl.col("ok").all())
    flat = traces.select("trace_id", "form", "execution_success", "correct")
    last = pl.col("turn_index") == pl.col("turn_index").max().over("trace_id")
    flat_success = pl.when(last).then(pl.col("execution_success"))
    success = pl.when(pl.col("form") == "flat").then(flat_success).otherwise(pl.col("success"))
    ran = success.fill_null(True)
    turns, assistant, _ = rendered(tables, options.max_output_chars)
    steps = (
        turns.join(flat, on="trace_id", how="inner")
        .join(hooks_ok, on=["trace_id", "turn_index"], how="left")
        .select(
            "trace_id",
            "turn_index",
            step=assistant,
            # the last step is judged by where the trace ends: its answer, as ``orm`` does
            label=pl.when(last)
            .then(ran & pl.col("correct"))
            .otherwise(ran & pl.col("ok").fill_null(True)),
        )
        .group_by("trace_id")
        .agg(pl.col("step", "label").sort_by("turn_index"))
    )
    return (
        traces.join(steps, on="trace_id", how="inner")
        .sort(*TRACE_ORDER)
        .select(
            prompt="question",
            completions="step",
            labels="label",
            question_id="question_id",
            episode_id="episode_id",
            trace_id="trace_id",
            difficulty="difficulty",
            source="source",
        )
    )
