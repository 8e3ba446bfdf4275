"""The leakage audit: how close each held-out question comes to the training questions.

For every validation and test question that trains (not excluded), its nearest training
question by word 3-gram Jaccard (by the exact similarity join, ``nearest``: no training
question at or above ``REPORT_FLOOR`` is missed, and none below it is reported),
whether a training question is one word apart from it (``one_word``: short questions that
differ by one word fall below any useful Jaccard threshold), and whether it shares its CSV
dataset or its template with a training question. The counts
go into the manifest, the card and the report; ``--strict`` refuses a build with any
held-out question at or above the threshold.
"""

from __future__ import annotations

import itertools
from typing import Any

import polars as pl

from builder.derive.splits.added_clause import added_clause_edges
from builder.derive.splits.assign import Assignment, SplitPolicy
from builder.derive.splits.one_word import one_word_edges
from builder.derive.splits.similarity_join import nearest
from schemas.vocabulary import HELD_OUT

LEVELS = (0.5, 0.7, 0.9)
# Below this no similarity is measured: texts that far apart are not near-copies.
REPORT_FLOOR = 0.3
BINS = (0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
CLOSEST = 10


def _sides(assignment: Assignment, questions: pl.DataFrame, excluded: pl.Series) -> pl.DataFrame:
    """One row per question that trains: its split, text row, dataset and template."""
    rows = assignment.texts.select("text").with_row_index("row")
    return (
        assignment.frame.filter(
            pl.col("reason").is_null() & ~pl.col("question_id").is_in(excluded.implode())
        )
        .join(questions.select("question_id", "text", "dataset", "template"), on="question_id")
        .join(rows, on="text")
    )


def _nearest(assignment: Assignment, sides: pl.DataFrame) -> pl.DataFrame:
    """Each held-out text row's nearest training text row (``a``, ``b``, ``similarity``),
    where one reaches ``REPORT_FLOOR``."""
    train = sides.filter(pl.col("split") == "train").get_column("row").unique()
    held = sides.filter(pl.col("split").is_in(HELD_OUT)).get_column("row").unique()
    found = nearest(assignment.grams, REPORT_FLOOR, held, train)
    # a text both held out and trained on (an earlier build's leak, kept where it was)
    same = held.to_frame("a").join(train.to_frame("b"), left_on="a", right_on="b")
    same = same.select("a", b="a", similarity=pl.lit(1.0))
    return (
        pl.concat([found, same.cast(found.schema)])
        .sort("similarity", "b", descending=[True, False])
        .group_by("a", maintain_order=True)
        .first()
    )


def _from_train(edges: pl.DataFrame, sides: pl.DataFrame) -> int:
    """Held-out questions joined by ``edges`` (rows of the texts: one word apart, or a
    clause added) to a training question: an earlier build's assignment kept, or a policy
    that does not group near-duplicates."""
    both = pl.concat([edges, edges.select(a="b", b="a")])
    train = sides.filter(pl.col("split") == "train").select(b="row").unique()
    near = both.join(train, on="b").select(row="a").unique()
    held = sides.filter(pl.col("split").is_in(HELD_OUT))
    return held.join(near, on="row").height


def audit(
    assignment: Assignment,
    questions: pl.DataFrame,
    policy: SplitPolicy,
    excluded: pl.Series | None = None,
) -> dict[str, Any]:
    """The audit's figures (``manifest.json``'s ``splits.audit``); ``excluded``: question ids
    held out of training for another reason (eval matches)."""
    if excluded is None:
        excluded = pl.Series("question_id", [], dtype=pl.String)
    sides = _sides(assignment, questions, excluded)
    closest = _nearest(assignment, sides)
    held = sides.filter(pl.col("split").is_in(HELD_OUT)).join(
        closest.rename({"a": "row", "b": "train_row"}), on="row", how="left"
    )
    train = sides.filter(pl.col("split") == "train")
    similarity = held.get_column("similarity").fill_null(0.0)
    texts = assignment.texts.get_column("text")
    closest = (
        held.filter(pl.col("similarity").is_not_null())
        .sort("similarity", "text", descending=[True, False])
        .unique("row", keep="first", maintain_order=True)
        .head(CLOSEST)
    )
    edges = [0.0, *BINS]
    histogram = [
        {
            "from": low,
            "to": high,
            "questions": int(((similarity >= low) & (similarity < high)).sum())
            if high < 1.0
            else int((similarity >= low).sum()),
        }
        for low, high in itertools.pairwise(edges)
    ]
    return {
        "group_by": policy.group_by,
        "threshold": policy.threshold,
        "report_floor": REPORT_FLOOR,
        "held_out_questions": held.height,
        "train_questions": train.height,
        "nearest_train_at_least": {
            f"{level:.1f}": int((similarity >= level).sum()) for level in LEVELS
        },
        "at_or_above_threshold": int((similarity >= policy.threshold).sum()),
        "one_word_from_train": _from_train(one_word_edges(texts, policy.threshold), sides),
        "added_clause_from_train": _from_train(added_clause_edges(texts), sides),
        "share_dataset_with_train": _sharing(held, train, "dataset"),
        "share_template_with_train": _sharing(held, train, "template"),
        "histogram": histogram,
        "closest": [
            {
                "split": row["split"],
                "question": row["text"],
                "nearest_train_question": texts[row["train_row"]],
                "similarity": round(row["similarity"], 4),
            }
            for row in closest.iter_rows(named=True)
        ],
    }


def _sharing(held: pl.DataFrame, train: pl.DataFrame, column: str) -> dict[str, int]:
    known = held.filter(pl.col(column).is_not_null())
    labels = train.get_column(column).drop_nulls().unique().implode()
    return {
        "questions": known.filter(pl.col(column).is_in(labels)).height,
        "of_known": known.height,
    }
