"""Questions one word apart: the near-duplicates word 3-gram similarity misses in short texts.

A word changed in a text of ``n`` words takes up to three of its ``n - 2`` word 3-grams and
puts three others in their place: their Jaccard similarity is ``(n - 5) / (n + 1)``, under
0.5 for every question shorter than eleven words however alike the two are ("what is the
minimum age for each sex?" and "what is the minimum bmi for each sex?" score 0.33). So two
texts that differ by one word (changed, added or left out) and share at least
``MIN_SHARED`` words are near-duplicates too.

Found without measuring pairs: a text's keys are its words with one of them replaced by a
wildcard (two texts sharing one differ in that word alone) and its words with one left out
(the whole words of a text one word shorter); texts sharing a key are joined. Keys are
64-bit hashes, as the n-grams are: a collision between two keys is vanishingly rare.
"""

from __future__ import annotations

import math

import polars as pl

from builder.derive.splits.shingles import WORD

# Words two texts one word apart must share: fewer, and a changed word is much of the text.
MIN_SHARED = 4
# The longest text looked at whatever the threshold: the keys of a text of n words hold n²
# words (a pasted table, or a long question in a script where each character is a word,
# would cost gigabytes), and past this length the n-gram join sees one word apart at any
# threshold below 0.9.
MAX_WORDS = 64
_WILDCARD = "\x00"
_SEPARATOR = "\x1f"


def words_needed(threshold: float) -> int:
    """The most words a text may have for one word changed or added to take its word 3-gram
    Jaccard below ``threshold`` (a change in the middle: ``(n - 5) / (n + 1)``; one word
    more: ``(n - 4) / (n + 1)``); longer texts one word apart the n-gram join groups itself.
    At most ``MAX_WORDS``."""
    if threshold >= 1:
        return MAX_WORDS
    return min(MAX_WORDS, math.ceil((5 + threshold) / (1 - threshold)) + 1)


def one_word_edges(
    texts: pl.Series, threshold: float, among: pl.Series | None = None
) -> pl.DataFrame:
    """``a``, ``b`` (rows of ``texts``, ``a < b``): every two texts one word apart that share
    at least ``MIN_SHARED`` words, and those with the same words, of texts no longer than
    ``words_needed(threshold)``; each pair that way at least once (transitively: enough to
    make the groups). ``among``: only the pairs with a row of it (each of them joined to
    every text one word from it)."""
    words = (
        texts.to_frame("text")
        .with_row_index("row")
        .select(pl.col("row").cast(pl.UInt32), word=pl.col("text").str.extract_all(WORD))
        .with_columns(n=pl.col("word").list.len())
        .filter(pl.col("n").is_between(MIN_SHARED, words_needed(threshold)))
    )
    whole = words.select("row", key=_key(pl.col("word")))
    longer = (
        words.filter(pl.col("n") > MIN_SHARED)
        .with_columns(at=pl.int_ranges(0, pl.col("n")))
        .explode("at")
    )
    head = pl.col("word").list.head(pl.col("at"))
    tail = pl.col("word").list.slice(pl.col("at") + 1)
    changed = longer.select("row", key=_key(pl.concat_list(head, pl.lit([_WILDCARD]), tail)))
    shorter = longer.select("row", key=_key(pl.concat_list(head, tail)))
    # a key's texts, each joined to the first (of ``among``): the same words, or all but one
    # word the same
    centre = pl.col("row") if among is None else pl.col("row").filter(_of(among))
    by_key = pl.concat([whole, changed]).with_columns(first=centre.min().over("key"))
    shared = by_key.filter(pl.col("first").is_not_null() & (pl.col("row") != pl.col("first")))
    shared = shared.select(a=pl.min_horizontal("row", "first"), b=pl.max_horizontal("row", "first"))
    # a text one word longer than another: its words but one are the other's words
    added = shorter.join(whole, on="key", suffix="_b").filter(pl.col("row") != pl.col("row_b"))
    if among is not None:
        added = added.filter(_of(among) | pl.col("row_b").is_in(among.implode()))
    added = added.select(a=pl.min_horizontal("row", "row_b"), b=pl.max_horizontal("row", "row_b"))
    return pl.concat([shared, added]).unique().sort("a", "b")


def _of(among: pl.Series) -> pl.Expr:
    return pl.col("row").is_in(among.cast(pl.UInt32).implode())


def _key(words: pl.Expr) -> pl.Expr:
    return words.list.join(_SEPARATOR).hash(seed=0x0DD)
