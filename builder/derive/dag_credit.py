"""``process_reward``'s ``matched`` for every hook of many traces at once, in Polars.

The rule (``builder.contract.rewards``) walks a trace's hooks in order; stated as equations it is

* ``T[g]``: the first position ``p`` of the trace where ``s_p`` has gold hook ``g``'s hash
  and ``p > R[g]`` (none when there is no such position);
* ``R[g]``: the latest, over the names ``d`` in ``g.depends_on`` that some gold hook has, of
  ``N[d]`` (-1 when ``g`` has no such dependency; none — never ready — when some ``N[d]`` is
  none);
* ``N[d]``: the earliest ``T`` of the gold hooks named ``d``;

and student hook ``s_p`` is matched when some gold hook with its hash has ``R < p``. Every
dependency is credited strictly before its dependent (``T[g] > R[g] >= T[dep]``), so the
equations have one solution, and iterating them from "nothing credited" reaches it after at
most one round per level of the DAG (hooks on a cycle stay uncredited). Each round is a few
joins over all traces together: no per-trace Python.
"""

from __future__ import annotations

import polars as pl

from builder.derive.options import PLAN_ENGINE

_KEY = ["trace_id", "gold"]
MATCHED = {"trace_id": pl.String, "hook_index": pl.Int32}


def matched_hooks(hooks: pl.DataFrame) -> pl.DataFrame:
    """``hooks``: ``trace_id``, ``episode_id``, ``hook_index``, ``value_hash``, ``name``,
    ``depends_on`` and ``is_gold`` (the hook belongs to its episode's gold trace) of every
    trace to label, the gold traces included. Returns ``trace_id``, ``hook_index`` of the
    hooks that are matched against their episode's gold hooks (the others are not)."""
    gold = (
        hooks.filter(pl.col("is_gold"))
        .select("episode_id", "name", "depends_on", gh="value_hash")
        .with_row_index("gold")
    )
    student = hooks.select("trace_id", "episode_id", "hook_index", "value_hash")
    trace_episode = student.select("trace_id", "episode_id").unique()
    # Every (trace, gold hook) of the trace's episode, and the positions where it could count.
    pairs = trace_episode.join(gold, on="episode_id", how="inner")
    candidates = pairs.join(
        student.drop_nulls("value_hash"),
        left_on=["trace_id", "gh"],
        right_on=["trace_id", "value_hash"],
        how="inner",
    ).select(*_KEY, p="hook_index")
    # One row per (gold hook, dependency name), the names of no gold hook of its episode left
    # out: they order nothing (``builder.contract.rewards``).
    named = gold.select("episode_id", dep="name").drop_nulls().unique()
    edges = (
        gold.select("episode_id", "gold", dep="depends_on")
        .explode("dep")
        .join(named, on=["episode_id", "dep"], how="semi")
    )
    trace_edges = trace_episode.join(edges, on="episode_id", how="inner").drop("episode_id")
    names = pairs.select(*_KEY, "name").drop_nulls("name")
    # A gold hook without dependencies is ready from the start (R = -1): its positions and
    # its T are the same in every round, so the rounds only redo the hooks that wait.
    waiting = edges.select("gold").unique()
    free_ready = candidates.join(waiting, on="gold", how="anti").filter(pl.col("p") > -1)
    bound_candidates = candidates.join(waiting, on="gold", how="semi")
    free_credit = _first(free_ready)

    def ready(credited: pl.DataFrame) -> pl.DataFrame:
        """The positions where each gold hook that waits may count, given what
        ``credited`` holds."""
        earliest = (
            names.lazy()
            .join(credited.lazy(), on=_KEY, how="inner")
            .group_by("trace_id", "name")
            .agg(n=pl.col("t").min())
        )
        bound = (
            trace_edges.lazy()
            .join(earliest, left_on=["trace_id", "dep"], right_on=["trace_id", "name"], how="left")
            .group_by(_KEY)
            .agg(r=pl.col("n").max(), unmet=pl.col("n").null_count())
            .filter(pl.col("unmet") == 0)
            .select(*_KEY, "r")
        )
        joined = bound.join(bound_candidates.lazy(), on=_KEY, how="inner")
        joined = joined.filter(pl.col("p") > pl.col("r")).select(*_KEY, "p")
        return joined.collect(engine=PLAN_ENGINE)

    # One plan per round (a handful of rounds, one per level of the DAG): the data is small,
    # so the cost is per operation, not per row. The last round's positions are those of
    # the fixpoint: no round is run again for them.
    credited = pl.DataFrame(schema={"trace_id": pl.String, "gold": pl.UInt32, "t": pl.Int64})
    positions = ready(credited)
    while True:
        step = pl.concat([free_credit, _first(positions)]).sort(_KEY)
        if step.equals(credited):
            break
        credited = step
        positions = ready(credited)
    matched = pl.concat([free_ready, positions]).select(
        "trace_id", hook_index=pl.col("p").cast(pl.Int32)
    )
    return matched.unique()


def _first(positions: pl.DataFrame) -> pl.DataFrame:
    """``trace_id``, ``gold``, ``t``: each gold hook's first position among ``positions``."""
    return positions.group_by(_KEY).agg(t=pl.col("p").min().cast(pl.Int64))
