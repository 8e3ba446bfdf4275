"""Which rows of a config the held-out plan keeps out of training, and why: rows are marked
by their episode, question or session (``HeldOutPlan``'s exclusions), then dropped and
counted by reason."""

from __future__ import annotations

import polars as pl

from builder.derive.splits.plan import HeldOutPlan


def held_out_keys(plan: HeldOutPlan, episodes: pl.LazyFrame) -> pl.DataFrame:
    """``episode_id``, ``question_id``, ``reason``: what the plan keeps out of training, for
    one bucket (its episodes of excluded questions, and the episodes excluded themselves)."""
    if not plan.excluded_questions.height and not plan.excluded_episodes.height:
        return pl.DataFrame(
            schema={"episode_id": pl.String, "question_id": pl.String, "reason": pl.String}
        )
    of_questions = (
        episodes.select("episode_id", "question_id")
        .collect()
        .join(plan.excluded_questions, on="question_id")
    )
    return pl.concat(
        [
            of_questions,
            plan.excluded_questions.select(
                "question_id", "reason", episode_id=pl.lit(None, pl.String)
            ),
            plan.excluded_episodes.select(
                "episode_id", question_id=pl.lit(None, pl.String), reason="reason"
            ),
        ],
        how="diagonal_relaxed",
    ).unique(["episode_id", "question_id"], keep="first", maintain_order=True)


def mark_held(frame: pl.LazyFrame, held: pl.DataFrame) -> pl.LazyFrame:
    """Each row of ``frame`` with the reason it is held out, null when it trains. ``held``
    names each exclusion by ``episode_id``, else by ``session_id`` (when it has the column),
    else by ``question_id``; a row held by its question gives that reason first."""
    names = frame.collect_schema().names()
    by_session = "session_id" in held.columns
    of_session = pl.col("session_id").is_not_null() if by_session else pl.lit(False)
    keys = {
        "r1": ("episode_id", pl.col("episode_id").is_not_null()),
        "r2": ("question_id", pl.col("episode_id").is_null() & ~of_session),
        "r3": ("session_id", of_session),
    }
    out = frame
    for label, (key, chosen) in keys.items():
        if key not in names or key not in held.columns:
            out = out.with_columns(pl.lit(None, pl.String).alias(label))
            continue
        reasons = held.filter(chosen).select(key, pl.col("reason").alias(label))
        reasons = reasons.unique(key, keep="first", maintain_order=True)
        out = out.join(reasons.lazy(), on=key, how="left", maintain_order="left")
    return out.with_columns(_held_out=pl.coalesce("r2", "r1", "r3")).drop("r1", "r2", "r3")


def parted(marked: pl.DataFrame) -> tuple[pl.DataFrame, dict[str, int]]:
    """Rows marked by ``mark_held``: those that train, and those held out counted by reason
    (``without`` and ``removed_rows`` of one collected frame)."""
    out = marked.filter(pl.col("_held_out").is_not_null())
    counts = out.group_by(reason="_held_out").len().sort("reason")
    return marked.filter(pl.col("_held_out").is_null()).drop("_held_out"), dict(counts.iter_rows())


def without(frame: pl.LazyFrame, held: pl.DataFrame) -> pl.LazyFrame:
    """``frame`` less the rows the plan holds out."""
    if not held.height:
        return frame
    return mark_held(frame, held).filter(pl.col("_held_out").is_null()).drop("_held_out")


def removed_rows(frame: pl.LazyFrame, held: pl.DataFrame) -> pl.LazyFrame:
    """``reason``, ``len``: the rows of ``frame`` held out, by reason."""
    if not held.height:
        return pl.LazyFrame(schema={"reason": pl.String, "len": pl.UInt32})
    return (
        mark_held(frame, held)
        .filter(pl.col("_held_out").is_not_null())
        .group_by(reason="_held_out")
        .len()
        .sort("reason")
    )
