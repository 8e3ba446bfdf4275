"""Word n-grams of normalized texts: the units both near-duplicate grouping and
decontamination compare.

A text's words are its runs of letters, digits and underscores (so ``values?`` and ``values``
are one word), except in the scripts written without spaces between words (Chinese,
Japanese kana, Thai, Lao, Khmer, Myanmar), where each character is one: such a question is
otherwise one long word, and two that differ in one character share nothing. Its n-grams
are the runs of ``n`` consecutive words. A text of fewer than ``n`` words has one n-gram, all
its words: two short texts are then alike only when equal.
Computed as Polars expressions over the whole column, never a Python loop over rows.

Grouping compares questions' normalized texts (``normalize_question_text``); decontamination
compares prompts and eval items that are not normalized, so it first makes them
``comparable``: the same characters that normalization gives.
"""

from __future__ import annotations

import functools
import sys

import polars as pl

from schemas.vocabulary import INVISIBLE_CHARACTERS

# Scripts written without spaces: each of their word characters is a word (character
# n-grams, as is usual for deduplicating such text). By script extension, so that marks
# shared by kana (the prolonged sound mark) count too; Korean is written with spaces.
SCRIPTS = "".join(
    rf"\p{{scx={name}}}"
    for name in ("Han", "Hiragana", "Katakana", "Thai", "Lao", "Khmer", "Myanmar")
)
WORD = rf"[\w&&[{SCRIPTS}]]|[\w--[{SCRIPTS}]]+"


_INVISIBLE = f"[{INVISIBLE_CHARACTERS}]+"


@functools.cache
def _case_folds() -> tuple[list[str], list[str]]:
    """Lowercase characters that case folding maps further (ß → ss, ς → σ, ſ → s, ...), and
    what it maps them to (Python's ``str.casefold``, as ``normalize_question_text`` folds)."""
    found = [
        (c, folded)
        for c in map(chr, range(sys.maxunicode + 1))
        if not 0xD800 <= ord(c) <= 0xDFFF and (folded := c.casefold()) != c and c.lower() == c
    ]
    return [c for c, _ in found], [f for _, f in found]


def comparable(texts: pl.Series) -> pl.Series:
    """``texts`` with the characters ``normalize_question_text`` gives (invisible characters
    dropped, NFKC, casefolded; spacing aside, which words do not see): a copy compares alike
    whichever side was normalized. ASCII text only needs lowercasing."""
    lowered = texts.str.to_lowercase()
    wide = (texts.str.len_bytes() != texts.str.len_chars()).arg_true()
    if wide.len() == 0:
        return lowered
    keys, folds = _case_folds()
    folded = (
        texts.gather(wide)
        .str.replace_all(_INVISIBLE, "")
        .str.normalize("NFKC")
        .str.to_lowercase()
        .str.replace_many(keys, folds)
    )
    return lowered.scatter(wide, folded)


def words_of(texts: pl.Series) -> pl.Series:
    """Every distinct word of ``texts``."""
    return texts.str.extract_all(WORD).explode().drop_nulls().unique()


def ngram_frame(texts: pl.Series, n: int, vocabulary: pl.Series | None = None) -> pl.DataFrame:
    """``row`` (the text's position in ``texts``) and ``gram`` (one n-gram, words joined by
    single spaces), every n-gram of every text once; an empty text has none.

    With ``vocabulary``, only the n-grams all of whose words are in it: an n-gram that can
    equal one made of those words. Its text is then built only for those, which is what
    matching many long texts against a few short ones costs (``decontamination``)."""
    words = (
        texts.to_frame("text")
        .with_row_index("row")
        .select("row", word=pl.col("text").str.extract_all(WORD))
        .with_columns(count=pl.col("word").list.len())
        .filter(pl.col("count") > 0)
    )
    short = words.filter(pl.col("count") < n).select("row", gram=pl.col("word").list.join(" "))
    exploded = (
        words.filter(pl.col("count") >= n)
        .explode("word")
        .with_columns(position=pl.int_range(pl.len()).over("row"))
    )
    if vocabulary is None:
        long = exploded.with_columns(
            gram=pl.concat_str(
                [pl.col("word").shift(-k).over("row") for k in range(n)], separator=" "
            )
        ).filter(pl.col("position") <= pl.col("count") - n)
    else:
        long = _known_grams(exploded, n, vocabulary)
    return (
        pl.concat([short, long.select("row", "gram")])
        .with_columns(pl.col("row").cast(pl.UInt32))
        .unique(maintain_order=True)
    )


def _known_grams(exploded: pl.DataFrame, n: int, vocabulary: pl.Series) -> pl.DataFrame:
    """The n-grams of ``exploded`` (a word a row, in text order) whose words are all in
    ``vocabulary``, in the order ``ngram_frame`` lists them. An n-gram starting at a row
    runs to that row + n - 1 within its text (its ``position`` leaves room), so its words
    are gathered by index, without shifting every word column ``n`` times."""
    known = exploded.get_column("word").is_in(vocabulary.implode())
    # unknown words seen so far, as a running count: a window of n holds none when the count
    # at its last word equals the count before its first
    unknown = (~known).cast(pl.UInt32).cum_sum()
    before = unknown.shift(1, fill_value=0)
    fits = exploded.get_column("position") <= exploded.get_column("count") - n
    end = unknown.shift(-(n - 1))
    starts = (fits & (end == before)).fill_null(False).arg_true()
    word = exploded.get_column("word")
    parts = pl.DataFrame({f"w{k}": word.gather(starts + k) for k in range(n)})
    return pl.DataFrame(
        {
            "row": exploded.get_column("row").gather(starts),
            "gram": parts.select(pl.concat_str(pl.all(), separator=" ")).to_series(),
        }
    )
