"""The split of every question: groups never span splits, earlier assignments never move,
and each split's share of the rows stays near its ratio.

1. Questions are grouped (``groups``). A question assigned by an earlier build (``pinned``)
   keeps its split; its group's new questions join it. A new question whose group already
   holds questions of two different splits would leak into either: it is excluded from every
   training config (``bridges_splits``; its rows stay in the tables, under ``train``), in
   this build and, pinned with its reason, in every later one.
2. The remaining groups are ordered by a salted hash of their key (their smallest text), so
   the order depends on the data alone, and walked with their weights (rows: one for the
   question and one for each of its episodes and sessions). A group goes to the split in
   whose stretch of the walk its midpoint falls, the stretches sized so that, with the pinned
   rows, every split reaches its ratio: shares hold to within one group. A hash per group
   alone would not hold them: a few large groups move a held-out split by points.
3. A group heavier than half a held-out split's share cannot be held out without unbalancing
   it: it goes to train, and the audit counts it (``too_large_for_held_out``).

With ``group_by = "question"`` a new question's split is the hash of its own text against
the ratios (``split_of``), as builds before groups made it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import polars as pl

from builder.derive.splits import SplitConfig, assign_splits, unit_interval
from builder.derive.splits.groups import group_texts
from builder.derive.splits.similarity_join import hashed_ngrams
from schemas.vocabulary import (
    BRIDGES_SPLITS,
    GROUP_BY_DATASET,
    GROUP_BY_QUESTION,
    GROUP_BY_TEMPLATE,
    HELD_OUT,
    SPLITS,
)

QUESTION_COLUMNS = {
    "question_id": pl.String,
    "text": pl.String,
    "weight": pl.Int64,
    "dataset": pl.String,
    "template": pl.String,
}
# ``reason``: a question an earlier build held out of training for good (``bridges_splits``)
PINNED_COLUMNS = {
    "question_id": pl.String,
    "text": pl.String,
    "split": pl.String,
    "reason": pl.String,
}
ASSIGNMENT_COLUMNS = {
    "question_id": pl.String,
    "split": pl.String,
    "group": pl.UInt32,
    "reason": pl.String,
}

_COLUMNS = list(ASSIGNMENT_COLUMNS)


@dataclass(frozen=True)
class SplitPolicy:
    group_by: str
    threshold: float
    ratios: SplitConfig


@dataclass(frozen=True)
class Assignment:
    """Every current question's split (``question_id``, ``split``, ``group``, ``reason``:
    null, or ``bridges_splits``) and what the audit reads."""

    frame: pl.DataFrame
    texts: pl.DataFrame  # text, labels, group; a row per distinct key text
    grams: pl.DataFrame  # row (of ``texts``), h: their hashed word 3-grams
    stats: dict[str, int] = field(default_factory=dict)


def _distinct_texts(everyone: pl.DataFrame, policy: str) -> pl.DataFrame:
    label = {GROUP_BY_DATASET: "dataset", GROUP_BY_TEMPLATE: "template"}.get(policy)
    # every label of a text: one text asked about two datasets joins the two
    labels = pl.col(label).drop_nulls().unique().sort() if label else pl.lit([], pl.List(pl.String))
    return everyone.group_by("text").agg(labels=labels).sort("text")


def assign(questions: pl.DataFrame, pinned: pl.DataFrame, policy: SplitPolicy) -> Assignment:
    """``questions`` (``QUESTION_COLUMNS``): this build's; ``pinned`` (``PINNED_COLUMNS``):
    earlier assignments, questions no longer present included (they still hold their
    group to its split)."""
    gone = (
        pinned.join(questions, on="question_id", how="anti")
        .filter(pl.col("text").is_not_null())  # carried without its text: no group to hold
        .select("question_id", "text", weight=pl.lit(0, pl.Int64))
    )
    everyone = pl.concat([questions, gone], how="diagonal_relaxed")
    texts = _distinct_texts(everyone, policy.group_by)
    grams = hashed_ngrams(texts.get_column("text"))
    groups, fell_back = group_texts(texts, grams, policy.group_by, policy.threshold)
    texts = texts.with_columns(groups)
    rows = everyone.join(texts.select("text", "group"), on="text", how="left").join(
        pinned.select("question_id", pinned_split="split", pinned_reason="reason"),
        on="question_id",
        how="left",
    )
    # a bridge's own split is nominal (its rows never train): it holds no group to a split
    held = (
        rows.filter(pl.col("pinned_split").is_not_null() & pl.col("pinned_reason").is_null())
        .group_by("group")
        .agg(held=pl.col("pinned_split").unique().sort())
    )
    rows = rows.join(held, on="group", how="left").filter(
        pl.col("question_id").is_in(questions.get_column("question_id").implode())
    )
    adopted = pl.col("held").list.len() == 1
    rows = rows.with_columns(
        split=pl.coalesce("pinned_split", pl.when(adopted).then(pl.col("held").list.first())),
        reason=pl.when(pl.col("pinned_split").is_null() & (pl.col("held").list.len() > 1))
        .then(pl.lit(BRIDGES_SPLITS))
        .otherwise(pl.col("pinned_reason")),
    ).with_columns(
        split=pl.when(pl.col("reason").is_not_null()).then(pl.lit("train")).otherwise("split")
    )
    free = rows.filter(pl.col("split").is_null())
    decided = rows.filter(pl.col("split").is_not_null())
    if policy.group_by == GROUP_BY_QUESTION:
        chosen, too_large = _by_text(free, policy.ratios), (0, 0)
    else:
        chosen = _walk(free, decided, policy.ratios)
        too_large = _too_large(rows, policy.ratios)
    frame = (
        pl.concat([decided.select(_COLUMNS), chosen.select(_COLUMNS)])
        .sort("question_id")
        .cast(ASSIGNMENT_COLUMNS)
    )
    stats = {
        "groups": texts.get_column("group").n_unique() if texts.height else 0,
        "largest_group": _largest(frame),
        "pinned": decided.filter(pl.col("pinned_split").is_not_null()).height,
        "joined_pinned_groups": decided.filter(
            pl.col("pinned_split").is_null() & pl.col("reason").is_null()
        ).height,
        "bridges_splits": frame.filter(pl.col("reason") == BRIDGES_SPLITS).height,
        "fell_back_to_near_duplicate": fell_back,
        "too_large_groups": too_large[0],
        "too_large_questions": too_large[1],
    }
    return Assignment(frame, texts, grams, stats)


def _largest(frame: pl.DataFrame) -> int:
    if not frame.height:
        return 0
    return int(frame.group_by("group").len().get_column("len").max())  # type: ignore[arg-type]


def _by_text(free: pl.DataFrame, ratios: SplitConfig) -> pl.DataFrame:
    """The split of each question its own text's hash gives (``assign_splits``)."""
    chosen = assign_splits(free.select("question_id", normalized_text="text"), ratios)
    picked = chosen.select("question_id", chosen="split")
    return free.join(picked, on="question_id", how="left").with_columns(split=pl.col("chosen"))


def _limit(total: float, ratios: SplitConfig) -> float:
    """The heaviest group a held-out split can take: half the smaller held-out share."""
    shares = ratios.shares()
    smallest = min((shares[s] * total for s in HELD_OUT if shares[s] > 0), default=0.0)
    return smallest / 2


def _too_large(rows: pl.DataFrame, ratios: SplitConfig) -> tuple[int, int]:
    """Groups (and their questions) heavier than ``_limit``, pinned or not: a property of the
    data, the same in a first build and in a rebuild that keeps its splits."""
    groups = rows.group_by("group").agg(pl.col("weight").sum(), n=pl.len())
    limit = _limit(float(rows.get_column("weight").sum()), ratios)
    heavy = groups.filter(pl.col("weight") > limit) if limit > 0 else groups.clear()
    return heavy.height, int(heavy.get_column("n").sum())


def _walk(free: pl.DataFrame, decided: pl.DataFrame, ratios: SplitConfig) -> pl.DataFrame:
    shares = ratios.shares()
    total = int(free.get_column("weight").sum()) + int(decided.get_column("weight").sum())
    target = {s: shares[s] * total for s in SPLITS}
    held = dict(decided.group_by("split").agg(pl.col("weight").sum()).iter_rows())
    groups = (
        free.group_by("group")
        .agg(key=pl.col("text").min(), weight=pl.col("weight").sum(), n=pl.len())
        .sort("key")
    )
    keys = groups.get_column("key").to_list()
    groups = groups.with_columns(
        u=pl.Series([unit_interval(k, ratios.salt) for k in keys], dtype=pl.Float64)
    ).sort("u", "key")
    limit = _limit(total, ratios)
    large = pl.col("weight") > limit if limit > 0 else pl.lit(False)
    forced = groups.filter(large)
    walked = groups.filter(~large)
    room = {s: max(0.0, target[s] - held.get(s, 0)) for s in SPLITS}
    room["train"] = max(0.0, room["train"] - float(forced.get_column("weight").sum()))
    walking = float(walked.get_column("weight").sum())
    scale = walking / sum(room.values()) if sum(room.values()) > 0 else 0.0
    bounds, edge = [], 0.0
    for s in SPLITS:
        edge += room[s] * scale if scale else shares[s] * walking
        bounds.append(edge)
    middle = pl.col("weight").cum_sum() - pl.col("weight") / 2
    walked = walked.with_columns(
        chosen=pl.when(middle < bounds[0])
        .then(pl.lit("train"))
        .when(middle < bounds[1])
        .then(pl.lit("validation"))
        .otherwise(pl.lit("test"))
    )
    chosen = pl.concat(
        [walked.select("group", "chosen"), forced.select("group", chosen=pl.lit("train"))]
    )
    out = free.join(chosen, on="group", how="left").with_columns(split=pl.col("chosen"))
    return out
