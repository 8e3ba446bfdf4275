"""Split groups: questions that must share a split.

Every policy joins questions whose split key is the same text. Beyond that:

- ``near_duplicate`` joins any two texts whose word 3-gram Jaccard reaches the threshold
  (``similarity_join``: exact, no pair missed), that are one word apart (``one_word``), or
  one of which is the other with a clause added at its start or end (``added_clause``),
  transitively;
- ``dataset`` joins the questions about one CSV file, ``template`` those made from one
  template; a question whose label is unknown is joined to its near-duplicates instead
  (counted as having fallen back);
- ``question`` joins nothing more (the exact normalized text, as before groups existed).
"""

from __future__ import annotations

import polars as pl

from builder.derive.splits.added_clause import added_clause_edges
from builder.derive.splits.one_word import one_word_edges
from builder.derive.splits.similarity_join import components, connect
from schemas.vocabulary import GROUP_BY_NEAR_DUPLICATE, GROUP_BY_QUESTION


def group_texts(
    texts: pl.DataFrame, grams: pl.DataFrame, policy: str, threshold: float
) -> tuple[pl.Series, int]:
    """``texts``: one row per distinct key text with ``labels`` (its datasets or templates;
    empty when unknown); ``grams``: their hashed n-grams. The group of each row (its smallest
    row joined to it) and how many rows fell back to near-duplicates for want of a label."""
    size = texts.height
    if policy == GROUP_BY_QUESTION:
        return pl.Series("group", range(size), dtype=pl.UInt32), 0
    if policy == GROUP_BY_NEAR_DUPLICATE:
        edited = _edited(texts.get_column("text"), threshold)
        joined = components(grams, size, threshold, connect(size, edited))
        return joined.get_column("label").alias("group"), 0
    rows = texts.select("labels").with_row_index("row").with_columns(pl.col("row").cast(pl.UInt32))
    unknown = rows.filter(pl.col("labels").list.len() == 0).get_column("row")
    same_label = (
        rows.explode("labels")
        .filter(pl.col("labels").is_not_null())
        .with_columns(first=pl.col("row").min().over("labels"))
        .select(a="first", b="row")
    )
    # a question of unknown label joins its near-duplicates, edited ones included
    edited = _edited(texts.get_column("text"), threshold, among=unknown)
    by_label = connect(size, pl.concat([same_label.cast(pl.UInt32), edited]))
    joined = components(grams, size, threshold, by_label, unknown)
    return joined.get_column("label").alias("group"), unknown.len()


def _edited(texts: pl.Series, threshold: float, among: pl.Series | None = None) -> pl.DataFrame:
    """The pairs the n-gram join misses: one word apart, or a clause added."""
    one_word = one_word_edges(texts, threshold, among=among)
    return pl.concat([one_word, added_clause_edges(texts, among=among)]).unique()
