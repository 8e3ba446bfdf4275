"""Questions one of which is the other with a clause added at its start or end: the
near-duplicates word 3-gram similarity misses when the clause is as long as the question.

A capture that starts asking for an answer format ("what is the overall mean of the tl
column?" → "… return as a float rounded to 2 decimal places.") or puts a condition first
rewrites its questions so between versions; the capture project's own banks hold such
pairs. The shorter text's 3-grams are all in the longer one, but their Jaccard similarity
is ``(n - 2) / (m - 2)`` for texts of ``n`` and ``m`` words: under 0.5 once the clause is
as long as the question. So a text whose words are the first or the last words of a longer
one, in order, is its near-duplicate when it has at least ``MIN_WORDS`` words (fewer, and
it is a common opening: "what is the mean of") and at least a third of the longer one's.

Found without measuring pairs, as ``one_word`` does: each text's whole word sequence is a
key, and so is every run of its first or last words long enough to be such a shorter text;
texts sharing a key are joined. Keys are 64-bit hashes.
"""

from __future__ import annotations

import polars as pl

from builder.derive.splits.shingles import WORD

MIN_WORDS = 6
# The longer text has at most this many times the shorter's words.
MAX_RATIO = 3
# The longest shorter text looked at: longer ones the n-gram join groups itself (a clause of
# up to a 64-word question's length adds up to half of the 3-grams of the two).
MAX_WORDS = 64
_SEPARATOR = "\x1f"


def added_clause_edges(texts: pl.Series, among: pl.Series | None = None) -> pl.DataFrame:
    """``a``, ``b`` (rows of ``texts``, ``a < b``): every two texts one of which is the
    other's first or last words, as above. ``among``: only the pairs with a row of it."""
    words = (
        texts.to_frame("text")
        .with_row_index("row")
        .select(pl.col("row").cast(pl.UInt32), word=pl.col("text").str.extract_all(WORD))
        .with_columns(n=pl.col("word").list.len())
        .filter(pl.col("n") >= MIN_WORDS)
    )
    whole = words.filter(pl.col("n") <= MAX_WORDS).select("row", key=_key(pl.col("word")))
    # a run of k first (or last) words of a text of n: MIN_WORDS <= k < n, n <= MAX_RATIO * k
    shortest = pl.max_horizontal(pl.lit(MIN_WORDS), (pl.col("n") + MAX_RATIO - 1) // MAX_RATIO)
    longest = pl.min_horizontal(pl.col("n") - 1, pl.lit(MAX_WORDS))
    runs = words.with_columns(k=pl.int_ranges(shortest, longest + 1)).explode("k").drop_nulls("k")
    heads = runs.select("row", key=_key(pl.col("word").list.head(pl.col("k"))))
    tails = runs.select("row", key=_key(pl.col("word").list.tail(pl.col("k"))))
    pairs = pl.concat([heads, tails]).join(whole, on="key", suffix="_short")
    if among is not None:
        within = among.cast(pl.UInt32).implode()
        pairs = pairs.filter(pl.col("row").is_in(within) | pl.col("row_short").is_in(within))
    pairs = pairs.select(
        a=pl.min_horizontal("row", "row_short"), b=pl.max_horizontal("row", "row_short")
    )
    return pairs.unique().sort("a", "b")


def _key(words: pl.Expr) -> pl.Expr:
    return words.list.join(_SEPARATOR).hash(seed=0xC1A)
