"""Word n-grams of normalized texts: the units both near-duplicate grouping and
decontamination compare.

A text's words are its runs of letters, digits and underscores (so ``values?`` and ``values``
are one word); its n-grams are the runs of ``n`` consecutive words. A text of fewer than ``n``
words has one n-gram, all its words: two short texts are then alike only when equal.
Computed as Polars expressions over the whole column, never a Python loop over rows.
"""

from __future__ import annotations

import polars as pl

WORD = r"\w+"


def ngram_frame(texts: pl.Series, n: int) -> pl.DataFrame:
    """``row`` (the text's position in ``texts``) and ``gram`` (one n-gram, words joined by
    single spaces), every n-gram of every text once; an empty text has none."""
    words = (
        texts.to_frame("text")
        .with_row_index("row")
        .select("row", word=pl.col("text").str.extract_all(WORD))
        .with_columns(count=pl.col("word").list.len())
        .filter(pl.col("count") > 0)
    )
    short = words.filter(pl.col("count") < n).select("row", gram=pl.col("word").list.join(" "))
    long = (
        words.filter(pl.col("count") >= n)
        .explode("word")
        .with_columns(position=pl.int_range(pl.len()).over("row"))
        .with_columns(
            gram=pl.concat_str(
                [pl.col("word").shift(-k).over("row") for k in range(n)], separator=" "
            )
        )
        .filter(pl.col("position") <= pl.col("count") - n)
        .select("row", "gram")
    )
    return (
        pl.concat([short, long])
        .with_columns(pl.col("row").cast(pl.UInt32))
        .unique(maintain_order=True)
    )
